# Stage 8: the gradient-covariance probe (H1b) over the checkpoints of one trajectory
# (docs/analysis.md#gradient-probe): exact grader-mask enumeration and transition-noise resampling.

wildcard_constraints:
    trajectory=r"[a-z0-9_]+",


rule probe:
    """Score vectors at each checkpoint of a trajectory, then the outcome- and transition-noise traces
    and the evidence that reproduces them (the expensive part; it reads no decision rule)."""
    input:
        pools=pool_files(),
        run_manifest=probe_run_manifest,
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation", "probe"),
    output:
        traces=res("probe/traces/{trajectory}.json"),
        evidence=res("probe/evidence/{trajectory}.npz"),
    params:
        tasks_dir=tasks_dir_of,
        run_dir=probe_run_dir,
        steps=probe_steps,
        model=model_dir_param,
        settings=probe_settings,
    conda:
        software_env()
    log:
        res("logs/probe/{trajectory}.log"),
    shell:
        "paired-rollouts probe run --trajectory {wildcards.trajectory:q} --run-dir {params.run_dir:q} "
        "--steps {params.steps:q} --model-dir {params.model:q} --tasks-dir {params.tasks_dir:q} "
        "--settings {params.settings:q} --evidence {output.evidence:q} --out {output.traces:q} "
        "> {log:q} 2>&1"


rule probe_verdict:
    """The H1b verdict from the frozen rules file's h1b block: editing the rules reruns this, not the probe."""
    input:
        traces=res("probe/traces/{trajectory}.json"),
        rules=config["decision_rules"],
        code=sources("probe", "prereg"),
    output:
        res("probe/{trajectory}.json"),
    conda:
        software_env()
    log:
        res("logs/probe_verdict/{trajectory}.log"),
    shell:
        "paired-rollouts probe verdict --traces {input.traces:q} --rules {input.rules:q} --out {output:q} "
        "> {log:q} 2>&1"

# Stage 8: the gradient-covariance probe (H1b) over the checkpoints of one trajectory
# (docs/analysis.md#gradient-probe): exact grader-mask enumeration and transition-noise resampling.
# One job per checkpoint (one process, one generation engine: colocated vLLM needs its memory share
# free at every start; each group is folded into running vectors as soon as it is scored), then one job
# assembles the trajectory's traces, and a cheap one applies the frozen rules' h1b block.


wildcard_constraints:
    trajectory="|".join(TRAJECTORIES),


rule probe_checkpoint:
    """Score vectors at one checkpoint of a trajectory, its outcome- and transition-noise traces and the
    evidence that reproduces them (the expensive part; it reads no decision rule)."""
    input:
        pools=pool_files(),
        run_manifest=probe_run_manifest,
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation", "probe"),
    output:
        summary=LAYOUT.probe_checkpoint("{trajectory}", "{step}"),
        evidence=res("probe/evidence/{trajectory}/step{step}.npz"),
    log:
        res("logs/probe/{trajectory}/step{step}.log"),
    benchmark:
        res("benchmarks/probe/{trajectory}/step{step}.tsv")
    conda:
        software_env()
    params:
        tasks_dir=tasks_dir_of,
        run=probe_run,
        conditions=CONDITIONS_JSON,
        run_dir=probe_run_dir,
        model=model_dir_param,
        settings=probe_settings,
    shell:
        "paired-rollouts probe checkpoint --run {params.run:q} --conditions {params.conditions:q} "
        "--run-dir {params.run_dir:q} --step {wildcards.step:q} "
        "--model-dir {params.model:q} --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--evidence {output.evidence:q} --out {output.summary:q} > {log:q} 2>&1"


rule probe:
    """The trajectory's probe traces (every checkpoint), assembled from its checkpoint files."""
    input:
        checkpoints=probe_checkpoint_files,
        code=sources("probe", "records"),
    output:
        res("probe/traces/{trajectory}.json"),
    log:
        res("logs/probe/{trajectory}.log"),
    benchmark:
        res("benchmarks/probe/{trajectory}.tsv")
    conda:
        software_env()
    params:
        run=probe_run,
        settings=probe_settings,
    shell:
        "paired-rollouts probe assemble --trajectory {wildcards.trajectory:q} --run {params.run:q} "
        "--inputs {input.checkpoints:q} --settings {params.settings:q} --out {output:q} > {log:q} 2>&1"


rule probe_verdict:
    """The H1b verdict from the frozen rules file's h1b block: editing the rules reruns this, not the probe."""
    input:
        traces=rules.probe.output[0],
        rules=config["decision_rules"],
        code=sources("probe", "prereg", "records"),
    output:
        report(
            LAYOUT.probe_file("{trajectory}"),
            caption="../report/probe.rst",
            category="Gradient probe",
            labels={"trajectory": "{trajectory}"},
        ),
    log:
        res("logs/probe_verdict/{trajectory}.log"),
    benchmark:
        res("benchmarks/probe_verdict/{trajectory}.tsv")
    conda:
        software_env()
    shell:
        "paired-rollouts probe verdict --traces {input.traces:q} --rules {input.rules:q} --out {output:q} "
        "> {log:q} 2>&1"

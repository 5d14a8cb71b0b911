# Stage 8: the gradient-covariance probe (H1b) over the checkpoints of one trajectory
# (docs/analysis.md#gradient-probe): exact grader-mask enumeration and transition-noise resampling.
# One job per checkpoint (one process, one generation engine: colocated vLLM needs its memory share
# free at every start; each group is folded into running vectors as soon as it is scored), then one job
# assembles the trajectory's traces, and a cheap one applies the frozen rules' h1b block.


wildcard_constraints:
    trajectory="|".join(sorted(LAYOUT.trajectories)),


rule probe_checkpoint:
    """Score vectors at one checkpoint of a trajectory, its outcome- and transition-noise traces and the
    evidence that reproduces them (the expensive part; it reads no decision rule)."""
    input:
        pools=LAYOUT.pools(),
        run_manifest=of_probe_run(LAYOUT.manifest),
        model=MODEL,
        code=sources(*SIMULATOR, "training", "evaluation", "probe"),
    output:
        summary=LAYOUT.probe_checkpoint("{trajectory}", "{step}"),
        evidence=res("probe/evidence/{trajectory}/step{step}.npz"),
    log:
        LAYOUT.log("probe/{trajectory}/step{step}"),
    benchmark:
        LAYOUT.benchmark("probe/{trajectory}/step{step}")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        run=of_wildcards(LAYOUT.trajectory_run, "trajectory"),
        conditions=CONDITIONS_JSON,
        run_dir=folder_of("run_manifest"),
        model=folder_of("model"),
        settings=stage_settings("stack", "training", "evaluation", "diagnostics", "probe"),
    shell:
        "paired-rollouts probe checkpoint --run {params.run:q} --conditions {params.conditions:q} "
        "--run-dir {params.run_dir:q} --step {wildcards.step:q} "
        "--model-dir {params.model:q} --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--evidence {output.evidence:q} --out {output.summary:q} > {log:q} 2>&1"


rule probe:
    """The trajectory's probe traces (every checkpoint), assembled from its checkpoint files."""
    input:
        checkpoints=of_wildcards(LAYOUT.probe_checkpoint_files, "trajectory"),
        code=sources("probe", "records"),
    output:
        res("probe/traces/{trajectory}.json"),
    log:
        LAYOUT.log("probe/{trajectory}"),
    benchmark:
        LAYOUT.benchmark("probe/{trajectory}")
    conda:
        software_env()
    params:
        run=of_wildcards(LAYOUT.trajectory_run, "trajectory"),
        settings=stage_settings("stack", "training", "evaluation", "diagnostics", "probe"),
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
        LAYOUT.log("probe_verdict/{trajectory}"),
    benchmark:
        LAYOUT.benchmark("probe_verdict/{trajectory}")
    conda:
        software_env()
    shell:
        "paired-rollouts probe verdict --traces {input.traces:q} --rules {input.rules:q} --out {output:q} "
        "> {log:q} 2>&1"


for _trajectory in sorted(LAYOUT.trajectories):
    LEDGER += expand(
        rules.probe_checkpoint.benchmark, trajectory=_trajectory, step=LAYOUT.trajectory(_trajectory)["steps"]
    )
LEDGER += expand(
    [rules.probe.benchmark, rules.probe_verdict.benchmark], trajectory=sorted(LAYOUT.trajectories)
)

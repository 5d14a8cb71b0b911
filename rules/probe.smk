# Stage 8: the gradient-covariance probe (H1b) over the checkpoints of one trajectory
# (docs/analysis.md#gradient-probe): exact grader-mask enumeration and transition-noise resampling.
# One job per checkpoint (one process, one generation engine: colocated vLLM needs its memory share
# free at every start), then one job assembles the trajectory's register and verdict.

wildcard_constraints:
    trajectory=r"[a-z0-9_]+",


rule probe_checkpoint:
    """Score vectors at one checkpoint of a trajectory, then its outcome- and transition-noise traces."""
    input:
        pools=pool_files(),
        run_manifest=probe_run_manifest,
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation", "probe"),
    output:
        res("probe/{trajectory}/step{step}.json"),
    params:
        tasks_dir=tasks_dir_of,
        run_dir=probe_run_dir,
        model=model_dir_param,
        settings=probe_settings,
    conda:
        software_env()
    log:
        res("logs/probe/{trajectory}/step{step}.log"),
    benchmark:
        res("benchmarks/probe/{trajectory}/step{step}.tsv")
    shell:
        "paired-rollouts probe checkpoint --run-dir {params.run_dir:q} --step {wildcards.step:q} "
        "--model-dir {params.model:q} --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--out {output:q} > {log:q} 2>&1"


rule probe:
    """The trajectory's probe register (every checkpoint) and its H1b verdict."""
    input:
        checkpoints=probe_checkpoint_files,
        code=sources("probe"),
    output:
        res("probe/{trajectory}.json"),
    params:
        run=probe_run,
        settings=probe_settings,
    conda:
        software_env()
    log:
        res("logs/probe/{trajectory}.log"),
    benchmark:
        res("benchmarks/probe/{trajectory}.tsv")
    shell:
        "paired-rollouts probe assemble --trajectory {wildcards.trajectory:q} --run {params.run:q} "
        "--inputs {input.checkpoints:q} --settings {params.settings:q} --out {output:q} > {log:q} 2>&1"

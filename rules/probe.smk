# Stage 8: the gradient-covariance probe (H1b) over the checkpoints of one trajectory
# (docs/analysis.md#gradient-probe): exact grader-mask enumeration and transition-noise resampling.

wildcard_constraints:
    trajectory=r"[a-z0-9_]+",


rule probe:
    """Score vectors at each checkpoint of a trajectory, then the outcome- and transition-noise traces."""
    input:
        pools=pool_files(),
        run_manifest=probe_run_manifest,
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation", "probe"),
    output:
        report(res("probe/{trajectory}.json"), caption="../report/probe.rst", category="Gradient probe",
               labels={"trajectory": "{trajectory}"}),
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
    benchmark:
        res("benchmarks/probe/{trajectory}.tsv"),
    shell:
        "paired-rollouts probe run --trajectory {wildcards.trajectory:q} --run-dir {params.run_dir:q} "
        "--steps {params.steps:q} --model-dir {params.model:q} --tasks-dir {params.tasks_dir:q} "
        "--settings {params.settings:q} --out {output:q} > {log:q} 2>&1"

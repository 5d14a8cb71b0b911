# Stage 5: evaluations of saved checkpoints, one job per (run, checkpoint step, regime), so a change to
# one regime reruns only its own jobs. Schedules are identical across arms and checkpoints.

wildcard_constraints:
    phase=r"periodic|final",
    regime=r"clean|at_training|challenge|noisy_p010|noisy_p025|heldout_types",


rule evaluate:
    """Roll out one checkpoint on the validation (periodic) or test (final) pool under one regime."""
    input:
        pools=pool_files(),
        run_manifest=res("runs/{run}/manifest.json"),
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation"),
    output:
        res("evals/{run}/{phase}-step{step}-{regime}.jsonl"),
    params:
        tasks_dir=tasks_dir_of,
        settings=eval_settings(),
        model=model_dir_param,
        checkpoint=checkpoint_dir,
    conda:
        software_env()
    log:
        res("logs/evaluate/{run}/{phase}-step{step}-{regime}.log"),
    benchmark:
        res("benchmarks/evaluate/{run}/{phase}-step{step}-{regime}.tsv"),
    shell:
        "paired-rollouts evaluate --run {wildcards.run:q} --step {wildcards.step:q} --phase {wildcards.phase:q} "
        "--regime {wildcards.regime:q} --tasks-dir {params.tasks_dir:q} --checkpoint {params.checkpoint:q} "
        "--model-dir {params.model:q} --settings {params.settings:q} --out {output:q} > {log:q} 2>&1"

# Stage 5: evaluations of saved checkpoints, one job per (run, checkpoint step, regime), so a change to
# one regime reruns only its own jobs. Schedules are identical across arms and checkpoints.

wildcard_constraints:
    phase=r"periodic|final",
    regime=r"clean|at_training|challenge|noisy_p010|noisy_p025|heldout_types",


rule evaluate:
    """Roll out one checkpoint on the validation (periodic) or test (final) pool under one regime."""
    input:
        pools=pool_files(),
        run_manifest="results/runs/{run}/manifest.json",
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation"),
    output:
        "results/evals/{run}/{phase}-step{step}-{regime}.jsonl",
    params:
        tasks_dir=tasks_dir_of,
        settings=eval_settings(),
        model=model_dir_param,
        checkpoint=checkpoint_dir,
    conda:
        software_env()
    log:
        "results/logs/evaluate/{run}/{phase}-step{step}-{regime}.log",
    benchmark:
        "results/benchmarks/evaluate/{run}/{phase}-step{step}-{regime}.tsv",
    shell:
        "paired-rollouts evaluate --run {wildcards.run} --step {wildcards.step} --phase {wildcards.phase} "
        "--regime {wildcards.regime} --tasks-dir {params.tasks_dir} --checkpoint {params.checkpoint} "
        "--model-dir {params.model} --settings {params.settings:q} --out {output} > {log} 2>&1"

# Stage 4: one GRPO training job per run of the matrix (analysis_spec section 6).
#
# Checkpoints are deliberately NOT declared outputs: Snakemake deletes a job's outputs before it
# retries it, and a retried job must find its checkpoints to resume from. The run's manifest is
# written last and lists the checkpoints; downstream rules depend on it.

wildcard_constraints:
    run=r"c[024]-(paired|independent|clean)-s\d+",
    step=r"\d+",


rule train:
    """Train one run (condition, arm, seed) with TRL's GRPOTrainer; resumes from its last complete checkpoint."""
    input:
        pools=pool_files(),
        manifest=f"{TASKS_DIR}/MANIFEST.json",
        # `ancient`: a re-verified protocol does not retrain finished runs, but a failing verification
        # still stops this job before it starts (the verify rule runs first and fails).
        verification=ancient(verification_file()),
        model=model_inputs(),
        code=sources(*SIMULATOR, "training"),
    output:
        groups="results/runs/{run}/groups.jsonl",
        manifest="results/runs/{run}/manifest.json",
    params:
        tasks_dir=tasks_dir_of,
        settings=run_settings,
        model=model_dir_param,
        out_dir=output_folder,
    conda:
        software_env()
    log:
        "results/logs/train/{run}.log",
    benchmark:
        "results/benchmarks/train/{run}.tsv",
    shell:
        "paired-rollouts train --run {wildcards.run} --tasks-dir {params.tasks_dir} --model-dir {params.model} "
        "--verification {input.verification} --settings {params.settings:q} --out-dir {params.out_dir} "
        "> {log} 2>&1"


rule group_stats:
    """Zero-variance, all-correct and spurious-variance groups of one run's training register."""
    input:
        groups="results/runs/{run}/groups.jsonl",
        code=sources("stats"),
    output:
        "results/runs/{run}/group_stats.json",
    conda:
        software_env()
    log:
        "results/logs/group_stats/{run}.log",
    benchmark:
        "results/benchmarks/group_stats/{run}.tsv",
    shell:
        "paired-rollouts group-stats --groups {input.groups} --out {output} > {log} 2>&1"

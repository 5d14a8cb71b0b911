# Stage 4: one GRPO training job per run of the matrix (docs/training.md#paper-scale-settings).
#
# Checkpoints are deliberately NOT declared outputs: Snakemake deletes a job's outputs before it
# retries it, and a retried job must find its checkpoints to resume from. The run's manifest is
# written last and lists the checkpoints; downstream rules depend on it. Neither is the run's
# tensorboard/ folder (training metrics, one event file per session, kept across retries).


wildcard_constraints:
    run="|".join(sorted(LAYOUT.runs("all"), key=len, reverse=True)) or "none",
    step=r"\d+",


rule train:
    """Train one run (condition, arm, seed) with TRL's GRPOTrainer; resumes from its last complete checkpoint."""
    input:
        pools=LAYOUT.pools(),
        manifest=LAYOUT.pool_manifest(),
        # `ancient`: a re-verified protocol does not retrain finished runs, but a failing verification
        # still stops this job before it starts (the verify rule runs first and fails).
        verification=ancient(LAYOUT.verification_file()),
        # the zero-shot calibration gate (rules/calibrate.smk): a missed registered band stops training
        calibration=ancient(LAYOUT.zero_shot_file()),
        model=MODEL,
        code=sources(*SIMULATOR, "training"),
    output:
        groups=LAYOUT.groups("{run}"),
        # in Snakemake's report with the run's TensorBoard folder and command (report/training.rst)
        manifest=report(
            LAYOUT.manifest("{run}"),
            caption="../report/training.rst",
            category="Training runs",
            labels={"run": "{run}"},
        ),
    log:
        LAYOUT.log("train/{run}"),
    benchmark:
        LAYOUT.benchmark("train/{run}")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        settings=run_settings,
        model=folder_of("model"),
        out_dir=output_folder,
        conditions=CONDITIONS_JSON,
    shell:
        "paired-rollouts train --run {wildcards.run:q} --tasks-dir {params.tasks_dir:q} --model-dir {params.model:q} "
        "--verification {input.verification:q} --zero-shot {input.calibration:q} --settings {params.settings:q} "
        "--conditions {params.conditions:q} "
        "--out-dir {params.out_dir:q} > {log:q} 2>&1"


rule group_stats:
    """Zero-variance, all-correct and spurious-variance groups of one run's training register."""
    input:
        groups=rules.train.output.groups,
        code=sources("stats"),
    output:
        LAYOUT.group_stats("{run}"),
    log:
        LAYOUT.log("group_stats/{run}"),
    benchmark:
        LAYOUT.benchmark("group_stats/{run}")
    conda:
        software_env()
    params:
        conditions=CONDITIONS_JSON,
    shell:
        "paired-rollouts group-stats --groups {input.groups:q} --conditions {params.conditions:q} "
        "--out {output:q} > {log:q} 2>&1"


LEDGER += expand([rules.train.benchmark, rules.group_stats.benchmark], run=RUNS)

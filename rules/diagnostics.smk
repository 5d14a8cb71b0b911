# Stage 6: the luck-share diagnostic (K schedules x M samples per diagnostic task at a checkpoint) and
# the per-run completeness check that gates the decisions.


rule diagnose:
    """Diagnostic roll-outs: each diagnostic task under K paired schedules, M samples each."""
    input:
        pools=pool_files(),
        run_manifest=rules.train.output.manifest,
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation"),
    output:
        LAYOUT.diagnostic_episodes("{run}", "{step}"),
    log:
        res("logs/diagnose/{run}/step{step}.log"),
    benchmark:
        res("benchmarks/diagnose/{run}/step{step}.tsv")
    conda:
        software_env()
    params:
        tasks_dir=tasks_dir_of,
        settings=stage_settings("stack", "training", "evaluation", "diagnostics"),
        model=model_dir_param,
        checkpoint=checkpoint_dir,
        conditions=CONDITIONS_JSON,
    shell:
        "paired-rollouts diagnose --run {wildcards.run:q} --step {wildcards.step:q} --tasks-dir {params.tasks_dir:q} "
        "--checkpoint {params.checkpoint:q} --model-dir {params.model:q} --settings {params.settings:q} "
        "--conditions {params.conditions:q} --out {output:q} > {log:q} 2>&1"


rule luck_share:
    """One-way random-effects luck share per task, averaged and pooled, with a task bootstrap."""
    input:
        episodes=rules.diagnose.output[0],
        code=sources("stats"),
    output:
        LAYOUT.luck("{run}", "{step}"),
    log:
        res("logs/luck_share/{run}/step{step}.log"),
    benchmark:
        res("benchmarks/luck_share/{run}/step{step}.tsv")
    conda:
        software_env()
    params:
        resamples=SCALE["diagnostics"]["resamples"],
    shell:
        "paired-rollouts luck-share --episodes {input.episodes:q} --resamples {params.resamples:q} "
        "--out {output:q} > {log:q} 2>&1"


rule completeness:
    """Every expected episode and group present on the design's seeds, rows and steps, no stray file, pool
    hashes equal, one code version across attempts. `--strict`: an incomplete run fails here and is never
    analysed (the protocol reruns it)."""
    input:
        evals=eval_files_of,
        diagnostics=diagnostic_episode_files_of,
        luck=luck_files_of,
        groups=rules.train.output.groups,
        run_manifest=rules.train.output.manifest,
        pool_manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=sources("stats"),
    output:
        LAYOUT.complete("{run}"),
    log:
        res("logs/completeness/{run}.log"),
    benchmark:
        res("benchmarks/completeness/{run}.tsv")
    conda:
        software_env()
    params:
        settings=completeness_settings(),
        conditions=CONDITIONS_JSON,
        evals_dir=LAYOUT.eval_dir("{run}"),
        diagnostics_dir=LAYOUT.diagnostics_dir("{run}"),
    shell:
        "paired-rollouts completeness --run {wildcards.run:q} --settings {params.settings:q} --conditions {params.conditions:q} "
        "--evals-dir {params.evals_dir:q} --diagnostics {params.diagnostics_dir:q} --groups {input.groups:q} --run-manifest {input.run_manifest:q} "
        "--luck {input.luck:q} --pool-manifest {input.pool_manifest:q} --strict --out {output:q} > {log:q} 2>&1"

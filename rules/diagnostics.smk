# Stage 6: the luck-share diagnostic (K schedules x M samples per diagnostic task at a checkpoint) and
# the per-run completeness check that gates the decisions.


rule diagnose:
    """Diagnostic roll-outs: each diagnostic task under K paired schedules, M samples each."""
    input:
        pools=LAYOUT.pools(),
        run_manifest=rules.train.output.manifest,
        model=MODEL,
        code=sources(*SIMULATOR, "training", "evaluation"),
    output:
        LAYOUT.diagnostic_episodes("{run}", "{step}"),
    log:
        LAYOUT.log("diagnose/{run}/step{step}"),
    benchmark:
        LAYOUT.benchmark("diagnose/{run}/step{step}")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        settings=stage_settings("stack", "training", "evaluation", "diagnostics"),
        model=folder_of("model"),
        checkpoint=of_wildcards(LAYOUT.checkpoint_dir, "run", "step"),
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
        LAYOUT.log("luck_share/{run}/step{step}"),
    benchmark:
        LAYOUT.benchmark("luck_share/{run}/step{step}")
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
        evals=of_wildcards(LAYOUT.eval_files, "run"),
        diagnostics=of_wildcards(LAYOUT.diagnostic_episode_files, "run"),
        luck=of_wildcards(LAYOUT.luck_files, "run"),
        groups=rules.train.output.groups,
        run_manifest=rules.train.output.manifest,
        pool_manifest=LAYOUT.pool_manifest(),
        code=sources("stats"),
    output:
        LAYOUT.complete("{run}"),
    log:
        LAYOUT.log("completeness/{run}"),
    benchmark:
        LAYOUT.benchmark("completeness/{run}")
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


for _run in RUNS:
    LEDGER += expand(
        [rules.diagnose.benchmark, rules.luck_share.benchmark], run=_run, step=LAYOUT.diagnostic_steps(_run)
    )
LEDGER += expand(rules.completeness.benchmark, run=RUNS)

# Stage 6: the luck-share diagnostic (K schedules x M samples per diagnostic task at a checkpoint) and
# the per-run completeness check that gates the decisions.


rule diagnose:
    """Diagnostic roll-outs: each diagnostic task under K paired schedules, M samples each."""
    input:
        pools=pool_files(),
        run_manifest="results/runs/{run}/manifest.json",
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation"),
    output:
        "results/diagnostics/{run}/diag-step{step}.jsonl",
    params:
        tasks_dir=tasks_dir_of,
        settings=diagnostic_settings(),
        model=model_dir_param,
        checkpoint=checkpoint_dir,
    conda:
        software_env()
    log:
        "results/logs/diagnose/{run}/step{step}.log",
    benchmark:
        "results/benchmarks/diagnose/{run}/step{step}.tsv",
    shell:
        "paired-rollouts diagnose --run {wildcards.run} --step {wildcards.step} --tasks-dir {params.tasks_dir} "
        "--checkpoint {params.checkpoint} --model-dir {params.model} --settings {params.settings:q} "
        "--out {output} > {log} 2>&1"


rule luck_share:
    """One-way random-effects luck share per task, averaged and pooled, with a task bootstrap."""
    input:
        episodes="results/diagnostics/{run}/diag-step{step}.jsonl",
        code=sources("stats"),
    output:
        "results/diagnostics/{run}/luck-step{step}.json",
    params:
        resamples=SCALE["diagnostics"]["resamples"],
    conda:
        software_env()
    log:
        "results/logs/luck_share/{run}/step{step}.log",
    benchmark:
        "results/benchmarks/luck_share/{run}/step{step}.tsv",
    shell:
        "paired-rollouts luck-share --episodes {input.episodes} --resamples {params.resamples} "
        "--out {output} > {log} 2>&1"


rule completeness:
    """Every expected episode and group present, pool hashes equal, one code version across attempts."""
    input:
        evals=eval_files_of,
        diagnostics=diagnostic_episode_files_of,
        groups="results/runs/{run}/groups.jsonl",
        run_manifest="results/runs/{run}/manifest.json",
        pool_manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=sources("stats"),
    output:
        "results/runs/{run}/complete.json",
    params:
        expected=expected_evidence_of,
        evals_dir="results/evals/{run}",
        diagnostics_dir="results/diagnostics/{run}",
    conda:
        software_env()
    log:
        "results/logs/completeness/{run}.log",
    benchmark:
        "results/benchmarks/completeness/{run}.tsv",
    shell:
        "paired-rollouts completeness --run {wildcards.run} --expected {params.expected:q} "
        "--evals-dir {params.evals_dir} --diagnostics {params.diagnostics_dir} --groups {input.groups} --run-manifest {input.run_manifest} "
        "--pool-manifest {input.pool_manifest} --out {output} > {log} 2>&1"

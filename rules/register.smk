# The per-run register and its ACCEPT/REJECT report input: read at every scale (LLM or surrogate runs
# write the same files).


rule run_register:
    """One run's register (curves, AUC, final sets, luck per checkpoint, training curve, lineage); read
    by `paired-rollouts verify-run` for its ACCEPT/REJECT report."""
    input:
        complete=res("runs/{run}/complete.json"),
        evals=eval_files_of,
        luck=luck_files_of,
        groups=res("runs/{run}/groups.jsonl"),
        run_manifest=res("runs/{run}/manifest.json"),
        code=sources("stats"),
    output:
        res("runs/{run}/register.json"),
    params:
        run_dir=output_folder,
        results=results_root,
    conda:
        software_env()
    log:
        res("logs/run_register/{run}.log"),
    benchmark:
        res("benchmarks/run_register/{run}.tsv"),
    shell:
        "paired-rollouts run-register --run-dir {params.run_dir:q} --results {params.results:q} "
        "--out {output:q} > {log:q} 2>&1"

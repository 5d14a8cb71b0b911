# The per-run register and its ACCEPT/REJECT report input: read at every scale (LLM or surrogate runs
# write the same files). At surrogate scales a run's register takes well under a second, so one job
# writes the registers of a chunk of an arm's seeds (the chunks of `LAYOUT.surrogate_jobs()`) in one
# process: Snakemake's start-up per job would otherwise dominate. LLM scales keep one job per run. The
# curves register of each condition averages its runs' registers over the seeds (the curve figures, table 8).

if SURROGATE:
    for _job, _runs in LAYOUT.surrogate_jobs().items():

        rule:
            name:
                f"run_register_{_job.replace('-', '_')}"
            input:
                complete=of_runs(_runs, LAYOUT.complete),
                evals=of_runs(_runs, LAYOUT.eval_files),
                luck=of_runs(_runs, LAYOUT.luck_files),
                groups=of_runs(_runs, LAYOUT.groups),
                run_manifest=of_runs(_runs, LAYOUT.manifest),
                code=sources("stats"),
            output:
                of_runs(_runs, LAYOUT.register),
            log:
                res(f"logs/run_register/{_job}.log"),
            benchmark:
                res(f"benchmarks/run_register/{_job}.tsv")
            conda:
                software_env()
            params:
                runs=_runs,
                results=results_root_of,
            shell:
                "paired-rollouts run-register --runs {params.runs:q} --results {params.results:q} > {log:q} 2>&1"

else:

    rule run_register:
        """One run's register (curves, AUC, final sets, luck per checkpoint, training curve, lineage); read
        by `paired-rollouts verify-run` for its ACCEPT/REJECT report."""
        input:
            complete=LAYOUT.complete("{run}"),
            evals=eval_files_of,
            luck=luck_files_of,
            groups=LAYOUT.groups("{run}"),
            run_manifest=LAYOUT.manifest("{run}"),
            code=sources("stats"),
        output:
            LAYOUT.register("{run}"),
        log:
            res("logs/run_register/{run}.log"),
        benchmark:
            res("benchmarks/run_register/{run}.tsv")
        conda:
            software_env()
        params:
            run_dir=output_folder,
            results=results_root,
        shell:
            "paired-rollouts run-register --run-dir {params.run_dir:q} --results {params.results:q} "
            "--out {output:q} > {log:q} 2>&1"


rule curves_register:
    """One condition's mean curves and final sets per arm, over its runs' registers, and its runs' group
    statistics pooled per arm (docs/records.md 3.2)."""
    input:
        registers=condition_registers,
        group_stats=condition_group_stats,
        compare=condition_compared,
        code=sources("stats"),
    output:
        res("curves/{curves}.json"),
    log:
        res("logs/curves_register/{curves}.log"),
    benchmark:
        res("benchmarks/curves_register/{curves}.tsv")
    wildcard_constraints:
        curves="|".join(CURVE_CONDITIONS) or "none",
    conda:
        software_env()
    params:
        compare=compare_args,
    shell:
        "paired-rollouts curves-register --registers {input.registers:q} "
        "--group-stats {input.group_stats:q} {params.compare:q} --out {output:q} > {log:q} 2>&1"


rule cross_stack:
    """Runs repeated under a second accelerator stack and their differences (table 11; one results tree
    holds one stack, so here none is replicated unless manifests of another tree are added by hand)."""
    input:
        manifests=lambda wildcards: run_manifests(),
        registers=lambda wildcards: [res(f"runs/{run}/register.json") for run in RUNS],
        code=sources("stats"),
    output:
        LAYOUT.cross_stack(),
    log:
        res("logs/cross_stack.log"),
    benchmark:
        res("benchmarks/cross_stack.tsv")
    conda:
        software_env()
    shell:
        "paired-rollouts cross-stack --manifests {input.manifests:q} --registers {input.registers:q} "
        "--out {output:q} > {log:q} 2>&1"

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
                complete=LAYOUT.files(LAYOUT.complete, _runs),
                evals=LAYOUT.files(LAYOUT.eval_files, _runs),
                luck=LAYOUT.files(LAYOUT.luck_files, _runs),
                groups=LAYOUT.files(LAYOUT.groups, _runs),
                run_manifest=LAYOUT.files(LAYOUT.manifest, _runs),
                code=sources("stats"),
            output:
                LAYOUT.files(LAYOUT.register, _runs),
            log:
                LAYOUT.log(f"run_register/{_job}"),
            benchmark:
                LAYOUT.benchmark(f"run_register/{_job}")
            conda:
                software_env()
            params:
                runs=_runs,
                results=results_root,
            shell:
                "paired-rollouts run-register --runs {params.runs:q} --results {params.results:q} --out {output:q} "
                "> {log:q} 2>&1"

        if _job in STUDY_CHUNKS:
            LEDGER += [getattr(rules, f"run_register_{_job.replace('-', '_')}").benchmark]

else:

    rule run_register:
        """One run's register (curves, AUC, final sets, luck per checkpoint, training curve, lineage); read
        by `paired-rollouts verify-run` for its ACCEPT/REJECT report."""
        input:
            complete=LAYOUT.complete("{run}"),
            evals=of_wildcards(LAYOUT.eval_files, "run"),
            luck=of_wildcards(LAYOUT.luck_files, "run"),
            groups=LAYOUT.groups("{run}"),
            run_manifest=LAYOUT.manifest("{run}"),
            code=sources("stats"),
        output:
            LAYOUT.register("{run}"),
        log:
            LAYOUT.log("run_register/{run}"),
        benchmark:
            LAYOUT.benchmark("run_register/{run}")
        conda:
            software_env()
        params:
            run_dir=output_folder,
            results=results_root,
        shell:
            "paired-rollouts run-register --run-dir {params.run_dir:q} --results {params.results:q} "
            "--out {output:q} > {log:q} 2>&1"

    LEDGER += expand(rules.run_register.benchmark, run=RUNS)


rule curves_register:
    """One condition's mean curves and final sets per arm, over its runs' registers, and its runs' group
    statistics pooled per arm (docs/records.md 3.2)."""
    input:
        registers=of_runs(of_wildcards(LAYOUT.curve_runs, "curves"), LAYOUT.register),
        group_stats=of_runs(of_wildcards(LAYOUT.curve_runs, "curves"), LAYOUT.group_stats),
        compare=of_wildcards(LAYOUT.compared_curves, "curves"),
        code=sources("stats"),
    output:
        LAYOUT.curves("{curves}"),
    log:
        LAYOUT.log("curves_register/{curves}"),
    benchmark:
        LAYOUT.benchmark("curves_register/{curves}")
    wildcard_constraints:
        curves="|".join(LAYOUT.curve_conditions()) or "none",
    conda:
        software_env()
    params:
        compare=lambda wildcards, input: ["--compare", *input.compare] if input.compare else [],
    shell:
        "paired-rollouts curves-register --registers {input.registers:q} "
        "--group-stats {input.group_stats:q} {params.compare:q} --out {output:q} > {log:q} 2>&1"


rule cross_stack:
    """Runs repeated under a second accelerator stack and their differences (table 11; one results tree
    holds one stack, so here none is replicated unless manifests of another tree are added by hand)."""
    input:
        manifests=LAYOUT.files(LAYOUT.manifest),
        registers=LAYOUT.files(LAYOUT.register),
        code=sources("stats"),
    output:
        LAYOUT.cross_stack(),
    log:
        LAYOUT.log("cross_stack"),
    benchmark:
        LAYOUT.benchmark("cross_stack")
    conda:
        software_env()
    shell:
        "paired-rollouts cross-stack --manifests {input.manifests:q} --registers {input.registers:q} "
        "--out {output:q} > {log:q} 2>&1"


LEDGER += expand(rules.curves_register.benchmark, curves=LAYOUT.curve_conditions())
LEDGER += expand(rules.cross_stack.benchmark)

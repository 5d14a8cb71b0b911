# Stage 10: published versus reproduced. Every number the paper reports that the pipeline computes
# (data/published/paper.yaml) beside this run's register value, with whether it agrees within the
# published rounding or why it cannot be computed at this scale.


rule probe_bandit:
    """The exact aligned-scalar bandit (paper appendix A.1): the same at every scale."""
    input:
        code=sources("probe"),
    output:
        res("probe/bandit.json"),
    log:
        res("logs/probe/bandit.log"),
    benchmark:
        res("benchmarks/probe/bandit.tsv")
    conda:
        software_env()
    shell:
        "paired-rollouts probe bandit --out {output:q} > {log:q} 2>&1"


rule compare:
    """comparison.json: each published number, the reproduced one, their difference and agreement."""
    input:
        registers=comparison_inputs(),
        published=config["published"],
        manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=sources("compare"),
    output:
        json=res("comparison.json"),
        html=report(
            res("comparison.html"),
            caption="../report/comparison.rst",
            category="Published versus reproduced",
        ),
    log:
        res("logs/compare.log"),
    benchmark:
        res("benchmarks/compare.tsv")
    conda:
        software_env()
    params:
        root=results_root,
        tasks_dir=manifest_folder,
        scale=SCALE_NAME,
        label=SCALE["label"],
    shell:
        "paired-rollouts compare --results {params.root:q} --published {input.published:q} "
        "--tasks-dir {params.tasks_dir:q} --scale-name {params.scale:q} --scale {params.label:q} "
        "--out {output.json:q} --html {output.html:q} > {log:q} 2>&1"


rule ledger:
    """The cost ledger from every job's benchmark file, beside the paper's budget (PDF and report)."""
    input:
        benchmarks=benchmark_files(),
        published=config["published"],
        code=sources("compare"),
    output:
        json=res("ledger.json"),
        html=report(res("ledger.html"), caption="../report/ledger.rst", category="Cost ledger"),
    log:
        res("logs/ledger.log"),
    benchmark:
        res("benchmarks/ledger.tsv")
    conda:
        software_env()
    params:
        root=benchmark_root,
        accelerator=ACCELERATOR,
        runs=len(RUNS),
    shell:
        "paired-rollouts ledger --benchmarks {input.benchmarks:q} --root {params.root:q} "
        "--accelerator {params.accelerator:q} --runs {params.runs:q} --published {input.published:q} "
        "--out {output.json:q} --html {output.html:q} > {log:q} 2>&1"

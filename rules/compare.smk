# Stage 10: published versus reproduced. Every number the paper reports that the pipeline computes
# (data/published/paper.yaml) beside this run's register value, with whether it agrees within the
# published rounding or why it cannot be computed at this scale.


rule probe_bandit:
    """The exact aligned-scalar bandit (paper appendix A.1): the same at every scale."""
    input:
        code=sources("probe"),
    output:
        LAYOUT.bandit_file(),
    log:
        LAYOUT.log("probe/bandit"),
    benchmark:
        LAYOUT.benchmark("probe/bandit")
    conda:
        software_env()
    shell:
        "paired-rollouts probe bandit --out {output:q} > {log:q} 2>&1"


rule compare:
    """comparison.json: each published number, the reproduced one, their difference and agreement."""
    input:
        # every register a published number may name (docs/compare.md): a changed one reruns the comparison
        registers=[
            *LAYOUT.decision_files(),
            *LAYOUT.probe_files(),
            rules.probe_bandit.output[0],
            *LAYOUT.files(LAYOUT.luck_files),
            *LAYOUT.files(LAYOUT.group_stats),
            rules.reference.output[0],
        ],
        published=config["published"],
        manifest=LAYOUT.pool_manifest(),
        code=sources("compare"),
    output:
        json=res("comparison.json"),
        html=report(
            res("comparison.html"),
            caption="../report/comparison.rst",
            category="Published versus reproduced",
        ),
    log:
        LAYOUT.log("compare"),
    benchmark:
        LAYOUT.benchmark("compare")
    conda:
        software_env()
    params:
        root=results_root,
        tasks_dir=folder_of("manifest"),
        scale=SCALE_NAME,
        label=SCALE["label"],
    shell:
        "paired-rollouts compare --results {params.root:q} --published {input.published:q} "
        "--tasks-dir {params.tasks_dir:q} --scale-name {params.scale:q} --scale {params.label:q} "
        "--out {output.json:q} --html {output.html:q} > {log:q} 2>&1"


LEDGER += expand([rules.probe_bandit.benchmark, rules.compare.benchmark])


rule ledger:
    """The cost ledger from every job's benchmark file, beside the paper's budget (PDF and report)."""
    input:
        benchmarks=lambda wildcards: LEDGER,
        published=config["published"],
        code=sources("compare"),
    output:
        json=res("ledger.json"),
        html=report(res("ledger.html"), caption="../report/ledger.rst", category="Cost ledger"),
    log:
        LAYOUT.log("ledger"),
    benchmark:
        LAYOUT.benchmark("ledger")
    conda:
        software_env()
    params:
        results=results_root,
        accelerator=ACCELERATOR,
        runs=len(RUNS),
    shell:
        "paired-rollouts ledger --benchmarks {input.benchmarks:q} --results {params.results:q} "
        "--accelerator {params.accelerator:q} --runs {params.runs:q} --published {input.published:q} "
        "--out {output.json:q} --html {output.html:q} > {log:q} 2>&1"

# Stage 10: published versus reproduced. Every number the paper reports that the pipeline computes
# (data/published/paper.yaml) beside this run's register value, with whether it agrees within the
# published rounding or why it cannot be computed at this scale.


rule probe_bandit:
    """The exact aligned-scalar bandit (paper appendix A.1): the same at every scale."""
    input:
        code=sources("probe"),
    output:
        f"{RESULTS}/probe/bandit.json",
    conda:
        software_env()
    log:
        f"{RESULTS}/logs/probe/bandit.log",
    benchmark:
        f"{RESULTS}/benchmarks/probe/bandit.tsv"
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
        f"{RESULTS}/comparison.json",
    params:
        root=results_root,
        tasks_dir=manifest_folder,
        scale=SCALE_NAME,
        label=SCALE["label"],
    conda:
        software_env()
    log:
        f"{RESULTS}/logs/compare.log",
    benchmark:
        f"{RESULTS}/benchmarks/compare.tsv"
    shell:
        "paired-rollouts compare --results {params.root:q} --published {input.published:q} "
        "--tasks-dir {params.tasks_dir:q} --scale {params.scale:q} --scale-label {params.label:q} "
        "--out {output:q} > {log:q} 2>&1"

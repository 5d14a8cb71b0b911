# Stage 7: the pre-registered decisions with the paired bootstrap (analysis_spec sections 2-3).
# Thresholds come from the frozen machine-readable rules, so editing one reruns only decisions and
# the tables that show them.

wildcard_constraints:
    condition=r"c2|c4",


rule decide:
    """Apply H1a, H2a/H2b, H3 and H5 to the complete runs of one condition."""
    input:
        evals=decision_eval_files,
        groups=decision_group_files,
        luck=decision_luck_files,
        complete=decision_complete_files,
        reference=reference_eval_files,
        rules=config["decision_rules"],
        verification=ancient(verification_file()),
        pool_manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=sources("stats", "prereg"),
    output:
        report("results/decisions/{condition}.json", caption="../report/decision.rst", category="Decisions",
               labels={"condition": "{condition}"}),
    params:
        condition=upper_condition,
        eval_dirs=decision_eval_dirs,
        reference_dirs=reference_eval_dirs,
    conda:
        software_env()
    log:
        "results/logs/decide/{condition}.log",
    benchmark:
        "results/benchmarks/decide/{condition}.tsv",
    shell:
        "paired-rollouts decide --condition {params.condition} --episodes {params.eval_dirs} "
        "--groups {input.groups} --luck {input.luck} --complete {input.complete} "
        "--reference-episodes {params.reference_dirs} --rules {input.rules} "
        "--manifest {input.pool_manifest} --out {output} > {log} 2>&1"

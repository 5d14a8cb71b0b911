# Stage 7: the pre-registered decisions with the paired bootstrap (docs/analysis.md#decisions).
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
        report(res("decisions/{condition}.json"), caption="../report/decision.rst", category="Decisions",
               labels={"condition": "{condition}"}),
    params:
        condition=upper_condition,
        eval_dirs=decision_eval_dirs,
        reference_dirs=reference_eval_dirs,
        seeds=decision_seeds,
    conda:
        software_env()
    log:
        res("logs/decide/{condition}.log"),
    benchmark:
        res("benchmarks/decide/{condition}.tsv"),
    shell:
        "paired-rollouts decide --condition {params.condition:q} --seeds {params.seeds:q} "
        "--episodes {params.eval_dirs:q} "
        "--groups {input.groups:q} --luck {input.luck:q} --complete {input.complete:q} "
        "--reference-episodes {params.reference_dirs:q} --rules {input.rules:q} "
        "--manifest {input.pool_manifest:q} --out {output:q} > {log:q} 2>&1"

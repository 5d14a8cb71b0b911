# Stage 7: the pre-registered decisions with the paired bootstrap (docs/analysis.md#decisions).
# Thresholds come from the frozen machine-readable rules, so editing one reruns only decisions and
# the tables that show them.


wildcard_constraints:
    condition=r"c2|c4",


rule decide:
    """Apply H1a, H2a/H2b, H3 and H5 to the complete runs of one condition."""
    input:
        evals=files_of_runs(decision_runs, LAYOUT.eval_files),
        groups=files_of_runs(decision_runs, LAYOUT.groups),
        luck=files_of_runs(decision_runs, LAYOUT.step0_luck),
        complete=files_of_runs(decision_runs, LAYOUT.complete),
        reference=files_of_runs(reference_runs, LAYOUT.eval_files),
        rules=config["decision_rules"],
        verification=ancient(LAYOUT.verification_file()),
        pool_manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=sources("stats", "prereg"),
    output:
        report(
            LAYOUT.decision("{condition}"),
            caption="../report/decision.rst",
            category="Decisions",
            labels={"condition": "{condition}"},
        ),
    log:
        res("logs/decide/{condition}.log"),
    benchmark:
        res("benchmarks/decide/{condition}.tsv")
    conda:
        software_env()
    params:
        condition=upper_condition,
        eval_dirs=files_of_runs(decision_runs, LAYOUT.eval_dir),
        reference_dirs=reference_eval_dirs,
        seeds=decision_seeds,
    shell:
        "paired-rollouts decide --condition {params.condition:q} --seeds {params.seeds:q} "
        "--episodes {params.eval_dirs:q} "
        "--groups {input.groups:q} --luck {input.luck:q} --complete {input.complete:q} "
        "--reference-episodes {params.reference_dirs:q} --rules {input.rules:q} "
        "--manifest {input.pool_manifest:q} --out {output:q} > {log:q} 2>&1"


# The registered later tiers (target `tiers`): each comparison of the tiers' run matrix measured with
# tier 1's estimators (docs/design.md#tiers). The registered predictions judge these numbers (rules/
# predictions.smk); no frozen rule decides a tier comparison on its own.
rule decide_tier:
    """AUC gap, challenge and held-out gaps, spurious rates and luck share of one tier comparison."""
    input:
        evals=files_of_runs(tier_runs, LAYOUT.eval_files),
        groups=files_of_runs(tier_runs, LAYOUT.groups),
        luck=files_of_runs(tier_runs, LAYOUT.step0_luck),
        complete=files_of_runs(tier_runs, LAYOUT.complete),
        reference=files_of_runs(reference_runs, LAYOUT.eval_files),
        rules=config["decision_rules"],
        verification=ancient(LAYOUT.verification_file()),
        amendment=ancient(LAYOUT.amendment_verification_file()),
        pool_manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=sources("stats", "prereg", "design.py"),
    output:
        LAYOUT.tier_decision("{comparison}"),
    log:
        res("logs/decide/tiers/{comparison}.log"),
    benchmark:
        res("benchmarks/decide/tiers/{comparison}.tsv")
    wildcard_constraints:
        comparison="|".join(TIER_COMPARISONS) or "none",
    conda:
        software_env()
    params:
        condition=tier_condition,
        arms=tier_arms,
        scaling=tier_scaling,
        eval_dirs=files_of_runs(tier_runs, LAYOUT.eval_dir),
        reference_dirs=reference_eval_dirs,
        seeds=tier_seeds,
        conditions=CONDITIONS_JSON,
    shell:
        "paired-rollouts decide --comparison {wildcards.comparison:q} --condition {params.condition:q} "
        "--arms {params.arms:q} --scaling {params.scaling:q} --conditions {params.conditions:q} "
        "--seeds {params.seeds:q} --episodes {params.eval_dirs:q} --groups {input.groups:q} --luck {input.luck:q} "
        "--complete {input.complete:q} --reference-episodes {params.reference_dirs:q} --rules {input.rules:q} "
        "--manifest {input.pool_manifest:q} --out {output:q} > {log:q} 2>&1"


# The registered predictions (amendment A2) judged on the registers: tier 1's alone for the study's
# document (the tiers' predictions then read "not run"), every register for the tiers' document.
for _name, _decisions, _out in (
    ("predictions", decision_files(), res("decisions/predictions.json")),
    ("predictions_tiers", decision_files() + tier_decision_files(), res("decisions/tiers/predictions.json")),
):

    rule:
        name:
            _name
        input:
            decisions=_decisions,
            probe=probe_files(),
            tier_rules=config["prereg"]["tier_rules"],
            amendment=LAYOUT.amendment_verification_file(),
            code=sources("stats", "prereg"),
        output:
            _out,
        log:
            res(f"logs/decide/{_name}.log"),
        benchmark:
            res(f"benchmarks/decide/{_name}.tsv")
        conda:
            software_env()
        params:
            group_size=SCALE["training"]["num_generations"],
        shell:
            "paired-rollouts predictions --tier-rules {input.tier_rules:q} --verification {input.amendment:q} "
            "--decisions {input.decisions:q} --probe {input.probe:q} --group-size {params.group_size:q} "
            "--out {output:q} > {log:q} 2>&1"

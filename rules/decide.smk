# Stage 7: the pre-registered decisions with the paired bootstrap (docs/analysis.md#decisions).
# Thresholds come from the frozen machine-readable rules, so editing one reruns only decisions and
# the tables that show them.


wildcard_constraints:
    condition="|".join(c.lower() for c in study.decided_comparisons()),


# A decision reads its comparison's runs (LAYOUT.comparison_runs) and the clean-trained reference (C0).
_decided = of_wildcards(LAYOUT.comparison_runs, "condition")
_measured = of_wildcards(LAYOUT.comparison_runs, "comparison")


rule decide:
    """Apply H1a, H2a/H2b, H3 and H5 to the complete runs of one condition."""
    input:
        evals=of_runs(_decided, LAYOUT.eval_files),
        groups=of_runs(_decided, LAYOUT.groups),
        luck=of_runs(_decided, LAYOUT.step0_luck),
        complete=of_runs(_decided, LAYOUT.complete),
        reference=LAYOUT.files(LAYOUT.eval_files, LAYOUT.runs_of("C0")),
        rules=config["decision_rules"],
        verification=ancient(LAYOUT.verification_file()),
        pool_manifest=LAYOUT.pool_manifest(),
        code=sources("stats", "prereg"),
    output:
        report(
            LAYOUT.decision("{condition}"),
            caption="../report/decision.rst",
            category="Decisions",
            labels={"condition": "{condition}"},
        ),
    log:
        LAYOUT.log("decide/{condition}"),
    benchmark:
        LAYOUT.benchmark("decide/{condition}")
    conda:
        software_env()
    params:
        condition=lambda wildcards: wildcards.condition.upper(),
        eval_dirs=of_runs(_decided, LAYOUT.eval_dir),
        reference_dirs=reference_eval_dirs,
        # the design's seeds: a hypothesis is decided only when every one of their pairs is admitted
        seeds=lambda wildcards: SCALE["seeds"][wildcards.condition.upper()],
        # each complete.json must have been checked against the evidence these settings call for
        settings=completeness_settings(),
        conditions=CONDITIONS_JSON,
    shell:
        "paired-rollouts decide --condition {params.condition:q} --seeds {params.seeds:q} "
        "--settings {params.settings:q} --conditions {params.conditions:q} "
        "--episodes {params.eval_dirs:q} "
        "--groups {input.groups:q} --luck {input.luck:q} --complete {input.complete:q} "
        "--reference-episodes {params.reference_dirs:q} --rules {input.rules:q} "
        "--verification {input.verification:q} --manifest {input.pool_manifest:q} --out {output:q} > {log:q} 2>&1"


LEDGER += expand(rules.decide.benchmark, condition=LAYOUT.decision_conditions())


# The registered later tiers (target `tiers`): each comparison of the tiers' run matrix measured with
# tier 1's estimators (docs/design.md#tiers). The registered predictions judge these numbers (rules/
# predictions.smk); no frozen rule decides a tier comparison on its own.
rule decide_tier:
    """AUC gap, challenge and held-out gaps, spurious rates and luck share of one tier comparison."""
    input:
        evals=of_runs(_measured, LAYOUT.eval_files),
        groups=of_runs(_measured, LAYOUT.groups),
        luck=of_runs(_measured, LAYOUT.step0_luck),
        complete=of_runs(_measured, LAYOUT.complete),
        reference=LAYOUT.files(LAYOUT.eval_files, LAYOUT.runs_of("C0")),
        rules=config["decision_rules"],
        verification=ancient(LAYOUT.verification_file()),
        amendment=ancient(LAYOUT.amendment_verification_file()),
        pool_manifest=LAYOUT.pool_manifest(),
        code=sources("stats", "prereg", "design.py"),
    output:
        LAYOUT.tier_decision("{comparison}"),
    log:
        LAYOUT.log("decide/tiers/{comparison}"),
    benchmark:
        LAYOUT.benchmark("decide/tiers/{comparison}")
    wildcard_constraints:
        comparison="|".join(LAYOUT.tier_comparisons()) or "none",
    conda:
        software_env()
    params:
        condition=of_comparison("condition"),
        arms=of_comparison("arms"),
        scaling=of_comparison("scaling"),
        eval_dirs=of_runs(_measured, LAYOUT.eval_dir),
        reference_dirs=reference_eval_dirs,
        seeds=of_comparison("seeds"),
        conditions=CONDITIONS_JSON,
        settings=completeness_settings(),
    shell:
        "paired-rollouts decide --comparison {wildcards.comparison:q} --condition {params.condition:q} "
        "--settings {params.settings:q} "
        "--arms {params.arms:q} --scaling {params.scaling:q} --conditions {params.conditions:q} "
        "--seeds {params.seeds:q} --episodes {params.eval_dirs:q} --groups {input.groups:q} --luck {input.luck:q} "
        "--complete {input.complete:q} --reference-episodes {params.reference_dirs:q} --rules {input.rules:q} "
        "--verification {input.verification:q} --manifest {input.pool_manifest:q} --out {output:q} > {log:q} 2>&1"


# The registered predictions (amendment A2) judged on the registers: tier 1's alone for the study's
# document (the tiers' predictions then read "not run"), every register for the tiers' document.
for _name, _tier, _decisions in (
    ("predictions", "study", LAYOUT.decision_files()),
    ("predictions_tiers", "tiers", LAYOUT.decision_files() + LAYOUT.tier_decision_files()),
):

    rule:
        name:
            _name
        input:
            decisions=_decisions,
            probe=LAYOUT.probe_files(),
            tier_rules=config["prereg"]["tier_rules"],
            amendment=LAYOUT.amendment_verification_file(),
            code=sources("stats", "prereg"),
        output:
            LAYOUT.predictions(_tier),
        log:
            LAYOUT.log(f"decide/{_name}"),
        benchmark:
            LAYOUT.benchmark(f"decide/{_name}")
        conda:
            software_env()
        params:
            group_size=SCALE["training"]["num_generations"],
        shell:
            "paired-rollouts predictions --tier-rules {input.tier_rules:q} --verification {input.amendment:q} "
            "--decisions {input.decisions:q} --probe {input.probe:q} --group-size {params.group_size:q} "
            "--out {output:q} > {log:q} 2>&1"


LEDGER += expand(rules.predictions.benchmark)  # tier 1's (table 6)

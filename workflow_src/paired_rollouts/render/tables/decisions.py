"""Tables of the tier-1 decision registers: registered outcomes (2), primary endpoints (3, 4) and the
C2 secondary endpoints (7)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.sources import Doc
from paired_rollouts.render.tables.model import (
    ARM_LABELS,
    DELTA,
    GE,
    I_,
    LE,
    NON_PAPER_POOLS,
    Context,
    P,
    TableModel,
    _decisions,
    _diff,
    _not_computed,
    _num,
    _run_label,
    _verdict,
    _verdict_word,  # noqa: F401
    regime_label,
)


def _outcome_rows(
    table: TableModel,
    hyp: str,
    condition: str,
    criteria: list[tuple],
    passes: bool | None,
    reason: str | None = None,
    why: str | None = None,
) -> None:
    """One hypothesis: a row per criterion (text, needed, got, interval, met); outcome on the first."""
    if reason is not None:
        table.add(
            [
                hyp,
                condition,
                "---",
                "",
                fmt.missing(table.notes, reason),
                "",
                "",
                fmt.mark(None, table.notes, reason),
            ]
        )
        return
    for index, (text, needed, got, interval, met) in enumerate(criteria):
        table.add(
            [
                Tex(r"\textbf{" + fmt.escape(hyp) + "}") if index == 0 else "",
                condition if index == 0 else "",
                text,
                needed,
                got,
                interval,
                Tex("yes" if met else "no")
                if met is not None
                else fmt.missing(table.notes, "criterion not reported"),
                fmt.mark(passes, table.notes, why or "not decided") if index == 0 else "",
            ]
        )


def _count(k: int, n: int) -> Tex:
    """``k/n`` (checkpoints, seeds or runs that meet a criterion, of all)."""
    return Tex(f"{fmt.integer(k)}/{fmt.integer(n)}")


def _majority_of(n: int) -> Tex:
    return Tex(f"$>$ {fmt.integer(n)}/2")


def _every_seed_positive(label: str, diffs: list[float | None], positive: int, rule: Doc) -> tuple:
    """The criterion row 'every seed pair's difference is positive' (H2a/H2b and H3): of the seeds
    shown, how many the register counts positive."""
    return (
        label,
        _count(len(diffs), len(diffs)),
        _count(positive, len(diffs)),
        "",
        rule.opt("every_seed_positive"),
    )


def _computed(table: TableModel, decision: Doc, name: str, condition: str) -> Doc | None:
    """A decision register's block of hypothesis ``name``, or None after one row saying why it is absent."""
    block = src.hypothesis(decision, name)
    reason = _not_computed(block)
    if reason is not None:
        _outcome_rows(table, name, condition, [], None, reason)
        return None
    return block


def _h1a_rows(table: TableModel, decision: Doc) -> None:
    condition = decision.req("condition")
    block = _computed(table, decision, "H1a", condition)
    if block is None:
        return
    if condition == "C4":
        rule = block.sub("rule")
        within = rule.number("independent_within")
        expected = block.number("expected_independent_rate")
        at_most = rule.number("paired_at_most")
        criteria = [
            (
                "spurious rate, independent arm (all-correct groups)",
                Tex(f"{fmt.prop(expected)}\\,$\\pm$\\,{fmt.prop(within)}"),
                fmt.prop(block.number("spurious_rate_independent"), 3, table.notes, "no all-correct group"),
                "",
                rule.opt("independent_criterion"),
            ),
            (
                "spurious rate, paired arm",
                Tex(f"{LE} {fmt.prop(at_most)}"),
                fmt.prop(block.number("spurious_rate_paired"), 3, table.notes, "no all-correct group"),
                "",
                rule.opt("paired_criterion"),
            ),
        ]
    else:
        rule = block.sub("rule")
        runs = block.req("runs")
        n = len(runs) if isinstance(runs, dict) else 0
        luck_ok = int(block.number("runs_meeting_luck"))
        share_ok = int(block.number("runs_meeting_sharing"))
        lam_min = block.number("luck_share_step0_min")
        low_min = block.number("luck_share_step0_lower_min")
        criteria = [
            (
                "luck share at step 0, smallest over runs",
                Tex(f"{GE} {fmt.prop(rule.number('lambda_at_least'))}"),
                fmt.prop(lam_min, 3, table.notes, "no luck share defined"),
                "",
                luck_ok == n and n > 0,
            ),
            (
                Tex("lower 95\\,\\% bound of the luck share, smallest"),
                Tex(f"$>$ {fmt.prop(rule.number('lower_bound_above'))}"),
                fmt.prop(low_min, 3, table.notes, "no luck-share interval"),
                "",
                luck_ok == n and n > 0,
            ),
            (
                "runs whose groups share seeds as designed",
                _count(n, n),
                _count(share_ok, n),
                "",
                share_ok == n and n > 0,
            ),
        ]
    _outcome_rows(table, "H1a", condition, criteria, _verdict(block), why=block.opt("reason"))


def _h2_rows(table: TableModel, decision: Doc, name: str) -> None:
    condition = decision.req("condition")
    block = _computed(table, decision, name, condition)
    if block is None:
        return
    rule = block.sub("rule")
    diffs = block.numbers("auc_difference_by_seed")
    criteria = [
        (
            f"mean AUC difference, paired $-$ independent ({regime_label(str(block.opt('validation_set', default='validation')))})",
            Tex(f"{GE} {fmt.prop(rule.number('mean_at_least'))}"),
            fmt.signed(block.number("auc_difference_mean")),
            fmt.interval(block.req("auc_difference_ci95"), notes=table.notes),
            rule.opt("mean_criterion"),
        ),
        _every_seed_positive(
            "seeds with a positive AUC difference",
            diffs,
            int(block.number("auc_difference_positive_seeds")),
            rule,
        ),
        (
            f"final success, paired $-$ independent ({regime_label(str(block.opt('final_set', default='final')))})",
            Tex(f"{GE} 0"),
            fmt.signed(block.number("final_difference_mean")),
            "",
            rule.opt("final_direction"),
        ),
    ]
    criteria = [(Tex(c[0]), *c[1:]) for c in criteria]
    _outcome_rows(table, name, condition, criteria, _verdict(block), why=block.opt("reason"))


def _h3_rows(table: TableModel, decision: Doc) -> None:
    block = _computed(table, decision, "H3", "C2")
    if block is None:
        return
    rule = block.sub("rule")
    diffs = block.numbers("difference_by_seed")
    steps = ", ".join(str(s) for s in block.req("steps"))
    criteria = [
        (
            Tex(f"challenge success, paired $-$ independent (steps {fmt.escape(steps)})"),
            Tex(f"{GE} {fmt.prop(rule.number('mean_at_least'))}"),
            fmt.signed(block.number("difference_mean")),
            fmt.interval(block.req("ci95"), notes=table.notes),
            rule.opt("mean_criterion"),
        ),
        _every_seed_positive(
            "seeds with a positive difference", diffs, int(block.number("difference_positive_seeds")), rule
        ),
    ]
    _outcome_rows(table, "H3", "C2", criteria, _verdict(block), why=block.opt("reason"))


def _h5_rows(table: TableModel, decision: Doc) -> None:
    block = _computed(table, decision, "H5", "C2")
    if block is None:
        return
    rule = block.sub("rule")
    bound = rule.number("lower_bound_above")
    lower = block.number("ci90_lower")
    criteria = [
        (
            Tex("held-out fault types, paired $-$ independent: lower 90\\,\\% bound"),
            Tex(f"$>$ {fmt.signed(bound)}"),
            fmt.signed(lower),
            fmt.interval(block.req("difference_ci90"), notes=table.notes),
            None if lower is None or bound is None else lower > bound,
        ),
        ("mean difference (reported)", "", fmt.signed(block.number("difference_mean")), "", None),
    ]
    _outcome_rows(table, "H5", "C2", criteria[:1], _verdict(block), why=block.opt("reason"))
    table.add(["", "", criteria[1][0], "", criteria[1][2], "", "", ""])


def _h1b_rows(table: TableModel, probe: Doc) -> None:
    verdict = probe.sub("verdict")
    n = int(verdict.number("checkpoints") or 0)
    outcome_wins = int(verdict.number("outcome_wins") or 0)
    transition_wins = int(verdict.number("transition_wins") or 0)
    trajectory = str(probe.req("trajectory"))
    criteria = [
        (
            Tex(f"outcome noise: MC variance paired $<$ independent (\\texttt{{{fmt.escape(trajectory)}}})"),
            _count(n, n),
            _count(outcome_wins, n),
            "",
            verdict.opt("outcome_noise_every_checkpoint"),
        ),
        (
            "transition noise: MC variance paired < resampled independent",
            _majority_of(n),
            _count(transition_wins, n),
            "",
            verdict.opt("transition_noise_majority"),
        ),
    ]
    _outcome_rows(table, "H1b", "C2", criteria, _verdict(verdict), why=verdict.opt("reason"))


def _p13_rows(table: TableModel, probe: Doc) -> None:
    """Registered prediction P13 (the probe): base condition by a factor of two, outcome ratio falls,
    transition ratio below one at a majority of checkpoints; the flags are the probe register's."""
    verdict = probe.sub("verdict")
    p13 = verdict.opt("p13")
    trajectory = str(probe.req("trajectory"))
    if not isinstance(p13, dict):
        _outcome_rows(
            table, "P13", "C2", [], None, reason=f"no P13 block in the probe register of {trajectory}"
        )
        return
    steps = src.probe_steps(probe)
    first, last = (str(steps[0]), str(steps[-1])) if steps else ("", "")
    ratios = verdict.opt("ratios_by_step", "outcome") or {}
    base_lr = _num(probe.opt("checkpoints", first, "outcome", "lhs_over_rhs")) if steps else None
    n = int(verdict.number("checkpoints") or 0)
    wins = int(verdict.number("transition_wins") or 0)
    criteria = [
        (
            Tex(f"base checkpoint: $L \\leq R/2$ (\\texttt{{{fmt.escape(trajectory)}}})"),
            Tex("$L/R \\leq$ 0.500"),
            Tex("$L/R$ = " + fmt.prop(base_lr, 3, table.notes, "no successful rollout (R = 0)")),
            "",
            p13.get("base_lhs_at_most_half_rhs"),
        ),
        (
            "outcome-noise MC ratio lower at the last checkpoint",
            Tex(f"step {fmt.escape(last)} $<$ step {fmt.escape(first)}"),
            Tex(
                fmt.prop(_num(ratios.get(last)), 3, table.notes, "ratio undefined")
                + " vs "
                + fmt.prop(_num(ratios.get(first)), 3, table.notes, "ratio undefined")
            ),
            "",
            p13.get("outcome_ratio_falls"),
        ),
        (
            "transition-noise MC ratio below one",
            _majority_of(n),
            _count(wins, n),
            "",
            p13.get("transition_ratio_below_one_majority"),
        ),
    ]
    flags = [c[4] for c in criteria]
    met = None if any(f is None for f in flags) else all(bool(f) for f in flags)
    _outcome_rows(table, "P13", "C2", criteria, met)


def registered_outcomes_table(ctx: Context) -> TableModel:
    table = TableModel(
        [
            Tex("Hyp."),
            Tex("Cond."),
            Tex("Criterion"),
            Tex("Needed"),
            Tex("Got"),
            Tex("Interval"),
            Tex("Met"),
            Tex("Outcome"),
        ],
        ["l", "l", r">{\raggedright\arraybackslash}p{5.6cm}", "r", "r", "r", "c", "l"],
        size=r"\footnotesize",
    )
    decisions = _decisions(ctx)
    by_condition = {d.req("condition"): d for d in decisions}
    if len(by_condition) != len(decisions):
        raise UserError("table 2: two decision registers for one condition; pass one per condition")
    c2, c4 = by_condition.get("C2"), by_condition.get("C4")
    if c2 is not None:
        _h1a_rows(table, c2)
    if c4 is not None:
        table.rule()
        _h1a_rows(table, c4)
    probes = [src.load_probe(p) for p in ctx.inputs.files("probe")]
    for probe in sorted(probes, key=lambda d: str(d.req("trajectory"))):
        table.rule()
        _h1b_rows(table, probe)
    for probe in sorted(probes, key=lambda d: str(d.req("trajectory"))):
        table.rule()
        _p13_rows(table, probe)
    if c2 is not None:
        table.rule()
        _h2_rows(table, c2, "H2a")
    if c4 is not None:
        table.rule()
        _h2_rows(table, c4, "H2b")
    if c2 is not None:
        table.rule()
        _h3_rows(table, c2)
        table.rule()
        _h5_rows(table, c2)
    if any(doc.opt("paper_pools") is False for doc in decisions):
        table.extra_notes.append(fmt.escape(NON_PAPER_POOLS))
    for doc in decisions:
        if doc.opt("complete") is False:
            missing = doc.opt("missing") or []
            table.extra_notes.append(
                fmt.escape(
                    f"{doc.req('condition')}: the register is incomplete ({len(missing)} item(s) missing: "
                    + "; ".join(str(m) for m in missing[:3])
                    + ")."
                )
            )
    _rules_note(ctx, decisions, table)
    return table


def _rules_note(ctx: Context, decisions: list[Doc], table: TableModel) -> None:
    """State whether the rules file given is the one the decisions applied (by sha256)."""
    rules = ctx.inputs.files("rules")
    if not rules:
        return
    from paired_rollouts import io

    digest = io.sha256_file(rules[0])
    for doc in decisions:
        recorded = doc.opt("rules_sha256")
        if recorded is None:
            continue
        status = "matches" if recorded == digest else "DIFFERS FROM"
        table.extra_notes.append(
            fmt.escape(
                f"{doc.req('condition')}: the rules file's sha256 ({digest[:12]}) {status} the one the decision "
                f"applied ({str(recorded)[:12]})."
            )
        )


# ---------------------------------------------------------------- tables 3 and 4: primary endpoints


def _primary_table(ctx: Context, condition: str, name: str, with_reference: bool) -> TableModel:
    decision = src.decision_for(_decisions(ctx), condition, f"table for {condition}")
    block = src.hypothesis(decision, name)
    headers = [Tex("Seed"), P, I_, DELTA]
    aligns = ["l", "r", "r", "r"]
    if with_reference:
        headers += [Tex("C0")]
        aligns += ["r"]
    headers += [P, I_, DELTA]
    aligns += ["r", "r", "r"]
    if with_reference:
        headers += [Tex("C0")]
        aligns += ["r"]
    span = 4 if with_reference else 3
    table = TableModel(headers, aligns, size=r"\small")
    reason = _not_computed(block)
    if reason is not None:
        table.groups = [(Tex(""), 1), (Tex("Validation AUC"), span), (Tex("Final test success"), span)]
        table.add([fmt.missing(table.notes, reason)] + [Tex("")] * (len(headers) - 1))
        return table
    val_set = str(block.opt("validation_set", default="validation"))
    final_set = str(block.opt("final_set", default="final"))
    table.groups = [
        (Tex(""), 1),
        (Tex(f"Validation AUC ({regime_label(val_set)})"), span),
        (Tex(f"Final test success ({regime_label(final_set)})"), span),
    ]
    seeds = [int(s) for s in block.req("seeds")]
    auc_p, auc_i = block.numbers("auc_paired"), block.numbers("auc_independent")
    auc_d = block.numbers("auc_difference_by_seed")
    fin_p, fin_i = block.numbers("final_paired_by_seed"), block.numbers("final_independent_by_seed")
    fin_d = block.numbers("final_difference_by_seed")  # lengths checked by records.read_decision_register
    ref_auc: dict[int, float | None] = {}
    ref_fin: dict[int, float | None] = {}
    ref_mean_auc = ref_mean_fin = None
    no_ref = "no clean-trained (C0) run with this seed"
    if with_reference:
        secondary = decision.opt("secondary")
        reference = secondary.get("clean_reference") if isinstance(secondary, dict) else None
        if reference:
            sec = decision.sub("secondary")
            for run in reference.get("runs", []):
                parsed = src.parse_run(run)
                if parsed is None:
                    continue
                ref_auc[parsed[2]] = _num(sec.opt("auc", run, val_set))
                ref_fin[parsed[2]] = _num(sec.opt("final", run, final_set))
            ref_mean_auc = _num(sec.opt("arms", "clean", "auc", val_set))
            ref_mean_fin = _num(sec.opt("arms", "clean", "final", final_set))
        else:
            no_ref = "no clean-trained (C0) reference in the decision register"
    for i, seed in enumerate(seeds):
        cells = [fmt.integer(seed), fmt.prop(auc_p[i]), fmt.prop(auc_i[i]), fmt.signed(auc_d[i])]
        if with_reference:
            cells.append(fmt.prop(ref_auc.get(seed), 3, table.notes, no_ref))
        cells += [fmt.prop(fin_p[i]), fmt.prop(fin_i[i]), fmt.signed(fin_d[i])]
        if with_reference:
            cells.append(fmt.prop(ref_fin.get(seed), 3, table.notes, no_ref))
        table.add(cells)
    table.rule()
    cells = [
        Tex("mean"),
        fmt.prop(block.number("auc_paired_mean")),
        fmt.prop(block.number("auc_independent_mean")),
        fmt.signed(block.number("auc_difference_mean")),
    ]
    if with_reference:
        cells.append(fmt.prop(ref_mean_auc, 3, table.notes, no_ref))
    cells += [
        fmt.prop(block.number("final_paired_mean")),
        fmt.prop(block.number("final_independent_mean")),
        fmt.signed(block.number("final_difference_mean")),
    ]
    if with_reference:
        cells.append(fmt.prop(ref_mean_fin, 3, table.notes, no_ref))
    table.add(cells)
    ci = block.req("auc_difference_ci95")
    cells = [Tex("95\\,\\% CI"), "", "", fmt.interval(ci, notes=table.notes)]
    if with_reference:
        cells.append("")
    cells += ["", "", ""] + ([""] if with_reference else [])
    table.add(cells)
    boot = decision.opt("bootstrap") or {}
    _published_primary(ctx, table, condition, with_reference)
    table.extra_notes.append(
        fmt.escape(
            f"{name} {_verdict_word(block)}; bootstrap: {boot.get('resamples')} resamples, "
            f"seed {boot.get('seed')}; {block.opt('tasks')} validation tasks, {block.opt('final_tasks', default='?')} "
            "final tasks."
        )
    )
    return table


def published_values(ctx: Context) -> dict[str, Any] | None:
    """Published values by entry id (data/published/paper.yaml) in the register's unit, or None without it."""
    files = ctx.inputs.files("published") if "published" in ctx.inputs.declared else []
    if not files:
        return None
    from paired_rollouts.compare.published import load_published

    return {
        e.id: (
            e.value / e.scale
            if isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
            else e.value
        )
        for e in load_published(files[0]).entries
    }


def _published_primary(ctx: Context, table: TableModel, condition: str, with_reference: bool) -> None:
    """The paper's values under the reproduced ones, in the same columns (tables 3 and 4)."""
    pub = published_values(ctx)
    if pub is None:
        return
    c = condition.lower()
    regime = "noisy_p025" if c == "c2" else "clean"
    table.rule()
    table.section("Published (the paper; per-seed values from the original study's registers)")
    seeds = sorted({int(k.rsplit(".s", 1)[1]) for k in pub if k.startswith(f"{c}.auc.paired.s")})
    for seed in seeds:
        fp, fi = pub.get(f"{c}.final.paired.s{seed}"), pub.get(f"{c}.final.independent.s{seed}")
        cells = [
            fmt.integer(seed),
            fmt.prop(pub.get(f"{c}.auc.paired.s{seed}")),
            fmt.prop(pub.get(f"{c}.auc.independent.s{seed}")),
            fmt.signed(pub.get(f"{c}.auc.difference.s{seed}")),
        ]
        if with_reference:
            cells.append(Tex(""))
        cells += [fmt.prop(fp), fmt.prop(fi), fmt.signed(_diff(fp, fi))]
        if with_reference:
            cells.append(Tex(""))
        table.add(cells)
    cells = [Tex("mean"), Tex(""), Tex(""), fmt.signed(pub.get(f"{c}.auc.difference.mean"))]
    if with_reference:
        cells.append(Tex(""))
    cells += [
        fmt.prop(pub.get(f"{c}.final.{regime}.paired.mean")),
        fmt.prop(pub.get(f"{c}.final.{regime}.independent.mean")),
        fmt.signed(pub.get(f"{c}.final.difference.mean")),
    ]
    if with_reference:
        cells.append(fmt.prop(pub.get(f"c0.final.{regime}.mean")))
    table.add(cells)
    low, high = pub.get(f"{c}.auc.difference.ci95.low"), pub.get(f"{c}.auc.difference.ci95.high")
    cells = [
        Tex("95\\,\\% CI"),
        "",
        "",
        fmt.interval([low, high], notes=table.notes) if low is not None else "",
    ]
    if with_reference:
        cells.append("")
    cells += ["", "", ""] + ([""] if with_reference else [])
    table.add(cells)


def c2_primary_table(ctx: Context) -> TableModel:
    return _primary_table(ctx, "C2", "H2a", with_reference=False)


def c4_primary_table(ctx: Context) -> TableModel:
    return _primary_table(ctx, "C4", "H2b", with_reference=True)


RECOVERY_SETS = ["noisy_p025", "challenge"]


def c2_secondary_table(ctx: Context) -> TableModel:
    decision = src.decision_for(_decisions(ctx), "C2", "table 7")
    final_regimes = ["clean", "noisy_p010", "noisy_p025", "heldout_types", "challenge"]
    table = TableModel(
        [Tex("Run"), Tex("Steps to $T$"), Tex("AUC")]
        + [regime_label(r) for r in final_regimes]
        + [regime_label(r) for r in RECOVERY_SETS]
        + [regime_label(r) for r in RECOVERY_SETS],
        ["l", "r", "r"] + ["r"] * (len(final_regimes) + 2 * len(RECOVERY_SETS)),
        groups=[
            (Tex(""), 3),
            (Tex("Final test success"), len(final_regimes)),
            (Tex("Recovery success"), len(RECOVERY_SETS)),
            (Tex("Exposed"), len(RECOVERY_SETS)),
        ],
        size=r"\scriptsize",
        tabcolsep="3pt",
    )
    if decision.opt("secondary") is None:
        table.add(
            [fmt.missing(table.notes, "the decision register has no secondary block")]
            + [""] * (len(table.headers) - 1)
        )
        return table
    sec = decision.sub("secondary")
    threshold = sec.number("threshold")
    curve = str(sec.req("threshold_curve"))
    steps = sec.req("steps")
    horizon = int(steps[-1]) if steps else None
    table.groups[0] = (Tex(f"threshold $T={fmt.prop(threshold)}$ on {regime_label(curve)}"), 3)
    stt = sec.req("steps_to_threshold")
    runs = sorted(
        {*stt.keys(), *(sec.opt("final") or {}).keys()},
        key=lambda r: (src.ARM_ORDER.get((src.parse_run(r) or ("", "", 0))[1], 9), r),
    )
    by_arm: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        parsed = src.parse_run(run)
        by_arm[parsed[1] if parsed else "other"].append(run)
    first = True
    for arm in sorted(by_arm, key=lambda a: src.ARM_ORDER.get(a, 9)):
        if not first:
            table.rule()
        first = False
        table.section(ARM_LABELS.get(arm, arm))
        for run in by_arm[arm]:
            entry = stt.get(run) or {}
            cells = [_run_label(run)]
            if run in stt:
                cells.append(
                    fmt.censored_steps(
                        _num(entry.get("step")), bool(entry.get("censored")), horizon, notes=table.notes
                    )
                )
            else:
                cells.append(fmt.missing(table.notes, "not in the register"))
            cells.append(fmt.prop(_num(sec.opt("auc", run, curve)), 3, table.notes, "not evaluated"))
            for regime in final_regimes:
                cells.append(fmt.prop(_num(sec.opt("final", run, regime)), 3, table.notes, "not evaluated"))
            for regime in RECOVERY_SETS:
                cells.append(
                    fmt.prop(
                        _num(sec.opt("recovery_success", run, regime)),
                        3,
                        table.notes,
                        "no exposed episode (or not in the register)",
                    )
                )
            for regime in RECOVERY_SETS:
                cells.append(
                    fmt.prop(
                        _num(sec.opt("exposure", run, regime)), 3, table.notes, "exposure not in the register"
                    )
                )
            table.add(cells)
        summary = sec.opt("steps_to_threshold_by_arm", arm) or {}
        reached = summary.get("reached")
        total = summary.get("runs")
        median = _num(summary.get("median_reached"))
        steps_cell = (
            Tex(
                f"{fmt.prop(median, 1) if median is not None else '---'} ({fmt.integer(int(reached))}/"
                f"{fmt.integer(int(total))})"
            )
            if reached is not None and total is not None
            else Tex("")
        )
        cells = [
            Tex(r"\textit{mean}"),
            steps_cell,
            fmt.prop(_num(sec.opt("arms", arm, "auc", curve)), 3, table.notes, "not evaluated"),
        ]
        for regime in final_regimes:
            cells.append(
                fmt.prop(_num(sec.opt("arms", arm, "final", regime)), 3, table.notes, "not evaluated")
            )
        table.add(cells + [Tex("")] * (2 * len(RECOVERY_SETS)))
    table.extra_notes.append(
        Tex(
            f"Steps to $T$: first evaluated step whose {regime_label(curve)} success reaches $T$, linearly "
            f"interpolated; $>${horizon if horizon is not None else '?'} = never reached (censored). "
            "Mean rows: median over the runs that reached $T$ (reached/runs), and means over seeds. Recovery success: "
            "true success among the final episodes that met at least one fault; exposed: the share of final episodes "
            "that met one."
        )
    )
    return table

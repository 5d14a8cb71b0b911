"""Tables of the tier-1 decision registers' endpoints: the primary ones by seed (3, 4) and C2's
secondary ones (7)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from paired_rollouts import design
from paired_rollouts.records import AucGap, Secondary
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.tables.model import (
    ARM_LABELS,
    DELTA,
    I_,
    Context,
    P,
    TableModel,
    _decisions,
    _diff,
    _not_computed,
    _num,
    _run_label,
    _verdict_word,
    regime_label,
)

# ---------------------------------------------------------------- tables 3 and 4: primary endpoints


def _clean_reference(
    secondary: Secondary, val_set: str, final_set: str
) -> tuple[dict[int, float | None], dict[int, float | None], float | None, float | None]:
    """The clean-trained (C0) reference of table 4: AUC and final success per seed, and their means."""
    ref_auc: dict[int, float | None] = {}
    ref_fin: dict[int, float | None] = {}
    for run in secondary.clean_reference.runs:
        seed = design.parse_run(run).seed
        ref_auc[seed] = _num(secondary.auc.get(run, {}).get(val_set))
        ref_fin[seed] = _num(secondary.final.get(run, {}).get(final_set))
    clean = secondary.arms.get("clean")
    mean_auc = _num(clean.auc.get(val_set)) if clean is not None else None
    mean_fin = _num(clean.final.get(final_set)) if clean is not None else None
    return ref_auc, ref_fin, mean_auc, mean_fin


def _primary_frame(with_reference: bool) -> TableModel:
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
    return TableModel(headers, aligns, size=r"\small")


def _primary_table(ctx: Context, condition: str, name: str, with_reference: bool) -> TableModel:
    decision = src.decision_for(_decisions(ctx), condition, f"table for {condition}")
    block: AucGap | None = decision.hypothesis(name)
    table = _primary_frame(with_reference)
    span = 4 if with_reference else 3
    reason = _not_computed(block)
    if reason is not None:
        table.groups = [(Tex(""), 1), (Tex("Validation AUC"), span), (Tex("Final test success"), span)]
        table.add([fmt.missing(table.notes, reason)] + [Tex("")] * (len(table.headers) - 1))
        return table
    val_set, final_set = block.validation_set, block.final_set
    table.groups = [
        (Tex(""), 1),
        (Tex(f"Validation AUC ({regime_label(val_set)})"), span),
        (Tex(f"Final test success ({regime_label(final_set)})"), span),
    ]
    ref_auc: dict[int, float | None] = {}
    ref_fin: dict[int, float | None] = {}
    ref_mean_auc = ref_mean_fin = None
    no_ref = "no clean-trained (C0) run with this seed"
    if with_reference and decision.secondary.clean_reference is not None:
        ref_auc, ref_fin, ref_mean_auc, ref_mean_fin = _clean_reference(
            decision.secondary, val_set, final_set
        )
    elif with_reference:
        no_ref = "no clean-trained (C0) reference in the decision register"
    rows = zip(
        block.seeds,
        block.auc_paired,
        block.auc_independent,
        block.auc_difference_by_seed,
        block.final_paired_by_seed,
        block.final_independent_by_seed,
        block.final_difference_by_seed,  # lengths checked by records.DecisionRegister
        strict=True,
    )
    for seed, auc_p, auc_i, auc_d, fin_p, fin_i, fin_d in rows:
        cells = [fmt.integer(seed), fmt.prop(auc_p), fmt.prop(auc_i), fmt.signed(auc_d)]
        if with_reference:
            cells.append(fmt.prop(ref_auc.get(seed), 3, table.notes, no_ref))
        cells += [fmt.prop(fin_p), fmt.prop(fin_i), fmt.signed(fin_d)]
        if with_reference:
            cells.append(fmt.prop(ref_fin.get(seed), 3, table.notes, no_ref))
        table.add(cells)
    table.rule()
    cells = [
        Tex("mean"),
        fmt.prop(block.auc_paired_mean),
        fmt.prop(block.auc_independent_mean),
        fmt.signed(block.auc_difference_mean),
    ]
    if with_reference:
        cells.append(fmt.prop(ref_mean_auc, 3, table.notes, no_ref))
    cells += [
        fmt.prop(block.final_paired_mean),
        fmt.prop(block.final_independent_mean),
        fmt.signed(block.final_difference_mean),
    ]
    if with_reference:
        cells.append(fmt.prop(ref_mean_fin, 3, table.notes, no_ref))
    table.add(cells)
    cells = [Tex("95\\,\\% CI"), "", "", fmt.interval(block.auc_difference_ci95, notes=table.notes)]
    if with_reference:
        cells.append("")
    cells += ["", "", ""] + ([""] if with_reference else [])
    table.add(cells)
    _published_primary(ctx, table, condition, with_reference)
    boot = decision.bootstrap
    table.extra_notes.append(
        fmt.escape(
            f"{name} {_verdict_word(block)}; bootstrap: {boot.resamples} resamples, "
            f"seed {boot.seed}; {block.tasks} validation tasks, {block.final_tasks} final tasks."
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


def _secondary_frame() -> TableModel:
    final_regimes = list(design.FINAL_REGIMES)
    return TableModel(
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


def _run_row(table: TableModel, sec: Secondary, run: str, horizon: int | None) -> list[Any]:
    """One run's steps to the threshold, AUC, final success per set, recovery success and exposure."""
    cells: list[Any] = [_run_label(run)]
    entry = sec.steps_to_threshold.get(run)
    if entry is not None:
        cells.append(fmt.censored_steps(_num(entry.step), entry.censored, horizon, notes=table.notes))
    else:
        cells.append(fmt.missing(table.notes, "not in the register"))
    cells.append(
        fmt.prop(_num(sec.auc.get(run, {}).get(sec.threshold_curve)), 3, table.notes, "not evaluated")
    )
    for regime in design.FINAL_REGIMES:
        cells.append(fmt.prop(_num(sec.final.get(run, {}).get(regime)), 3, table.notes, "not evaluated"))
    for regime in RECOVERY_SETS:
        value = _num(sec.recovery_success.get(run, {}).get(regime))
        cells.append(fmt.prop(value, 3, table.notes, "no exposed episode (or not in the register)"))
    for regime in RECOVERY_SETS:
        value = _num(sec.exposure.get(run, {}).get(regime))
        cells.append(fmt.prop(value, 3, table.notes, "exposure not in the register"))
    return cells


def _arm_mean_row(table: TableModel, sec: Secondary, arm: str) -> list[Any]:
    """An arm's median steps to the threshold (reached/runs), mean AUC and mean final success per set."""
    summary = sec.steps_to_threshold_by_arm.get(arm)
    steps_cell = Tex("")
    if summary is not None:
        median = _num(summary.median_reached)
        steps_cell = Tex(
            f"{fmt.prop(median, 1) if median is not None else '---'} ({fmt.integer(summary.reached)}/"
            f"{fmt.integer(summary.runs)})"
        )
    means = sec.arms.get(arm)
    cells: list[Any] = [
        Tex(r"\textit{mean}"),
        steps_cell,
        fmt.prop(
            _num(means.auc.get(sec.threshold_curve)) if means else None, 3, table.notes, "not evaluated"
        ),
    ]
    for regime in design.FINAL_REGIMES:
        cells.append(
            fmt.prop(_num(means.final.get(regime)) if means else None, 3, table.notes, "not evaluated")
        )
    return cells + [Tex("")] * (2 * len(RECOVERY_SETS))


def c2_secondary_table(ctx: Context) -> TableModel:
    sec = src.decision_for(_decisions(ctx), "C2", "table 7").secondary
    table = _secondary_frame()
    curve = sec.threshold_curve
    horizon = int(sec.steps[-1]) if sec.steps else None
    table.groups[0] = (Tex(f"threshold $T={fmt.prop(sec.threshold)}$ on {regime_label(curve)}"), 3)
    by_arm: dict[str, list[str]] = defaultdict(list)
    for run in sorted({*sec.steps_to_threshold, *sec.final}):
        by_arm[design.parse_run(run).arm].append(run)
    for index, arm in enumerate(sorted(by_arm, key=src.arm_rank)):
        if index:
            table.rule()
        table.section(ARM_LABELS.get(arm, arm))
        for run in by_arm[arm]:
            table.add(_run_row(table, sec, run, horizon))
        table.add(_arm_mean_row(table, sec, arm))
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

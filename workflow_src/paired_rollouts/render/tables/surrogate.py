"""Tables of the surrogate scales: power of the registered rules (13), the calibration (14), amendment A3's
predicted versus published gaps (17) and the power of the learning rules at the paper's effect (19)."""

from __future__ import annotations

from paired_rollouts import records
from paired_rollouts.render import format as fmt
from paired_rollouts.render.format import Tex
from paired_rollouts.render.tables.model import (
    Context,
    TableModel,
)

# ---------------------------------------------------------------- surrogate scales


def power_table(ctx: Context) -> TableModel:
    register = records.read_power_table(ctx.inputs.files("power")[0])
    hyps = register.hypotheses
    sizes = sorted({int(n) for h in hyps.values() for n in h.power})
    table = TableModel(
        [Tex("Hypothesis"), Tex("Condition"), Tex("passes (all pairs)")] + [Tex(f"$n={n}$") for n in sizes],
        ["l", "l", "c"] + ["r"] * len(sizes),
        groups=[
            (Tex(""), 1),
            (Tex(""), 1),
            (Tex(""), 1),
            (Tex("P(rule passes) with $n$ seed pairs"), len(sizes)),
        ],
    )
    for name in ("H2a", "H3", "H5", "H2b"):
        if name not in hyps:
            continue
        h = hyps[name]
        table.add(
            [name, h.condition, fmt.mark(h.passes_full)]
            + [fmt.prop(h.power.get(str(n)), 3, table.notes, "not estimated") for n in sizes]
        )
    table.extra_notes.append(
        Tex(
            f"Each cell: the share of {register.draws} draws of $n$ seed pairs (with replacement, from the "
            f"{register.full_pairs} admitted pairs) on which the registered rule passes; H5's interval uses "
            f"{register.bootstrap_resamples} bootstrap resamples per draw. $n=3$ is the paper's design."
        )
    )
    return table


SPREAD_TITLES = {
    "surrogate": "surrogate's spread",
    "paper": "paper's 3 seeds",
    "paper_normal": "normal, paper's SD",
}
VARIANT_TITLES = {"rule": "registered rule", "without_every_seed": "without every-seed clause"}


def shown_pairs(pairs: list[int]) -> list[int]:
    """The design sizes table 19 shows: the paper's 3 and the surrogate's 16 where computed, else the
    smallest and the largest."""
    chosen = [n for n in (3, 16) if n in pairs]
    return chosen if len(chosen) == 2 else sorted({min(pairs), max(pairs)})


def power_curves_table(ctx: Context) -> TableModel:
    register = records.read_power_curves(ctx.inputs.files("power_curves")[0])
    at = register.at_paper
    sizes = shown_pairs(register.pairs)
    spreads = register.spreads
    table = TableModel(
        [Tex("Hypothesis"), Tex("paper's effect"), Tex("Rule")]
        + [Tex(f"$n={n}$") for _ in spreads for n in sizes],
        ["l", "r", "l"] + ["r"] * (len(spreads) * len(sizes)),
        groups=[(Tex(""), 1), (Tex(""), 1), (Tex(""), 1)]
        + [(fmt.escape(SPREAD_TITLES.get(s, s)), len(sizes)) for s in spreads],
    )
    for name in ("H2a", "H3", "H2b"):
        if name not in register.hypotheses:
            continue
        h = register.hypotheses[name]
        for variant in register.variants:
            table.add(
                [name, fmt.signed(h.effect, 3), fmt.escape(VARIANT_TITLES.get(variant, variant))]
                + [fmt.prop(h.curve(spread, n, variant)[at], 3) for spread in spreads for n in sizes]
            )
    spread_sd = "; ".join(
        f"{name} SD {h.spreads['surrogate']['sd']:.4f} over {h.surrogate['seed_pairs']} pairs "
        f"(paper {h.spreads['paper']['sd']:.4f})"
        for name, h in register.hypotheses.items()
    )
    table.extra_notes.append(
        Tex(
            f"Each cell: the share of {register.draws:,} simulated designs of $n$ seed pairs on which the rule "
            "passes when the true effect is the paper's (the mean of its three seeds; H2's final-success "
            "clause at the paper's final-success effect). Seed $k$'s difference is that effect plus a "
            "between-seed residual: the surrogate's seed pairs at the calibrated point, or the paper's three "
            "seeds, centred and resampled; or a normal with the paper's SD (ddof 1). Between-seed SD of the "
            f"difference: {fmt.escape(spread_sd)}. $n=3$ is the paper's design; the full curves, effects "
            f"0-2$\\times$ and $n$ in {fmt.escape(', '.join(map(str, register.pairs)))}, are in the "
            "register and figure power\\_curves."
        )
    )
    return table


def calibration_table(ctx: Context) -> TableModel:
    calibration = records.read_calibration(ctx.inputs.files("calibration")[0])
    table = TableModel(
        [Tex("Target"), Tex("paper"), Tex("tolerance"), Tex("achieved"), Tex("passes")],
        ["l", "r", "r", "r", "c"],
    )
    for row in calibration.targets:
        table.add(
            [
                fmt.escape(row.target_name.replace("_", " ")),
                fmt.prop(row.target, 3),
                Tex("$\\pm$" + str(fmt.prop(row.tolerance, 3))),
                fmt.prop(row.achieved, 3, table.notes, "undefined"),
                fmt.mark(row.passes),
            ]
        )
    table.extra_notes.append(
        Tex(
            "Fitted knobs: "
            + ", ".join(f"{fmt.escape(k)} {v:.3f}" for k, v in sorted(calibration.knobs.items()))
            + f". Parameters: {len(calibration.theta)}."
        )
    )
    return table


VERDICT_TEXT = {
    "inside": "inside",
    "outside": "outside",
    "too_few_seed_pairs": "too few seed pairs",
    "not_computed": "not computed",
    "registered_too_late": "registered too late",
}


def prediction_table(ctx: Context) -> TableModel:
    """Amendment A3: each predicted gap (mean, interval over seed pairs) and whether the published gap lies
    inside it; AUC gaps as fractions, success gaps in percent points."""
    register = records.read_prediction_a3(ctx.inputs.files("prediction")[0])
    level = register.interval["level"]
    table = TableModel(
        [
            Tex("Gap (paired $-$ independent)"),
            Tex("seed pairs"),
            Tex("predicted"),
            Tex(f"{level:g}\\% interval"),
            Tex("published"),
            Tex("verdict"),
        ],
        ["l", "r", "r", "c", "r", "l"],
    )
    for gap in register.gaps:
        auc = gap.by_seed_key.endswith("auc_difference_by_seed")
        show, dp = (fmt.signed, 3) if auc else (fmt.signed_pp, 1)
        shown = fmt.interval(
            None if gap.interval is None else [v * (1 if auc else 100) for v in gap.interval],
            dp,
            table.notes,
            "no seed pairs",
        )
        table.add(
            [
                fmt.escape(gap.label + ("" if auc else " (points)")),
                fmt.integer(gap.seed_pairs),
                show(gap.mean, dp, table.notes, "no seed pairs"),
                shown,
                show(gap.published, dp),
                fmt.escape(VERDICT_TEXT[gap.verdict]),
            ]
        )
    lead = register.first_paired_checkpoint.time_epoch - register.amendment.gen_time_epoch
    table.extra_notes.append(
        Tex(
            f"A3 time-stamped {fmt.escape(register.amendment.gen_time)}, {lead:.0f} s "
            + ("before" if register.registered_before_paired_runs else "NOT before")
            + f" the first paired checkpoint; a verdict needs at least {register.min_seed_pairs} seed pairs. "
            f"Interval: percentile bootstrap over seed pairs ({int(register.interval['resamples'])} resamples)."
        )
    )
    return table

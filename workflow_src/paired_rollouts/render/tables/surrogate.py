"""Tables of the surrogate scales: power of the registered rules (13) and the calibration (14)."""

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

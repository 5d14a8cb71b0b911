"""The registered tiers by comparison (16)."""

from __future__ import annotations

from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.tables.model import (
    Context,
    TableModel,
)


def tier_comparisons_table(ctx: Context) -> TableModel:
    """Each tier comparison: the AUC gap on the condition's learning set with its interval, per seed, and
    the step-0 luck share (the dose-response axis)."""
    table = TableModel(
        [
            Tex("Comparison"),
            Tex("Arms"),
            Tex("Seeds"),
            Tex("AUC gap"),
            Tex("95\\% CI"),
            Tex("by seed"),
            Tex("$\\lambda_0$"),
            Tex("Complete"),
        ],
        ["l", "l", "r", "r", "l", r">{\raggedright\arraybackslash}p{3.2cm}", "r", "c"],
        size=r"\footnotesize",
    )
    for register in sorted(src.decisions(ctx.inputs.files("decisions")), key=lambda d: d.name):
        gap = register.gap
        arms = f"{register.treatment or 'paired'} $-$ {register.control or 'independent'}"
        by_seed = ", ".join(f"{v:+.3f}" for v in (gap.auc_difference_by_seed if gap else None) or [])
        ci = gap.auc_difference_ci95 if gap else None
        table.add(
            [
                fmt.escape(register.name),
                Tex(fmt.escape(arms.replace("$-$", "-")).replace("-", "$-$", 1)),
                fmt.integer(len(register.seeds)),
                fmt.signed(gap.auc_difference_mean if gap else None, 3, table.notes, "not computed"),
                fmt.escape(f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "n/a"),
                fmt.escape(by_seed),
                fmt.prop(register.step0_luck_share, 3, table.notes, "no luck-share file"),
                fmt.mark(register.complete),
            ]
        )
    table.extra_notes.append(
        Tex(
            "AUC of true success on the condition's learning set (at-training noise under tool faults, clean under "
            "grader flips), treatment minus control, paired percentile bootstrap over seed pairs and tasks. "
            "$\\lambda_0$: mean step-0 luck share of the comparison's runs. Tier comparisons are measured, not "
            "decided: the registered predictions (table 15) judge them."
        )
    )
    return table

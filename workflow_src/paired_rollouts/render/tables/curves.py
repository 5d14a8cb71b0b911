"""Tables of learning outcomes per run: final success under tool faults (8, from the run registers and
the conditions' curves registers) and one seed pair's curves (9, from the run registers)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from paired_rollouts import design, records
from paired_rollouts.errors import UserError
from paired_rollouts.records import RunRegister
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
    _run_label,
    regime_label,
)

# ---------------------------------------------------------------- table 8

# Table 8 (the paper's): the policies trained with grader noise (C4) on every final set (at_training, their
# own set, only they are evaluated on), and the differences of their means to the clean-trained reference
# (C0) and to the same arm trained with tool faults (C2).
SUBJECT, CLEAN_REFERENCE, TOOL_FAULTS = "C4", "C0", "C2"
FINAL_SETS = (*design.FINAL_REGIMES, "at_training")


def _fault_robustness_order(key: tuple[str, str]) -> tuple:
    """Table 8's subject first, then the study's order of conditions, then arms."""
    condition, arm = key
    return (condition != SUBJECT, src.condition_rank(condition), src.arm_rank(arm))


def _difference_rows(means: dict[tuple[str, str], Any]) -> list[tuple[str, tuple[str, str, str]]]:
    """The differences of the means table 8 shows: each subject arm minus the clean reference, and minus
    the same arm trained with tool faults."""
    rows = []
    for arm in ("paired", "independent"):
        if (SUBJECT, arm) not in means:
            continue
        if (CLEAN_REFERENCE, "clean") in means:
            rows.append((f"{SUBJECT} {arm} $-$ {CLEAN_REFERENCE}", (SUBJECT, arm, CLEAN_REFERENCE)))
        if (TOOL_FAULTS, arm) in means:
            rows.append((f"{SUBJECT} {arm} $-$ {TOOL_FAULTS} {arm}", (SUBJECT, arm, TOOL_FAULTS)))
    return rows


def fault_robustness_table(ctx: Context) -> TableModel:
    runs = src.single_runs(ctx.inputs.files("registers"), "table 8")
    arms = src.arm_means(ctx.inputs.files("curves"), runs, "table 8")
    table = TableModel(
        [Tex("Run")] + [regime_label(r) for r in FINAL_SETS],
        ["l"] + ["r"] * len(FINAL_SETS),
        groups=[(Tex(""), 1), (Tex("Final test success"), len(FINAL_SETS))],
        size=r"\small",
    )
    groups: dict[tuple[str, str], list[RunRegister]] = defaultdict(list)
    for run in runs:
        groups[(run.condition, run.arm)].append(run)
    means: dict[tuple[str, str], dict[str, float | None]] = {}
    for index, key in enumerate(sorted(groups, key=_fault_robustness_order)):
        if index:
            table.rule()
        table.section(f"{key[0]}, {ARM_LABELS.get(key[1], key[1])}")
        for run in groups[key]:
            table.add(
                [_run_label(run.run)]
                + [fmt.prop(run.final.get(r), 3, table.notes, "not evaluated") for r in FINAL_SETS]
            )
        if key not in arms:
            raise UserError(
                f"table 8: no curves register among the inputs holds the {key[0]} {key[1]} means; pass "
                f"results/curves/{key[0].lower()}.json"
            )
        means[key] = {r: arms[key].final.get(r) for r in FINAL_SETS}
        table.add(
            [Tex(r"\textit{mean}")]
            + [fmt.prop(means[key][r], 3, table.notes, "not every seed evaluated") for r in FINAL_SETS]
        )
    differences = src.final_differences(ctx.inputs.files("curves"), "table 8")
    comparisons = _difference_rows(means)
    if comparisons:
        table.rule()
        table.section("differences of the means")
    for label, key in comparisons:
        if key not in differences:
            raise UserError(
                f"table 8: the {SUBJECT} curves register holds no differences to {key[2]}; rebuild "
                f"results/curves/{SUBJECT.lower()}.json with curves-register --compare "
                f"results/curves/{key[2].lower()}.json"
            )
        table.add(
            [Tex(label)]
            + [
                fmt.signed(differences[key].get(r), 3, table.notes, "not every seed evaluated")
                for r in FINAL_SETS
            ]
        )
    return table


def _pick_pair(runs: list[RunRegister], ctx: Context) -> tuple[RunRegister, RunRegister]:
    condition = str(ctx.settings.get("condition", "")).upper() or None  # c2 or C2, as the user writes it
    seed = ctx.int_setting(9, "seed", 0, 2**63 - 1)
    candidates: dict[tuple[str, int], dict[str, RunRegister]] = defaultdict(dict)
    for run in runs:
        if run.arm in candidates[(run.condition, run.seed)]:
            raise UserError(
                f"table 9: two run registers for {run.condition} {run.arm} seed {run.seed}; pass one"
            )
        candidates[(run.condition, run.seed)][run.arm] = run
    pairs = sorted(
        (
            k
            for k, v in candidates.items()
            if {"paired", "independent"} <= set(v)
            and (condition is None or k[0].upper() == condition)
            and (seed is None or k[1] == int(seed))
        ),
        key=lambda k: (src.condition_rank(k[0]), k[1]),
    )
    if not pairs:
        raise UserError(
            "table 9: the run registers hold no paired/independent seed pair"
            + (f" for condition {condition}" if condition else "")
            + (f" and seed {seed}" if seed is not None else "")
            + "; pass both runs' results/runs/RUN/register.json"
        )
    chosen = candidates[pairs[0]]
    return chosen["paired"], chosen["independent"]


def seed_pair_curves_table(ctx: Context) -> TableModel:
    runs = [records.read_run_register(p) for p in ctx.inputs.files("registers")]
    paired, independent = _pick_pair(runs, ctx)
    delta = src.pair_differences(ctx.inputs.files("curves"), paired, independent, "table 9")
    regimes = [r for r in design.PERIODIC_REGIMES if paired.curves.get(r) or independent.curves.get(r)]
    headers = [Tex("Step")]
    for _ in regimes:
        headers += [P, I_, DELTA]
    table = TableModel(
        headers,
        ["r"] + ["r"] * (3 * len(regimes)),
        groups=[(Tex(""), 1)] + [(regime_label(r), 3) for r in regimes],
        size=r"\small",
        title_detail=f" ({paired.condition}, seed {paired.seed})",
    )
    for step in sorted(set(paired.steps()) | set(independent.steps())):
        cells = [fmt.integer(step)]
        for regime in regimes:
            a, b = paired.value(step, regime), independent.value(step, regime)
            cells += [
                fmt.prop(a, 3, table.notes, "not evaluated"),
                fmt.prop(b, 3, table.notes, "not evaluated"),
                fmt.signed(
                    delta.curves_difference.get(regime, {}).get(step), 3, table.notes, "not evaluated"
                ),
            ]
        table.add(cells)
    table.rule()
    cells = [Tex("AUC")]
    for regime in regimes:
        a, b = paired.auc.get(regime), independent.auc.get(regime)
        cells += [
            fmt.prop(a, 3, table.notes, "not evaluated"),
            fmt.prop(b, 3, table.notes, "not evaluated"),
            fmt.signed(delta.auc_difference.get(regime), 3, table.notes, "not evaluated"),
        ]
    table.add(cells)
    table.extra_notes.append(
        Tex(
            f"\\textsc{{p}} = \\texttt{{{fmt.escape(paired.run)}}}, \\textsc{{i}} = \\texttt{{{fmt.escape(independent.run)}}}; "
            "$\\Delta$ = \\textsc{p} $-$ \\textsc{i}."
        )
    )
    return table

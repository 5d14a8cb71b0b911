"""Tables of the gradient-probe registers: variance ratios (5) and traces (12)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from paired_rollouts.errors import UserError
from paired_rollouts.records import ProbeCheckpointSummary, ProbeRegister
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.tables.model import (
    Context,
    TableModel,
    _num,
    _verdict_word,
)

# ---------------------------------------------------------------- table 5: probe ratios


_UNDEFINED, _ABSENT = "ratio undefined", "not in the probe register"
# Table 5's columns after the step, left to right: the value in a checkpoint's summary, decimals, and the
# note of an empty cell.
_RATIO_COLUMNS: tuple[tuple[Callable[[ProbeCheckpointSummary], float | None], int, str], ...] = (
    (lambda c: c.outcome.lhs_over_rhs, 3, "no successful rollout (R = 0)"),
    (lambda c: c.outcome.mean_centered.ratio_paired_over_independent, 3, _UNDEFINED),
    (lambda c: c.transition.mean_centered.ratio_paired_over_independent, 3, _UNDEFINED),
    (lambda c: c.transition.mean_centered.ratio_paired_over_stratified, 3, _UNDEFINED),
    (lambda c: c.outcome.implemented.ratio_paired_over_independent, 3, _UNDEFINED),
    (lambda c: c.transition.implemented.ratio_paired_over_independent, 3, _UNDEFINED),
    (lambda c: c.outcome.mean_centered.ratio_within_paired_over_independent, 3, _ABSENT),
    (lambda c: c.transition.mean_centered.ratio_within_paired_over_independent, 3, _ABSENT),
    (lambda c: c.counts.rho_zero_fraction, 3, "not recorded by the probe"),
    (lambda c: c.batch_equivalent.outcome, 2, _ABSENT),
    (lambda c: c.batch_equivalent.transition, 2, _ABSENT),
)


def probe_ratios_table(ctx: Context) -> TableModel:
    table = TableModel(
        [
            Tex("Step"),
            Tex("$L/R$"),
            Tex("outcome"),
            Tex("transition"),
            Tex("stratified"),
            Tex("outcome"),
            Tex("transition"),
            Tex("outcome"),
            Tex("transition"),
            Tex("$\\rho=0$"),
            Tex("outcome"),
            Tex("transition"),
        ],
        ["r"] * 12,
        groups=[
            (Tex(""), 2),
            (Tex("MC: paired / independent"), 3),
            (Tex("SW: paired / independent"), 2),
            (Tex("MC within groups"), 2),
            (Tex(""), 1),
            (Tex("batch equivalent"), 2),
        ],
        size=r"\footnotesize",
    )
    probes = src.probes(ctx.inputs.files("probe"))
    for index, probe in enumerate(probes):
        if index:
            table.rule()
        table.section(Tex(r"trajectory \texttt{" + fmt.escape(probe.trajectory) + "}"))
        for step, checkpoint in probe.checkpoints.items():
            table.add(
                [fmt.integer(step)]
                + [
                    fmt.prop(_num(value(checkpoint)), digits, table.notes, why)
                    for value, digits, why in _RATIO_COLUMNS
                ]
            )
        verdict = probe.need_verdict()
        n = verdict.checkpoints
        table.section(
            Tex(
                f"H1b {_verdict_word(verdict)}: outcome {fmt.integer(verdict.outcome_wins)}/"
                f"{fmt.integer(n)}, transition {fmt.integer(verdict.transition_wins)}/{fmt.integer(n)} "
                "checkpoints with paired $<$ independent"
            )
        )
    if not probes:
        raise UserError("table 5: no --input probe=PATH given")
    return table


# ---------------------------------------------------------------- table 12: outcome-probe traces


def _exponent(values: Sequence[float | None]) -> int:
    finite = [abs(v) for v in values if v is not None and v != 0 and math.isfinite(v)]
    return int(math.floor(math.log10(max(finite)))) if finite else 0


def _trace_row(trajectory: str, step: int, checkpoint: ProbeCheckpointSummary) -> tuple:
    out = checkpoint.outcome
    return (
        trajectory,
        step,
        out.lhs_mean,
        out.rhs_mean,
        out.mean_centered.trace_var["paired"],
        out.mean_centered.trace_var["independent"],
        out.clean_success,
        checkpoint.counts.rho_zero_fraction,
        out.nonzero_share,
        _num(out.implemented.trace_var.get("paired")),
        _num(out.implemented.trace_var.get("independent")),
        _num(out.mean_centered.identity_residual),
    )


def probe_traces_table(ctx: Context) -> TableModel:
    probes = src.probes(ctx.inputs.files("probe"))
    if not probes:
        raise UserError("table 12: no --input probe=PATH given")
    rows = [
        _trace_row(probe.trajectory, step, checkpoint)
        for probe in probes
        for step, checkpoint in probe.checkpoints.items()
    ]
    unit_exp = ctx.int_setting(12, "unit_exponent", -12, 12)
    if unit_exp is None:
        unit_exp = _exponent([v for r in rows for v in r[2:6]])
    unit = 10.0 ** int(unit_exp)
    table = TableModel(
        [
            Tex("Step"),
            Tex("$LL$"),
            Tex("$RR$"),
            Tex("paired"),
            Tex("indep."),
            Tex("success"),
            Tex("masked"),
            Tex("non-zero"),
            Tex("paired"),
            Tex("indep."),
            Tex("residual"),
        ],
        ["r"] * 11,
        groups=[
            (Tex(""), 1),
            (Tex(f"$\\times 10^{{{int(unit_exp)}}}$"), 2),
            (Tex(f"MC Tr\\,Var $\\times 10^{{{int(unit_exp)}}}$"), 2),
            (Tex("fractions"), 3),
            (Tex("SW Tr\\,Var"), 2),
            (Tex("identity"), 1),
        ],
        size=r"\footnotesize",
    )
    current = None
    for r in rows:
        if r[0] != current:
            if current is not None:
                table.rule()
            current = r[0]
            table.section(Tex(r"trajectory \texttt{" + fmt.escape(current) + "}"))
        table.add(
            [fmt.integer(r[1])]
            + [fmt.scaled(v, unit, 3, table.notes, "not available") for v in r[2:6]]
            + [
                fmt.prop(r[6], 3, table.notes, "no clean groups"),
                fmt.prop(_num(r[7]), 3, table.notes, "not recorded by the probe"),
                fmt.prop(r[8], 3, table.notes, "no clean groups"),
            ]
            + [_sci(v, table.notes) for v in r[9:12]]
        )
    table.extra_notes.append(
        Tex(
            "$LL$ = mean $\\|g_c\\|^2$ of the clean group gradient; $RR$ = mean $G^{-2}\\sum_i r_i\\|S_i-\\bar S\\|^2$; "
            "pairing lowers the MC variance iff $LL<RR$. Success: mean true success of the clean rollouts. Masked: "
            "fraction of rollouts whose importance ratio is 0. Non-zero: fraction of clean groups with mixed "
            "outcomes ($0<k<G$), i.e.\\ non-zero MC weights. SW: the implemented (standardised, importance-weighted) "
            "estimator's traces. Identity residual: MC Tr\\,Var paired $-$ independent $- q(1-q)(LL-RR)$ (zero up to "
            "rounding)."
        )
    )
    _by_k_rows(table, probes)
    return table


def _sci(value: float | None, notes: fmt.Notes) -> Tex:
    """A number of any magnitude in scientific notation (traces of the SW estimator, residuals)."""
    if value is None:
        return fmt.missing(notes, "not in the probe register")
    if value == 0:
        return Tex("0")
    mantissa, exponent = f"{value:.2e}".split("e")
    return Tex(f"${mantissa}\\times 10^{{{int(exponent)}}}$")


def _by_k_rows(table: TableModel, probes: list[ProbeRegister]) -> None:
    """Clean groups by success count k: how many, and their mean L/R (the probe register's `by_k`)."""
    for probe in probes:
        ks = sorted({k for checkpoint in probe.checkpoints.values() for k in checkpoint.outcome.by_k})
        if not ks:
            continue
        table.rule()
        table.section(
            Tex(
                r"by success count $k$, trajectory \texttt{"
                + fmt.escape(probe.trajectory)
                + r"}: groups and mean $L/R$ per $k$"
            )
        )
        for step, checkpoint in probe.checkpoints.items():
            by_k = checkpoint.outcome.by_k
            text = "; ".join(
                f"k={k}: {by_k[k].count}, "
                + (f"{by_k[k].lhs_over_rhs:.3f}" if by_k[k].lhs_over_rhs is not None else "n/a")
                for k in ks
                if k in by_k
            )
            table.add([fmt.integer(step), Tex(r"\multicolumn{10}{l}{" + fmt.escape(text) + "}")], kind="span")

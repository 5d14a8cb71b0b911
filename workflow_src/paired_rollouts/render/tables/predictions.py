"""Tables of the predictions registers: tier 1 (6) and with the later tiers (15)."""

from __future__ import annotations

from typing import Any

from paired_rollouts import records
from paired_rollouts.records import H4
from paired_rollouts.render import format as fmt
from paired_rollouts.render.format import Tex
from paired_rollouts.render.tables.model import (
    Context,
    TableModel,
)

# ---------------------------------------------------------------- table 6: predictions


def _observed_text(observed: dict[str, Any]) -> str:
    """The numbers a prediction was judged on, compactly (nested blocks as name: a, b)."""
    parts = []
    for key, value in observed.items():
        if key in ("reading", "reason", "steps"):
            continue
        if isinstance(value, dict):
            inner = ", ".join(f"{k.replace('_', ' ')} {_short(v)}" for k, v in value.items())
            parts.append(f"{key}: {inner}")
        else:
            parts.append(f"{key.replace('_', ' ')} {_short(value)}")
    return "; ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return "n/a" if value is None else str(value)


def _h4_text(h4: H4) -> str:
    if not h4.decided:
        return "not decided (" + fmt.escape(h4.reason or "") + ")"
    return f"gap with group scaling {_short(h4.gap_group)}, without {_short(h4.gap_none)}; " + (
        "passes" if h4.passes else "does not pass"
    )


def _predictions_register_table(ctx: Context) -> TableModel:
    """One row per registered prediction: statement, confidence, the observed numbers and the verdict
    (met, missed, not run, not decided) from the predictions register (stats/predictions.py)."""
    register = records.read_predictions(ctx.inputs.files("predictions")[0])
    table = TableModel(
        [Tex("ID"), Tex("Prediction"), Tex("Conf."), Tex("Observed"), Tex("Verdict")],
        ["l", r">{\raggedright\arraybackslash}p{5.6cm}", "r", r">{\raggedright\arraybackslash}p{4.6cm}", "l"],
        size=r"\footnotesize",
    )
    for row in register.predictions:
        text = _observed_text(row.observed) or (str(row.reason) if row.reason else "")
        table.add([row.id, row.statement, fmt.prop(row.confidence, 2), fmt.escape(text), row.verdict])
    table.extra_notes.append(
        Tex(
            "H4 (C4, design $\\times$ reward scaling): "
            + _h4_text(register.h4)
            + ". A verdict is given only on a complete seed matrix; \\emph{not run}: the tier was not trained here."
        )
    )
    return table


def predictions_table(ctx: Context) -> TableModel:
    return _predictions_register_table(ctx)


def tier_predictions_table(ctx: Context) -> TableModel:
    return _predictions_register_table(ctx)

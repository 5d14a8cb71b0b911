"""The paper's tables: a registry (``registry.py``: number, title, inputs, builder) and one module per
content (runs, outcomes, decisions, probe, predictions, tiers, curves, surrogate) whose builders fill a
:class:`~paired_rollouts.render.tables.model.TableModel`. The template ``templates/table{N}.tex.j2`` lays
the model out; the prose lives in the templates, the numbers come only from the registers."""

from paired_rollouts.render.tables.model import TableModel, TableSpec
from paired_rollouts.render.tables.registry import (
    TABLES,
    build,
    render_model,
    render_table,
    spec_for,
    table_inputs,
    used_sources,
)
from paired_rollouts.render.tables.runs import spurious_formula

__all__ = [
    "TABLES",
    "TableModel",
    "TableSpec",
    "build",
    "render_model",
    "render_table",
    "spec_for",
    "spurious_formula",
    "table_inputs",
    "used_sources",
]

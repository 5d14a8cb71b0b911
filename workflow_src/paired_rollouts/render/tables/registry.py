"""The registry of the paper's tables: number, the one title, inputs, settings and builder of each.

``paired-rollouts render table --number N`` looks the table up here; the builder (named by what the
table shows, in the module of its content) fills a :class:`TableModel`, and the title every output
carries (LaTeX caption, HTML page) is the registry's, so each table has exactly one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paired_rollouts.errors import UserError
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.sources import Inputs, KeySpec
from paired_rollouts.render.tables.curves import fault_robustness_table, seed_pair_curves_table
from paired_rollouts.render.tables.decisions import c2_primary_table, c2_secondary_table, c4_primary_table
from paired_rollouts.render.tables.model import Context, TableModel, TableSpec
from paired_rollouts.render.tables.outcomes import registered_outcomes_table
from paired_rollouts.render.tables.predictions import predictions_table, tier_predictions_table
from paired_rollouts.render.tables.probe import probe_ratios_table, probe_traces_table
from paired_rollouts.render.tables.replay import replay_table
from paired_rollouts.render.tables.runs import constant_reward_table, cross_stack_table, run_matrix_table
from paired_rollouts.render.tables.surrogate import (
    calibration_table,
    power_curves_table,
    power_table,
    prediction_table,
)
from paired_rollouts.render.tables.tiers import tier_comparisons_table

if TYPE_CHECKING:
    from paired_rollouts.layout import Layout

# Each key names its files as a look-up on the scale's Layout, so one input function (rules/common.smk)
# serves every table.
_DECISIONS = KeySpec(
    "decision registers results/decisions/{c2,c4}.json", files=lambda layout: layout.decision_files()
)
_PROBE = KeySpec("probe registers results/probe/TRAJECTORY.json", files=lambda layout: layout.probe_files())
_PUBLISHED = KeySpec(
    "data/published/paper.yaml: the paper's values, shown under the reproduced ones",
    required=False,
    many=False,
    files=lambda layout: [layout.published],
)
_REGISTERS = "run registers results/runs/RUN/register.json"
_CURVES = KeySpec(
    "curves registers results/curves/CONDITION.json (the arms' means over their seeds)",
    files=lambda layout: layout.curves_files(),
)


def _decision(name: str) -> Callable[[Layout], list[str]]:
    return lambda layout: [layout.decision(name)]


TABLES: dict[int, TableSpec] = {
    spec.number: spec
    for spec in (
        TableSpec(
            1,
            "Run matrix",
            {
                "manifests": KeySpec(
                    "run manifests results/runs/RUN/manifest.json",
                    files=lambda layout: layout.files(layout.manifest),
                )
            },
            run_matrix_table,
        ),
        TableSpec(
            2,
            "Registered outcomes",
            {
                "decisions": _DECISIONS,
                "probe": KeySpec(
                    "probe registers (H1b)", required=False, files=lambda layout: layout.probe_files()
                ),
                "rules": KeySpec(
                    "prereg/decision_rules.yaml (hash checked against the registers)",
                    required=False,
                    many=False,
                    files=lambda layout: [layout.decision_rules],
                ),
            },
            registered_outcomes_table,
        ),
        TableSpec(
            3,
            "C2 primary endpoints by seed",
            {
                "decisions": KeySpec("the C2 decision register", files=_decision("c2")),
                "published": _PUBLISHED,
            },
            c2_primary_table,
        ),
        TableSpec(
            4,
            "C4 primary endpoints by seed",
            {
                "decisions": KeySpec(
                    "the C4 decision register (its secondary block holds the C0 reference)",
                    files=_decision("c4"),
                ),
                "published": _PUBLISHED,
            },
            c4_primary_table,
        ),
        TableSpec(5, "Gradient-probe variance ratios by checkpoint", {"probe": _PROBE}, probe_ratios_table),
        TableSpec(
            6,
            "Registered numeric predictions and outcomes (tier 1)",
            {
                "predictions": KeySpec(
                    "the predictions register results/<scale>/decisions/predictions.json",
                    many=False,
                    files=lambda layout: [layout.predictions("study")],
                ),
            },
            predictions_table,
        ),
        TableSpec(
            7,
            "C2 secondary endpoints",
            {"decisions": KeySpec("the C2 decision register (its secondary block)", files=_decision("c2"))},
            c2_secondary_table,
        ),
        TableSpec(
            8,
            "Policies trained with grader noise (C4) under tool faults",
            {
                "registers": KeySpec(
                    f"{_REGISTERS} (each run's final sets)",
                    files=lambda layout: layout.files(layout.register),
                ),
                "curves": _CURVES,
            },
            fault_robustness_table,
        ),
        TableSpec(
            9,
            "Validation curves of one seed pair",
            {
                "registers": KeySpec(
                    f"{_REGISTERS} of the seed pair", files=lambda layout: layout.first_pair_registers("C2")
                ),
                "curves": KeySpec(
                    "curves registers results/curves/CONDITION.json (the pair's differences, 'pairs')",
                    files=lambda layout: [layout.curves("c2")],
                ),
            },
            seed_pair_curves_table,
            settings={
                "condition": "condition of the pair (default: C2 if present)",
                "seed": "seed of the pair, a non-negative integer (default: the smallest with both arms)",
            },
        ),
        TableSpec(
            10,
            "Constant-reward groups and spurious variance in training",
            {
                "group_stats": KeySpec(
                    "results/runs/RUN/group_stats.json", files=lambda layout: layout.files(layout.group_stats)
                ),
                "curves": KeySpec(
                    "curves registers results/curves/CONDITION.json (each arm's pooled 'group_stats')",
                    files=lambda layout: layout.curves_files(),
                ),
            },
            constant_reward_table,
        ),
        TableSpec(
            11,
            "Cross-stack replication",
            {
                "cross_stack": KeySpec(
                    "the cross-stack register results/cross_stack.json (paired-rollouts cross-stack)",
                    many=False,
                    files=lambda layout: [layout.cross_stack()],
                )
            },
            cross_stack_table,
        ),
        TableSpec(
            12,
            "Outcome-noise probe traces",
            {"probe": _PROBE},
            probe_traces_table,
            settings={
                "unit_exponent": "power of ten for LL, RR and MC, an integer from -12 to 12 (default: from the data; 5 "
                "at paper scale)"
            },
        ),
        TableSpec(
            13,
            "Power of the registered rules by design size",
            {
                "power": KeySpec(
                    "results/<scale>/decisions/power.json",
                    many=False,
                    files=lambda layout: [layout.power_file()],
                )
            },
            power_table,
        ),
        TableSpec(
            14,
            "Surrogate calibration to the paper's step-0 agent",
            {
                "calibration": KeySpec(
                    "results/<scale>/models/surrogate/calibration.json",
                    many=False,
                    files=lambda layout: [layout.calibration_file()],
                )
            },
            calibration_table,
        ),
        TableSpec(
            17,
            "Predicted vs published: the paired arms as a registered prediction (A3)",
            {
                "prediction": KeySpec(
                    "results/<scale>/decisions/prediction_a3.json",
                    many=False,
                    files=lambda layout: [layout.prediction_file()],
                )
            },
            prediction_table,
        ),
        TableSpec(
            15,
            "Registered predictions with the later tiers",
            {
                "predictions": KeySpec(
                    "results/<scale>/decisions/tiers/predictions.json",
                    many=False,
                    files=lambda layout: [layout.predictions("tiers")],
                )
            },
            tier_predictions_table,
        ),
        TableSpec(
            16,
            "Registered tiers: treatment minus control by comparison",
            {
                "decisions": KeySpec(
                    "decision registers of tier 1 and of the tiers (results/<scale>/decisions/tiers/*.json)",
                    files=lambda layout: layout.decision_files() + layout.tier_decision_files(),
                )
            },
            tier_comparisons_table,
        ),
        TableSpec(
            18,
            "Replay determinism",
            {
                "replay": KeySpec(
                    "replay registers results/replay/RUN/stepN.json (each run's final checkpoint)",
                    files=lambda layout: layout.replay_files(),
                )
            },
            replay_table,
        ),
        TableSpec(
            19,
            "Power of the learning rules at the paper's effect",
            {
                "power_curves": KeySpec(
                    "results/<scale>/decisions/power_curves.json",
                    many=False,
                    files=lambda layout: [layout.power_curves_file()],
                )
            },
            power_curves_table,
        ),
    )
}


def table_inputs(number: int) -> dict[str, KeySpec]:
    """The ``--input`` keys table ``number`` reads (for Snakemake rules and docs)."""
    return dict(spec_for(number).keys)


def spec_for(number: int) -> TableSpec:
    if number not in TABLES:
        raise UserError(
            f"--number {number}: the tables are {', '.join(map(str, sorted(TABLES)))} (13, 14, 17 and 19 at "
            "surrogate scales, 15-16 with the tiers, 18 at LLM scales)"
        )
    return TABLES[number]


def build(
    number: int, given: dict[str, list[Path]], scale: str, settings: dict[str, Any]
) -> tuple[TableModel, Inputs]:
    spec = spec_for(number)
    unknown = sorted(set(settings) - set(spec.settings))
    if unknown:
        raise UserError(
            f"table {number}: unknown --settings key(s) {', '.join(unknown)}; it accepts "
            f"{', '.join(sorted(spec.settings)) or 'none'}"
        )
    inputs = Inputs(given, spec.keys, f"table {number}")
    model = spec.build(Context(inputs, scale, settings))
    model.title = spec.title + model.title_detail
    return model, inputs


def render_table(
    number: int, given: dict[str, list[Path]], scale: str, settings: dict[str, Any] | None = None
) -> str:
    """The LaTeX text of table ``number`` (does not write anything)."""
    model, inputs = build(number, given, scale, settings or {})
    return render_model(number, model, inputs, scale)


def used_sources(inputs: Inputs) -> list[Path]:
    """The files a table's caption names: every input it was given (each one is read)."""
    return inputs.all_files()


def render_model(number: int, model: TableModel, inputs: Inputs, scale: str) -> str:
    """The LaTeX text of a built table."""
    from paired_rollouts.render import tex

    context = model.context()
    context.update(
        number=Tex(str(number)),
        label=Tex(f"table{number}"),
        scale=fmt.escape(scale),
        sources=src.describe_sources(used_sources(inputs)),
    )
    return tex.render(spec_for(number).template, **context)

"""The options several sub-commands share, each declared once: the same flag, aliases, metavar and help
wherever it appears (a command passes only what is its own: whether it is required, its type, its example)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

Parser = argparse.ArgumentParser | argparse._ArgumentGroup

SETTINGS_HELP = "inline JSON or @file"
TASKS_DIR_HELP = "data/tasks: the frozen task pools and their MANIFEST.json"
CONDITIONS_HELP = "the design's conditions (config/config.yaml `conditions:`); default: the paper's"


def add_settings(parser: Parser, help: str = SETTINGS_HELP, *, required: bool = False) -> None:
    """``--settings``: a JSON object given inline or as @file (``io.load_settings`` reads both)."""
    parser.add_argument("--settings", required=required, default=None, help=help)


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1 (a count of draws, pairs, resamples...)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def add_zero_shot_gate(parser: Parser) -> None:
    """``--zero-shot``: the calibration register whose recomputed verdict gates training."""
    parser.add_argument(
        "--zero-shot",
        default=None,
        help="results/<scale>/calibration/zero_shot.json: training starts only if its verdict, recomputed "
        "from its bands, is not a miss (the workflow always gives it)",
    )


def add_tasks_dir(
    parser: Parser,
    help: str = TASKS_DIR_HELP,
    *,
    required: bool = True,
    type: Any = None,
    default: Any = None,
) -> None:
    """``--tasks-dir``: the task-pool folder."""
    parser.add_argument("--tasks-dir", required=required, type=type, default=default, help=help)


def add_conditions(parser: Parser, help: str = CONDITIONS_HELP) -> None:
    """``--conditions``: the design's conditions as JSON or @FILE (JSON or YAML; ``design.parse_conditions``;
    default the paper's)."""
    parser.add_argument("--conditions", default=None, metavar="JSON|@FILE", help=help)


def add_run(parser: Parser, help: str = "run name, e.g. c2-paired-s0") -> None:
    """``--run``: a run name (condition-arm-sSEED)."""
    parser.add_argument("--run", required=True, help=help)


def add_pool_manifest(parser: Parser) -> None:
    """``--manifest`` (alias ``--pool-manifest``): the task pools' hash manifest."""
    parser.add_argument(
        "--manifest",
        "--pool-manifest",
        dest="manifest",
        required=True,
        type=Path,
        help="data/tasks/MANIFEST.json",
    )


def add_results_root(parser: Parser, help: str, *, required: bool = False, type: Any = Path) -> None:
    """``--results``: a results root (the folder holding runs/, evals/, decisions/, ...); default results."""
    default = None if required else Path("results")
    parser.add_argument("--results", required=required, type=type, default=default, help=help)


def add_decision_rules(parser: Parser, help: str = "prereg/decision_rules.yaml") -> None:
    """``--rules``: the frozen decision rules."""
    parser.add_argument("--rules", required=True, type=Path, help=help)


def add_tier_rules(
    parser: Parser,
    verification_help: str,
    *,
    flag: str = "--rules",
    help: str = "prereg/tier_rules.yaml",
    verification_required: bool = True,
) -> None:
    """The amended tier rules and the amendment verification report that must cover them."""
    parser.add_argument(flag, required=True, type=Path, help=help)
    parser.add_argument(
        "--verification", required=verification_required, default=None, type=Path, help=verification_help
    )

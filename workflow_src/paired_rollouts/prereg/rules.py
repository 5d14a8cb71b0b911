"""The frozen decision rules (``prereg/decision_rules.yaml``), loaded and schema-checked.

The decision stage reads its thresholds from this file rather than from constants in code, so the
numbers it applies are exactly the numbers covered by the freeze's time stamps. The schema is strict:
a missing, unknown or mistyped key is a UserError, because a silently defaulted threshold would be an
undeclared deviation from the pre-registration.
"""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError

DEFAULT_RULES_PATH = Path("prereg/decision_rules.yaml")
SCHEMA_VERSION = 1

_NUM = (int, float)
# key -> type, or a nested schema dict. Lists are checked element-wise ("list[num]", "list[int]").
SCHEMA: dict[str, Any] = {
    "schema_version": int,
    "threshold": _NUM,
    "periodic_steps": "list[int]",
    "auc_weights": "list[num]",
    "bootstrap": {"resamples": int, "seed": int, "interval": int},
    "h1a_c4": {
        "group_size": int,
        "q": _NUM,
        "expected_independent_rate": _NUM,
        "independent_within": _NUM,
        "paired_at_most": _NUM,
    },
    "h1a_c2": {
        "diagnostic_step": int,
        "lambda_at_least": _NUM,
        "lower_bound_above": _NUM,
        "interval": int,
        "paired_max_seeds_per_group": int,
        "independent_min_seeds_per_group": int,
    },
    "h1b": {"estimator": str, "outcome": str, "transition": str},
    "h2": {
        "mean_at_least": _NUM,
        "every_seed_positive": bool,
        "final_direction": bool,
        "interval": int,
        "sets": {"C2": {"validation": str, "final": str}, "C4": {"validation": str, "final": str}},
    },
    "h3": {
        "set": str,
        "steps": "list[int]",
        "mean_at_least": _NUM,
        "every_seed_positive": bool,
        "interval": int,
    },
    "h5": {"set": str, "lower_bound_above": _NUM, "interval": int},
}


def _check(node: Any, schema: Any, where: str, source: str) -> None:
    if isinstance(schema, dict):
        if not isinstance(node, dict):
            raise UserError(f"{source}: {where or 'top level'} must be a mapping; restore the frozen file")
        unknown = sorted(set(node) - set(schema))
        missing = sorted(set(schema) - set(node))
        if unknown:
            raise UserError(
                f"{source}: unknown key {where + '.' if where else ''}{unknown[0]}; remove it "
                "(the frozen rules have a fixed schema)"
            )
        if missing:
            raise UserError(
                f"{source}: missing key {where + '.' if where else ''}{missing[0]}; restore the frozen file"
            )
        for key, sub in schema.items():
            _check(node[key], sub, f"{where}.{key}" if where else key, source)
        return
    if isinstance(schema, str) and schema.startswith("list["):
        element = int if schema == "list[int]" else _NUM
        ok = (
            isinstance(node, list)
            and node
            and all(isinstance(x, element) and not isinstance(x, bool) for x in node)
        )
        if not ok:
            raise UserError(f"{source}: {where} must be a non-empty list of {schema[5:-1]}s")
        return
    ok = isinstance(node, schema) and (schema is bool or not isinstance(node, bool))
    if not ok or (isinstance(node, float) and not math.isfinite(node)):
        kind = getattr(schema, "__name__", "number")
        raise UserError(f"{source}: {where} must be a {kind if kind != 'tuple' else 'number'}, got {node!r}")


def validate_decision_rules(rules: Any, source: str = "decision rules") -> dict:
    """Check types and internal consistency; return a deep copy."""
    _check(rules, SCHEMA, "", source)
    if rules["schema_version"] != SCHEMA_VERSION:
        raise UserError(f"{source}: schema_version {rules['schema_version']} is not {SCHEMA_VERSION}")
    steps, weights = rules["periodic_steps"], rules["auc_weights"]
    if steps != sorted(set(steps)) or len(steps) < 2:
        raise UserError(f"{source}: periodic_steps must be strictly increasing with at least two steps")
    if len(weights) != len(steps):
        raise UserError(f"{source}: auc_weights needs one weight per periodic step ({len(steps)})")
    span = steps[-1] - steps[0]
    trapezoid = [0.0] * len(steps)
    for i in range(len(steps) - 1):
        half = (steps[i + 1] - steps[i]) / (2 * span)
        trapezoid[i] += half
        trapezoid[i + 1] += half
    if any(abs(w - t) > 1e-9 for w, t in zip(weights, trapezoid, strict=True)):
        raise UserError(
            f"{source}: auc_weights {weights} are not the normalised trapezoid over {steps} "
            f"({[round(t, 6) for t in trapezoid]})"
        )
    if not set(rules["h3"]["steps"]) <= set(steps):
        raise UserError(f"{source}: h3.steps must be periodic steps")
    for key in ("bootstrap.interval", "h1a_c2.interval", "h2.interval", "h3.interval", "h5.interval"):
        section, name = key.split(".")
        if rules[section][name] not in (90, 95, 99):
            raise UserError(f"{source}: {key} must be 90, 95 or 99 (percent)")
    if rules["bootstrap"]["resamples"] < 1:
        raise UserError(f"{source}: bootstrap.resamples must be positive")
    if rules["h1b"]["outcome"] not in ("every", "strict_majority") or rules["h1b"]["transition"] not in (
        "every",
        "strict_majority",
    ):
        raise UserError(f"{source}: h1b.outcome/transition must be 'every' or 'strict_majority'")
    if rules["h1b"]["estimator"] not in ("mean_centered", "implemented"):
        raise UserError(f"{source}: h1b.estimator must be 'mean_centered' or 'implemented'")
    c4 = rules["h1a_c4"]
    g, q = c4["group_size"], c4["q"]
    closed_form = 1 - (1 - q) ** g - q**g
    if abs(c4["expected_independent_rate"] - closed_form) > 5e-5:
        raise UserError(
            f"{source}: h1a_c4.expected_independent_rate must be 1-(1-q)^G-q^G = {closed_form:.6f}"
        )
    return copy.deepcopy(rules)


def load_decision_rules(path: str | os.PathLike | None = None) -> dict:
    """Load and validate the frozen rules; ``path`` defaults to ``prereg/decision_rules.yaml`` (cwd-relative)."""
    import yaml

    source = Path(path) if path is not None else DEFAULT_RULES_PATH
    if not source.is_file():
        raise UserError(f"{source}: decision rules not found; run from the repository root or pass the path")
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise UserError(f"{source}: not valid YAML ({exc}); restore the frozen file") from exc
    return validate_decision_rules(data, str(source))

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
from dataclasses import dataclass
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


def _check_keys(node: Any, schema: dict, where: str, source: str, kind: str) -> None:
    """``node`` is a mapping with exactly the schema's keys; ``kind`` names the file to restore (frozen, amended)."""
    if not isinstance(node, dict):
        raise UserError(f"{source}: {where or 'top level'} must be a mapping; restore the {kind} file")
    unknown = sorted(set(node) - set(schema), key=str)
    missing = sorted(set(schema) - set(node))
    if unknown:
        raise UserError(
            f"{source}: unknown key {where + '.' if where else ''}{unknown[0]}; remove it "
            f"(the {kind} rules have a fixed schema)"
        )
    if missing:
        raise UserError(
            f"{source}: missing key {where + '.' if where else ''}{missing[0]}; restore the {kind} file"
        )


def _check(node: Any, schema: Any, where: str, source: str) -> None:
    if isinstance(schema, dict):
        _check_keys(node, schema, where, source, "frozen")
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


def validate_decision_rules(rules: Any, source: str = "decision rules") -> dict:  # noqa: C901 - one check per frozen rule, each with its own message
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


def _read_yaml(source: os.PathLike | str, fix: str) -> Any:
    """A rules file's YAML (the three rules files are read alike); invalid YAML is one line naming the fix."""
    import yaml

    from paired_rollouts.io import read_text_utf8, yaml_problem

    try:
        return yaml.safe_load(read_text_utf8(source))
    except yaml.YAMLError as exc:
        raise UserError(f"{source}: not valid YAML ({yaml_problem(exc)}); {fix}") from exc


def load_decision_rules(path: str | os.PathLike | None = None) -> dict:
    """Load and validate the frozen rules; ``path`` defaults to ``prereg/decision_rules.yaml`` (cwd-relative)."""
    from paired_rollouts.io import require_file

    source = require_file(
        path if path is not None else DEFAULT_RULES_PATH,
        "decision rules (run from the repository root or pass the path)",
    )
    return validate_decision_rules(_read_yaml(source, "restore the frozen file"), str(source))


# The frozen file names the at-training-noise validation set "noisy" (the paper's word); the episode
# records call that regime "at_training" (docs/CONTRACT.md#episode-record).
SET_ALIASES = {"noisy": "at_training"}


@dataclass(frozen=True)
class DecisionRules:
    """Typed view of the validated rules; every threshold the decision stage applies is read here.

    No key has a default: the file is frozen with the protocol and its schema is strict, so a missing
    key is an error naming it, never a silently assumed number.
    """

    raw: dict[str, Any]
    source: str = "<dict>"
    sha256: str | None = None

    def _get(self, *path: str) -> Any:
        node: Any = self.raw
        for key in path:
            if not isinstance(node, dict) or key not in node:
                raise UserError(
                    f"{self.source}: decision rules lack '{'.'.join(path)}'; restore the frozen file"
                )
            node = node[key]
        return node

    def _float(self, *path: str) -> float:
        return float(self._get(*path))

    threshold = property(lambda self: self._float("threshold"))
    resamples = property(lambda self: int(self._get("bootstrap", "resamples")))
    seed = property(lambda self: int(self._get("bootstrap", "seed")))
    h2_mean_at_least = property(lambda self: self._float("h2", "mean_at_least"))
    h2_every_seed_positive = property(lambda self: bool(self._get("h2", "every_seed_positive")))
    h2_final_direction = property(lambda self: bool(self._get("h2", "final_direction")))
    h3_steps = property(lambda self: [int(s) for s in self._get("h3", "steps")])
    h3_mean_at_least = property(lambda self: self._float("h3", "mean_at_least"))
    h3_every_seed_positive = property(lambda self: bool(self._get("h3", "every_seed_positive")))
    h3_set = property(lambda self: self._set(self._get("h3", "set")))
    h5_lower_bound_above = property(lambda self: self._float("h5", "lower_bound_above"))
    h5_set = property(lambda self: self._set(self._get("h5", "set")))
    h1a_c4_independent_within = property(lambda self: self._float("h1a_c4", "independent_within"))
    h1a_c4_paired_at_most = property(lambda self: self._float("h1a_c4", "paired_at_most"))
    h1a_c4_q = property(lambda self: self._float("h1a_c4", "q"))
    h1a_c4_group_size = property(lambda self: int(self._get("h1a_c4", "group_size")))
    h1a_c4_expected_rate = property(lambda self: self._float("h1a_c4", "expected_independent_rate"))
    h1a_c2_lambda_at_least = property(lambda self: self._float("h1a_c2", "lambda_at_least"))
    h1a_c2_lower_bound_above = property(lambda self: self._float("h1a_c2", "lower_bound_above"))
    h1a_c2_step = property(lambda self: int(self._get("h1a_c2", "diagnostic_step")))
    paired_max_seeds = property(lambda self: int(self._get("h1a_c2", "paired_max_seeds_per_group")))
    independent_min_seeds = property(lambda self: int(self._get("h1a_c2", "independent_min_seeds_per_group")))

    def frozen_auc_weights(self, steps: list[int]) -> tuple[list[float], list[int]]:
        """(frozen weights, frozen grid); the weights apply only on exactly the frozen grid."""
        return [float(w) for w in self._get("auc_weights")], self.rule_steps

    @property
    def rule_steps(self) -> list[int]:
        """The pre-registered periodic grid (for mapping H3 steps onto another grid)."""
        return [int(s) for s in self._get("periodic_steps")]

    def interval(self, section: str) -> tuple[float, float]:
        """Percentile bounds of a section's central interval, e.g. 95 -> (2.5, 97.5)."""
        level = float(self._get(section, "interval"))
        return (100 - level) / 2, 100 - (100 - level) / 2

    def _set(self, name: str) -> str:
        return SET_ALIASES.get(str(name), str(name))

    def sets(self, condition: str) -> dict[str, str]:
        """The validation and final sets of H2 under ``condition`` (C2 or C4)."""
        chosen = self._get("h2", "sets", condition)
        return {"validation": self._set(chosen["validation"]), "final": self._set(chosen["final"])}


def rules_from_dict(data: dict[str, Any], source: str = "<dict>", sha256: str | None = None) -> DecisionRules:
    """A typed view of an (already validated, or deliberately edited) rules mapping."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: decision rules must be a mapping")
    return DecisionRules(copy.deepcopy(data), source, sha256)


def load_rules(path: str | os.PathLike | None = None) -> DecisionRules:
    """The one loader: read, schema-check and wrap the frozen rules, with the file's sha256."""
    from paired_rollouts.io import sha256_file

    source = Path(path) if path is not None else DEFAULT_RULES_PATH
    return rules_from_dict(load_decision_rules(source), str(source), sha256_file(source))


# ---------------------------------------------------------------- tier rules (amendment A2) ----------

DEFAULT_TIER_RULES_PATH = Path("prereg/tier_rules.yaml")
TIER_SCHEMA_VERSION = 1
#: Conditions a tier prediction may name (docs/prereg.md#amendments): the tier-1 ones plus C1, C3, C2r.
TIER_CONDITIONS = ("C0", "C1", "C2", "C2r", "C3", "C4")
#: Reward scalings H4 compares (TRL's ``scale_rewards``).
SCALINGS = ("group", "none")

TIER_SCHEMA: dict[str, Any] = {
    "schema_version": int,
    "amends": str,
    "calibration": {"bands": "bands", "luck_share_at_least": _NUM},
    "h4": {"condition": str, "scalings": "list[str]", "group_gap_exceeds_none": bool, "none_gap_above": _NUM},
    "predictions": "predictions",
}
_PREDICTION_COMMON: dict[str, Any] = {"confidence": _NUM, "statement": str, "check": str}
#: check name -> the keys its numbers need (besides confidence, statement, check).
PREDICTION_CHECKS: dict[str, dict[str, Any]] = {
    "spurious_rate": {"condition": str, "expected": _NUM, "within": _NUM, "paired_below": _NUM},
    "auc_gap_and_final_vs_clean": {"condition": str, "gap_at_least": _NUM, "final_clean_within": _NUM},
    "auc_gap_range": {"condition": str, "min": _NUM, "max": _NUM},
    "auc_gap_and_final_range": {
        "condition": str,
        "min": _NUM,
        "max": _NUM,
        "final_min": _NUM,
        "final_max": _NUM,
    },
    "gap_below_reference": {"condition": str, "reference": str, "within": _NUM},
    "challenge_gap": {"condition": str, "steps": "list[int]", "at_least": _NUM},
    "scaling_shrink": {"condition": str, "shrink_min": _NUM, "shrink_max": _NUM},
    "blocking_order": {"conditions": "list[str]"},
    "heldout_noninferior": {"condition": str, "lower_bound_above": _NUM, "point_within": _NUM},
    "not_run": {"reason": str},
    "luck_share_at_least": {"condition": str, "at_least": _NUM},
    "probe_p13": {},
}
_RANGES = (("min", "max"), ("final_min", "final_max"), ("shrink_min", "shrink_max"))


def _check_tier(node: Any, schema: Any, where: str, source: str) -> None:  # noqa: C901 - one check per leaf kind of the tier schema, each with its own message
    """`_check` plus the tier file's own leaf kinds: list[str], model bands and predictions."""
    if isinstance(schema, dict):
        _check_keys(node, schema, where, source, "amended")
        for key, sub in schema.items():
            _check_tier(node[key], sub, f"{where}.{key}" if where else key, source)
    elif schema == "list[str]":
        if not (isinstance(node, list) and node and all(isinstance(x, str) and x for x in node)):
            raise UserError(f"{source}: {where} must be a non-empty list of strings")
    elif schema == "bands":
        if not isinstance(node, dict) or not node:
            raise UserError(f"{source}: {where} must map at least one model name to its bands")
        for model, bands in node.items():
            _check_tier(bands, {"clean_success": "list[num]"}, f"{where}.{model}", source)
            low_high = bands["clean_success"]
            if len(low_high) != 2 or not 0 <= low_high[0] <= low_high[1] <= 1:
                raise UserError(
                    f"{source}: {where}.{model}.clean_success must be [low, high] with "
                    f"0 <= low <= high <= 1, got {low_high}"
                )
    elif schema == "predictions":
        if not isinstance(node, dict) or not node:
            raise UserError(f"{source}: {where} must map prediction ids (P1, P2, ...) to predictions")
        for pid, prediction in node.items():
            here = f"{where}.{pid}"
            if not (isinstance(pid, str) and pid[:1] == "P" and pid[1:].isdigit()):
                raise UserError(f"{source}: {here}: prediction ids are P followed by a number (P1, P12)")
            check = prediction.get("check") if isinstance(prediction, dict) else None
            if check not in PREDICTION_CHECKS:
                raise UserError(
                    f"{source}: {here}.check {check!r} is not a known check ({', '.join(PREDICTION_CHECKS)})"
                )
            _check_tier(prediction, {**_PREDICTION_COMMON, **PREDICTION_CHECKS[check]}, here, source)
    else:
        _check(node, schema, where, source)


def validate_tier_rules(rules: Any, source: str = "tier rules") -> dict:  # noqa: C901 - one check per frozen tier rule, each with its own message
    """Check the amended tier rules' schema and internal consistency; return a deep copy."""
    _check_tier(rules, TIER_SCHEMA, "", source)
    if rules["schema_version"] != TIER_SCHEMA_VERSION:
        raise UserError(f"{source}: schema_version {rules['schema_version']} is not {TIER_SCHEMA_VERSION}")
    if not 0 <= rules["calibration"]["luck_share_at_least"] <= 1:
        raise UserError(f"{source}: calibration.luck_share_at_least must lie in [0, 1]")
    h4 = rules["h4"]
    if h4["condition"] not in TIER_CONDITIONS:
        raise UserError(
            f"{source}: h4.condition {h4['condition']!r} is not one of {', '.join(TIER_CONDITIONS)}"
        )
    if sorted(h4["scalings"]) != sorted(SCALINGS) or len(h4["scalings"]) != len(SCALINGS):
        raise UserError(f"{source}: h4.scalings must list {' and '.join(SCALINGS)} once each")
    for pid, prediction in rules["predictions"].items():
        here = f"{source}: predictions.{pid}"
        if not 0 <= prediction["confidence"] <= 1:
            raise UserError(f"{here}.confidence {prediction['confidence']} must lie in [0, 1]")
        if not prediction["statement"].strip():
            raise UserError(f"{here}.statement is empty; state the prediction")
        named = [prediction[k] for k in ("condition", "reference") if k in prediction]
        named += prediction.get("conditions", [])
        unknown = [c for c in named if c not in TIER_CONDITIONS]
        if unknown:
            raise UserError(f"{here}: condition {unknown[0]!r} is not one of {', '.join(TIER_CONDITIONS)}")
        for low, high in _RANGES:
            if low in prediction and prediction[low] > prediction[high]:
                raise UserError(f"{here}: {low} {prediction[low]} exceeds {high} {prediction[high]}")
        if "steps" in prediction and prediction["steps"] != sorted(set(prediction["steps"])):
            raise UserError(f"{here}.steps must be strictly increasing")
    return copy.deepcopy(rules)


def load_tier_rules(
    path: str | os.PathLike | None = None, verification: str | os.PathLike | None = None
) -> dict:
    """Load and validate ``prereg/tier_rules.yaml`` (cwd-relative by default).

    With ``verification`` (an amendment verification report), the file must also be covered by a
    verified freeze record with its current bytes (`verify.require_covered`), so a tier decision never
    applies rules that the time stamps do not cover.
    """
    from paired_rollouts.io import require_file

    source = require_file(
        path if path is not None else DEFAULT_TIER_RULES_PATH,
        "tier rules (run from the repository root or pass the path)",
    )
    if verification is not None:
        from paired_rollouts.prereg.verify import require_covered

        require_covered(verification, source)
    return validate_tier_rules(_read_yaml(source, "restore the amended file"), str(source))


# ---------------------------------------------------------------- amendment A3: the prediction rules

DEFAULT_PREDICTION_RULES_PATH = Path("prereg/prediction_rules.yaml")
PREDICTION_GAP_SCHEMA: dict[str, Any] = {
    "name": str,
    "label": str,
    "condition": str,
    "by_seed": str,
    "published_id": str,
    "published": _NUM,
}
PREDICTION_SCHEMA: dict[str, Any] = {
    "schema_version": int,
    "gaps": list,
    "min_seed_pairs": int,
    "interval": {"level": _NUM, "resamples": int, "seed": int},
}
# The per-seed-pair blocks of a decision register a gap may read (records.DecisionRegister).
PREDICTION_BY_SEED = (
    "H2a.auc_difference_by_seed",
    "H2a.final_difference_by_seed",
    "H2b.auc_difference_by_seed",
    "H2b.final_difference_by_seed",
    "H3.difference_by_seed",
    "H5.difference_by_seed",
)


def validate_prediction_rules(rules: Any, source: str = "prediction rules") -> dict:
    """The schema of ``prereg/prediction_rules.yaml``: every key present, typed, nothing unknown."""
    _check(rules, PREDICTION_SCHEMA, "", source)
    if rules["schema_version"] != SCHEMA_VERSION:
        raise UserError(f"{source}: schema_version {rules['schema_version']} is not {SCHEMA_VERSION}")
    if not rules["gaps"]:
        raise UserError(f"{source}: gaps must list at least one gap; restore the amended file")
    names = set()
    for index, gap in enumerate(rules["gaps"]):
        where = f"gaps[{index}]"
        _check_keys(gap, PREDICTION_GAP_SCHEMA, where, source, "amended")
        for key, kind in PREDICTION_GAP_SCHEMA.items():
            _check(gap[key], kind, f"{where}.{key}", source)
        if gap["name"] in names:
            raise UserError(f"{source}: {where}.name {gap['name']!r} is given twice")
        names.add(gap["name"])
        if gap["condition"] not in ("C2", "C4"):
            raise UserError(f"{source}: {where}.condition must be C2 or C4 (the decided comparisons)")
        if gap["by_seed"] not in PREDICTION_BY_SEED or not gap["by_seed"].startswith(
            ("H3", "H5", "H2a") if gap["condition"] == "C2" else ("H2b",)
        ):
            raise UserError(
                f"{source}: {where}.by_seed {gap['by_seed']!r} is not a per-seed-pair block of {gap['condition']}'s "
                f"decision register ({', '.join(PREDICTION_BY_SEED)})"
            )
    if rules["min_seed_pairs"] < 2:
        raise UserError(f"{source}: min_seed_pairs must be at least 2 (an interval needs pairs)")
    interval = rules["interval"]
    if not 0 < interval["level"] < 100 or interval["resamples"] < 1:
        raise UserError(f"{source}: interval.level must lie in (0, 100) and interval.resamples be at least 1")
    return copy.deepcopy(rules)


def load_prediction_rules(path: str | os.PathLike | None = None) -> dict:
    """Load and validate ``prereg/prediction_rules.yaml`` (amendment A3; cwd-relative by default)."""
    from paired_rollouts.io import require_file

    source = require_file(
        path if path is not None else DEFAULT_PREDICTION_RULES_PATH,
        "prediction rules (run from the repository root or pass the path)",
    )
    return validate_prediction_rules(_read_yaml(source, "restore the amended file"), str(source))

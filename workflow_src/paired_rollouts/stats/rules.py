"""The pre-registered decision thresholds, read in one place.

The rules file (``prereg/decision_rules.yaml``) is frozen with the protocol, so no threshold has a
default here: a missing key is an error that names it. ``PAPER_RULES`` is the paper's set, used by the
tests and as the reference for what the file must contain.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError

PAPER_RULES: dict[str, Any] = {
    "threshold": 0.617,
    "periodic_steps": [0, 20, 40, 60, 80, 100],
    "bootstrap": {"resamples": 10000, "seed": 20260911, "interval": 95},
    "h2": {"mean_at_least": 0.03, "every_seed_positive": True, "final_direction": True, "interval": 95,
           "sets": {"C2": {"validation": "at_training", "final": "noisy_p025"},
                    "C4": {"validation": "clean", "final": "clean"}}},
    "h3": {"set": "challenge", "steps": [40, 60, 80], "mean_at_least": 0.05, "every_seed_positive": True,
           "interval": 95},
    "h5": {"set": "heldout_types", "lower_bound_above": -0.03, "interval": 90},
    "h1a_c4": {"group_size": 8, "q": 0.10, "independent_within": 0.07, "paired_at_most": 0.02},
    "h1a_c2": {"diagnostic_step": 0, "lambda_at_least": 0.15, "lower_bound_above": 0.05, "interval": 95},
}
# The rules file may name the at-training-noise validation set "noisy" (the paper's word); the episode
# records call that regime "at_training" (docs/CONTRACT.md#episode-record).
SET_ALIASES = {"noisy": "at_training"}
DEFAULT_SETS = PAPER_RULES["h2"]["sets"]


@dataclass(frozen=True)
class DecisionRules:
    """Typed view of the rules dict; every lookup of a threshold goes through here."""

    raw: dict[str, Any]
    source: str = "<dict>"
    sha256: str | None = None

    def _get(self, *path: str, default: Any = ...) -> Any:
        node: Any = self.raw
        for key in path:
            if not isinstance(node, dict) or key not in node:
                if default is not ...:
                    return default
                raise UserError(f"{self.source}: decision rules lack '{'.'.join(path)}'; add it to the rules file")
            node = node[key]
        return node

    def _float(self, *path: str) -> float:
        return float(self._get(*path))

    threshold = property(lambda self: self._float("threshold"))
    resamples = property(lambda self: int(self._get("bootstrap", "resamples")))
    seed = property(lambda self: int(self._get("bootstrap", "seed")))
    h2_mean_at_least = property(lambda self: self._float("h2", "mean_at_least"))
    h2_every_seed_positive = property(lambda self: bool(self._get("h2", "every_seed_positive", default=True)))
    h2_final_direction = property(lambda self: bool(self._get("h2", "final_direction", default=True)))
    h3_steps = property(lambda self: [int(s) for s in self._get("h3", "steps")])
    h3_mean_at_least = property(lambda self: self._float("h3", "mean_at_least"))
    h3_every_seed_positive = property(lambda self: bool(self._get("h3", "every_seed_positive", default=True)))
    h3_set = property(lambda self: self._set(self._get("h3", "set", default="challenge")))
    h5_lower_bound_above = property(lambda self: self._float("h5", "lower_bound_above"))
    h5_set = property(lambda self: self._set(self._get("h5", "set", default="heldout_types")))
    h1a_c4_independent_within = property(lambda self: self._float("h1a_c4", "independent_within"))
    h1a_c4_paired_at_most = property(lambda self: self._float("h1a_c4", "paired_at_most"))
    h1a_c4_q = property(lambda self: self._float("h1a_c4", "q"))
    h1a_c4_group_size = property(lambda self: self._get("h1a_c4", "group_size", default=None))
    h1a_c2_lambda_at_least = property(lambda self: self._float("h1a_c2", "lambda_at_least"))
    h1a_c2_lower_bound_above = property(lambda self: self._float("h1a_c2", "lower_bound_above"))
    h1a_c2_step = property(lambda self: int(self._get("h1a_c2", "diagnostic_step", default=0)))
    h1a_c4_expected_rate = property(lambda self: self._get("h1a_c4", "expected_independent_rate", default=None))
    paired_max_seeds = property(lambda self: int(self._get("h1a_c2", "paired_max_seeds_per_group", default=1)))
    independent_min_seeds = property(
        lambda self: int(self._get("h1a_c2", "independent_min_seeds_per_group", default=2)))

    def frozen_auc_weights(self, steps: list[int]) -> tuple[list[float] | None, list[int] | None]:
        """(frozen weights, frozen grid); the weights apply only on exactly the frozen grid."""
        weights = self._get("auc_weights", default=None)
        grid = self._get("periodic_steps", default=None)
        if weights is None or grid is None:
            return None, None
        return [float(w) for w in weights], [int(s) for s in grid]

    @property
    def rule_steps(self) -> list[int]:
        """The pre-registered periodic grid (for mapping H3 steps onto another grid)."""
        steps = self._get("periodic_steps", default=None)
        return [int(s) for s in steps] if steps else [0, int(self._get("h3", "of_steps", default=100))]

    def interval(self, section: str, default: int) -> tuple[float, float]:
        """Percentile bounds of a central interval, e.g. 95 -> (2.5, 97.5)."""
        level = float(self._get(section, "interval", default=default))
        return (100 - level) / 2, 100 - (100 - level) / 2

    def _set(self, name: str) -> str:
        return SET_ALIASES.get(str(name), str(name))

    def sets(self, condition: str) -> dict[str, str]:
        node = self._get("h2", "sets", default=DEFAULT_SETS)
        chosen = node.get(condition, DEFAULT_SETS[condition])
        return {"validation": self._set(chosen["validation"]), "final": self._set(chosen["final"])}


def rules_from_dict(data: dict[str, Any], source: str = "<dict>", sha256: str | None = None) -> DecisionRules:
    if not isinstance(data, dict):
        raise UserError(f"{source}: decision rules must be a mapping")
    return DecisionRules(copy.deepcopy(data), source, sha256)


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    for attr in ("to_dict", "model_dump", "dict"):
        if callable(getattr(obj, attr, None)):
            return getattr(obj, attr)()
    import dataclasses

    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    raise UserError(f"decision rules loader returned {type(obj).__name__}, expected a mapping")


def load_rules(path: str | Path) -> DecisionRules:
    """Read the rules file, through the pre-registration loader when it exists."""
    from paired_rollouts.io import sha256_file

    source = Path(path)
    if not source.is_file():
        raise UserError(f"{source}: decision rules file not found")
    try:
        from paired_rollouts.prereg.rules import load_decision_rules  # type: ignore[import-not-found]
    except ImportError:
        load_decision_rules = None
    if load_decision_rules is not None:
        data = _as_dict(load_decision_rules(source))
    else:
        import yaml

        try:
            data = yaml.safe_load(source.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise UserError(f"{source}: not valid YAML ({exc})") from exc
    return rules_from_dict(data, str(source), sha256_file(source))

"""Noise configurations (docs/simulator.md#noise-configurations): per-call fault rate p, per-episode grader flip rate q, the fault
mixture, the coupling mode and the matched challenge set."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from paired_rollouts.errors import UserError

TRANSITION_TYPES: tuple[str, ...] = ("transient", "rate_limit", "outage", "stale", "truncate")
HELDOUT_TYPES: tuple[str, ...] = ("timeout_after_commit", "field_dropout")
FAULT_TYPES: tuple[str, ...] = TRANSITION_TYPES + HELDOUT_TYPES
MODES: tuple[str, ...] = ("paired", "independent", "clean")
CHALLENGES: tuple[str | None, ...] = (None, "writes_once")

DEFAULT_WEIGHTS: dict[str, float] = {
    "transient": 0.45,
    "rate_limit": 0.15,
    "outage": 0.10,
    "stale": 0.15,
    "truncate": 0.15,
}
NO_OUTAGE_WEIGHTS: dict[str, float] = {
    "transient": 0.5,
    "rate_limit": 0.5 / 3,
    "stale": 0.5 / 3,
    "truncate": 0.5 / 3,
}
HELDOUT_WEIGHTS: dict[str, float] = {"timeout_after_commit": 0.5, "field_dropout": 0.5}


class NoiseConfigError(UserError, ValueError):
    """An invalid noise configuration."""


def _rate(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise NoiseConfigError(f"noise config: {name} must be a number in [0, 1], not {value!r}")
    if not 0.0 <= value <= 1.0:
        raise NoiseConfigError(f"noise config: {name} must lie in [0, 1], not {value}")
    return float(value)


_PARSED: dict[str, tuple[NoiseConfig, dict[str, float]]] = {}  # row string -> (config, its weights)


@dataclass(frozen=True)
class NoiseConfig:
    """Frozen noise settings; ``to_json`` is the row serialisation ``json.dumps(asdict, sort_keys=True)``."""

    p: float = 0.0
    q: float = 0.0
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    mode: str = "paired"
    challenge: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", _rate("p", self.p))
        object.__setattr__(self, "q", _rate("q", self.q))
        if self.mode not in MODES:
            raise NoiseConfigError(f"noise config: mode must be one of {list(MODES)}, not {self.mode!r}")
        if self.challenge not in CHALLENGES:
            raise NoiseConfigError(
                f"noise config: challenge must be null or 'writes_once', not {self.challenge!r}"
            )
        if not isinstance(self.weights, dict):
            raise NoiseConfigError("noise config: weights must be an object {fault type: weight}")
        clean_weights = {}
        for key, value in self.weights.items():
            if key not in FAULT_TYPES:
                raise NoiseConfigError(
                    f"noise config: unknown fault type {key!r} in weights; known types: "
                    f"{', '.join(FAULT_TYPES)}"
                )
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise NoiseConfigError(f"noise config: weight of {key} must be a number >= 0, not {value!r}")
            clean_weights[key] = float(value)
        object.__setattr__(self, "weights", clean_weights)
        if self.mode != "clean" and self.p > 0 and sum(clean_weights.values()) <= 0:
            raise NoiseConfigError("noise config: p > 0 needs at least one positive fault weight")
        if self.challenge is not None and (self.p != 0 or self.q != 0 or self.mode == "clean"):
            raise NoiseConfigError("noise config: the challenge set needs p = q = 0 and a non-clean mode")

    def __hash__(self) -> int:
        return hash(self.to_json())

    # -- properties ----------------------------------------------------------------------------------
    @property
    def is_clean(self) -> bool:
        """Clean means no schedule at all (plain API, no event keys in the log)."""
        return self.mode == "clean" or (self.p == 0 and self.q == 0 and self.challenge is None)

    # -- named constructors -------------------------------------------------------------------------
    @classmethod
    def clean(cls) -> NoiseConfig:
        return cls(p=0.0, q=0.0, mode="clean")

    @classmethod
    def transition(
        cls, p: float, mode: str = "paired", weights: dict[str, float] | None = None
    ) -> NoiseConfig:
        """Per-call faults at rate p (C1, C2; C2r with ``NO_OUTAGE_WEIGHTS``)."""
        return cls(p=p, q=0.0, weights=dict(DEFAULT_WEIGHTS if weights is None else weights), mode=mode)

    @classmethod
    def outcome(cls, q: float, mode: str = "paired") -> NoiseConfig:
        """Grader flips at rate q (C3, C4)."""
        return cls(p=0.0, q=q, mode=mode)

    @classmethod
    def challenge_writes(cls, mode: str = "paired") -> NoiseConfig:
        """The matched challenge set: the first attempt of every write event fails transiently."""
        return cls(p=0.0, q=0.0, mode=mode, challenge="writes_once")

    @classmethod
    def heldout_types(cls, p: float, mode: str = "paired") -> NoiseConfig:
        """Evaluation-only fault types: timeout_after_commit and field_dropout, 0.5 / 0.5."""
        return cls(p=p, q=0.0, weights=dict(HELDOUT_WEIGHTS), mode=mode)

    def with_mode(self, mode: str) -> NoiseConfig:
        return NoiseConfig(
            p=self.p, q=self.q, weights=dict(self.weights), mode=mode, challenge=self.challenge
        )

    # -- serialisation --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        """``json.dumps(asdict(self), sort_keys=True)``, cached on the frozen config (every episode
        record carries it); the cache is used only while ``weights`` (the one mutable field) is unchanged."""
        cached = self.__dict__.get("_json")
        if cached is not None and cached[0] == self.weights:
            return cached[1]
        text = json.dumps(asdict(self), sort_keys=True)
        object.__setattr__(self, "_json", (dict(self.weights), text))  # derived data, not a field
        return text

    @classmethod
    def from_json(cls, text: str | dict | NoiseConfig) -> NoiseConfig:
        """Parse a row's ``noise`` string (or accept a dict / a NoiseConfig)."""
        if isinstance(text, NoiseConfig):
            return text
        if isinstance(text, str):
            # rows carry the same few strings for every episode: one parsed config per string (its
            # fate tables and JSON are then computed once); a hit needs its weights unchanged
            hit = _PARSED.get(text)
            if hit is not None and hit[0].weights == hit[1]:
                return hit[0]
            config = cls._parse(text)
            if len(_PARSED) >= 256:
                _PARSED.clear()
            _PARSED[text] = (config, dict(config.weights))
            return config
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str | dict) -> NoiseConfig:
        if isinstance(text, str):
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise NoiseConfigError(f"noise config is not valid JSON: {exc.msg}") from exc
        else:
            data = text
        if not isinstance(data, dict):
            raise NoiseConfigError("noise config must be a JSON object")
        unknown = set(data) - {"p", "q", "weights", "mode", "challenge"}
        if unknown:
            raise NoiseConfigError(
                f"noise config: unknown keys {sorted(unknown)}; allowed: challenge, mode, p, q, weights"
            )
        return cls(**data)

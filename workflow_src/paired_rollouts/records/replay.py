"""The replay register (``R/replay/RUN/stepN.json``, docs/records.md section 9): a checkpoint's first
final-set episodes rolled twice with every seed fixed. Its verdicts are recomputed here from the token
ids and hashes it holds: a register whose divergences, flags or summary disagree with them is refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.records.schema import (
    At,
    each,
    is_bool,
    is_dict,
    is_int,
    is_int_or_none,
    is_sha256,
    is_str,
    key,
    list_of,
    map_of,
    nullable,
    one,
    one_of,
    read_register,
)

COMMAND = "paired-rollouts replay-check"
BACKENDS = ("hf", "vllm")


def first_divergence(
    first: Sequence[Sequence[int]], second: Sequence[Sequence[int]]
) -> dict[str, int] | None:
    """Where two rolls' model turns first differ: ``{turn, token}`` (token: the first position where the
    turn's ids differ, or the shorter turn's length), or None when they are identical. A roll with fewer
    turns diverges at its first missing turn, token 0. Turns and tokens count from 0."""
    for turn, (a, b) in enumerate(zip(first, second, strict=False)):
        if list(a) != list(b):
            same = (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
            return {"turn": turn, "token": next(same, min(len(a), len(b)))}
    if len(first) != len(second):
        return {"turn": min(len(first), len(second)), "token": 0}
    return None


def earliest(divergences: Sequence[dict[str, int] | None]) -> dict[str, int] | None:
    """The earliest of some divergences in (turn, token) order; None when none diverged."""
    found = [d for d in divergences if d is not None]
    return min(found, key=lambda d: (d["turn"], d["token"])) if found else None


def _is_turns(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(t, list) and all(is_int(x) for x in t) for t in v)


def is_two_rolls(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(_is_turns(r) for r in v)


is_two_rolls.__name__ = "two rolls of model turns (lists of token ids)"


def is_divergence(v: Any) -> bool:
    return (
        isinstance(v, dict) and set(v) == {"turn", "token"} and all(is_int(x) and x >= 0 for x in v.values())
    )


is_divergence.__name__ = "an object {turn, token}"


def is_two_outcomes(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(isinstance(o, dict) for o in v)


is_two_outcomes.__name__ = "two outcome objects"


@dataclass(frozen=True, kw_only=True)
class ReplayEpisode:
    """One replayed episode: both rolls' model turns and outcomes and what they give."""

    index: int = key(is_int)
    task_id: str = key(is_str)
    schedule_index: int | None = key(is_int_or_none)
    schedule_seed: int = key(is_int)
    turns: list[list[list[int]]] = key(is_two_rolls)
    outcomes: list[dict[str, Any]] = key(is_two_outcomes)
    first_divergence: dict[str, int] | None = key(nullable(is_divergence))
    exact: bool = key(is_bool)
    outcome_changed: bool = key(is_bool)
    record_sha256: str = key(is_sha256)
    evaluation_sha256: str = key(is_sha256)
    matches_evaluation: bool = key(is_bool)

    def _check(self, at: At) -> None:
        divergence = first_divergence(*self.turns)
        derived = {
            "first_divergence": divergence,
            "exact": divergence is None,
            "outcome_changed": self.outcomes[0] != self.outcomes[1],
            "matches_evaluation": self.record_sha256 == self.evaluation_sha256,
        }
        for name, value in derived.items():
            if getattr(self, name) != value:
                raise at.error(f"{name} is {getattr(self, name)!r}, its token ids and hashes give {value!r}")


@dataclass(frozen=True, kw_only=True)
class ReplaySummary:
    episodes: int = key(is_int)
    exact: int = key(is_int)
    outcome_changed: int = key(is_int)
    matches_evaluation: int = key(is_int)
    first_divergence: dict[str, int] | None = key(nullable(is_divergence))


def summarize(episodes: Sequence[ReplayEpisode | dict[str, Any]]) -> dict[str, Any]:
    """The summary of a register's episodes (written by the replay check, recomputed by the reader)."""

    def get(e: ReplayEpisode | dict[str, Any], name: str) -> Any:
        return e[name] if isinstance(e, dict) else getattr(e, name)

    return {
        "episodes": len(episodes),
        "exact": sum(get(e, "exact") for e in episodes),
        "outcome_changed": sum(get(e, "outcome_changed") for e in episodes),
        "matches_evaluation": sum(get(e, "matches_evaluation") for e in episodes),
        "first_divergence": earliest([get(e, "first_divergence") for e in episodes]),
    }


@dataclass(frozen=True, kw_only=True)
class ReplayRegister:
    """R/replay/RUN/stepN.json (evaluation/replay.py)."""

    path: str
    run: str = key(is_str)
    step: int = key(is_int)
    phase: str = key(one_of("final"))
    regime: str = key(is_str)
    backend: str = key(one_of(*BACKENDS))
    device: str = key(is_str)
    dtype: str = key(is_str)
    engine_seed: int | None = key(is_int_or_none)
    batches: list[dict[str, int]] = key(list_of(map_of(is_int)))
    files: dict[str, str] = key(map_of(is_sha256))
    episodes: list[ReplayEpisode] = key(list_of(is_dict), read=each(ReplayEpisode))
    summary: ReplaySummary = key(is_dict, read=one(ReplaySummary))

    def _check(self, at: At) -> None:
        for i, episode in enumerate(self.episodes):
            if episode.index != i:
                raise at.error(f"episodes[{i}] has index {episode.index}; the episodes must be in set order")
        derived = summarize(self.episodes)
        for name, value in derived.items():
            if getattr(self.summary, name) != value:
                raise UserError(
                    f"{self.path}: summary.{name} is {getattr(self.summary, name)!r}, its episodes give "
                    f"{value!r}; regenerate it with '{COMMAND}'"
                )

    @property
    def all_exact(self) -> bool:
        return self.summary.exact == self.summary.episodes


def read_replay(path: str | Path) -> ReplayRegister:
    """R/replay/RUN/stepN.json, typed; divergences, flags and summary recomputed."""
    return read_register(ReplayRegister, path, "replay register", COMMAND)

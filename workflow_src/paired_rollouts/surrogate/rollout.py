"""Rolling the surrogate out on rows: the same rows (task, schedule seed, noise, budget) that the LLM's
trainer, evaluation and diagnostic stages consume, through one reused ``EpisodeSession``.

``SurrogateRunner.rollout`` has the LLM ``PolicyRunner``'s signature, so ``evaluation.evaluate.roll_rows``
writes the surrogate's evaluation and diagnostic records with the very code that writes the LLM's.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from paired_rollouts.episode import EpisodeSession
from paired_rollouts.noise.seeds import derive_seed
from paired_rollouts.surrogate.menu import play
from paired_rollouts.surrogate.policy import Decision, Policy, counted_decisions, score


def policy_rng(sampling_seed: int, position: int) -> random.Random:
    """The policy's own randomness for one rollout: keyed by the batch seed and the row's position."""
    return random.Random(derive_seed("surrogate-policy", sampling_seed, position))


class SurrogateRunner:
    """Plays rows with one parameter vector; keeps each rollout's decisions for scores."""

    def __init__(self, theta: list[float], tasks_by_id: dict[str, dict[str, Any]]) -> None:
        self.theta = list(theta)
        self.policy = Policy(self.theta)
        self.tasks = tasks_by_id
        self.session = EpisodeSession()
        self.last_decisions: list[list[Decision]] = []

    def play_row(
        self,
        row: dict[str, Any],
        rng: random.Random,
        *,
        phase: str,
        resolved_seed: int | None = None,
        slot: int = 0,
    ) -> tuple[dict[str, Any], list[Decision]]:
        task = self.tasks[row["task_id"]]
        self.session.reset(
            task,
            schedule_seed=row["schedule_seed"],
            noise=row["noise"],
            budget=row.get("budget"),
            resolved_seed=resolved_seed,
            slot=slot,
            phase=phase,
            condition=row["condition"],
        )
        decisions = play(self.session, task, self.policy, rng)
        record = dict(self.session.finish_and_grade())
        record["decisions"] = counted_decisions(decisions)
        return record, decisions

    def rollout(self, rows: list[dict[str, Any]], phase: str, sampling_seed: int) -> tuple[list[dict], None]:
        """One record per row (paired evaluation schedules: the row's seed is the resolved seed)."""
        out, self.last_decisions = [], []
        for j, row in enumerate(rows):
            record, decisions = self.play_row(row, policy_rng(sampling_seed, j), phase=phase, slot=j)
            out.append(record)
            self.last_decisions.append(decisions)
        return out, None

    def scores(self) -> np.ndarray:
        """Exact score vectors (n x P) of the last rollout's rows."""
        return np.stack([score(self.theta, d, self.policy) for d in self.last_decisions])

    def close(self) -> None:
        """Nothing to release (the LLM runner's interface)."""

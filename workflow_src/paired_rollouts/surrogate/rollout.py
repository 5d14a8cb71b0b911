"""Rolling the surrogate out on rows: the same rows (task, schedule seed, noise, budget) that the LLM's
trainer, evaluation and diagnostic stages consume, through one reused ``EpisodeSession``.

``SurrogateRunner.rollout`` has the LLM ``PolicyRunner``'s signature, so ``evaluation.evaluate.roll_rows``
writes the surrogate's evaluation and diagnostic records with the very code that writes the LLM's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from paired_rollouts.episode import EpisodeSession
from paired_rollouts.noise.seeds import derive_seed
from paired_rollouts.surrogate import policy as _actions
from paired_rollouts.surrogate.menu import play
from paired_rollouts.surrogate.phrasing import DIMENSION, Phrasing, phrase_names
from paired_rollouts.surrogate.policy import (
    PLAIN,
    Decision,
    P,
    Policy,
    Shape,
    counted_decisions,
    score,
    task_logits,
)


def policy_rng(sampling_seed: int, position: int) -> random.Random:
    """The policy's own randomness for one rollout: keyed by the batch seed and the row's position."""
    return random.Random(derive_seed("surrogate-policy", sampling_seed, position))


def all_parameter_names() -> list[str]:
    """Every parameter's name: the (context, action) pairs, then the phrasing vocabulary."""
    return _actions.parameter_names() + phrase_names()


def full_vector(theta: Sequence[float]) -> list[float]:
    """The whole parameter vector: the action parameters, then the phrasing vocabulary (zero when only
    the 32 action parameters are given: a uniform vocabulary)."""
    values = [float(x) for x in theta]
    if len(values) == P:
        return values + [0.0] * (DIMENSION - P)
    if len(values) != DIMENSION:
        raise ValueError(
            f"theta has {len(values)} entries; the surrogate has {P} actions + phrasing = {DIMENSION}"
        )
    return values


class SurrogateRunner:
    """Plays rows with one parameter vector; keeps each rollout's decisions (and its task's policy) for
    scores."""

    def __init__(
        self, theta: Sequence[float], tasks_by_id: dict[str, dict[str, Any]], shape: Shape = PLAIN
    ) -> None:
        self.theta = full_vector(theta)
        self.shape = shape
        self.tasks = tasks_by_id
        self.session = EpisodeSession()
        self._policies: dict[str, Policy] = {}
        self.phrasing = Phrasing(self.theta[P:], shape.tokens, shape.error_tokens)
        self.last_decisions: list[list[Decision]] = []
        self.last_policies: list[Policy] = []

    def policy_for(self, task_id: str) -> Policy:
        """The action policy on one task (its difficulty applied), cached."""
        policy = self._policies.get(task_id)
        if policy is None:
            policy = self._policies[task_id] = Policy(task_logits(self.theta, task_id, self.shape.difficulty))
        return policy

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
        decisions = play(self.session, task, self.policy_for(task["task_id"]), rng)
        record = dict(self.session.finish_and_grade())
        record["decisions"] = counted_decisions(decisions)
        return record, decisions

    def rollout(self, rows: list[dict[str, Any]], phase: str, sampling_seed: int) -> tuple[list[dict], None]:
        """One record per row (paired evaluation schedules: the row's seed is the resolved seed)."""
        out, self.last_decisions, self.last_policies = [], [], []
        for j, row in enumerate(rows):
            record, decisions = self.play_row(row, policy_rng(sampling_seed, j), phase=phase, slot=j)
            out.append(record)
            self.last_decisions.append(decisions)
            self.last_policies.append(self.policy_for(row["task_id"]))
        return out, None

    def scores(self, phrasing_rng: np.random.Generator) -> np.ndarray:
        """Exact score vectors (n x DIMENSION) of the last rollout's rows: the action part, then the
        phrasing tokens (drawn now from ``phrasing_rng``)."""
        return episode_scores(self, self.last_decisions, self.last_policies, phrasing_rng)

    def close(self) -> None:
        """Nothing to release (the LLM runner's interface)."""


def episode_scores(
    runner: SurrogateRunner,
    decisions: Sequence[Sequence[Decision]],
    policies: Sequence[Policy],
    phrasing_rng: np.random.Generator,
) -> np.ndarray:
    """Score vectors (n x DIMENSION) of episodes played by ``runner``: exact action scores under each
    episode's own task policy, then the phrasing scores."""
    actions = np.stack([score(runner.theta, d, p) for d, p in zip(decisions, policies, strict=True)])
    return np.concatenate([actions, runner.phrasing.scores(decisions, phrasing_rng)], axis=1)

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

from paired_rollouts.backoffice.tasks import budget_for
from paired_rollouts.episode import EpisodeSession
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.seeds import derive_seed
from paired_rollouts.surrogate import lean
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


class _Node:
    """A point of a trajectory tree: the menu decided there (None: not seen yet) and a child per choice,
    or, where the episode ended, its record's course (``EpisodeSession.course_of``)."""

    __slots__ = ("menu", "children", "course")

    def __init__(self) -> None:
        self.menu: tuple[str, tuple[int, ...]] | None = None
        self.children: dict[int, _Node] = {}
        self.course: dict[str, Any] | None = None


class _Recorder:
    """The policy seen by ``play`` while a trajectory is played for the tree: the choices already drawn
    on the way down (``forced``) first, then the policy's own; each decision extends the tree."""

    __slots__ = ("policy", "forced", "node")

    def __init__(self, policy: Policy, forced: list[int], root: _Node) -> None:
        self.policy, self.forced, self.node = policy, forced[::-1], root

    def choose(self, ctx: str, avail: tuple[int, ...], rng: random.Random) -> int:
        chosen = self.forced.pop() if self.forced else self.policy.choose(ctx, avail, rng)
        self.step(ctx, avail, chosen)
        return chosen

    def step(self, ctx: str, avail: tuple[int, ...], chosen: int) -> None:
        """Extend the tree by one decision (also one the compiled episode has taken)."""
        node = self.node
        if node.menu is None:
            node.menu = (ctx, avail)
        elif node.menu != (ctx, avail):
            raise AssertionError(f"the episode offered {(ctx, avail)} where it offered {node.menu} before")
        child = node.children.get(chosen)
        if child is None:
            child = node.children[chosen] = _Node()
        self.node = child


class Trajectories:
    """Episodes already played, by (task, schedule, noise, budget): a tree of decisions each.

    An episode is a pure function of its task, resolved seed (none under clean noise), noise config,
    budget and decisions, and the policy's next decision depends only on the task (its difficulty), the
    menu it is shown and its own random stream; a tree holds menus and ends, never a choice, so it serves
    every parameter vector and shape (the phrasing tokens are drawn after the episode). So a rollout that
    shares a schedule with earlier ones (a paired group, an evaluation schedule at another checkpoint, a
    diagnostic sample) walks the tree drawing its decisions as it would in play; if it reaches a known end
    its record is the course found there, else the episode is played with the choices drawn so far. Same
    draws, same records; the episodes already seen are not simulated again. At most ``max_courses`` ends
    are kept (then the trees start afresh).
    """

    def __init__(self, max_courses: int = 20_000) -> None:
        self.max_courses = max_courses
        self.courses = 0
        self._roots: dict[tuple[Any, ...], tuple[dict[str, Any], _Node]] = {}

    def root(self, task: dict[str, Any], row: dict[str, Any]) -> _Node:
        noise = row["noise"]
        seed = None if NoiseConfig.from_json(noise).is_clean else row["schedule_seed"]
        key = (row["task_id"], seed, noise, row.get("budget"))
        entry = self._roots.get(key)
        if entry is None or entry[0] is not task:  # another task object under the id: start afresh
            if self.courses >= self.max_courses:
                self._roots.clear()
                self.courses = 0
            entry = self._roots[key] = (task, _Node())
        return entry[1]


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
        self,
        theta: Sequence[float],
        tasks_by_id: dict[str, dict[str, Any]],
        shape: Shape = PLAIN,
        trajectories: Trajectories | None = None,
        lean: bool = False,
    ) -> None:
        self.theta = full_vector(theta)
        # lean: records hold the outcome only (``EpisodeSession.finish_outcome``); for rollouts whose
        # records are read for rewards and counts, never written, on a tree no full rollout shares
        self.lean = lean
        self.shape = shape
        self.tasks = tasks_by_id
        self.session = EpisodeSession()
        self.trajectories = trajectories
        self._policies: dict[str, Policy] = {}
        self.phrasing = Phrasing(self.theta[P:], shape.tokens, shape.error_tokens)
        self.last_decisions: list[list[Decision]] = []
        self.last_policies: list[Policy] = []
        self.last_scores: list[np.ndarray | None] = []
        # the exact action score of the last ``play_row``'s episode where the compiled episode
        # computed it while playing (None: ``score`` computes it from the decisions)
        self.played_score: np.ndarray | None = None

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
        start = {
            "schedule_seed": row["schedule_seed"],
            "noise": row["noise"],
            "resolved_seed": resolved_seed,
            "slot": slot,
            "phase": phase,
            "condition": row["condition"],
        }
        policy = self.policy_for(task["task_id"])
        self.played_score = None
        compiled = lean.compiled_task(task)
        tree = self.trajectories
        if tree is None or resolved_seed is not None or not isinstance(row["noise"], str):
            # a rollout's own schedule (independent arms) is met once: nothing to share
            if compiled is not None:
                record, decisions = self._play_compiled(compiled, policy, task, row, rng, start, [])
            else:
                self.session.reset(task, budget=row.get("budget"), **start)
                decisions = play(self.session, task, policy, rng)
                record = dict(self._finish())
        else:
            record, decisions = self._play_shared(tree, policy, task, row, rng, start, compiled)
        record["decisions"] = counted_decisions(decisions)
        return record, decisions

    def _play_compiled(
        self,
        compiled: Any,
        policy: Policy,
        task: dict[str, Any],
        row: dict[str, Any],
        rng: random.Random,
        start: dict,
        forced: list[int],
    ) -> tuple[dict[str, Any], list[Decision]]:
        """An episode played by the compiled episode (surrogate/lean.py): the same decisions and record as
        ``play`` then ``finish_outcome`` (lean) or ``finish_and_grade`` (its calls replayed for the full
        record)."""
        schedule = self.session.begin_elsewhere(task, **start)
        budget = budget_for(task) if row.get("budget") is None else int(row["budget"])
        trace: list[tuple[int, int, int, int]] | None = None if self.lean else []
        played = lean.play(compiled, policy, rng, schedule, budget, forced, trace)
        self.played_score = played.score_vector()
        if trace is not None:
            return lean.full_record(self.session, task, compiled, trace, played, budget), played.decisions
        record = self.session.outcome_of(
            played.success, played.calls, budget, played.budget_exceeded, True, played.exposed
        )
        return record, played.decisions

    def _play_shared(
        self,
        tree: Trajectories,
        policy: Policy,
        task: dict[str, Any],
        row: dict[str, Any],
        rng: random.Random,
        start: dict,
        compiled: Any = None,
    ) -> tuple[dict[str, Any], list[Decision]]:
        """``play_row`` on a schedule others may share: down the tree as far as it is known, then play
        (the compiled episode where ``compiled`` is given)."""
        node = root = tree.root(task, row)
        decisions: list[Decision] = []
        while node.course is None and node.menu is not None:
            ctx, avail = node.menu
            chosen = policy.choose(ctx, avail, rng)
            decisions.append((ctx, avail, chosen))
            child = node.children.get(chosen)
            if child is None:
                break
            node = child
        else:
            if node.course is not None:
                return dict(self.session.repeat(node.course, task, **start)), decisions
        forced = [chosen for _, _, chosen in decisions]
        if compiled is not None:
            record, decisions = self._play_compiled(compiled, policy, task, row, rng, start, forced)
            recorder = _Recorder(policy, [], root)
            for ctx, avail, chosen in decisions:  # the tree grows as the recorder grows it in play
                recorder.step(ctx, avail, chosen)
        else:
            recorder = _Recorder(policy, forced, root)
            self.session.reset(task, budget=row.get("budget"), **start)
            decisions = play(self.session, task, recorder, rng)  # type: ignore[arg-type]
            record = self._finish()
        recorder.node.course = EpisodeSession.course_of(record)
        tree.courses += 1
        return dict(record), decisions

    def _finish(self) -> dict[str, Any]:
        """The played episode's record: the outcome only when lean, else the full record."""
        return self.session.finish_outcome() if self.lean else self.session.finish_and_grade()

    def rollout(self, rows: list[dict[str, Any]], phase: str, sampling_seed: int) -> tuple[list[dict], None]:
        """One record per row (paired evaluation schedules: the row's seed is the resolved seed)."""
        out, self.last_decisions, self.last_policies, self.last_scores = [], [], [], []
        for j, row in enumerate(rows):
            record, decisions = self.play_row(row, policy_rng(sampling_seed, j), phase=phase, slot=j)
            out.append(record)
            self.last_decisions.append(decisions)
            self.last_policies.append(self.policy_for(row["task_id"]))
            self.last_scores.append(self.played_score)
        return out, None

    def scores(self, phrasing_rng: np.random.Generator) -> np.ndarray:
        """Exact score vectors (n x DIMENSION) of the last rollout's rows: the action part, then the
        phrasing tokens (drawn now from ``phrasing_rng``)."""
        return episode_scores(self, self.last_decisions, self.last_policies, phrasing_rng, self.last_scores)

    def close(self) -> None:
        """Nothing to release (the LLM runner's interface)."""


def episode_scores(
    runner: SurrogateRunner,
    decisions: Sequence[Sequence[Decision]],
    policies: Sequence[Policy],
    phrasing_rng: np.random.Generator,
    played: Sequence[np.ndarray | None] | None = None,
) -> np.ndarray:
    """Score vectors (n x DIMENSION) of episodes played by ``runner``: exact action scores under each
    episode's own task policy (``played``: those the compiled lean episode computed, None where it did
    not), then the phrasing scores."""
    known = played if played is not None else [None] * len(decisions)
    actions = np.stack(
        [
            score(runner.theta, d, p) if k is None else k
            for d, p, k in zip(decisions, policies, known, strict=True)
        ]
    )
    return np.concatenate([actions, runner.phrasing.scores(decisions, phrasing_rng)], axis=1)

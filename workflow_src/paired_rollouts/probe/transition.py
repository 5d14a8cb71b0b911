"""Transition-noise probe: group designs resampled from one frozen checkpoint's K x M capture.

Each diagnostic task has K schedules x M samples of rollouts, laid out schedule-major (index k*M + m).
The paired design is the K schedule blocks; ``independent_resampled`` draws M schedule labels with
replacement and then distinct rollouts within each drawn schedule (so a group looks like G rollouts
that each met their own schedule); ``stratified`` takes one rollout of every schedule. Rewards are the
true successes (q = 0). As in the outcome probe, only within-task Grams enter here; the cross-task
terms come from running vectors (``TRANSITION_VECTOR_KEYS`` order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError
from paired_rollouts.pairing.numeric import batched_quadratic_sum, quadratic
from paired_rollouts.probe.enumeration import (
    ESTIMATORS,
    implemented_weights,
    mean_centered_weights,
    vector_gram_from_full_gram,
    vector_gram_from_scores,
)

TRANSITION_DESIGNS = ("paired", "independent_resampled", "stratified")
TRANSITION_VECTOR_KEYS = tuple(f"{e}/{d}" for e in ESTIMATORS for d in TRANSITION_DESIGNS)


def probe_rng_seed(seed: int, step: int) -> int:
    """The per-checkpoint generator seed: seed*1000 + step."""
    return int(seed) * 1000 + int(step)


def schedule_major_order(schedule_seeds: Sequence[int], schedules: int, samples: int) -> np.ndarray:
    """Permutation putting a task's rollouts in schedule-major order (stable sort on seed), checked.

    Raises unless the result is K blocks of M rollouts, one seed per block, all block seeds distinct.
    """
    seeds = np.asarray(schedule_seeds)
    if seeds.size != schedules * samples:
        raise UserError(f"transition probe: {seeds.size} rollouts, expected {schedules} x {samples}")
    order = np.argsort(seeds, kind="stable")
    blocks = seeds[order].reshape(schedules, samples)
    if not np.all(blocks == blocks[:, :1]) or np.unique(blocks[:, 0]).size != schedules:
        raise UserError("transition probe: rollouts are not K blocks of M with one distinct seed per block")
    return order


def draw_groups(
    rng: np.random.Generator, schedules: int, samples: int, resamples: int
) -> dict[str, np.ndarray]:
    """One task's groups; consumes ``rng`` in the fixed order (all independent, then all stratified)."""
    k_, m_ = schedules, samples
    independent = np.empty((resamples, m_), dtype=np.int64)
    for r in range(resamples):
        labels = rng.integers(0, k_, size=m_)
        counts = np.bincount(labels, minlength=k_)
        picks: list[int] = []
        for k in range(k_):
            if counts[k] > 0:
                picks.extend((k * m_ + rng.choice(m_, size=int(counts[k]), replace=False)).tolist())
        independent[r] = picks
    stratified = np.empty((resamples, k_), dtype=np.int64)
    for r in range(resamples):
        stratified[r] = [k * m_ + int(rng.integers(0, m_)) for k in range(k_)]
    paired = np.arange(k_ * m_, dtype=np.int64).reshape(k_, m_)
    return {"paired": paired, "independent_resampled": independent, "stratified": stratified}


@dataclass
class TransitionTask:
    task_id: Any
    groups: dict[str, np.ndarray]
    sum_sq: dict[str, float] = field(default_factory=dict)  # "est/design" -> sum_groups ||g||^2
    weights: dict[str, np.ndarray] = field(default_factory=dict)  # "est/design" -> summed weights (K*M,)
    self_sq: dict[str, float] = field(default_factory=dict)  # w^T K w
    var_sum: dict[str, float] = field(default_factory=dict)  # design -> sum of ddof-1 reward variances


def transition_task(
    gram: np.ndarray,
    rewards: Sequence[float],
    rho: Sequence[float] | None,
    t_ref: float,
    groups: dict[str, np.ndarray],
    task_id: Any = None,
) -> TransitionTask:
    """Per-task sums of every design and estimator."""
    k_mat = np.asarray(gram, dtype=float)
    r = np.asarray(rewards, dtype=float)
    n = r.size
    if k_mat.shape != (n, n):
        raise UserError(f"transition probe: Gram of shape {k_mat.shape} for {n} rollouts")
    rho_v = np.ones(n) if rho is None else np.asarray(rho, dtype=float)
    out = TransitionTask(task_id=task_id, groups=groups)
    for design, idx in groups.items():
        obs = r[idx]
        out.var_sum[design] = float(obs.var(axis=1, ddof=1).sum()) if idx.shape[1] > 1 else 0.0
        sub = k_mat[idx[:, :, None], idx[:, None, :]]
        for est in ESTIMATORS:
            a = (
                mean_centered_weights(obs)
                if est == "mean_centered"
                else implemented_weights(obs, rho_v[idx], t_ref)
            )
            key = f"{est}/{design}"
            out.sum_sq[key] = batched_quadratic_sum(a, sub)
            w = np.bincount(idx.ravel(), weights=a.ravel(), minlength=n)
            out.weights[key] = w
            out.self_sq[key] = quadratic(w, k_mat)
    return out


class TransitionProbe:
    """Streaming form: ``add_task`` per diagnostic task (returns coefficients on the task's K*M axis per
    ``TRANSITION_VECTOR_KEYS`` key, to fold into running vectors), then ``summary(vector_gram)``."""

    def __init__(self, schedules: int, samples: int, resamples: int, t_ref: float, rng_seed: int) -> None:
        self.k, self.m, self.r = int(schedules), int(samples), int(resamples)
        self.t_ref = float(t_ref)
        self.rng_seed = int(rng_seed)
        self.rng = np.random.default_rng(self.rng_seed)
        self.tasks: list[TransitionTask] = []

    def add_task(
        self, gram, rewards, rho=None, task_id: Any = None, schedule_seeds: Sequence[int] | None = None
    ) -> dict[str, np.ndarray]:
        if schedule_seeds is not None:
            order = schedule_major_order(schedule_seeds, self.k, self.m)
            if not np.array_equal(order, np.arange(order.size)):
                raise UserError(
                    f"transition probe: task {task_id} is not in schedule-major order; "
                    "reorder with schedule_major_order first"
                )
        groups = draw_groups(self.rng, self.k, self.m, self.r)
        task = transition_task(gram, rewards, rho, self.t_ref, groups, task_id)
        self.tasks.append(task)
        return {key: task.weights[key] for key in TRANSITION_VECTOR_KEYS}

    def summary(self, vector_gram: np.ndarray) -> dict[str, Any]:
        return summarize_transition(self, vector_gram)


# A trace is a difference of two non-negative sums (the groups' squared norms less the squared norm of
# their sum); where the groups carry no variance the difference is rounding error, some 1e-16 of the
# sums, never exactly zero. Below this share of the sums it is taken as zero.
CANCELLED = 1e-9


def _ratio(num: float, den: float, den_scale: float = 0.0) -> float | None:
    """num / den; None where den is zero or, given the sums it is the difference of, lost to rounding
    (a variance ratio of 1e14 from two traces of 1e-17 says nothing)."""
    if den == 0 or abs(den) <= CANCELLED * den_scale:
        return None
    return float(num / den)


def summarize_transition(probe: TransitionProbe, vector_gram: np.ndarray) -> dict[str, Any]:
    tasks = probe.tasks
    if not tasks:
        raise UserError("transition probe: no tasks")
    vg = np.asarray(vector_gram, dtype=float)
    if vg.shape != (len(TRANSITION_VECTOR_KEYS),) * 2:
        raise UserError(f"transition probe: vector_gram must be {len(TRANSITION_VECTOR_KEYS)} square")
    n_groups = {d: int(sum(t.groups[d].shape[0] for t in tasks)) for d in TRANSITION_DESIGNS}
    out: dict[str, Any] = {
        "rng_seed": probe.rng_seed,
        "K": probe.k,
        "M": probe.m,
        "R": probe.r,
        "tasks": len(tasks),
        "task_ids": [t.task_id for t in tasks],
        "groups_per_design": n_groups,
        "table": [
            {
                "task_id": t.task_id,
                **{
                    d: {
                        "sum_sq_norm": t.sum_sq[f"mean_centered/{d}"],
                        "groups": int(t.groups[d].shape[0]),
                        "reward_variance": 2 * t.var_sum[d] / t.groups[d].shape[0],
                    }
                    for d in TRANSITION_DESIGNS
                },
            }
            for t in tasks
        ],
        "indices": {
            str(t.task_id): {d: t.groups[d].tolist() for d in ("independent_resampled", "stratified")}
            for t in tasks
        },
    }
    for est in ESTIMATORS:
        block: dict[str, Any] = {
            key: {}
            for key in (
                "trace_var",
                "trace_var_within",
                "trace_var_between",
                "expected_update_norm",
                "reward_variance",
            )
        }
        sums: dict[str, tuple[float, float]] = {}  # per design: the sums each trace is the difference of
        for design in TRANSITION_DESIGNS:
            key = f"{est}/{design}"
            i = TRANSITION_VECTOR_KEYS.index(key)
            n = n_groups[design]
            # each trace is a difference of two non-negative terms; their sum is its scale (_ratio)
            norms, norm_of_sum = sum(t.sum_sq[key] for t in tasks) / n, float(vg[i, i]) / n**2
            per_task = [
                (t.sum_sq[key] / t.groups[design].shape[0], t.self_sq[key] / t.groups[design].shape[0] ** 2)
                for t in tasks
            ]
            trace = norms - norm_of_sum
            within = float(np.mean([norm - self_norm for norm, self_norm in per_task]))
            sums[design] = (
                norms + norm_of_sum,
                float(np.mean([norm + self_norm for norm, self_norm in per_task])),
            )
            block["trace_var"][design] = trace
            block["trace_var_within"][design] = within
            block["trace_var_between"][design] = trace - within
            block["expected_update_norm"][design] = float(np.sqrt(max(vg[i, i], 0.0))) / n
            block["reward_variance"][design] = float(
                np.mean([2 * t.var_sum[design] / t.groups[design].shape[0] for t in tasks])
            )
        tv, tw = block["trace_var"], block["trace_var_within"]
        independent, stratified = sums["independent_resampled"], sums["stratified"]
        block["ratio_paired_over_independent"] = _ratio(
            tv["paired"], tv["independent_resampled"], independent[0]
        )
        block["ratio_paired_over_stratified"] = _ratio(tv["paired"], tv["stratified"], stratified[0])
        block["ratio_within_paired_over_independent"] = _ratio(
            tw["paired"], tw["independent_resampled"], independent[1]
        )
        out[est] = block
    return out


def transition_probe(
    gram_by_task: Sequence[np.ndarray],
    rewards_by_task: Sequence[Sequence[float]],
    rho_by_task: Sequence[Sequence[float]] | None,
    t_ref: float,
    rng_seed: int,
    *,
    resamples: int,
    schedules: int,
    samples: int,
    scores_by_task: Sequence[Any] | None = None,
    full_gram: np.ndarray | None = None,
    task_ids: Sequence[Any] | None = None,
    schedule_seeds_by_task: Sequence[Sequence[int]] | None = None,
) -> dict[str, Any]:
    """One checkpoint's transition summary (docs/records.md 6.2) in one call.

    Tasks must already be schedule-major (pass ``schedule_seeds_by_task`` to have that checked). The
    cross-task terms come from ``scores_by_task`` ((K*M) x P arrays) or ``full_gram`` (all tasks'
    rollouts concatenated in task order); for GPU-resident scores use ``TransitionProbe`` directly.
    """
    if (scores_by_task is None) == (full_gram is None):
        raise UserError("transition probe: give exactly one of scores_by_task, full_gram")
    probe = TransitionProbe(schedules, samples, resamples, t_ref, rng_seed)
    coeffs = [
        probe.add_task(
            gram_by_task[i],
            rewards_by_task[i],
            None if rho_by_task is None else rho_by_task[i],
            None if task_ids is None else task_ids[i],
            None if schedule_seeds_by_task is None else schedule_seeds_by_task[i],
        )
        for i in range(len(gram_by_task))
    ]
    if scores_by_task is not None:
        vg = vector_gram_from_scores(coeffs, scores_by_task, TRANSITION_VECTOR_KEYS)
    else:
        vg = vector_gram_from_full_gram(coeffs, full_gram, TRANSITION_VECTOR_KEYS)
    return probe.summary(vg)

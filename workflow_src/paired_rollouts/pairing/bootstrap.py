"""Bootstrap intervals, vectorised: seeds resampled as pairs, tasks resampled once for everything.

Every statistic bootstrapped here (an AUC difference, a difference averaged over steps, a final
difference) is *linear* in the task scores once the seed and task resamples are fixed. So instead of
materialising resamples x seeds x steps x tasks, each seed's per-task contribution is collapsed to one
number d[s, t] first (e.g. the AUC-weighted paired-minus-independent curve of task t) and the replicate
statistic is

    stat_b = (1 / (S T)) * sum_s sum_t Cs[b, s] Ct[b, t] d[s, t]

with Cs/Ct the resample *count* matrices: one (B x S) @ (S x T) product and a row sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from paired_rollouts.pairing.dice import _number
from paired_rollouts.pairing.errors import PairingError, whole_number
from paired_rollouts.pairing.numeric import dot

#: The study's pre-registered bootstrap seed and resample count (the defaults here).
BOOTSTRAP_SEED = 20260911
RESAMPLES = 10_000


def _generator(rng: Any) -> np.random.Generator:
    """``rng`` as a Generator: None is ``default_rng(BOOTSTRAP_SEED)``, an int the seed (0 included)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng(BOOTSTRAP_SEED)
    if isinstance(rng, bool) or not isinstance(rng, (int, np.integer)) or rng < 0:
        raise PairingError(f"rng must be a numpy Generator, an int seed >= 0 or None, not {rng!r}")
    return np.random.default_rng(int(rng))


def _refuse_non_finite(
    name: str, values: np.ndarray, axes: tuple[str, ...], fix: str = "re-run or drop it"
) -> None:
    """Refuse NaN and inf, naming the first bad entry by its axes (scores here, outcomes and rewards in
    diagnostics)."""
    bad = ~np.isfinite(values)
    if bad.any():
        index = np.argwhere(bad)[0]
        at = ", ".join(f"{axis} {i}" for axis, i in zip(axes, index.tolist(), strict=True))
        raise PairingError(f"{name} at ({at}) is {values[tuple(index)]}; every {name} must be finite ({fix})")


def _check_resamples(resamples: Any) -> int:
    count = whole_number(resamples)
    if count < 0:
        raise PairingError(f"resamples must be an integer >= 0 (0 skips the bootstrap), not {resamples!r}")
    return count


def _check_percentiles(lower: Any, upper: Any) -> tuple[float, float]:
    lo, hi = _number("lower percentile", lower, 100.0), _number("upper percentile", upper, 100.0)
    if lo > hi:
        raise PairingError(f"percentiles must be (lower, upper) with lower <= upper, not ({lower}, {upper})")
    return lo, hi


def _percentile_pair(percentiles: Any) -> tuple[float, float]:
    try:
        lower, upper = percentiles
    except (TypeError, ValueError):
        raise PairingError(
            f"percentiles must be a pair (lower, upper), e.g. (2.5, 97.5), not {percentiles!r}"
        ) from None
    return _check_percentiles(lower, upper)


def resample_counts(index: np.ndarray, n: int) -> np.ndarray:
    """(B x k) matrix of drawn indices -> (B x n) matrix of how often each index was drawn."""
    b = index.shape[0]
    flat = index + n * np.arange(b, dtype=np.int64)[:, None]
    return np.bincount(flat.ravel(), minlength=b * n).reshape(b, n).astype(float)


def draw_seed_task_indices(
    rng: np.random.Generator, n_seeds: int, n_tasks: int, resamples: int
) -> tuple[np.ndarray, np.ndarray]:
    """The draw order of the paired bootstrap: the seed-index matrix first, then the task-index matrix."""
    seed_idx = rng.integers(0, n_seeds, size=(resamples, n_seeds))
    task_idx = rng.integers(0, n_tasks, size=(resamples, n_tasks))
    return seed_idx, task_idx


def paired_bootstrap(contrib: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Replicates of mean_s mean_t contrib[s, t] under seed-pair and task resampling.

    ``contrib[s, t]`` is seed s's treatment-minus-control contribution of task t, already combined over
    steps (linear weights), so a resampled task moves every step, both arms and every seed at once.
    """
    d = np.asarray(contrib, dtype=float)
    if d.ndim != 2 or d.shape[0] < 1 or d.shape[1] < 1:
        raise PairingError(f"paired bootstrap needs a seeds x tasks matrix, got shape {d.shape}")
    resamples = _check_resamples(resamples)
    n_seeds, n_tasks = d.shape
    seed_idx, task_idx = draw_seed_task_indices(_generator(rng), n_seeds, n_tasks, resamples)
    cs = resample_counts(seed_idx, n_seeds)
    ct = resample_counts(task_idx, n_tasks)
    return np.add.reduce(dot(cs, d) * ct, axis=-1) / (n_seeds * n_tasks)


def percentile_interval(replicates: np.ndarray, lower: float, upper: float) -> list[float | None]:
    """numpy's linear-interpolation percentiles ``lower`` and ``upper`` (NaN replicates ignored;
    ``0 <= lower <= upper <= 100``); no replicate (``resamples=0``) gives ``[None, None]``."""
    lower, upper = _check_percentiles(lower, upper)
    values = np.asarray(replicates, dtype=float)
    if values.size == 0:
        return [None, None]
    lo, hi = np.nanpercentile(values, [lower, upper])
    return [float(lo), float(hi)]


def task_bootstrap_nanmean(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Replicates of nanmean(values[idx]) for idx drawn with replacement (the luck-share bootstrap).

    Undefined entries (NaN) are skipped inside each replicate; a replicate with only undefined entries
    is NaN (and ignored by ``nanpercentile``).
    """
    resamples = _check_resamples(resamples)
    v = np.asarray(values, dtype=float)
    n = v.size
    if n == 0:
        return np.full(resamples, np.nan)
    idx = _generator(rng).integers(0, n, size=(resamples, n))
    counts = resample_counts(idx, n)
    defined = ~np.isnan(v)
    filled = np.where(defined, v, 0.0)
    num = dot(counts, filled)
    den = dot(counts, defined.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def auc_weights(steps: Sequence[float]) -> np.ndarray:
    """Trapezoid weights that turn a curve at ``steps`` into its mean over [first, last] (its AUC).

    For 0, 20, ..., 100 these are .1 .2 .2 .2 .2 .1. A single step has weight 1 (the curve value).
    """
    x = np.asarray(steps, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise PairingError("AUC needs at least one evaluated step")
    if not np.all(np.isfinite(x)):
        raise PairingError(f"AUC steps must be finite numbers, got {list(steps)}")
    if np.any(np.diff(x) <= 0):
        raise PairingError(f"AUC steps must be strictly increasing, got {list(steps)}")
    if x.size == 1:
        return np.ones(1)
    span = x[-1] - x[0]
    gaps = np.diff(x)
    weights = np.zeros_like(x)
    weights[:-1] += gaps / 2
    weights[1:] += gaps / 2
    return weights / span


@dataclass(frozen=True)
class ArmGap:
    """Treatment minus control (e.g. paired minus independent): the mean over seed pairs, each seed
    pair's difference, and the paired-bootstrap interval at ``interval_percentiles``."""

    gap: float
    by_seed: list[float]
    interval: list[float | None]
    interval_percentiles: tuple[float, float]
    resamples: int
    seed_pairs: int
    tasks: int


def arm_gap(
    treatment: np.ndarray,
    control: np.ndarray,
    *,
    steps: Sequence[float] | None = None,
    resamples: int = RESAMPLES,
    rng: np.random.Generator | int | None = None,
    percentiles: tuple[float, float] = (2.5, 97.5),
) -> ArmGap:
    """Did the treatment arm do better? The AUC gap with its paired-bootstrap interval.

    ``treatment`` and ``control`` hold task scores of the runs paired by seed: shape (seeds, tasks), or
    (seeds, steps, tasks) with the evaluated ``steps`` (each seed's gap is then the AUC of its curves).
    Seeds are resampled as pairs and tasks with all their steps (:func:`paired_bootstrap`); ``rng`` is a
    Generator, an int seed, or None for ``numpy.random.default_rng(BOOTSTRAP_SEED)``. Scores must be
    finite (a missing evaluation is refused, not averaged in); ``resamples=0`` gives ``[None, None]``.
    """
    t, c = np.asarray(treatment, dtype=float), np.asarray(control, dtype=float)
    if t.shape != c.shape:
        raise PairingError(f"treatment {t.shape} and control {c.shape} scores differ in shape")
    resamples = _check_resamples(resamples)
    lower, upper = _percentile_pair(percentiles)
    generator = _generator(rng)
    if steps is not None:
        if t.ndim != 3:
            raise PairingError(f"scores over steps need shape (seeds, steps, tasks), got {t.shape}")
        weights = auc_weights(steps)
        if weights.size != t.shape[1]:
            raise PairingError(f"{t.shape[1]} evaluated steps in the scores but {weights.size} in steps")
    elif t.ndim != 2:
        raise PairingError(f"scores need shape (seeds, tasks) without steps, got {t.shape}")
    axes = ("seed", "step", "task") if t.ndim == 3 else ("seed", "task")
    for name, scores in (("treatment", t), ("control", c)):
        _refuse_non_finite(f"{name} score", scores, axes, "re-run or drop the missing evaluation")
    contrib = dot(np.moveaxis(t - c, 1, -1), weights) if steps is not None else t - c
    replicates = paired_bootstrap(contrib, resamples, generator)
    by_seed = contrib.mean(axis=1)
    return ArmGap(
        gap=float(by_seed.mean()),
        by_seed=[float(v) for v in by_seed],
        interval=percentile_interval(replicates, lower, upper),
        interval_percentiles=(float(percentiles[0]), float(percentiles[1])),
        resamples=int(resamples),
        seed_pairs=int(contrib.shape[0]),
        tasks=int(contrib.shape[1]),
    )

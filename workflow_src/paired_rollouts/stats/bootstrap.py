"""Vectorised paired bootstrap (seeds resampled as pairs, tasks resampled once for everything).

Every statistic the decision rules bootstrap (AUC difference, challenge difference over steps, final
difference) is *linear* in the task scores once the seed and task resamples are fixed. So instead of
materialising resamples x seeds x steps x tasks we collapse each seed's per-task contribution to one
number d[s, t] first (e.g. the AUC-weighted paired-minus-independent curve of task t) and write the
replicate statistic as

    stat_b = (1 / (S T)) * sum_s sum_t Cs[b, s] Ct[b, t] d[s, t]

with Cs/Ct the resample *count* matrices: one (B x S) @ (S x T) product and a row sum.
"""

from __future__ import annotations

import numpy as np

from paired_rollouts.errors import UserError


def resample_counts(index: np.ndarray, n: int) -> np.ndarray:
    """(B x k) matrix of drawn indices -> (B x n) matrix of how often each index was drawn."""
    b = index.shape[0]
    flat = index + n * np.arange(b, dtype=np.int64)[:, None]
    return np.bincount(flat.ravel(), minlength=b * n).reshape(b, n).astype(float)


def draw_seed_task_indices(
    rng: np.random.Generator, n_seeds: int, n_tasks: int, resamples: int
) -> tuple[np.ndarray, np.ndarray]:
    """The pre-registered draw order: seed-index matrix first, then task-index matrix."""
    seed_idx = rng.integers(0, n_seeds, size=(resamples, n_seeds))
    task_idx = rng.integers(0, n_tasks, size=(resamples, n_tasks))
    return seed_idx, task_idx


def paired_bootstrap(contrib: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Replicates of mean_s mean_t contrib[s, t] under seed-pair and task resampling.

    ``contrib[s, t]`` is seed s's paired-minus-independent contribution of task t, already combined
    over steps (linear weights), so a resampled task moves every step, both arms and every seed at once.
    """
    d = np.asarray(contrib, dtype=float)
    if d.ndim != 2 or d.shape[0] < 1 or d.shape[1] < 1:
        raise UserError(f"paired bootstrap needs a seeds x tasks matrix, got shape {d.shape}")
    n_seeds, n_tasks = d.shape
    seed_idx, task_idx = draw_seed_task_indices(rng, n_seeds, n_tasks, resamples)
    cs = resample_counts(seed_idx, n_seeds)
    ct = resample_counts(task_idx, n_tasks)
    return np.einsum("bt,bt->b", cs @ d, ct) / (n_seeds * n_tasks)


def percentile_interval(replicates: np.ndarray, lower: float, upper: float) -> list[float]:
    """numpy's linear-interpolation percentiles (ignoring NaN replicates)."""
    lo, hi = np.nanpercentile(np.asarray(replicates, dtype=float), [lower, upper])
    return [float(lo), float(hi)]


def task_bootstrap_nanmean(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Replicates of nanmean(values[idx]) for idx drawn with replacement (the luck-share bootstrap).

    Undefined entries (NaN) are skipped inside each replicate; a replicate with only undefined entries
    is NaN (and ignored by ``nanpercentile``).
    """
    v = np.asarray(values, dtype=float)
    n = v.size
    if n == 0:
        return np.full(resamples, np.nan)
    idx = rng.integers(0, n, size=(resamples, n))
    counts = resample_counts(idx, n)
    defined = ~np.isnan(v)
    filled = np.where(defined, v, 0.0)
    num = counts @ filled
    den = counts @ defined.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

"""The vectorised paired bootstrap equals the explicit resampling, is reproducible, keeps seed pairs."""

import numpy as np
from paired_rollouts.pairing.bootstrap import (
    draw_seed_task_indices,
    paired_bootstrap,
    percentile_interval,
    resample_counts,
    task_bootstrap_nanmean,
)
from paired_rollouts.stats.curves import auc_weights


def _explicit_auc_bootstrap(cp, ci, steps, resamples, seed):
    """Textbook version: resample seed pairs, then tasks; AUC of resampled task-mean curves."""
    rng = np.random.default_rng(seed)
    n_seeds, _, n_tasks = cp.shape
    seed_idx, task_idx = draw_seed_task_indices(rng, n_seeds, n_tasks, resamples)
    w = auc_weights(steps)
    out = np.empty(resamples)
    for b in range(resamples):
        diffs = [
            w @ cp[s][:, task_idx[b]].mean(axis=1) - w @ ci[s][:, task_idx[b]].mean(axis=1)
            for s in seed_idx[b]
        ]
        out[b] = np.mean(diffs)
    return out


def test_matches_explicit_resampling():
    rng = np.random.default_rng(1)
    steps = [0, 4, 8, 12]
    cp = rng.random((3, len(steps), 10))
    ci = rng.random((3, len(steps), 10))
    w = auc_weights(steps)
    contrib = np.einsum("j,sjt->st", w, cp - ci)
    fast = paired_bootstrap(contrib, 300, np.random.default_rng(7))
    slow = _explicit_auc_bootstrap(cp, ci, steps, 300, 7)
    assert np.allclose(fast, slow, atol=1e-12)


def test_reproducible_and_seed_sensitive():
    d = np.random.default_rng(2).normal(size=(3, 20))
    a = paired_bootstrap(d, 1000, np.random.default_rng(20260911))
    b = paired_bootstrap(d, 1000, np.random.default_rng(20260911))
    c = paired_bootstrap(d, 1000, np.random.default_rng(1))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_seeds_move_as_pairs():
    # Seed s contributes the constant difference c_s on every task: a replicate can only be a mean of
    # resampled seed *differences*; arms from different seeds never mix.
    c = np.array([0.1, 0.2, 0.4])
    reps = paired_bootstrap(np.repeat(c[:, None], 5, axis=1), 2000, np.random.default_rng(3))
    combos = {round(float(np.mean(c[list(ix)])), 12) for ix in np.ndindex(3, 3, 3)}
    assert {round(float(r), 12) for r in reps} <= combos
    lo, hi = percentile_interval(reps, 2.5, 97.5)
    assert c.min() - 1e-12 <= lo <= hi <= c.max() + 1e-12


def test_counts_and_nanmean():
    idx = np.array([[0, 0, 2], [1, 2, 2]])
    assert resample_counts(idx, 3).tolist() == [[2, 0, 1], [0, 1, 2]]
    v = np.array([0.2, np.nan, 0.6])
    rng = np.random.default_rng(0)
    reps = task_bootstrap_nanmean(v, 500, rng)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 3, size=(500, 3))
    expected = np.array([np.nanmean(v[i]) if not np.all(np.isnan(v[i])) else np.nan for i in idx])
    assert np.allclose(reps, expected, equal_nan=True)

"""Time the probe's numpy math at paper scale (scores replaced by random low-dimensional vectors).

Usage: OMP_NUM_THREADS=1 python benchmarks/bench_probe_math.py
Outcome: 64 clean groups of G = 8 (exact 2^k mask enumeration). Transition: 16 tasks x 64 rollouts,
R = 64 resamples per design. Bandit: all 2^8 action tuples.
"""

from __future__ import annotations

import time

import numpy as np
from paired_rollouts.probe import outcome_probe, transition_probe
from paired_rollouts.probe.bandit import bandit_enumeration


def main() -> None:
    rng = np.random.default_rng(0)
    p = 256
    scores = [rng.normal(size=(8, p)) for _ in range(64)]
    succ = [rng.random(8) < 0.7 for _ in range(64)]
    rho = [rng.uniform(0.5, 1.5, 8) for _ in range(64)]
    t0 = time.perf_counter()
    out = outcome_probe([s @ s.T for s in scores], succ, rho, 1000.0, 0.1, scores_by_group=scores)
    t1 = time.perf_counter()
    print(
        f"outcome probe, 64 groups x G=8: {t1 - t0:.3f} s "
        f"(MC ratio {out['mean_centered']['ratio_paired_over_independent']:.4f})"
    )
    tscores = [rng.normal(size=(64, p)) for _ in range(16)]
    rewards = [(rng.random(64) < 0.5).astype(float) for _ in range(16)]
    t0 = time.perf_counter()
    tr = transition_probe(
        [s @ s.T for s in tscores],
        rewards,
        None,
        1000.0,
        0,
        resamples=64,
        schedules=8,
        samples=8,
        scores_by_task=tscores,
    )
    t1 = time.perf_counter()
    print(
        f"transition probe, 16 tasks x 64 rollouts, R=64: {t1 - t0:.3f} s "
        f"(MC ratio {tr['mean_centered']['ratio_paired_over_independent']:.4f})"
    )
    t0 = time.perf_counter()
    bandit_enumeration()
    print(f"bandit enumeration (256 tuples): {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()

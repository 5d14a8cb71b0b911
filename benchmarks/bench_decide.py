"""Time one full C2 decision at paper scale (6 runs, 64 tasks x 6 steps, 200 final tasks, 10,000 resamples).

Usage: OMP_NUM_THREADS=1 python benchmarks/bench_decide.py [--resamples 10000] [--repeat 3]
Prints the time of ``stats.decisions.decide`` on in-memory evidence (the target is < 1 s on one core)
and, separately, of each paired bootstrap.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from paired_rollouts.pairing import paired_bootstrap
from paired_rollouts.prereg.rules import load_decision_rules, rules_from_dict
from paired_rollouts.records import Completeness, LuckShare, PoolManifest
from paired_rollouts.records.schema import At, parse
from paired_rollouts.stats.decisions import LuckFile, RunEvidence, decide

STEPS = [0, 20, 40, 60, 80, 100]


def synthetic_run(seed: int, arm: str, rng: np.random.Generator) -> RunEvidence:
    ev = RunEvidence(f"c2-{arm}-s{seed}", "C2", arm, seed)
    skill = rng.uniform(0.3, 0.8, size=264)
    for step in STEPS:
        for regime, n_sched in (("at_training", 2), ("clean", 2), ("challenge", 1)):
            for t in range(64):
                for _ in range(n_sched):
                    ev.add(
                        {
                            "phase": "periodic",
                            "regime": regime,
                            "step": step,
                            "task_id": f"validation-{t:05d}",
                            "true_success": bool(rng.random() < skill[t] + step / 1000),
                        }
                    )
    for regime, n_sched in (
        ("clean", 4),
        ("noisy_p010", 4),
        ("noisy_p025", 4),
        ("heldout_types", 4),
        ("challenge", 1),
    ):
        for t in range(200):
            for _ in range(n_sched):
                ev.add(
                    {
                        "phase": "final",
                        "regime": regime,
                        "step": 100,
                        "task_id": f"test-{t:05d}",
                        "true_success": bool(rng.random() < skill[64 + t]),
                        "exposed": bool(rng.random() < 0.5),
                    }
                )
    return ev


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--resamples", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    runs = {}
    for seed in range(3):
        for arm in ("paired", "independent"):
            ev = synthetic_run(seed, arm, rng)
            runs[ev.run] = ev
    groups = {
        r: [
            {
                "run": r,
                "step": s,
                "group": g,
                "task_id": "t",
                "schedule_seeds": [7] * 8 if "paired" in r else list(range(8)),
                "true_success": [True] * 8,
                "observed_reward": [1.0] * 8,
                "advantages": [0.0] * 8,
            }
            for s in range(100)
            for g in range(24)
        ]
        for r in runs
    }
    lams = {r: [float(x) for x in rng.uniform(0.1, 0.6, 16)] for r in runs}
    luck = {
        (r, 0): LuckFile(
            parse(
                LuckShare,
                {
                    "run": r,
                    "step": 0,
                    "source_sha256": "b" * 64,
                    "lam": float(np.mean(lams[r])),
                    "ci95": [None, None],
                    "tasks": 16,
                    "tasks_defined": 16,
                    "defects": [],
                    "per_task": [{"lam": x} for x in lams[r]],
                },
                At("synthetic", "luck-share record"),
            ),
            "a" * 64,
        )
        for r in runs
    }
    # every run admitted: a passing completeness record that lists the luck file it was given
    complete = {
        r: parse(
            Completeness,
            {
                "run": r,
                "complete": True,
                "missing": [],
                "defects": [],
                "code_versions": ["x"],
                "task_pools": {"validation": {"sha256": "0" * 64}},
                "files": {"diagnostics/luck-step0.json": "a" * 64},
            },
            At("synthetic", "completeness record"),
        )
        for r in runs
    }
    paper = load_decision_rules(
        "prereg/decision_rules.yaml"
    )  # the paper's frozen rules (run from the repo root)
    raw = {**paper, "bootstrap": {**paper["bootstrap"], "resamples": args.resamples}}
    rules = rules_from_dict(raw)
    manifest = parse(
        PoolManifest, {"pools": {"validation": {"sha256": "0" * 64}}}, At("synthetic", "pool manifest")
    )
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        reg = decide(
            "C2",
            runs,
            rules,
            manifest,
            groups=groups,
            luck=luck,
            complete=complete,
            expected_seeds=[0, 1, 2],
            rules_verified=True,  # the frozen rules, read from the repository; no report in a benchmark
        )
        times.append(time.perf_counter() - t0)
    print(
        f"full C2 decision (6 runs, 64 tasks x {len(STEPS)} steps, 200 final tasks, {args.resamples} resamples, "
        f"2400 groups/run): best {min(times):.3f} s, mean {np.mean(times):.3f} s over {args.repeat}"
    )
    # synthetic evidence has no design to check the completeness records against, so nothing is
    # decided (passes stays null) but every statistic is computed: the time is the decision's
    assert reg["H2a"]["auc_difference_ci95"] is not None, reg["missing"]
    print(
        f"  H2a {reg['H2a']['auc_difference_ci95']}  H3 {reg['H3']['ci95']}  H5 {reg['H5']['difference_ci90']}"
    )
    d = rng.normal(size=(3, 200))
    t0 = time.perf_counter()
    for _ in range(10):
        paired_bootstrap(d, args.resamples, np.random.default_rng(1))
    print(
        f"one paired bootstrap (3 seeds x 200 tasks, {args.resamples} resamples): "
        f"{(time.perf_counter() - t0) / 10 * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()

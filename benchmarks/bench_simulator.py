"""Throughput of the simulator: scripted-reference episodes per CPU second on one core.

Run: ``OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/bench_simulator.py [--tasks-dir data/tasks] [--seconds 3]``.
Target: >= 10000 episodes per CPU second with noise on (C2, p = 0.25, recovering policy). Worlds, expected
states and read responses are cached per seed, so the first pass over the tasks (warm-up, not timed) pays
for generation. The last row drives the same kind of episode through ``EpisodeSession`` (the path the
trainers use: string responses, the full episode record); it is reported, not held to the target.
The fates come from the compiled helper when it is built (pairing/_fate_draws.c); the first line says which.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

from paired_rollouts.agents.scripted import lookup_calls, run_scripted  # noqa: E402
from paired_rollouts.backoffice.tasks import load_pool  # noqa: E402
from paired_rollouts.episode import EpisodeSession  # noqa: E402
from paired_rollouts.noise.config import NoiseConfig  # noqa: E402
from paired_rollouts.noise.schedule import FATE_DRAWS  # noqa: E402
from paired_rollouts.noise.seeds import eval_schedule_seed  # noqa: E402

TARGET = 10000.0
Episode = Callable[[dict, NoiseConfig, int], object]


def scripted(policy: str) -> Episode:
    return lambda task, config, seed: run_scripted(task, config, seed, policy)


def session_naive() -> Episode:
    """The naive reference's calls through one reused EpisodeSession, graded into its record."""
    session = EpisodeSession()

    def run(task: dict, config: NoiseConfig, seed: int) -> object:
        session.reset(task=task, schedule_seed=seed, noise=config, phase="eval")
        for call in lookup_calls(task, session.world) + task["oracle_plan"]:
            session.call(call["tool"], **call["args"])
        session.call("finish", summary="done")
        return session.finish_and_grade()

    return run


def measure(
    tasks: list[dict], config: NoiseConfig, policy: str | Episode, seconds: float
) -> tuple[float, float]:
    """(episodes per CPU second, episodes per wall second) over whole passes of >= ``seconds`` CPU time.

    CPU time is the headline number: on a shared machine wall time also counts other people's work.
    ``policy`` is a scripted policy name or an episode callable.
    """
    episode = scripted(policy) if isinstance(policy, str) else policy
    for task in tasks:  # warm the world / expected-state caches
        episode(task, config, eval_schedule_seed(task["task_id"], 1))
    episodes, k = 0, 1
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while True:
        for task in tasks:
            episode(task, config, eval_schedule_seed(task["task_id"], k))
        episodes += len(tasks)
        k += 1
        cpu = time.process_time() - cpu0
        if cpu >= seconds:
            return episodes / cpu, episodes / (time.perf_counter() - wall0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks-dir", default="data/tasks")
    parser.add_argument("--pool", default="validation")
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU seconds timed per setting")
    args = parser.parse_args(argv)
    tasks = load_pool(os.path.join(args.tasks_dir, f"{args.pool}.jsonl"))
    c2 = NoiseConfig.transition(0.25)
    rows: list[tuple[str, NoiseConfig, str, str | Episode]] = [
        ("noise off (clean)", NoiseConfig.clean(), "recovering", "recovering"),
        ("noise on  (C2 p=0.25)", c2, "recovering", "recovering"),
        ("noise on  (C2 p=0.25), naive", c2, "naive", "naive"),
        ("C2 p=0.25, EpisodeSession record", c2, "naive", session_naive()),
    ]
    print(f"fates drawn by: {FATE_DRAWS} (PAIRED_ROLLOUTS_PURE_FATES=1 times the pure path)")
    ok = True
    for label, config, name, policy in rows:
        rate, wall_rate = measure(tasks, config, policy, args.seconds)
        print(f"{label:34s} {name:10s} {rate:8.0f} episodes/s (CPU time)  {wall_rate:8.0f} episodes/s (wall)")
        if label.startswith("noise on  (C2 p=0.25)") and policy == "recovering" and rate < TARGET:
            ok = False
    print(
        f"target >= {TARGET:.0f} episodes per CPU second at p=0.25 (recovering): {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

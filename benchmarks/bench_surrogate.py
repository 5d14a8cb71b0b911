"""Cost of one surrogate run at the surrogate scale's shape, in CPU seconds (wall time on a shared machine
also counts other people's work).

Run: ``OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/bench_surrogate.py [--tasks-dir data/tasks] [--runs 2]
[--arm independent] [--calibration results/surrogate/models/surrogate/calibration.json]
[--prompts-per-step 8 --eval-tasks 32]``.
The runs start from a real calibration register: the one given, or the step-0 register this script fits
first with the calibration stage's own code (``surrogate calibrate``, printed too), so the arm job reads it
through the same typed reader as in the study. The shape is the surrogate scale's in config/config.yaml.
Prints CPU seconds per run (training, evaluation + diagnostics), surrogate episodes per CPU second, the
projected wall time of the study's 80 runs on 2 free cores, and each run's own CPU seconds (the first run of a
process also generates its worlds). Budget: the whole surrogate study within
8 minutes on 2 cores, i.e. about 5 CPU seconds per run for the arm jobs. The runs are C2 runs of one arm
(``--arm``, independent by default: every training rollout on its own schedule, so none of a paired
group's shared episodes; docs/simulator.md#speed, fourth pass), seeds 0, 1, ... in one process, as an
arm job runs them. ``--prompts-per-step`` and ``--eval-tasks`` change the run's shape (with 8 and 32 it
plays the 11,108 episodes of the run that issue #24 timed, with the calibrated policy). The first line
says which paths draw the fates, generate the worlds and play the episodes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from paired_rollouts.backoffice.world import WORLD_DRAWS  # noqa: E402
from paired_rollouts.io import atomic_write_json  # noqa: E402
from paired_rollouts.noise.schedule import FATE_DRAWS  # noqa: E402
from paired_rollouts.settings import Settings  # noqa: E402
from paired_rollouts.surrogate.calibration import (  # noqa: E402
    Estimator,
    check_register,
    estimator_settings,
    step0_register,
)
from paired_rollouts.surrogate.lean import LEAN_EPISODE  # noqa: E402
from paired_rollouts.surrogate.policy import Shape  # noqa: E402
from paired_rollouts.surrogate.run import run_one  # noqa: E402


def scale_sections() -> dict:
    """The surrogate scale's sections as config/config.yaml writes them (no training episode records)."""
    import yaml

    scale = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/config.yaml").read_text())["scales"]
    sections = {k: scale["surrogate"][k] for k in ("training", "evaluation", "diagnostics", "surrogate")}
    sections["diagnostics"] = {k: v for k, v in sections["diagnostics"].items() if k != "resamples"}
    sections["surrogate"] = {**sections["surrogate"], "train_episodes_seeds": []}
    return {"task_filter": scale["surrogate"]["task_filter"], **sections}


RUNS_IN_STUDY = 80


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks-dir", default="data/tasks")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--calibration", type=Path, default=None, help="a calibration register to reuse")
    parser.add_argument("--arm", choices=("independent", "paired"), default="independent")
    parser.add_argument(
        "--prompts-per-step",
        type=int,
        default=None,
        help="tasks per training step instead of the scale's (8 plays the run shape of 2026-12-01)",
    )
    parser.add_argument(
        "--eval-tasks",
        type=int,
        default=None,
        help="validation tasks per checkpoint instead of the scale's (32 on 2026-12-01)",
    )
    args = parser.parse_args()
    sections = scale_sections()
    if args.prompts_per_step is not None:
        sections["training"] = {**sections["training"], "prompts_per_step": args.prompts_per_step}
    if args.eval_tasks is not None:
        sections["evaluation"] = {**sections["evaluation"], "eval_tasks": args.eval_tasks}
    settings = Settings.parse(sections)
    training, evaluation = settings.training, settings.evaluation
    print(f"fate draws: {FATE_DRAWS}; worlds: {WORLD_DRAWS}; episodes: {LEAN_EPISODE}")
    with tempfile.TemporaryDirectory() as tmp:
        calibration = args.calibration or Path(tmp) / "calibration.json"
        if args.calibration is None:
            began = time.process_time()
            fit, surrogate = estimator_settings(sections), settings.surrogate
            estimator = Estimator(
                args.tasks_dir, **fit, shape=Shape.of(surrogate), snr_groups=surrogate.snr_groups
            )
            register = step0_register(estimator, "data/published/paper.yaml", surrogate.mechanism_captures)
            atomic_write_json(calibration, register)
            check_register(register, str(calibration))
            print(f"calibration (surrogate calibrate): {time.process_time() - began:.2f} CPU s")
        per_run = []
        episodes = (
            training.steps * training.generation_batch
            + 6 * evaluation.eval_tasks * 5
            + evaluation.final_tasks * 17
            + 2 * 16 * 8 * 8
        )
        for k in range(args.runs):
            began = time.process_time()
            run_one(
                f"c2-{args.arm}-s{k}",
                tasks_dir=args.tasks_dir,
                calibration=str(calibration),
                settings=settings,
                results=tmp,
            )
            per_run.append(time.process_time() - began)
    mean = sum(per_run) / len(per_run)
    print(
        f"surrogate run (C2 {args.arm}, {training.steps} steps x {training.prompts_per_step} x "
        f"{training.num_generations}"
        f" + evaluations + diagnostics, {episodes} episodes): {mean:.2f} CPU s per run "
        f"({episodes / mean:.0f} episodes per CPU second); {RUNS_IN_STUDY} runs on 2 free cores: "
        f"{RUNS_IN_STUDY * mean / 2 / 60:.1f} min for the arm jobs"
    )
    # an arm job runs 8 seeds per process: only its first run generates the worlds and fills the caches
    print("each run, in order: " + ", ".join(f"{cpu:.2f}" for cpu in per_run) + " CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

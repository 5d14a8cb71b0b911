"""Time the stand-in's training steps and evaluation throughput on CPU.

Usage: OMP_NUM_THREADS=2 python benchmarks/bench_training.py --model-dir results/models/standin/model \
           [--tasks-dir data/tasks] [--steps 4] [--settings '{"prompts_per_step": 4}']
Runs ``paired-rollouts train``'s code path for a few steps into a temp folder (seconds per step, split into
generation and loss passes, from the run manifest), then rolls the last checkpoint out on the periodic
clean set (episodes per second).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--tasks-dir", default="data/tasks")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--settings", default="{}")
    args = parser.parse_args()

    from paired_rollouts.evaluation.evaluate import evaluation_rows, roll_rows
    from paired_rollouts.evaluation.rollout import PolicyRunner
    from paired_rollouts.settings import Settings
    from paired_rollouts.training import checkpoints as ckpt
    from paired_rollouts.training.grpo import run_training

    work = Path(tempfile.mkdtemp(prefix="bench-training-"))
    settings = Settings.parse(
        {"steps": args.steps, "checkpoint_every": args.steps, **json.loads(args.settings)}
    )
    # a timing run freezes no protocol: training runs without a verification report (None)
    manifest = run_training("c2-paired-s0", args.tasks_dir, args.model_dir, None, settings, str(work / "run"))
    steps = manifest["timings"][1:] or manifest["timings"]  # the first step includes warm-up
    for key in ("seconds", "generation_seconds", "passes_seconds"):
        print(f"train {key}/step: median {statistics.median(t[key] for t in steps):.2f}")
    runner = PolicyRunner(
        args.model_dir, ckpt.step_dir(work / "run", args.steps), settings, args.tasks_dir, 0
    )
    rows = evaluation_rows(args.tasks_dir, "periodic", "clean", "C2", settings)
    began = time.perf_counter()
    records = roll_rows(
        runner,
        rows,
        run="c2-paired-s0",
        condition="C2",
        arm="paired",
        seed=0,
        phase="periodic",
        step=args.steps,
        regime="clean",
        batch=settings.evaluation.eval_batch,
        progress=False,
    )
    seconds = time.perf_counter() - began
    runner.close()
    print(
        f"evaluation: {len(records)} episodes in {seconds:.1f} s = {len(records) / seconds:.2f} episodes/s; "
        f"success {sum(r['true_success'] for r in records)}/{len(records)}"
    )


if __name__ == "__main__":
    main()

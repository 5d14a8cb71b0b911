"""CLI: ``paired-rollouts surrogate calibrate|arm|stats|probe|power``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from paired_rollouts.errors import UserError

CALIBRATION_KEYS = {
    "eval_tasks",
    "samples",
    "diag_pool",
    "diag_tasks",
    "diag_schedules",
    "diag_samples",
    "task_filter",
}


def _calibrate(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.surrogate.calibration import Estimator, calibrate, check_register

    settings = load_settings(args.settings)
    unknown = sorted(set(settings) - CALIBRATION_KEYS)
    missing = sorted(CALIBRATION_KEYS - set(settings))
    if unknown or missing:
        raise UserError(
            f"--settings: calibration keys unknown {unknown}, missing {missing}; "
            f"the keys are {sorted(CALIBRATION_KEYS)}"
        )
    began = time.perf_counter()
    register = calibrate(Estimator(args.tasks_dir, **settings))
    register["settings"] = settings
    atomic_write_json(args.out, register)
    for row in register["targets"]:
        print(
            f"{row['target_name']}: target {row['target']} +- {row['tolerance']}, achieved {row['achieved']:.4f} "
            f"{'ok' if row['passes'] else 'MISSED'}"
        )
    print(
        f"calibration {'passes' if register['passes'] else 'FAILS'} ({time.perf_counter() - began:.1f} s) -> {args.out}"
    )
    check_register(register, str(args.out))
    return 0


def _arm(args: argparse.Namespace) -> int:
    from paired_rollouts.io import load_settings
    from paired_rollouts.surrogate.run import check_settings, run_one

    settings = check_settings(load_settings(args.settings))
    for run in args.runs:
        began = time.perf_counter()
        manifest = run_one(
            run,
            tasks_dir=args.tasks_dir,
            calibration=args.calibration,
            settings=settings,
            results=args.results,
        )
        print(
            f"{run}: trained {manifest['steps_completed']} steps ({manifest['seconds']['training']:.1f} s), "
            f"evaluated ({manifest['seconds']['evaluation']:.1f} s), {time.perf_counter() - began:.1f} s in all"
        )
    return 0


def _stats(args: argparse.Namespace) -> int:
    """The per-run statistics commands, each called in this process with the arguments its rule would pass."""
    from paired_rollouts import cli
    from paired_rollouts.io import load_settings

    expected = load_settings(args.expected)
    root = Path(args.results)
    for run in args.runs:
        if run not in expected:
            raise UserError(f"--expected: no expected evidence for run {run}")
        ev = expected[run]
        calls = []
        for step in ev["diagnostic_steps"]:
            calls.append(
                [
                    "luck-share",
                    "--episodes",
                    str(root / "diagnostics" / run / f"diag-step{step}.jsonl"),
                    "--resamples",
                    str(args.resamples),
                    "--schedules",
                    str(ev["diagnostic_schedules"]),
                    "--samples",
                    str(ev["diagnostic_samples"]),
                    "--tasks",
                    str(ev["diagnostic_tasks"]),
                    "--out",
                    str(root / "diagnostics" / run / f"luck-step{step}.json"),
                ]
            )
        condition = run.split("-")[0].upper()
        q = ["--q", "0.1"] if condition == "C4" else []
        calls.append(
            [
                "group-stats",
                "--groups",
                str(root / "runs" / run / "groups.jsonl"),
                *q,
                "--out",
                str(root / "runs" / run / "group_stats.json"),
            ]
        )
        calls.append(
            [
                "completeness",
                "--run",
                run,
                "--expected",
                json.dumps(ev, sort_keys=True),
                "--evals-dir",
                str(root / "evals" / run),
                "--diagnostics",
                str(root / "diagnostics" / run),
                "--groups",
                str(root / "runs" / run / "groups.jsonl"),
                "--run-manifest",
                str(root / "runs" / run / "manifest.json"),
                "--pool-manifest",
                str(Path(args.tasks_dir) / "MANIFEST.json"),
                "--tasks-dir",
                str(args.tasks_dir),
                "--out",
                str(root / "runs" / run / "complete.json"),
            ]
        )
        for argv in calls:
            code = cli.main(argv)
            if code:
                raise UserError(f"paired-rollouts {' '.join(argv[:1])} failed for run {run} (exit {code})")
    return 0


def _probe(args: argparse.Namespace) -> int:
    from paired_rollouts.backoffice.tasks import load_pool
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.probe import build_probe_register
    from paired_rollouts.probe.scores import _plain
    from paired_rollouts.surrogate.probe import probe_checkpoint
    from paired_rollouts.surrogate.run import read_checkpoint
    from paired_rollouts.training.rows import parse_run

    settings = {"probe_q": 0.10, "probe_p": 0.25, "probe_seed": 0, **load_settings(args.settings)}
    run_dir = Path(args.run_dir)
    run = run_dir.name
    condition, _, seed = parse_run(run)
    tasks = {
        t["task_id"]: t
        for name in ("validation", "diagnostic", "test")
        for t in load_pool(Path(args.tasks_dir) / f"{name}.jsonl")
    }
    checkpoints = {}
    for step in args.steps:
        began = time.perf_counter()
        checkpoints[step] = probe_checkpoint(
            read_checkpoint(run_dir, step),
            condition=condition,
            seed=seed,
            step=step,
            tasks_dir=args.tasks_dir,
            settings=settings,
            tasks_by_id=tasks,
        )
        checkpoints[step]["seconds"] = round(time.perf_counter() - began, 3)
        o = checkpoints[step]["outcome"]
        print(
            f"probe {args.trajectory} step {step}: lhs {o['lhs_mean']:.5g} rhs {o['rhs_mean']:.5g} MC ratio "
            f"{o['mean_centered']['ratio_paired_over_independent']}"
        )
    register = build_probe_register(
        args.trajectory,
        run,
        checkpoints,
        settings={k: settings[k] for k in settings if k.startswith("probe_") or k == "task_filter"},
    )
    atomic_write_json(args.out, _plain(register))
    return 0


def _power(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.surrogate.power import power_table

    table = power_table(args, progress=True)
    atomic_write_json(args.out, table)
    for name, row in table["hypotheses"].items():
        print(
            f"{name}: passes with {table['full_pairs']} pairs: {row['passes_full']}; P(pass | 3 pairs) = {row['power'].get('3')}, "
            f"P(pass | {table['full_pairs']} pairs) = {row['power'].get(str(table['full_pairs']))}"
        )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    top = subparsers.add_parser(
        "surrogate",
        help="the surrogate policy scale (calibrate, arm, stats, probe, power)",
        description="The surrogate policy: a log-linear softmax agent in the real back office.",
    )
    sub = top.add_subparsers(dest="surrogate_command", required=True, metavar="SUBCOMMAND")

    p = sub.add_parser(
        "calibrate",
        help="fit the initial parameters to the paper's step-0 agent",
        description="Fit the knobs to the step-0 targets, write the calibration register (target, "
        "achieved, tolerance) and exit 1 when a target is missed.",
    )
    p.add_argument("--tasks-dir", required=True)
    p.add_argument("--settings", required=True, help=f"JSON with {sorted(CALIBRATION_KEYS)}")
    p.add_argument("--out", required=True, type=Path, help="results/surrogate/models/calibration.json")
    p.set_defaults(handler=_calibrate)

    p = sub.add_parser(
        "arm",
        help="train, evaluate and diagnose runs (one process)",
        description="For each run: GRPO training from the calibrated parameters, checkpoints, "
        "groups.jsonl, train_episodes.jsonl, manifest.json, every periodic/final evaluation file and "
        "the diagnostic episodes, at the LLM stages' paths under --results.",
    )
    p.add_argument("--runs", required=True, nargs="+")
    p.add_argument("--tasks-dir", required=True)
    p.add_argument("--calibration", required=True)
    p.add_argument("--settings", required=True)
    p.add_argument("--results", required=True, help="results root, e.g. results/surrogate")
    p.set_defaults(handler=_arm)

    p = sub.add_parser("stats", help="luck-share, group-stats and completeness of runs, in one process")
    p.add_argument("--runs", required=True, nargs="+")
    p.add_argument(
        "--expected", required=True, help="JSON object: run -> expected evidence (as completeness takes)"
    )
    p.add_argument("--tasks-dir", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--resamples", type=int, default=10000)
    p.set_defaults(handler=_stats)

    p = sub.add_parser("probe", help="exact gradient-covariance probe of surrogate checkpoints")
    p.add_argument("--trajectory", required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--steps", required=True, nargs="+", type=int)
    p.add_argument("--tasks-dir", required=True)
    p.add_argument("--settings", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(handler=_probe)

    p = sub.add_parser(
        "power", help="power table: P(rule passes) with n seed pairs, resampling the seed pairs"
    )
    p.add_argument("--decisions", required=True, nargs="+", type=Path, help="decision registers (c2, c4)")
    p.add_argument("--rules", required=True, type=Path)
    p.add_argument("--pairs", nargs="+", type=int, default=[3])
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--bootstrap-resamples", type=int, default=500, help="H5's interval per draw")
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(handler=_power)

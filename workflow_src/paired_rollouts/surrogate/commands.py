"""CLI: ``paired-rollouts surrogate calibrate|arm|stats|probe|power``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from paired_rollouts import cli_args as A
from paired_rollouts.errors import UserError


def _calibrate(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.surrogate.calibration import Estimator, calibrate, check_register, estimator_settings

    settings = estimator_settings(load_settings(args.settings))
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
    from paired_rollouts.design import parse_conditions
    from paired_rollouts.io import load_settings
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.run import run_one

    if args.zero_shot is not None:
        from paired_rollouts.calibration.zero_shot import gate

        gate(args.zero_shot)
    settings = Settings.parse(load_settings(args.settings))
    conditions = parse_conditions(args.conditions)
    for run in args.runs:
        began = time.perf_counter()
        manifest = run_one(
            run,
            tasks_dir=args.tasks_dir,
            calibration=args.calibration,
            settings=settings,
            results=args.results,
            conditions=conditions,
        )
        print(
            f"{run}: trained {manifest['steps_completed']} steps ({manifest['seconds']['training']:.1f} s), "
            f"evaluated ({manifest['seconds']['evaluation']:.1f} s), {time.perf_counter() - began:.1f} s in all"
        )
    return 0


def _stats(args: argparse.Namespace) -> int:
    """The per-run statistics commands, each called in this process with the arguments its rule would pass."""
    from paired_rollouts import cli
    from paired_rollouts.design import parse_run
    from paired_rollouts.io import load_settings
    from paired_rollouts.layout import Layout, diagnostic_steps_of
    from paired_rollouts.settings import Settings

    settings = Settings.parse(load_settings(args.settings))
    design = [] if args.conditions is None else ["--conditions", args.conditions]
    files = Layout(str(Path(args.results)))
    for run in args.runs:
        diagnosed = diagnostic_steps_of(settings.diagnostics.steps, parse_run(run).seed)
        calls = [
            [
                "luck-share",
                "--episodes",
                files.diagnostic_episodes(run, step),
                "--resamples",
                str(args.resamples),
                "--schedules",
                str(settings.diagnostics.schedules),
                "--samples",
                str(settings.diagnostics.samples),
                "--tasks",
                str(settings.diagnostics.tasks),
                "--out",
                files.luck(run, step),
            ]
            for step in diagnosed
        ]
        calls.append(["group-stats", "--groups", files.groups(run), *design, "--out", files.group_stats(run)])
        calls.append(
            [
                "completeness",
                "--run",
                run,
                "--settings",
                args.settings,
                *design,
                "--evals-dir",
                files.eval_dir(run),
                "--diagnostics",
                files.diagnostics_dir(run),
                "--groups",
                files.groups(run),
                "--run-manifest",
                files.manifest(run),
                "--luck",
                *(files.luck(run, step) for step in diagnosed),
                "--strict",
                "--pool-manifest",
                str(Path(args.tasks_dir) / "MANIFEST.json"),
                "--tasks-dir",
                str(args.tasks_dir),
                "--out",
                files.complete(run),
            ]
        )
        for argv in calls:
            code = cli.main(argv)
            if code:
                raise UserError(f"paired-rollouts {' '.join(argv[:1])} failed for run {run} (exit {code})")
    return 0


def _probe(args: argparse.Namespace) -> int:
    from paired_rollouts.backoffice.tasks import load_pool
    from paired_rollouts.design import parse_conditions, parse_run
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.probe import build_probe_register
    from paired_rollouts.probe.evidence import plain
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.probe import probe_checkpoint
    from paired_rollouts.surrogate.run import read_checkpoint

    settings = Settings.parse(load_settings(args.settings))
    ident = parse_run(args.run, parse_conditions(args.conditions))
    tasks = {
        t["task_id"]: t
        for name in ("validation", "diagnostic", "test")
        for t in load_pool(Path(args.tasks_dir) / f"{name}.jsonl")
    }
    checkpoints = {}
    for step in args.steps:
        began = time.perf_counter()
        checkpoints[step] = probe_checkpoint(
            read_checkpoint(Path(args.run_dir), step),
            condition=ident.condition,
            seed=ident.seed,
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
        args.trajectory, args.run, checkpoints, settings=settings.manifest_dict(("probe",))
    )
    atomic_write_json(args.out, plain(register))
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
    A.add_tasks_dir(p)
    A.add_settings(p, "JSON: the scale's `surrogate` section as in config/config.yaml", required=True)
    p.add_argument("--out", required=True, type=Path, help="results/surrogate/models/calibration.json")
    p.set_defaults(handler=_calibrate)

    p = sub.add_parser(
        "arm",
        help="train, evaluate and diagnose runs (one process)",
        description="For each run: GRPO training from the calibrated parameters, checkpoints, "
        "groups.jsonl, train_episodes.jsonl, manifest.json, every periodic/final evaluation file and "
        "the diagnostic episodes, at the LLM stages' paths under --results.",
    )
    p.add_argument("--runs", required=True, nargs="+", help="run names, e.g. c2-paired-s0 c2-independent-s0")
    A.add_tasks_dir(p)
    p.add_argument("--calibration", required=True, help="results/<scale>/models/surrogate/calibration.json")
    A.add_zero_shot_gate(p)
    A.add_settings(
        p,
        f"{A.SETTINGS_HELP}: the scale's surrogate settings (config/config.yaml scales.<scale>)",
        required=True,
    )
    A.add_results_root(p, "results root, e.g. results/surrogate", required=True, type=None)
    A.add_conditions(p)
    p.set_defaults(handler=_arm)

    p = sub.add_parser("stats", help="luck-share, group-stats and completeness of runs, in one process")
    p.add_argument("--runs", required=True, nargs="+", help="run names, e.g. c2-paired-s0 c2-independent-s0")
    A.add_settings(
        p,
        "the scale's task_filter, training, evaluation and diagnostics sections (with the diagnosed steps): "
        "each run's expected evidence follows from them and the run's name (paired-rollouts completeness "
        f"--settings): {A.SETTINGS_HELP}",
        required=True,
    )
    A.add_conditions(p)
    A.add_tasks_dir(p)
    A.add_results_root(p, "results root, e.g. results/surrogate", required=True, type=None)
    p.add_argument(
        "--resamples", type=int, default=10000, help="luck-share bootstrap resamples (default 10000)"
    )
    p.set_defaults(handler=_stats)

    p = sub.add_parser("probe", help="exact gradient-covariance probe of surrogate checkpoints")
    p.add_argument("--trajectory", required=True, help="trajectory name")
    A.add_run(p, "the run probed, e.g. c2-paired-s0 (its condition and seed choose the groups' schedules)")
    A.add_conditions(p)
    p.add_argument("--run-dir", required=True, help="results/<scale>/runs/RUN (its checkpoints)")
    p.add_argument("--steps", required=True, nargs="+", type=int, help="checkpoint steps, e.g. 0 40 80")
    A.add_tasks_dir(p)
    A.add_settings(p, f"probe design: {A.SETTINGS_HELP}", required=True)
    p.add_argument("--out", required=True, type=Path, help="results/<scale>/probe/TRAJECTORY.json")
    p.set_defaults(handler=_probe)

    p = sub.add_parser(
        "power", help="power table: P(rule passes) with n seed pairs, resampling the seed pairs"
    )
    p.add_argument("--decisions", required=True, nargs="+", type=Path, help="decision registers (c2, c4)")
    A.add_decision_rules(p)
    p.add_argument("--pairs", nargs="+", type=A.positive, default=[3], help="design sizes (seed pairs)")
    p.add_argument("--draws", type=A.positive, default=1000, help="draws per design size")
    p.add_argument("--bootstrap-resamples", type=A.positive, default=500, help="H5's interval per draw")
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(handler=_power)

    p = sub.add_parser(
        "summary", help="print the figures the README quotes from a finished study's registers"
    )
    A.add_results_root(p, "results/surrogate", required=True, type=None)
    p.add_argument("--out", type=Path, default=None)
    p.set_defaults(handler=_summary)


def _verdict_numbers(block: Any) -> dict[str, Any]:
    """A hypothesis's verdict and, when computed, its headline numbers (the summary the README quotes)."""
    from paired_rollouts.records import AucGap, ChallengeGap, HeldoutGap

    numbers = {
        AucGap: ("auc_difference_mean", "auc_difference_ci95"),
        ChallengeGap: ("difference_mean", "ci95"),
        HeldoutGap: ("difference_mean", "difference_ci90"),
    }.get(type(block), ())
    return {"passes": block.passes, **({k: getattr(block, k) for k in numbers} if block.computed else {})}


def _summary(args: argparse.Namespace) -> int:
    """The figures the README quotes, read from a finished surrogate study's registers through their
    readers; the curves registers are checked against the run registers they name, and those against
    their recomputation from the evidence (nothing is taken as written that its files contradict)."""
    import numpy as np

    from paired_rollouts.design import decided_comparisons
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.layout import Layout
    from paired_rollouts.records import (
        read_calibration,
        read_decision_register,
        read_luck,
        read_power_table,
        read_probe_register,
    )
    from paired_rollouts.stats.condition_curves import verified_curves
    from paired_rollouts.stats.decisions import HYPOTHESES

    layout = Layout(str(args.results))
    calibration = Path(layout.calibration_file())
    if not calibration.is_file():
        raise UserError(
            f"{args.results}: not the results root of a surrogate scale (no {calibration}); give e.g. "
            "results/surrogate or results/tiny_surrogate"
        )
    read_calibration(calibration)
    out: dict = {}
    c2, c4 = (read_decision_register(layout.decision(c.lower())) for c in decided_comparisons())
    curves: dict = {}
    for condition, regime in (("C2", "at_training"), ("C2", "challenge"), ("C4", "clean")):
        register = verified_curves(layout.curves(condition.lower()), layout.register)
        for arm in ("paired", "independent"):
            curves[f"{condition} {regime} {arm}"] = {
                str(step): round(value, 4) for step, value in register.arms[arm].curve(regime)
            }
    out["curves_mean_over_seeds"] = curves
    out["c2_validation_rise"] = {
        arm: round(
            curves[f"C2 at_training {arm}"][max(curves[f"C2 at_training {arm}"], key=int)]
            - curves[f"C2 at_training {arm}"]["0"],
            4,
        )
        for arm in ("paired", "independent")
    }
    h1a = c4.h1a
    out["c4_spurious"] = {
        "spurious_rate_paired": h1a.spurious_rate_paired,
        "spurious_rate_independent": h1a.spurious_rate_independent,
        "expected_independent_rate": h1a.expected_independent_rate,
        "q": h1a.q,
        "G": h1a.group_size,
    }
    lams = []
    for run in c2.runs:
        luck = read_luck(layout.step0_luck(run))
        lams.append({"run": run, "lam": luck.lam, "ci95": luck.ci95})
    out["c2_luck_step0"] = {
        "runs": lams,
        "mean": float(np.mean([x["lam"] for x in lams])),
        "min": float(min(x["lam"] for x in lams)),
        "min_ci95_lower": float(min(x["ci95"][0] for x in lams)),
    }
    probe = {}
    bandit = Path(layout.bandit_file())
    for path in sorted(bandit.parent.glob("*.json")):
        if path == bandit:
            continue  # the aligned-scalar bandit (its own reader), not a trajectory's register
        reg = read_probe_register(path)
        probe[path.stem] = {
            str(s): {
                "lhs_mean": c.outcome.lhs_mean,
                "rhs_mean": c.outcome.rhs_mean,
                "q": c.outcome.q,
                "outcome_mc_ratio": c.outcome.mean_centered.ratio_paired_over_independent,
                "transition_mc_ratio": c.transition.mean_centered.ratio_paired_over_independent,
            }
            for s, c in reg.checkpoints.items()
        }
    out["probe"] = probe
    out["decisions"] = {
        f"{reg.condition} {h}": _verdict_numbers(reg.hypothesis(h))
        for reg in (c2, c4)
        for h in HYPOTHESES
        if reg.hypothesis(h) is not None
    }
    power = Path(layout.power_file())
    if power.is_file():
        out["power"] = {k: v.power for k, v in read_power_table(power).hypotheses.items()}
    text = json.dumps(out, indent=1, sort_keys=True)
    print(text)
    if args.out:
        atomic_write_json(args.out, out)
    return 0

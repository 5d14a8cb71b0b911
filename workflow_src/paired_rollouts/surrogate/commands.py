"""CLI: ``paired-rollouts surrogate calibrate|curves|fit|arm|stats|probe|power|power-curves|prediction|map-cell|map|summary``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from paired_rollouts import cli_args as A
from paired_rollouts.errors import UserError


def _print_targets(register: dict) -> None:
    for row in register["targets"]:
        achieved = "undefined" if row["achieved"] is None else f"{row['achieved']:.4f}"
        print(
            f"{row['target_name']}: target {row['target']:.4f} +- {row['tolerance']:.4f}, achieved {achieved} "
            f"({row['kind']}) {'ok' if row['passes'] else 'MISSED'}"
        )


def _snr_text(part: dict[str, float | None], digits: int) -> str:
    """A signal-to-noise ratio with its standard error, or why there is none."""
    if part["snr_per_step"] is None:
        return "undefined (no gradient variance over the groups)"
    return f"{part['snr_per_step']:.{digits}f} +- {part['snr_per_step_se']:.{digits}f}"


def _calibrate(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.calibration import (
        Estimator,
        check_register,
        estimator_settings,
        step0_register,
    )
    from paired_rollouts.surrogate.policy import Shape

    raw = load_settings(args.settings)
    settings, surrogate = estimator_settings(raw), Settings.parse(raw).surrogate
    began = time.perf_counter()
    estimator = Estimator(
        args.tasks_dir, **settings, shape=Shape.of(surrogate), snr_groups=surrogate.snr_groups
    )
    register = step0_register(estimator, args.published, surrogate.mechanism_captures)
    register["settings"] = settings
    atomic_write_json(args.out, register)
    _print_targets(register)
    for design, row in register["signal_to_noise"].items():
        every, actions = (_snr_text(row[part], digits) for part, digits in (("all", 4), ("actions", 3)))
        print(f"signal-to-noise per step at step 0, {design}: {every} (action parameters {actions})")
    print(
        f"step-0 calibration {'passes' if register['passes'] else 'FAILS'} ({time.perf_counter() - began:.1f} s) -> {args.out}"
    )
    check_register(register, str(args.out))
    return 0


def _curves(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, load_settings, sha256_file
    from paired_rollouts.records import read_calibration
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.calibration import check_register, curves_register

    step0 = read_calibration(args.step0)
    if step0.stage != "step0" or step0.passes is not True:
        raise UserError(f"{args.step0}: not a passing step-0 calibration register; run 'surrogate calibrate'")
    check = Settings.parse(load_settings(args.settings)).surrogate.check_curves
    register = curves_register(
        step0.raw, sha256_file(args.step0), args.runs, args.results, args.published_curves, check
    )
    atomic_write_json(args.out, register)
    _print_targets(register)
    print(f"calibration {'passes' if register['passes'] else 'FAILS'} -> {args.out}")
    check_register(register, str(args.out))
    return 0


def _fit(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.calibration import estimator_settings
    from paired_rollouts.surrogate.fit import fit

    raw = load_settings(args.settings)
    settings = Settings.parse(raw)
    surrogate = settings.surrogate
    began = time.perf_counter()
    report = fit(
        args.tasks_dir,
        estimator_keywords=estimator_settings(raw),
        settings=settings,
        published=args.published,
        published_curves_path=args.published_curves,
        difficulties=args.difficulties or [surrogate.task_difficulty],
        tokens=surrogate.phrasing_tokens,
        error_tokens=args.error_tokens or [surrogate.error_phrasing_tokens],
        captures=surrogate.mechanism_captures,
        learning_rates=args.learning_rates,
        seeds=args.seeds,
        jobs=args.jobs,
    )
    report["seconds"] = round(time.perf_counter() - began, 1)
    atomic_write_json(args.out, report)
    print(f"chosen: {report['chosen_shape']}, learning rate {report['chosen_learning_rate']} -> {args.out}")
    return 0


def check_protocol(verification: str, predictions: list[str], calibration: str) -> None:
    """What a surrogate training job needs before its first step, as the LLM's ``train`` does: the
    pre-registration verified (read strictly: its verdict judged again from its findings); and, for runs
    from the calibrated surrogate, amendment A3 verified (``prediction``): a verified A3 record with a
    time-stamp, covering the very calibration register the runs read, so no such run trains from a
    register changed after the prediction was frozen."""
    from paired_rollouts.prereg.verify import require_covered
    from paired_rollouts.surrogate.prediction import a3_stamp
    from paired_rollouts.training.inputs import check_verification

    check_verification(verification)
    for report in predictions:
        a3_stamp(report)  # reads the report strictly and refuses one that does not pass
        require_covered(report, calibration)


def _arm(args: argparse.Namespace) -> int:
    from paired_rollouts.design import parse_conditions
    from paired_rollouts.io import load_settings
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.run import run_one

    if args.zero_shot is not None:
        from paired_rollouts.calibration.zero_shot import gate

        gate(args.zero_shot)
    check_protocol(args.verification, args.prediction, args.calibration)
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
    from paired_rollouts.io import atomic_write_json, load_settings, sha256_file
    from paired_rollouts.prereg.rules import load_decision_rules
    from paired_rollouts.probe import apply_h1b_rules, build_probe_register
    from paired_rollouts.probe.evidence import plain
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.policy import Shape
    from paired_rollouts.surrogate.probe import probe_checkpoint
    from paired_rollouts.surrogate.run import read_checkpoint

    settings = Settings.parse(load_settings(args.settings))
    h1b = load_decision_rules(args.rules)["h1b"]  # read before the checkpoints are probed
    shape = Shape.of(settings.surrogate)
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
            shape=shape,
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
    # the H1b verdict under the frozen rules' h1b block, naming the file (as 'probe verdict' at LLM scales)
    register = apply_h1b_rules(register, h1b, str(args.rules), sha256_file(args.rules))
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


def _power_curves(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.power_curves import power_curves

    draws = args.draws or Settings.parse(load_settings(args.settings)).surrogate.power_draws
    register = power_curves(
        args.decisions,
        args.rules,
        args.published,
        draws=draws,
        seed=args.seed,
        pairs=args.pairs,
        multipliers=args.multipliers,
    )
    atomic_write_json(args.out, register)
    at = register["multipliers"].index(1.0) if 1.0 in register["multipliers"] else None
    for name, block in register["hypotheses"].items():
        for spread, by_n in block["power"].items():
            if at is not None:
                row = ", ".join(
                    f"n={n} {v['rule'][at]:.3f}/{v['without_every_seed'][at]:.3f}" for n, v in by_n.items()
                )
                print(
                    f"{name} {spread}: P(pass) at the paper's effect (rule/without every-seed clause): {row}"
                )
    return 0


def _prediction(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.surrogate.prediction import prediction_register

    register = prediction_register(
        args.decisions, args.rules, args.verification, args.calibration, args.results, args.paired_runs
    )
    atomic_write_json(args.out, register)
    stamp, first = register["amendment"], register["first_paired_checkpoint"]
    print(
        f"A3 genTime {stamp['gen_time']}, first paired checkpoint {first['time']} "
        f"({first['time_epoch'] - stamp['gen_time_epoch']:+.1f} s): registered before the paired runs: "
        f"{register['registered_before_paired_runs']}"
    )
    for gap in register["gaps"]:
        print(
            f"{gap['name']}: predicted {gap['mean']} {gap['interval']} over {gap['seed_pairs']} seed pairs, "
            f"published {gap['published']}: {gap['verdict']}"
        )
    return 0


SURROGATE_SECTION = "JSON: the scale's `surrogate` section as in config/config.yaml"
PUBLISHED_FILES = {"published": "data/published/paper.yaml", "published-curves": "data/published/curves.yaml"}


def _map_cell(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.regime_map import Cell, measure_cell
    from paired_rollouts.surrogate.run import load_calibration

    cell = Cell.parse(args.cell)
    if args.out.name != f"{cell.id}.json":
        raise UserError(f"--out {args.out}: a cell's file is named after its id ({cell.id}.json)")
    settings = Settings.parse(load_settings(args.settings))
    theta0 = load_calibration(args.calibration)
    record = measure_cell(
        cell, theta0=theta0, tasks_dir=args.tasks_dir, settings=settings, progress=args.progress
    )
    atomic_write_json(args.out, record)
    print(
        f"{cell.id} {cell.factors()}: AUC gap {record['auc_gap']['mean']:+.4f} {record['auc_gap']['interval']} "
        f"({record['verdict']}), {record['cpu_seconds']:.1f} CPU s -> {args.out}"
    )
    return 0


def _map(args: argparse.Namespace) -> int:
    from paired_rollouts.io import (
        atomic_write_all,
        check_writable_folder,
        dumps_json,
        load_settings,
        loads_strict,
    )
    from paired_rollouts.records.regime_map import regime_map_of
    from paired_rollouts.render.regime_map import heatmap_files
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.regime_map import assemble

    settings = Settings.parse(load_settings(args.settings))
    if args.figure is not None:  # its folder proven writable before the cells are read
        check_writable_folder(Path(args.figure).parent, "--figure")
    body = assemble(args.cells, settings.regime_map, args.scale)
    text = dumps_json(body)
    # the map checked as its reader will check the file, and the heatmaps drawn, before anything is
    # written: then the map and its figure are written together (no map without its figure)
    regime_map = regime_map_of(loads_strict(text), str(args.out), Path(args.out).parent / "cells")
    outputs = [(args.out, text.encode("utf-8"))]
    if args.figure is not None:
        outputs += heatmap_files(regime_map, Path(args.figure))
    atomic_write_all(outputs)
    s = body["summary"]
    print(
        f"{s['cells']} cells: {s['verdicts']['helps']} helps, {s['verdicts']['hurts']} hurts; best predictor "
        f"{s['best_predictor']}; {body['cpu_seconds']} CPU s in the cells -> {args.out}"
    )
    return 0


def _add_published(p: argparse.ArgumentParser, *names: str) -> None:
    for name in names:
        p.add_argument(f"--{name}", required=True, type=Path, help=PUBLISHED_FILES[name])


def register(subparsers: argparse._SubParsersAction) -> None:
    top = subparsers.add_parser(
        "surrogate",
        help="the surrogate policy scale (calibrate, curves, fit, arm, stats, probe, power, map-cell, map, summary)",
        description="The surrogate policy: a log-linear softmax agent in the real back office.",
    )
    sub = top.add_subparsers(dest="surrogate_command", required=True, metavar="SUBCOMMAND")

    p = sub.add_parser(
        "calibrate",
        help="fit the initial parameters to the paper's step-0 agent; check the shape's step-0 targets",
        description="Fit the four behaviour knobs to the step-0 targets, check the policy shape's targets "
        "(spread of success over tasks, the probe's step-0 trace reductions), measure the gradient "
        "signal-to-noise per step, write the step-0 register and exit 1 when a target is missed.",
    )
    A.add_tasks_dir(p)
    A.add_settings(p, SURROGATE_SECTION, required=True)
    _add_published(p, "published")
    p.add_argument("--out", required=True, type=Path, help="results/<scale>/models/surrogate/step0.json")
    p.set_defaults(handler=_calibrate)

    p = sub.add_parser(
        "curves",
        help="check the unpaired arms' learning curves against the published ones",
        description="Mean learning curve of each arm the paper ran without pairing (C0, C2 independent, "
        "C4 independent) against data/published/curves.yaml: gap per point, RMS gap per curve; writes the "
        "calibration register (the step-0 register plus the curves) and exits 1 on a miss. A paired run is "
        "refused.",
    )
    p.add_argument("--step0", required=True, type=Path, help="results/<scale>/models/surrogate/step0.json")
    p.add_argument(
        "--runs", required=True, nargs="+", help="the unpaired runs, e.g. c0-clean-s0 c2-independent-s0"
    )
    A.add_results_root(p, "results root, e.g. results/surrogate", required=True, type=None)
    A.add_settings(p, SURROGATE_SECTION, required=True)
    _add_published(p, "published-curves")
    p.add_argument(
        "--out", required=True, type=Path, help="results/<scale>/models/surrogate/calibration.json"
    )
    p.set_defaults(handler=_curves)

    p = sub.add_parser(
        "fit",
        help="offline: search the policy shape and the learning rate the calibration re-checks",
        description="Offline, not a pipeline stage (hours of CPU at full size). Grid over task "
        "difficulty x error phrasing tokens (step-0 spread and probe reductions), then over learning "
        "rates (the unpaired arms' curves against the published ones; paired curves are never read). "
        "Writes the report; put the chosen values into config/config.yaml.",
    )
    A.add_tasks_dir(p)
    A.add_settings(p, "JSON: the scale's training, evaluation and surrogate sections", required=True)
    _add_published(p, "published", "published-curves")
    p.add_argument("--difficulties", nargs="+", type=float, default=None, help="task_difficulty grid")
    p.add_argument("--error-tokens", nargs="+", type=int, default=None, help="error_phrasing_tokens grid")
    p.add_argument(
        "--learning-rates",
        nargs="+",
        type=float,
        default=[],
        help="learning-rate grid (none: the shape only)",
    )
    p.add_argument("--seeds", type=int, default=4, help="runs per unpaired arm and learning rate")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (results do not depend on it)")
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(handler=_fit)

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
    p.add_argument(
        "--verification",
        required=True,
        help="results/<scale>/prereg/verification.json: training starts only if it passes (read strictly)",
    )
    p.add_argument(
        "--prediction",
        nargs="*",
        default=[],
        help="results/<scale>/prereg/prediction_verification.json, for runs from the calibrated surrogate: "
        "amendment A3 must verify and cover --calibration (none for the unpaired arms that the calibration "
        "fits)",
    )
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
    p.add_argument(
        "--rules", required=True, type=Path, help="prereg/decision_rules.yaml (its h1b block decides H1b)"
    )
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
        "power-curves",
        help="power curves: P(rule passes) at 0-2x the paper's effect by seed pairs and between-seed spread",
    )
    p.add_argument("--decisions", required=True, nargs="+", type=Path, help="decision registers (c2, c4)")
    A.add_decision_rules(p)
    _add_published(p, "published")
    A.add_settings(p, "the scale's `surrogate` section as JSON (its power_draws); --draws overrides it")
    p.add_argument("--draws", type=A.positive, default=None, help="draws per cell (default: power_draws)")
    p.add_argument("--pairs", nargs="+", type=A.positive, default=[3, 5, 8, 16, 32], help="seed pairs")
    p.add_argument(
        "--multipliers",
        nargs="+",
        type=float,
        default=[k / 4 for k in range(9)],
        help="true effects as multiples of the paper's (default 0, 0.25, ..., 2)",
    )
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("--out", required=True, type=Path, help="results/<scale>/decisions/power_curves.json")
    p.set_defaults(handler=_power_curves)

    p = sub.add_parser(
        "map-cell",
        help="one cell of the regime map: seed pairs of paired and independent runs, step-0 predictors",
        description="Train the cell's seed pairs (a paired and an independent run per seed, sharing all but "
        "the noise coupling) from the calibrated step-0 policy, evaluate both on the same clean validation "
        "rollouts, and measure the luck share, the exact step-0 gradient-variance ratio and Equation 5's "
        "two sides at the cell's noise (docs/records.md 8.5).",
    )
    p.add_argument(
        "--cell",
        required=True,
        help='the cell\'s factors as JSON: {"noise": "outcome", "rate": 0.2, "step_size": 16, '
        '"group_size": 4, "prompts_per_step": 8}',
    )
    p.add_argument("--calibration", required=True, help="results/<scale>/models/surrogate/step0.json")
    A.add_tasks_dir(p)
    A.add_settings(
        p,
        f"{A.SETTINGS_HELP}: the scale's training, diagnostics, probe, surrogate and regime_map sections",
        required=True,
    )
    p.add_argument("--progress", action="store_true", help="print each seed pair's final values")
    p.add_argument("--out", required=True, type=Path, help="results/<scale>/map/cells/<cell id>.json")
    p.set_defaults(handler=_map_cell)

    p = sub.add_parser(
        "map",
        help="assemble the regime map from its cells, and its heatmaps",
        description="Read every cell of the configured grid (each recomputed by its reader), write the map "
        "with its summary (verdict counts, largest gain, Spearman correlation of each theoretical quantity "
        "with the AUC gap), and draw the heatmaps (the map's page is in the study's document: "
        "`paired-rollouts render document --regime-map`).",
    )
    p.add_argument("--cells", required=True, nargs="+", type=Path, help="the cells' files")
    A.add_settings(p, f"{A.SETTINGS_HELP}: the scale's regime_map section (the grid)", required=True)
    p.add_argument("--scale", default="surrogate", help="the scale's label, recorded in the map")
    p.add_argument("--out", required=True, type=Path, help="results/<scale>/map/regime_map.json")
    p.add_argument("--figure", type=Path, default=None, help="results/<scale>/map/regime_map_heatmap.pdf")
    p.set_defaults(handler=_map)

    p = sub.add_parser(
        "prediction",
        help="amendment A3: the paired arms' gaps as a registered prediction, judged against the published gaps",
        description="Predicted paired-minus-independent gaps (mean, bootstrap interval over seed pairs) from "
        "tier 1's decision registers, each published gap inside or outside its interval; refuses rules or a "
        "calibration register that A3 does not cover with their current bytes (docs/records.md section 8.4).",
    )
    p.add_argument("--decisions", required=True, nargs="+", type=Path, help="decision registers (c2, c4)")
    p.add_argument("--rules", required=True, type=Path, help="prereg/prediction_rules.yaml (amendment A3)")
    p.add_argument(
        "--verification", required=True, type=Path, help="results/<scale>/prereg/prediction_verification.json"
    )
    p.add_argument(
        "--calibration", required=True, type=Path, help="results/<scale>/models/surrogate/calibration.json"
    )
    A.add_results_root(p, "results/surrogate", required=True, type=None)
    p.add_argument(
        "--paired-runs", required=True, nargs="+", help="tier 1's paired runs (their checkpoints' times)"
    )
    p.add_argument("--out", required=True, type=Path, help="results/<scale>/decisions/prediction_a3.json")
    p.set_defaults(handler=_prediction)

    p = sub.add_parser(
        "summary", help="print the figures the README quotes from a finished study's registers"
    )
    A.add_results_root(p, "results/surrogate", required=True, type=None)
    p.add_argument("--out", type=Path, default=None)
    p.set_defaults(handler=_summary)


def _verdict_numbers(block: Any) -> dict[str, Any]:
    """A hypothesis's verdict and, when computed, its headline numbers (the summary the README quotes);
    an AUC gap also gets its standard error over seed pairs (between-pair SD, ddof 1, over sqrt(pairs))."""
    import numpy as np

    from paired_rollouts.records import AucGap, ChallengeGap, HeldoutGap

    numbers = {
        AucGap: ("auc_difference_mean", "auc_difference_ci95"),
        ChallengeGap: ("difference_mean", "ci95"),
        HeldoutGap: ("difference_mean", "difference_ci90"),
    }.get(type(block), ())
    out = {"passes": block.passes, **({k: getattr(block, k) for k in numbers} if block.computed else {})}
    if isinstance(block, AucGap) and block.computed:
        pairs = block.auc_difference_by_seed
        out["auc_difference_se"] = float(np.std(pairs, ddof=1) / np.sqrt(len(pairs)))
    return out


def _diagnosed_steps(layout: Any, run: str) -> set[int]:
    """The checkpoints ``run`` was diagnosed at, as its manifest records the setting (not whichever luck
    files its folder happens to hold)."""
    from paired_rollouts.design import parse_run
    from paired_rollouts.layout import diagnostic_steps_of
    from paired_rollouts.records import read_run_manifest

    path = layout.manifest(run)
    steps = read_run_manifest(path).recorded_settings.get("diagnostic_steps")
    if not isinstance(steps, dict) or not {"seed0", "other"} <= steps.keys():
        raise UserError(f"{path}: settings.diagnostic_steps is missing or not {{seed0, other}}; rerun {run}")
    return set(diagnostic_steps_of(steps, parse_run(run).seed))


def _mean_luck(layout: Any, runs: list[str], step: int) -> float:
    """The mean luck share at ``step`` over ``runs``, each of which was diagnosed there (a missing file is
    refused by the reader; nan where no run's luck share is defined)."""
    import numpy as np

    from paired_rollouts.records import read_luck

    lams = [read_luck(layout.luck(run, step)).lam for run in runs]
    return float(np.nanmean([np.nan if lam is None else lam for lam in lams])) if lams else float("nan")


def _calibration_summary(register: Any) -> dict[str, Any]:
    """The calibration register's headline figures: targets, curves, mechanism, signal-to-noise."""
    return {
        "passes": register.passes,
        "targets": {t.target_name: [t.target, t.achieved, t.tolerance] for t in register.targets},
        "curves": {
            name: {"rms_gap": c.rms_gap, "achieved": [round(p["achieved"], 4) for p in c.points]}
            for name, c in register.curves.items()
        },
        "mechanism": register.mechanism["mean"],
        "snr_per_step": {
            design: {
                part: [row[part]["snr_per_step"], row[part]["snr_per_step_se"]] for part in ("all", "actions")
            }
            for design, row in register.signal_to_noise.items()
        },
    }


def _summary(args: argparse.Namespace) -> int:
    """The figures the README quotes, read from a finished surrogate study's registers through their
    readers; the curves registers are checked against the run registers they name, and those against
    their recomputation from the evidence (nothing is taken as written that its files contradict)."""
    import numpy as np

    from paired_rollouts.design import decided_comparisons, parse_run
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.layout import Layout
    from paired_rollouts.records import (
        read_calibration,
        read_decision_register,
        read_luck,
        read_power_curves,
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
    diagnosed = {run: _diagnosed_steps(layout, run) for run in c2.runs}
    out["c2_luck_by_step"] = {
        arm: {
            str(step): _mean_luck(
                layout, [run for run in c2.runs if parse_run(run).arm == arm and step in diagnosed[run]], step
            )
            for step in sorted(set().union(*diagnosed.values()))
        }
        for arm in ("paired", "independent")
    }
    out["calibration"] = _calibration_summary(read_calibration(calibration))
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
    power_curves = Path(layout.power_curves_file())
    if power_curves.is_file():  # at the paper's effect: [rule, without every-seed clause] by spread and n
        curves = read_power_curves(power_curves)
        out["power_at_paper_effect"] = {
            name: {
                spread: {
                    str(n): [h.curve(spread, n, v)[curves.at_paper] for v in curves.variants]
                    for n in curves.pairs
                }
                for spread in curves.spreads
            }
            for name, h in curves.hypotheses.items()
        }
    text = json.dumps(out, indent=1, sort_keys=True)
    print(text)
    if args.out:
        atomic_write_json(args.out, out)
    return 0

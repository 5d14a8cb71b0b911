"""CLI: ``evaluate`` (periodic/final sets of a checkpoint) and ``diagnose`` (luck-share episodes)."""

from __future__ import annotations

import argparse
import time

from paired_rollouts import cli_args as A
from paired_rollouts.io import atomic_write_all, atomic_write_jsonl, jsonl_bytes, load_settings
from paired_rollouts.settings import Settings, help_text

_SECTIONS = ("stack", "training", "evaluation", "diagnostics")


def register(subparsers: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "evaluate",
        help="roll a checkpoint out on an evaluation set into episode records",
        description="Roll out checkpoint step N of a run on a periodic set (first eval_tasks validation tasks; "
        "clean and at_training with schedules 1-2, challenge 1) or a final set (first final_tasks test tasks; "
        "clean, noisy_p010, noisy_p025, heldout_types with schedules 1-4, challenge 1, at_training for C4). "
        "Schedules are paired and identical across arms and checkpoints. Several regimes may be given; "
        "--out then names one file per regime, in the same order.",
        epilog=help_text(_SECTIONS),
        formatter_class=fmt,
    )
    _common(p)
    p.add_argument("--phase", required=True, choices=("periodic", "final"))
    p.add_argument(
        "--regime",
        required=True,
        nargs="+",
        help="clean|at_training|challenge|noisy_p010|noisy_p025|heldout_types (several: one process rolls out each)",
    )
    p.add_argument(
        "--out",
        required=True,
        nargs="+",
        help="results/evals/RUN/PHASE-stepN-REGIME.jsonl: one file per --regime, in the same order",
    )
    p.set_defaults(handler=_evaluate)

    p = subparsers.add_parser(
        "diagnose",
        help="luck-share diagnostic episodes of a checkpoint (K schedules x M samples per task)",
        description="Roll out checkpoint step N on the first diagnostics.tasks tasks of diagnostics.pool x "
        "diagnostics.schedules schedules (diagnostic_seed(run_seed, task, k), k = 0..K-1) x "
        "diagnostics.samples samples under "
        "diagnostics.p transition noise (the run's own fault mixture, paired). Records have phase 'diagnostic' and regime 'diag'.",
        epilog=help_text(_SECTIONS),
        formatter_class=fmt,
    )
    _common(p)
    p.add_argument("--out", required=True, help="results/diagnostics/RUN/diag-stepN.jsonl")
    p.set_defaults(handler=_diagnose)

    p = subparsers.add_parser(
        "replay-check",
        help="replay a checkpoint's first final-set episodes twice with every seed fixed, token for token",
        description="Roll the evaluation batches holding the first K episodes of the final clean set at "
        "checkpoint step N twice through one engine, with the evaluation's rows, schedule seeds, per-batch "
        "sampling seeds and engine seed, and register per episode both rolls' model-turn token ids, "
        "outcomes, the first divergence (turn, token) and whether the first roll's record is byte for byte "
        "the evaluation file's (docs/records.md section 9).",
        epilog=help_text(_SECTIONS),
        formatter_class=fmt,
    )
    _common(p)
    p.add_argument(
        "--evaluation", required=True, help="results/evals/RUN/final-stepN-clean.jsonl (the records compared)"
    )
    p.add_argument(
        "--episodes",
        type=A.positive,
        default=None,
        help="K, the episodes replayed (default: evaluation.replay_episodes)",
    )
    p.add_argument("--out", required=True, help="results/replay/RUN/stepN.json")
    p.set_defaults(handler=_replay_check)


def _common(p: argparse.ArgumentParser) -> None:
    A.add_run(p)
    p.add_argument("--step", required=True, type=int, help="checkpoint step N")
    A.add_tasks_dir(p)
    p.add_argument("--checkpoint", required=True, help="results/runs/RUN/checkpoints/stepNNNN")
    p.add_argument(
        "--model-dir", required=True, help="the base model (the stand-in folder or the prepared snapshot)"
    )
    A.add_settings(p)
    A.add_conditions(p)


def _identity(args: argparse.Namespace) -> tuple[Settings, dict, tuple[str, str, int]]:
    """The job's settings, the design's conditions and the run's (condition name, arm, seed)."""
    from paired_rollouts.design import parse_conditions, parse_run

    settings = Settings.parse(load_settings(args.settings))
    conditions = parse_conditions(args.conditions)
    run = parse_run(args.run, conditions)
    return settings, conditions, (run.condition, run.arm, run.seed)


def _roll(runner, rows, args, settings, identity, phase: str, regime: str) -> list[dict]:
    """The rows rolled out at the checkpoint into episode records of the run, phase and regime."""
    from paired_rollouts.evaluation.evaluate import roll_rows

    name, arm, seed = identity
    return roll_rows(
        runner,
        rows,
        run=args.run,
        condition=name,
        arm=arm,
        seed=seed,
        phase=phase,
        step=args.step,
        regime=regime,
        batch=settings.evaluation.eval_batch,
    )


def _evaluate(args: argparse.Namespace) -> int:
    from paired_rollouts.errors import UserError
    from paired_rollouts.evaluation.evaluate import evaluation_rows
    from paired_rollouts.evaluation.rollout import PolicyRunner

    settings, conditions, identity = _identity(args)
    name, _, seed = identity
    condition = conditions[name]
    if len(args.out) != len(args.regime):
        raise UserError(
            f"--out names {len(args.out)} file(s) for {len(args.regime)} regime(s); give one file per --regime"
        )
    _check_outputs(args.out)
    plans = [(r, evaluation_rows(args.tasks_dir, args.phase, r, condition, settings)) for r in args.regime]
    runner = PolicyRunner(args.model_dir, args.checkpoint, settings, args.tasks_dir, seed)
    done = []
    try:
        for regime, rows in plans:
            runner.restart_episodes()
            began = time.perf_counter()
            records = _roll(runner, rows, args, settings, identity, args.phase, regime)
            done.append((regime, records, time.perf_counter() - began))
    finally:
        runner.close()
    # Every regime's file or none: a bad second path leaves no first file behind.
    atomic_write_all(
        [(out, jsonl_bytes(records)) for (_, records, _), out in zip(done, args.out, strict=True)]
    )
    for (regime, records, seconds), out in zip(done, args.out, strict=True):
        ok = sum(r["true_success"] for r in records)
        print(
            f"{args.run} {args.phase} step {args.step} {regime}: {ok}/{len(records)} successes, "
            f"{len(records) / max(seconds, 1e-9):.2f} episodes/s -> {out}"
        )
    return 0


def _check_outputs(outs: list[str]) -> None:
    """Refuse, before any roll-out, an --out named twice or one that names a folder or lies under a file."""
    from pathlib import Path

    from paired_rollouts.errors import UserError
    from paired_rollouts.io import _check_output

    seen: set[Path] = set()
    for out in outs:
        path = Path(out)
        if path.resolve() in seen:
            raise UserError(f"--out {out}: named twice; give one file per --regime")
        seen.add(path.resolve())
        _check_output(path)


def _diagnose(args: argparse.Namespace) -> int:
    from paired_rollouts.evaluation.evaluate import diagnostic_rows
    from paired_rollouts.evaluation.rollout import PolicyRunner

    settings, conditions, identity = _identity(args)
    name, _, seed = identity
    rows = diagnostic_rows(args.tasks_dir, conditions[name], seed, settings)
    runner = PolicyRunner(args.model_dir, args.checkpoint, settings, args.tasks_dir, seed)
    try:
        began = time.perf_counter()
        records = _roll(runner, rows, args, settings, identity, "diagnostic", "diag")
    finally:
        runner.close()
    atomic_write_jsonl(args.out, records)
    seconds = time.perf_counter() - began
    print(
        f"{args.run} diagnostic step {args.step}: {len(records)} episodes, "
        f"{len(records) / max(seconds, 1e-9):.2f} episodes/s -> {args.out}"
    )
    return 0


def _replay_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from paired_rollouts.design import PHASE_POOL
    from paired_rollouts.evaluation.evaluate import evaluation_rows
    from paired_rollouts.evaluation.replay import REGIME, replay_check
    from paired_rollouts.evaluation.rollout import PolicyRunner, check_checkpoint
    from paired_rollouts.io import atomic_write_json, check_writable_folder, require_file

    settings, conditions, identity = _identity(args)
    name, _, seed = identity
    episodes = args.episodes or settings.evaluation.replay_episodes
    require_file(args.evaluation, "--evaluation")
    check_writable_folder(Path(args.out).parent)
    rows = evaluation_rows(args.tasks_dir, "final", REGIME, conditions[name], settings)
    engine_seed = None
    if settings.stack.backend == "vllm":
        from paired_rollouts.training.trainer import vllm_seed

        engine_seed = vllm_seed(seed)
    checkpoint = check_checkpoint(args.checkpoint)
    read = sorted(p for p in checkpoint.iterdir() if p.is_file())
    read.append(Path(args.tasks_dir) / f"{PHASE_POOL['final']}.jsonl")
    began = time.perf_counter()
    register = replay_check(
        make_runner=lambda: PolicyRunner(args.model_dir, checkpoint, settings, args.tasks_dir, seed),
        rows=rows,
        evaluation_file=args.evaluation,
        episodes=episodes,
        identity=identity,
        run=args.run,
        step=args.step,
        settings=settings,
        read=read,
        engine_seed=engine_seed,
    )
    atomic_write_json(args.out, register)
    summary = register["summary"]
    print(
        f"{args.run} step {args.step} replay ({register['backend']} on {register['device']}): "
        f"{summary['exact']}/{summary['episodes']} exact, {summary['outcome_changed']} outcome changed, "
        f"{summary['matches_evaluation']}/{summary['episodes']} match the evaluation, first divergence "
        f"{summary['first_divergence']}, {time.perf_counter() - began:.1f} s -> {args.out}"
    )
    return 0

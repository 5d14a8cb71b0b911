"""CLI: ``tokenizer``, ``warm-start`` (CPU stand-in), ``train`` (one GRPO run) and ``model prepare``."""

from __future__ import annotations

import argparse
from pathlib import Path

from paired_rollouts import cli_args as A
from paired_rollouts.errors import UserError
from paired_rollouts.io import atomic_write_folder, load_settings
from paired_rollouts.settings import Settings, help_text
from paired_rollouts.training.kernels import prepare_torch

_STANDIN_SECTIONS = ("model",)
_TRAIN_SECTIONS = ("stack", "training")


def register(subparsers: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter

    p = subparsers.add_parser(
        "tokenizer",
        help="train the stand-in's offline byte-level BPE tokenizer (CPU profile)",
        description="Train a small byte-level BPE on rendered scripted-reference transcripts of train tasks and "
        "attach TRL's bundled Qwen3.5 chat template, so TRL parses the stand-in's tool calls like Qwen3.5's.",
        epilog=help_text(_STANDIN_SECTIONS),
        formatter_class=fmt,
    )
    A.add_tasks_dir(p)
    p.add_argument("--out", required=True, help="output folder (HF tokenizer files)")
    A.add_settings(p)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(handler=_tokenizer)

    p = subparsers.add_parser(
        "warm-start",
        help="build the tiny Qwen3.5 stand-in and warm-start it on scripted transcripts (CPU profile)",
        description="Build a randomly initialised tiny Qwen3.5 text model from config (no download) and train "
        "it with next-token loss on the assistant turns of scripted-reference transcripts, so that GRPO starts "
        "from a policy that calls tools and copies ids and values from the request (a curriculum without the "
        "tool schemas first, fresh relabelling of every id and value per batch: docs/training.md). Saves model "
        "+ tokenizer and warm_start.json (loss, teacher-forced copied-token accuracy).",
        epilog=help_text(_STANDIN_SECTIONS),
        formatter_class=fmt,
    )
    p.add_argument("--tokenizer", required=True, help="folder written by 'paired-rollouts tokenizer'")
    A.add_tasks_dir(p)
    p.add_argument("--out", required=True, help="output model folder (HF save_pretrained layout)")
    A.add_settings(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch CPU threads (0: torch's default); the warm start runs alone, so give it every core",
    )
    p.set_defaults(handler=_warm_start)

    p = subparsers.add_parser(
        "train",
        help="one GRPO run (TRL GRPOTrainer + LoRA) with paired or independent noise schedules",
        description="Train one run named {condition}-{arm}[-scale_{scaling}]-s{seed} (c2-paired-s0, "
        "c4-independent-scale_none-s1, c2-blocking_paired-s0, c0-clean-s0). Refuses to start unless the pre-registration is verified and the task pools match "
        "their manifest. Writes checkpoints/step{N:04d}/ (step 0 = initial LoRA), groups.jsonl, "
        "train_episodes.jsonl and manifest.json under --out-dir. Started again after a kill, it resumes from "
        "the last COMPLETE checkpoint and ends with the same registers.",
        epilog=help_text(_TRAIN_SECTIONS),
        formatter_class=fmt,
    )
    A.add_run(p)
    A.add_tasks_dir(p)
    p.add_argument(
        "--model-dir", required=True, help="stand-in folder (CPU) or Qwen3.5-2B snapshot/hub id (GPU)"
    )
    p.add_argument("--verification", required=True, help="results/prereg/verification.json")
    A.add_zero_shot_gate(p)
    A.add_settings(p)
    p.add_argument("--out-dir", required=True, help="results/runs/RUN")
    A.add_conditions(p)
    p.add_argument("--stop-after", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=_train)

    from paired_rollouts.training import prepare

    prepare.register(subparsers)


def _train_tasks(args: argparse.Namespace, settings: Settings) -> list[dict]:
    """The training pool after the scale's task selection (what the warm start renders transcripts of)."""
    from paired_rollouts.backoffice.tasks import load_pool, select_tasks

    return select_tasks(load_pool(Path(args.tasks_dir) / "train.jsonl"), settings.task_filter)


def _tokenizer(args: argparse.Namespace) -> int:
    from paired_rollouts.training.warmstart import build_tokenizer

    settings = Settings.parse(load_settings(args.settings))
    model = settings.model
    tokenizer = build_tokenizer(
        _train_tasks(args, settings), model.warm_start_tasks, model.vocab_size, args.seed
    )
    atomic_write_folder(args.out, lambda folder: tokenizer.save_pretrained(str(folder)))
    print(f"tokenizer: {len(tokenizer)} tokens -> {args.out}")
    return 0


def _warm_start(args: argparse.Namespace) -> int:
    from paired_rollouts.training.tokenizer import load_tokenizer
    from paired_rollouts.training.warmstart import save_standin, warm_start

    settings = Settings.parse(load_settings(args.settings))
    prepare_torch(settings.stack)
    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    if not (Path(args.tokenizer) / "tokenizer.json").is_file():
        raise UserError(f"{args.tokenizer}: no tokenizer.json; run 'paired-rollouts tokenizer' first")
    tokenizer = load_tokenizer(args.tokenizer)
    model, report = warm_start(tokenizer, _train_tasks(args, settings), settings.model, seed=args.seed)
    save_standin(model, tokenizer, args.out, report)
    if report["loss_first"] is None:  # warm_start_steps: 0, a valid setting: the initial weights, untrained
        print(f"warm start: no steps (model.warm_start_steps is 0), the initial weights; saved {args.out}")
    else:
        print(f"warm start: loss {report['loss_first']:.3f} -> {report['loss_last']:.3f}; saved {args.out}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from paired_rollouts.design import parse_conditions
    from paired_rollouts.training.grpo import run_training

    if args.zero_shot is not None:
        from paired_rollouts.calibration.zero_shot import gate

        gate(args.zero_shot)
    manifest = run_training(
        args.run,
        args.tasks_dir,
        args.model_dir,
        args.verification,
        Settings.parse(load_settings(args.settings)),
        args.out_dir,
        stop_after=args.stop_after,
        conditions=parse_conditions(args.conditions),
    )
    print(f"{args.run}: {manifest.get('status')} at step {manifest.get('steps_completed')}")
    return 0

"""CLI: ``calibrate zero-shot`` (roll out the base model, write the register, gate) and ``calibrate check``."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from paired_rollouts import cli_args as A
from paired_rollouts.errors import UserError
from paired_rollouts.settings import Settings

# The arm and seed the step-0 sets are rolled out under: schedules of evaluation and diagnostic sets do
# not depend on the arm, and seed 0 is the first seed of every design (the same sets as the runs' step 0).
CONDITION, ARM, SEED = "C2", "paired", 0
RUN = "zero-shot"


def register(subparsers) -> None:
    top = subparsers.add_parser(
        "calibrate",
        help="the zero-shot calibration register (amendment A2), checked before any training",
        description="Evaluate the model every run starts from at step 0 against the calibration bands "
        "registered in prereg/tier_rules.yaml (docs/prereg.md#zero-shot-calibration-register).",
    )
    sub = top.add_subparsers(dest="calibrate_command", required=True, metavar="ACTION")
    p = sub.add_parser(
        "zero-shot",
        help="roll out the base model on the step-0 clean validation set and diagnostic set; gate",
        description="Roll out the base model (a zero-initialised LoRA adapter, i.e. the step-0 policy of every "
        "run) on the clean validation set and on the diagnostic roll-outs at p = 0.25, compute the clean "
        "success and the luck share with its bootstrap interval, and write the register. Exits 1 with one "
        "line when a registered band is missed (the register is then not written).",
    )
    A.add_tasks_dir(p)
    p.add_argument(
        "--model-dir", required=True, help="the base model (the stand-in folder or the prepared snapshot)"
    )
    p.add_argument(
        "--model", required=True, help="model name the bands are registered under (e.g. Qwen/Qwen3.5-2B)"
    )
    A.add_settings(p, f"{A.SETTINGS_HELP} (evaluation + diagnostic keys)", required=True)
    A.add_tier_rules(p, "results/<scale>/prereg/amendment_verification.json (must cover --rules)")
    p.add_argument("--resamples", type=int, default=10000, help="luck-share bootstrap resamples")
    p.add_argument("--episodes-dir", required=True, type=Path, help="where the step-0 episodes are written")
    p.add_argument("--out", required=True, type=Path, help="results/<scale>/calibration/zero_shot.json")
    p.set_defaults(handler=_zero_shot)

    p = sub.add_parser(
        "surrogate",
        help="the register of a surrogate scale, from its calibration register",
        description="Check the surrogate calibration's step-0 values (clean validation success, luck share) "
        "against the bands of the model it is fitted to; same register and gate as 'zero-shot'.",
    )
    p.add_argument(
        "--calibration", required=True, type=Path, help="results/<scale>/models/surrogate/calibration.json"
    )
    p.add_argument("--model", required=True, help="the registered model the surrogate stands for")
    A.add_tier_rules(p, "results/<scale>/prereg/amendment_verification.json (must cover --rules)")
    p.add_argument("--out", required=True, type=Path, help="results/<scale>/calibration/zero_shot.json")
    p.set_defaults(handler=_surrogate)

    p = sub.add_parser("check", help="print a register and exit 1 if a registered band is missed")
    p.add_argument("register", type=Path, help="results/<scale>/calibration/zero_shot.json")
    p.set_defaults(handler=_check)


def _rules_block(path: Path, verification: Path) -> tuple[dict, dict]:
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import load_tier_rules

    rules = load_tier_rules(path, verification=verification)
    return rules["calibration"], {
        "path": path.as_posix(),
        "sha256": sha256_file(path),
        "verification": verification.as_posix(),
    }


def _finish(register: dict, out: Path, episodes: tuple[tuple[Path, bytes], ...] = ()) -> int:
    """Print the register, gate it and write it with its ``episodes`` files: all of them or none (a band
    missed or a bad path writes nothing, and an earlier register is removed)."""
    from paired_rollouts.calibration.zero_shot import check_register, describe
    from paired_rollouts.io import _check_output, atomic_write_all, dumps_json

    for line in describe(register):
        print(line)
    _check_output(out)
    out.unlink(missing_ok=True)
    check_register(register, str(out))
    atomic_write_all([*episodes, (out, dumps_json(register).encode("utf-8"))])
    print(f"-> {out}")
    return 0


def initial_adapter(model_dir: str, settings: Settings, folder: Path, seed: int) -> Path:
    """A zero-initialised LoRA adapter (lora_B = 0): the base model's function, in checkpoint layout."""
    import torch
    from peft import get_peft_model
    from transformers import set_seed

    from paired_rollouts.training import checkpoints as ckpt
    from paired_rollouts.training.inputs import check_model
    from paired_rollouts.training.kernels import prepare_torch
    from paired_rollouts.training.model import load_causal_lm, lora_config

    prepare_torch(settings.stack)
    set_seed(seed)
    model = get_peft_model(
        load_causal_lm(check_model(model_dir), settings.stack.dtype), lora_config(settings.training)
    )
    for name, parameter in model.named_parameters():
        if "lora_B" in name and torch.count_nonzero(parameter).item():
            raise RuntimeError(
                f"{name}: LoRA B is not zero-initialised; the adapter would change the base model"
            )
    model.save_pretrained(str(folder))
    ckpt.write_marker(folder, 0, "initial")
    return folder


def _zero_shot(args: argparse.Namespace) -> int:
    from paired_rollouts.calibration.zero_shot import LUCK_SEED, build_register
    from paired_rollouts.evaluation.evaluate import diagnostic_rows, evaluation_rows, roll_rows
    from paired_rollouts.evaluation.rollout import PolicyRunner
    from paired_rollouts.io import _check_output, jsonl_bytes, load_settings, sha256_bytes
    from paired_rollouts.stats.luck_share import luck_share_file

    calibration, rules = _rules_block(args.rules, args.verification)
    settings = Settings.parse(load_settings(args.settings))
    diagnostics = settings.diagnostics
    clean_path, diag_path = (
        args.episodes_dir / "zero_shot-clean.jsonl",
        args.episodes_dir / "zero_shot-diag.jsonl",
    )
    for path in (clean_path, diag_path, args.out):  # a bad path is refused before the roll-outs
        _check_output(path)
    clean_rows = evaluation_rows(args.tasks_dir, "periodic", "clean", CONDITION, settings)
    diag_rows = diagnostic_rows(args.tasks_dir, CONDITION, SEED, settings)
    with tempfile.TemporaryDirectory(prefix="paired-rollouts-zero-shot-") as tmp:
        adapter = initial_adapter(args.model_dir, settings, Path(tmp) / "step0000", SEED)
        runner = PolicyRunner(args.model_dir, adapter, settings, args.tasks_dir, SEED)
        try:
            common = {
                "run": RUN,
                "condition": CONDITION,
                "arm": ARM,
                "seed": SEED,
                "step": 0,
                "batch": settings.evaluation.eval_batch,
            }
            runner.restart_episodes()
            clean = roll_rows(runner, clean_rows, phase="periodic", regime="clean", **common)
            runner.restart_episodes()
            diag = roll_rows(runner, diag_rows, phase="diagnostic", regime="diag", **common)
        finally:
            runner.close()
    # The episode files are written with the register, all or none (_finish); their hashes are the bytes'.
    clean_bytes, diag_bytes = jsonl_bytes(clean), jsonl_bytes(diag)
    luck = luck_share_file(
        diag,
        run=RUN,
        step=0,
        source=str(diag_path),
        source_sha256=sha256_bytes(diag_bytes),
        resamples=args.resamples,
        seed=LUCK_SEED,
        schedules=diagnostics.schedules,
        samples=diagnostics.samples,
        tasks=diagnostics.tasks,
    )
    luck["episodes"] = len(diag)
    register = build_register(
        calibration,
        args.model,
        {
            "successes": sum(int(bool(r["true_success"])) for r in clean),
            "episodes": len(clean),
            "tasks": len({r["task_id"] for r in clean}),
        },
        luck,
        rules=rules,
        evidence={
            "clean": {"file": str(clean_path), "sha256": sha256_bytes(clean_bytes)},
            "diagnostic": {"file": str(diag_path), "sha256": sha256_bytes(diag_bytes)},
            "model_dir": args.model_dir,
            "diagnostic_pool": diagnostics.pool,
            "bootstrap": {"resamples": args.resamples, "seed": LUCK_SEED},
        },
    )
    return _finish(register, args.out, ((clean_path, clean_bytes), (diag_path, diag_bytes)))


def _surrogate(args: argparse.Namespace) -> int:
    from paired_rollouts.calibration.zero_shot import build_register
    from paired_rollouts.io import sha256_file
    from paired_rollouts.records import read_calibration

    calibration, rules = _rules_block(args.rules, args.verification)
    surrogate = read_calibration(args.calibration)
    clean = surrogate.target("c4_clean_validation")
    if clean is None:
        raise UserError(
            f"{args.calibration}: no c4_clean_validation target in the surrogate calibration register; "
            "regenerate it with 'paired-rollouts surrogate calibrate'"
        )
    clean_value = clean.achieved
    estimation = surrogate.estimation
    episodes = estimation.clean_episodes
    luck = {
        "lam": surrogate.luck_share.lam,
        "tasks": surrogate.luck_share.tasks,
        "tasks_defined": surrogate.luck_share.tasks_defined,
        "ci95": None,  # the surrogate calibration estimates the luck share without an interval
        "episodes": estimation.diagnostic_episodes,
    }
    register = build_register(
        calibration,
        args.model,
        {
            "successes": clean_value * episodes if clean_value is not None else 0,
            "episodes": episodes,
            "tasks": estimation.eval_tasks,
        },
        luck,
        rules=rules,
        evidence={
            "surrogate_calibration": {"file": str(args.calibration), "sha256": sha256_file(args.calibration)},
            "clean_set": "c4_clean_validation (clean validation at step 0)",
        },
    )
    return _finish(register, args.out)


def _check(args: argparse.Namespace) -> int:
    from paired_rollouts.calibration.zero_shot import check_register, check_targets, describe
    from paired_rollouts.records import read_zero_shot

    register = read_zero_shot(args.register).raw  # judged by the gate's own checks, as the writer's output is
    for line in describe(register):
        print(line)
    sys.stdout.flush()
    check_targets(register, str(args.register))
    check_register(register, str(args.register))
    return 0

"""One GRPO training run, start to end: inputs checked, rows built, trainer wired, registers and
checkpoints written, resumed after a kill. The parts live in their own modules: ``inputs`` (checks),
``register`` (groups/episodes), ``provenance`` (manifest facts), ``callbacks`` (timings, checkpoints).

Outputs under ``results/runs/{run}/``:
- ``groups.jsonl``: one record per (step, group) from the trainer's own batches (docs/CONTRACT.md#training-group-record);
- ``train_episodes.jsonl``: the episode record of every training rollout (phase ``train``);
- ``checkpoints/step{N:04d}/``: step 0 (initial LoRA) and every ``checkpoint_every`` steps + the last;
- ``manifest.json``: versions, seeds, settings, hardware, timings, memory, git commit, attempts, pools;
- ``tensorboard/``: TRL's training metrics as TensorBoard event files, one per session (not records:
  ``training/event_log.py``).

Resume: a run started again continues from its last COMPLETE checkpoint; register rows of steps at or
after that checkpoint are dropped first, and TRL/HF restore optimizer, scheduler and RNG states, so the
registers end byte-identical to an uninterrupted run (tested on CPU).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from paired_rollouts.design import PAPER_CONDITIONS, parse_run
from paired_rollouts.io import atomic_write_bytes, atomic_write_json, atomic_write_text, read_json
from paired_rollouts.layout import TENSORBOARD
from paired_rollouts.settings import Settings
from paired_rollouts.training import checkpoints as ckpt
from paired_rollouts.training import event_log
from paired_rollouts.training.inputs import check_model, check_pools, check_verification
from paired_rollouts.training.kernels import prepare_torch
from paired_rollouts.training.provenance import (
    Manifest,
    code_version,
    git_info,
    hardware,
    now,
    peak_memory,
    versions,
)
from paired_rollouts.training.register import GROUPS, TRAIN_EPISODES, Register
from paired_rollouts.training.rows import build_rows, training_noise

log = logging.getLogger(__name__)

STATE = "state"
MANIFEST = "manifest.json"


def run_training(
    run: str,
    tasks_dir: str,
    model_dir: str,
    verification: str | None,
    settings: Settings,
    out_dir: str,
    stop_after: int | None = None,
    conditions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train one run (or resume it). ``verification``: the pre-registration's verification report, read
    strictly and required to pass (None only for code-path checks that freeze no protocol:
    scripts/gpu_check.py, benchmarks/bench_training.py; the ``train`` command always gives one).
    ``stop_after`` ends the job after that many steps (tests: a 'kill'). ``conditions``: the design's
    conditions (default: the paper's)."""
    ident = parse_run(run, conditions if conditions is not None else PAPER_CONDITIONS)
    condition, arm, seed = ident.condition, ident.arm, ident.seed
    if verification is not None:
        check_verification(verification)
    pool_hashes = check_pools(tasks_dir)
    model_path = check_model(model_dir)
    prepare_torch(settings.stack)  # before torch's first operation: the kernels it pins are chosen then

    from transformers import AutoTokenizer, set_seed

    from paired_rollouts.training.callbacks import CheckpointInstaller, StepTimings
    from paired_rollouts.training.environment import EpisodeContext
    from paired_rollouts.training.model import load_causal_lm, lora_config
    from paired_rollouts.training.trainer import build_trainer, trainer_configuration

    run_dir = Path(out_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    training = settings.training
    # Working registers live in state/ and are published to the run folder only at the end: Snakemake
    # deletes a job's declared outputs (groups.jsonl, manifest.json) before it retries the job, and the
    # retry must still find the rows of the steps it resumes after.
    state_dir = run_dir / STATE
    _set_aside_if_stale(run_dir, state_dir, {"run": run, "settings": settings.manifest_dict()})

    # -- where to start ---------------------------------------------------------------------------
    last = ckpt.last_complete(run_dir)
    ckpt.discard_after(run_dir, last if last is not None else -1)
    start_step = last or 0
    previous = read_json(state_dir / MANIFEST) if (state_dir / MANIFEST).is_file() else {}
    if start_step >= training.steps:
        log.info("%s: already trained to step %d", run, start_step)
        _publish(state_dir, run_dir)
        return previous

    meta = {"run": run, "condition": condition, "arm": arm, "seed": seed}
    register = Register(
        state_dir, meta, training.num_generations, training.prompts_per_step, training.train_episodes
    )
    register.truncate(start_step)
    if start_step == 0:
        for name in (GROUPS, TRAIN_EPISODES):
            atomic_write_text(state_dir / name, "")
    manifest = Manifest(
        state_dir / MANIFEST,
        attempt_manifest(meta, settings, model_path, pool_hashes, previous, start_step, run_dir, conditions),
    )
    manifest.save()

    # -- data, model, environment ---------------------------------------------------------------
    set_seed(seed)
    dataset = training_dataset(tasks_dir, settings, condition, arm, seed, conditions)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = load_causal_lm(model_path, settings.stack.dtype)
    episodes = EpisodeContext.from_pools(
        tasks_dir,
        phase="train",
        attempt=manifest.data["attempts"][-1]["attempt"],
        initial_train_episodes=start_step,
    )

    hf_dir = run_dir / ".hf"
    if hf_dir.exists():
        shutil.rmtree(hf_dir)
    callbacks = [
        StepTimings(manifest, settings.stack.device, register),
        CheckpointInstaller(manifest, hf_dir, run_dir, stop_after),
    ]
    trainer = build_trainer(
        model,
        tokenizer,
        settings,
        dataset,
        hf_dir,
        seed,
        episodes,
        peft_config=lora_config(training),
        callbacks=callbacks,
    )
    trainer.batch_sink = register
    event_log.attach(trainer, run_dir / TENSORBOARD, start_step + 1)
    manifest.data["trainer_config"] = trainer_configuration(trainer.args)
    manifest.save()
    if start_step == 0:
        _install_initial_checkpoint(trainer, run_dir, manifest)

    resume = str(ckpt.step_dir(run_dir, start_step)) if start_step > 0 else None
    try:
        trainer.train(resume_from_checkpoint=resume)
    except BaseException:
        manifest.data["attempts"][-1].update(status="failed", ended=now())
        manifest.data["status"] = "failed"
        manifest.save()
        raise
    finished = trainer.state.global_step >= training.steps
    manifest.data["attempts"][-1].update(status="complete" if finished else "stopped", ended=now())
    manifest.data["status"] = "complete" if finished else "stopped"
    manifest.data["steps_completed"] = trainer.state.global_step
    manifest.data["peak_memory"] = peak_memory(settings.stack.device)
    manifest.save()
    shutil.rmtree(hf_dir, ignore_errors=True)
    _publish(state_dir, run_dir)
    return manifest.data


def attempt_manifest(
    meta: dict[str, Any],
    settings: Settings,
    model_path: str,
    pool_hashes: dict[str, str],
    previous: dict[str, Any],
    start_step: int,
    run_dir: Path,
    conditions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest an attempt starts with: the run's identity and provenance, the earlier attempts and the
    timings of the steps it resumes after (``previous``: the last attempt's manifest). The settings are
    recorded under their manifest names, the sections the job was given (config/config.yaml) only."""
    from paired_rollouts.training.trainer import vllm_seed

    seed = meta["seed"]
    attempts = list(previous.get("attempts", [])) if start_step > 0 else []
    return {
        **meta,
        "status": "running",
        "settings": settings.manifest_dict(),
        "noise": json.loads(training_noise(meta["condition"], meta["arm"], conditions).to_json()),
        "seeds": {
            "run_seed": seed,
            "trainer_seed": seed,
            "data_seed": seed,
            "vllm_seed": vllm_seed(seed) if settings.stack.backend == "vllm" else None,
        },
        "model": {"path": model_path},
        "pools_sha256": pool_hashes,
        "versions": versions(),
        "git": git_info(),
        "code": code_version(),
        "hardware": hardware(settings.stack.device),
        "attempts": attempts
        + [
            {
                "attempt": len(attempts) + 1,
                "started": now(),
                "resumed_from_step": start_step,
                "status": "running",
            }
        ],
        "timings": [t for t in previous.get("timings", []) if t["step"] < start_step] if start_step else [],
        "save_timings": [t for t in previous.get("save_timings", []) if t["step"] <= start_step]
        if start_step
        else [],
        "steps_completed": start_step,
        "checkpoints": [s for s in ckpt.list_steps(run_dir)],
    }


def training_dataset(
    tasks_dir: str,
    settings: Settings,
    condition: str,
    arm: str,
    seed: int,
    conditions: dict[str, Any] | None = None,
) -> Any:
    """The run's dataset: one row per (step, group) over the selected training tasks (``rows.build_rows``)."""
    import datasets

    from paired_rollouts.backoffice.tasks import load_pool, select_tasks

    train_tasks = select_tasks(load_pool(Path(tasks_dir) / "train.jsonl"), settings.task_filter)
    training = settings.training
    rows = build_rows(
        train_tasks, condition, arm, seed, training.steps, training.prompts_per_step, conditions
    )
    return datasets.Dataset.from_list(rows)


def _install_initial_checkpoint(trainer: Any, run_dir: Path, manifest: Manifest) -> None:
    """Step 0: the freshly initialised LoRA adapter, installed like every later checkpoint."""
    tmp = run_dir / "checkpoints" / ".step0000.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    trainer.model.save_pretrained(str(tmp))
    ckpt.install(tmp, run_dir, 0, kind="initial")
    manifest.data["checkpoints"] = ckpt.list_steps(run_dir)
    manifest.save()


def _set_aside_if_stale(run_dir: Path, state_dir: Path, identity: dict[str, Any]) -> None:
    """Checkpoints made with other settings (or by an older layout) are never resumed from: they are
    moved to ``stale-<time>/`` with their TensorBoard files (nothing is deleted) and the run starts afresh."""
    fingerprint = state_dir / "identity.json"
    leftovers = [p for p in (run_dir / "checkpoints", state_dir, run_dir / TENSORBOARD) if p.exists()]
    if leftovers and not (
        fingerprint.is_file() and read_json(fingerprint) == json.loads(json.dumps(identity))
    ):
        stale = run_dir / f"stale-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
        stale.mkdir()
        for path in leftovers:
            shutil.move(str(path), str(stale / path.name))
        log.warning("%s: earlier checkpoints were made with other settings; moved them to %s", run_dir, stale)
    state_dir.mkdir(parents=True, exist_ok=True)
    if not fingerprint.is_file():
        atomic_write_json(fingerprint, identity)


def _publish(state_dir: Path, run_dir: Path) -> None:
    """Copy the finished registers into the run folder, the manifest last (it marks the run done)."""
    for name in (GROUPS, TRAIN_EPISODES, MANIFEST):
        source = state_dir / name
        if source.is_file():
            atomic_write_bytes(run_dir / name, source.read_bytes())

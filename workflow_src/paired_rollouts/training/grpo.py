"""One GRPO training run: inputs checked, rows built, trainer wired, registers and checkpoints written.

Outputs under ``results/runs/{run}/``:
- ``groups.jsonl``: one record per (step, group) from the trainer's own batches (docs/CONTRACT.md#training-group-record);
- ``train_episodes.jsonl``: the episode record of every training rollout (phase ``train``);
- ``checkpoints/step{N:04d}/``: step 0 (initial LoRA) and every ``checkpoint_every`` steps + the last;
- ``manifest.json``: versions, seeds, settings, hardware, timings, memory, git commit, attempts, pools.

Resume: a run started again continues from its last COMPLETE checkpoint; register rows of steps at or
after that checkpoint are dropped first, and TRL/HF restore optimizer, scheduler and RNG states, so the
registers end byte-identical to an uninterrupted run (tested on CPU).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.io import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    jsonl_line,
    read_json,
    sha256_file,
)
from paired_rollouts.training import checkpoints as ckpt
from paired_rollouts.training.rows import build_rows, parse_run, training_noise
from paired_rollouts.training.settings import filter_tasks, resolve

log = logging.getLogger(__name__)

STATE = "state"
GROUPS = "groups.jsonl"
TRAIN_EPISODES = "train_episodes.jsonl"
MANIFEST = "manifest.json"
POOLS = ("train", "validation", "test", "diagnostic")


# ---------------------------------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------------------------------
def check_verification(path: str | Path) -> dict[str, Any]:
    source = Path(path)
    if not source.is_file():
        raise UserError(
            f"{source}: pre-registration verification not found; run 'paired-rollouts prereg verify' "
            "(training may start only after the protocol is frozen and verified)"
        )
    data = read_json(source)
    if not isinstance(data, dict) or data.get("passes") is not True:
        raise UserError(
            f"{source}: the pre-registration is not verified (need \"passes\": true); fix the freeze and "
            "rerun 'paired-rollouts prereg verify'"
        )
    return data


def check_pools(tasks_dir: str | Path) -> dict[str, str]:
    """Every pool file must match MANIFEST.json (load_pool checks hash and count)."""
    from paired_rollouts.backoffice.tasks import load_pool

    folder = Path(tasks_dir)
    if not (folder / "MANIFEST.json").is_file():
        raise UserError(f"{folder}/MANIFEST.json: not found; generate the pools with 'paired-rollouts tasks'")
    hashes = {}
    for pool in POOLS:
        path = folder / f"{pool}.jsonl"
        load_pool(path)
        hashes[pool] = sha256_file(path)
    return hashes


def check_model(model_dir: str, settings: dict[str, Any]) -> str:
    """A local text-only model folder with its tokenizer (the stand-in, or a prepared Qwen3.5 snapshot)."""
    path = Path(model_dir)
    if not path.exists():
        raise UserError(
            f"--model-dir {model_dir}: not found; run 'paired-rollouts warm-start' first (CPU) or "
            "'paired-rollouts model prepare --source SNAPSHOT --out DIR' and give DIR (GPU)"
        )
    config = path / "config.json"
    if not config.is_file():
        raise UserError(
            f"{path}: no config.json; build the stand-in with 'paired-rollouts warm-start' or prepare a "
            "Qwen3.5 snapshot with 'paired-rollouts model prepare'"
        )
    model_type = read_json(config).get("model_type")
    if model_type == "qwen3_5":
        # vLLM would build the vision-language class for this folder and reject the text model's names at
        # the first weight sync; the prepared text-only folder is what every learning command loads.
        raise UserError(
            f"{config}: a vision-language Qwen3.5 snapshot; run 'paired-rollouts model prepare --source {path} "
            "--out DIR' and give DIR as --model-dir"
        )
    tok_files = ("tokenizer.json", "tokenizer_config.json")
    if not any((path / f).is_file() for f in tok_files):
        raise UserError(f"{path}: no tokenizer files next to the model; save the tokenizer into this folder")
    return str(path)


# ---------------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------------
def episode_record(raw: dict[str, Any], *, run: str, condition: str, arm: str, seed: int, phase: str,
                   step: int, regime: str, schedule_index: int | None) -> dict[str, Any]:
    """A docs/CONTRACT.md#episode-record from the session's record (its extras kept)."""
    record = dict(raw)
    record["phase_stamp"] = raw.get("phase")
    record["condition_stamp"] = raw.get("condition")
    record.update(
        run=run, condition=condition, arm=arm, seed=seed, phase=phase, step=step, regime=regime,
        schedule_index=schedule_index,
        true_success=bool(raw["true_success"]),
        observed_reward=float(raw["observed_reward"]),
        flipped=bool(raw["flipped"]),
        exposed=bool(raw["exposed"]),
        calls=int(raw["calls"]),
        budget=int(raw["budget"]),
        finished=bool(raw["finished"]),
        faults=dict(raw.get("faults") or {}),
    )
    return record


def sample_std(values: list[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


class Register:
    """groups.jsonl + train_episodes.jsonl, appended per step (flushed and fsynced)."""

    def __init__(self, run_dir: Path, meta: dict[str, Any], G: int, prompts_per_step: int, episodes: bool):
        self.run_dir = run_dir
        self.meta = meta
        self.G = G
        self.P = prompts_per_step
        self.episodes = episodes
        self.generation_seconds = 0.0  # summed over the batches handed to the register

    def truncate(self, keep_below_step: int) -> None:
        """Keep only records of steps < ``keep_below_step`` (atomic rewrite)."""
        for name in (GROUPS, TRAIN_EPISODES):
            path = self.run_dir / name
            if not path.exists():
                continue
            kept = []
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError:
                        break  # a torn last line from a kill
                    if record.get("step", 0) < keep_below_step:
                        kept.append(line if line.endswith("\n") else line + "\n")
            atomic_write_text(path, "".join(kept))

    def _append(self, name: str, lines: list[str]) -> None:
        with (self.run_dir / name).open("a", encoding="utf-8") as handle:
            handle.write("".join(lines))
            handle.flush()
            os.fsync(handle.fileno())

    def __call__(self, trainer: Any, inputs: list[dict[str, Any]], output: dict[str, Any],
                 rewards: list[float], generation_seconds: float) -> None:
        self.generation_seconds += generation_seconds
        step = trainer.state.global_step
        envs = trainer.environments
        advantages = output["advantages"].detach().cpu().tolist()
        G = self.G
        if len(inputs) != self.P * G or len(envs) != len(inputs) or len(advantages) != len(inputs):
            raise RuntimeError(f"step {step}: batch of {len(inputs)} rollouts, expected {self.P} x {G}")
        groups, episodes = [], []
        for g in range(self.P):
            idx = range(g * G, (g + 1) * G)
            row = inputs[g * G]
            expected_row = step * self.P + g
            if row.get("row_index") != expected_row:
                raise RuntimeError(f"step {step} group {g}: got row {row.get('row_index')}, expected {expected_row}")
            recs = []
            for i in idx:
                record = envs[i].last_episode
                if record is None:
                    raise RuntimeError(f"step {step} rollout {i}: the environment was never graded")
                if record["task_id"] != inputs[i]["task_id"] or inputs[i]["row_index"] != expected_row:
                    raise RuntimeError(
                        f"step {step} rollout {i}: environment task {record['task_id']} != row task "
                        f"{inputs[i]['task_id']}"
                    )
                if abs(float(record["observed_reward"]) - rewards[i]) > 1e-9:
                    raise RuntimeError(
                        f"step {step} rollout {i}: environment reward {record['observed_reward']} != "
                        f"TRL reward {rewards[i]}"
                    )
                recs.append(record)
            observed = [float(r["observed_reward"]) for r in recs]
            truth = [bool(r["true_success"]) for r in recs]
            zero_var = math.isclose(sample_std(observed), 0.0, abs_tol=1e-12)
            adv = [advantages[i] for i in idx]
            groups.append({
                **self.meta,
                "step": step,
                "group": g,
                "row_index": expected_row,
                "task_id": row["task_id"],
                "schedule_seed": int(row["schedule_seed"]),
                "schedule_seeds": [int(envs[i].resolved_seed) for i in idx],
                "slots": [envs[i].slot for i in idx],
                "episode_indices": [envs[i].episode_index for i in idx],
                "true_success": truth,
                "observed_reward": observed,
                "flipped": [bool(r["flipped"]) for r in recs],
                "exposed": [bool(r["exposed"]) for r in recs],
                "calls": [int(r["calls"]) for r in recs],
                "advantages": adv,
                "max_abs_advantage": max(abs(a) for a in adv),
                "zero_variance": zero_var,
                "spurious": all(truth) and not zero_var,
            })
            if self.episodes:
                for k, r in zip(idx, recs, strict=True):
                    rec = episode_record(r, run=self.meta["run"], condition=self.meta["condition"],
                                         arm=self.meta["arm"], seed=self.meta["seed"], phase="train", step=step,
                                         regime="at_training", schedule_index=None)
                    rec.update(group=g, rollout=k - g * G, advantage=advantages[k])
                    episodes.append(rec)
        self._append(GROUPS, [jsonl_line(r) for r in groups])
        if self.episodes:
            self._append(TRAIN_EPISODES, [jsonl_line(r) for r in episodes])


# ---------------------------------------------------------------------------------------------------
# manifest
# ---------------------------------------------------------------------------------------------------
def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("paired-rollouts", "torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers",
                 "vllm", "flash-linear-attention"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_info() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "workflow_src"], cwd=root,
                                    capture_output=True, text=True, timeout=20).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


def code_version() -> dict[str, str]:
    import hashlib

    import paired_rollouts

    package = Path(paired_rollouts.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return {"version": paired_rollouts.__version__, "sources_sha256": digest.hexdigest()}


def hardware(settings: dict[str, Any]) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": settings["device"],
    }
    if settings["device"] == "cuda" and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    return info


def peak_memory(settings: dict[str, Any]) -> dict[str, Any]:
    import resource

    import torch

    out: dict[str, Any] = {"host_max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if settings["device"] == "cuda" and torch.cuda.is_available():
        out["gpu_max_allocated_bytes"] = torch.cuda.max_memory_allocated()
        out["gpu_max_reserved_bytes"] = torch.cuda.max_memory_reserved()
    return out


class Manifest:
    def __init__(self, path: Path, base: dict[str, Any]):
        self.path = path
        self.data = base

    def save(self) -> None:
        atomic_write_json(self.path, self.data)


# ---------------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------------
def _step_timer_callback(manifest: Manifest, settings: dict[str, Any], register: Register) -> Any:
    """Per-step timings into the manifest; generation time as the register saw it (one batch per step)."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.start = 0.0
            self.gen_before = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()
            self.gen_before = register.generation_seconds

        def on_step_end(self, args, state, control, **kwargs):
            total = time.perf_counter() - self.start
            gen = register.generation_seconds - self.gen_before
            manifest.data["timings"].append({
                "step": state.global_step - 1,
                "seconds": round(total, 4),
                "generation_seconds": round(gen, 4),
                "passes_seconds": round(total - gen, 4),
                "save_seconds": 0.0,
            })
            manifest.data["steps_completed"] = state.global_step
            manifest.data["peak_memory"] = peak_memory(settings)

    return StepTimer()


def _checkpoint_callback(manifest: Manifest, hf_dir: Path, run_dir: Path, stop_after: int | None) -> Any:
    """Install each checkpoint HF saved as ``checkpoints/step{N:04d}/`` (+ marker) and time the save.

    HF logs (``on_log``) right before it writes a checkpoint and calls ``on_save`` right after, so the
    save time runs from the last log (or step end) to the installed checkpoint."""
    from transformers import TrainerCallback

    class InstallCheckpoint(TrainerCallback):
        def __init__(self) -> None:
            self.mark = 0.0

        def on_step_end(self, args, state, control, **kwargs):
            self.mark = time.perf_counter()

        def on_log(self, args, state, control, **kwargs):
            self.mark = time.perf_counter()

        def on_save(self, args, state, control, **kwargs):
            began = time.perf_counter()
            step = state.global_step
            ckpt.install(hf_dir / f"checkpoint-{step}", run_dir, step, kind="full")
            seconds = round(time.perf_counter() - self.mark, 4)
            manifest.data["save_timings"].append({"step": step, "seconds": seconds,
                                                  "install_seconds": round(time.perf_counter() - began, 4)})
            for entry in manifest.data["timings"]:
                if entry["step"] == step - 1:
                    entry["save_seconds"] = seconds
            manifest.data["checkpoints"] = ckpt.list_steps(run_dir)
            manifest.save()
            if stop_after is not None and step >= stop_after:
                control.should_training_stop = True
            return control

    return InstallCheckpoint()


def run_training(run: str, tasks_dir: str, model_dir: str, verification: str, settings_raw: dict[str, Any],
                 out_dir: str, stop_after: int | None = None) -> dict[str, Any]:
    """Train one run (or resume it). ``stop_after`` ends the job after that many steps (tests: a 'kill')."""
    settings = resolve(settings_raw)
    condition, arm, seed = parse_run(run)
    check_verification(verification)
    pool_hashes = check_pools(tasks_dir)
    model_path = check_model(model_dir, settings)

    import datasets
    import torch
    from transformers import AutoTokenizer, set_seed

    from paired_rollouts.backoffice.tasks import load_pool
    from paired_rollouts.training.environment import EpisodeContext
    from paired_rollouts.training.model import load_causal_lm, lora_config
    from paired_rollouts.training.trainer import build_trainer, trainer_configuration, vllm_seed

    run_dir = Path(out_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    steps, P, G = settings["steps"], settings["prompts_per_step"], settings["num_generations"]
    # Working registers live in state/ and are published to the run folder only at the end: Snakemake
    # deletes a job's declared outputs (groups.jsonl, manifest.json) before it retries the job, and the
    # retry must still find the rows of the steps it resumes after.
    state_dir = run_dir / STATE
    _set_aside_if_stale(run_dir, state_dir, {"run": run, "settings": settings})

    # -- where to start ---------------------------------------------------------------------------
    last = ckpt.last_complete(run_dir)
    ckpt.discard_after(run_dir, last if last is not None else -1)
    start_step = last or 0
    previous = read_json(state_dir / MANIFEST) if (state_dir / MANIFEST).is_file() else {}
    attempts = list(previous.get("attempts", [])) if start_step > 0 else []
    attempt = len(attempts) + 1
    if start_step >= steps:
        log.info("%s: already trained to step %d", run, start_step)
        _publish(state_dir, run_dir)
        return previous

    meta = {"run": run, "condition": condition, "arm": arm, "seed": seed}
    register = Register(state_dir, meta, G, P, settings["train_episodes"])
    register.truncate(start_step)
    if start_step == 0:
        for name in (GROUPS, TRAIN_EPISODES):
            atomic_write_text(state_dir / name, "")

    manifest = Manifest(state_dir / MANIFEST, {
        **meta,
        "status": "running",
        "settings": settings,
        "noise": json.loads(training_noise(condition, arm).to_json()),
        "seeds": {"run_seed": seed, "trainer_seed": seed, "data_seed": seed,
                  "vllm_seed": vllm_seed(seed) if settings["backend"] == "vllm" else None},
        "model": {"path": model_path},
        "pools_sha256": pool_hashes,
        "versions": versions(),
        "git": git_info(),
        "code": code_version(),
        "hardware": hardware(settings),
        "attempts": attempts + [{"attempt": attempt, "started": _now(), "resumed_from_step": start_step,
                                 "status": "running"}],
        "timings": [t for t in previous.get("timings", []) if t["step"] < start_step] if start_step else [],
        "save_timings": [t for t in previous.get("save_timings", []) if t["step"] <= start_step]
        if start_step else [],
        "steps_completed": start_step,
        "checkpoints": [s for s in ckpt.list_steps(run_dir)],
    })
    manifest.save()

    # -- data, model, environment ---------------------------------------------------------------
    set_seed(seed)
    torch.use_deterministic_algorithms(settings["device"] == "cpu", warn_only=True)
    train_tasks = filter_tasks(load_pool(Path(tasks_dir) / "train.jsonl"), settings["task_filter"])
    rows = build_rows(train_tasks, condition, arm, seed, steps, P)
    dataset = datasets.Dataset.from_list(rows)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = load_causal_lm(model_path, settings["dtype"])
    episodes = EpisodeContext.from_pools(tasks_dir, phase="train", attempt=attempt,
                                         initial_train_episodes=start_step)

    hf_dir = run_dir / ".hf"
    if hf_dir.exists():
        shutil.rmtree(hf_dir)
    callbacks = [_step_timer_callback(manifest, settings, register),
                 _checkpoint_callback(manifest, hf_dir, run_dir, stop_after)]
    trainer = build_trainer(model, tokenizer, settings, dataset, hf_dir, seed, episodes,
                            peft_config=lora_config(settings), callbacks=callbacks)
    trainer.batch_sink = register
    manifest.data["trainer_config"] = trainer_configuration(trainer.args)
    manifest.save()

    if start_step == 0:
        tmp = run_dir / "checkpoints" / ".step0000.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        trainer.model.save_pretrained(str(tmp))
        ckpt.install(tmp, run_dir, 0, kind="initial")
        manifest.data["checkpoints"] = ckpt.list_steps(run_dir)
        manifest.save()

    resume = str(ckpt.step_dir(run_dir, start_step)) if start_step > 0 else None
    try:
        trainer.train(resume_from_checkpoint=resume)
    except BaseException:
        manifest.data["attempts"][-1].update(status="failed", ended=_now())
        manifest.data["status"] = "failed"
        manifest.save()
        raise
    finished = trainer.state.global_step >= steps
    manifest.data["attempts"][-1].update(status="complete" if finished else "stopped", ended=_now())
    manifest.data["status"] = "complete" if finished else "stopped"
    manifest.data["steps_completed"] = trainer.state.global_step
    manifest.data["peak_memory"] = peak_memory(settings)
    manifest.save()
    shutil.rmtree(hf_dir, ignore_errors=True)
    _publish(state_dir, run_dir)
    return manifest.data


def _set_aside_if_stale(run_dir: Path, state_dir: Path, identity: dict[str, Any]) -> None:
    """Checkpoints made with other settings (or by an older layout) are never resumed from: they are
    moved to ``stale-<time>/`` (nothing is deleted) and the run starts afresh."""
    fingerprint = state_dir / "identity.json"
    leftovers = [p for p in (run_dir / "checkpoints", state_dir) if p.exists()]
    if leftovers and not (fingerprint.is_file() and read_json(fingerprint) == json.loads(json.dumps(identity))):
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

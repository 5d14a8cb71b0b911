"""The ``TrainerCallback``s a training run adds to HF's loop (TRL's public extension point): the phase
stamp of each step, saves off the ``checkpoint_every`` grid, per-step timings, the installation of each
checkpoint HF saves and the throughput scalar beside TRL's TensorBoard metrics. Imported lazily (it
imports transformers)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from paired_rollouts.training import checkpoints as ckpt
from paired_rollouts.training.provenance import Manifest, peak_memory

if TYPE_CHECKING:
    from paired_rollouts.training.environment import EpisodeContext
    from paired_rollouts.training.register import Register


class StampPhase(TrainerCallback):
    """Names each training step's phase (``train:step{N}``) before its generation batch is rolled out."""

    def __init__(self, episodes: EpisodeContext) -> None:
        self.episodes = episodes

    def on_step_begin(self, args, state, control, **kwargs):
        self.episodes.phase = f"train:step{state.global_step}"


class SaveAtSteps(TrainerCallback):
    """Also saves at ``steps`` (checkpoints off the ``checkpoint_every`` grid)."""

    def __init__(self, steps: list[int]) -> None:
        self.wanted = frozenset(steps)

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step in self.wanted:
            control.should_save = True
        return control


class StepTimings(TrainerCallback):
    """Per-step timings into the manifest; generation time as the register saw it (one batch per step)."""

    def __init__(self, manifest: Manifest, device: str, register: Register) -> None:
        self.manifest = manifest
        self.device = device
        self.register = register
        self.start = 0.0
        self.gen_before = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()
        self.gen_before = self.register.generation_seconds

    def on_step_end(self, args, state, control, **kwargs):
        total = time.perf_counter() - self.start
        gen = self.register.generation_seconds - self.gen_before
        self.manifest.data["timings"].append(
            {
                "step": state.global_step - 1,
                "seconds": round(total, 4),
                "generation_seconds": round(gen, 4),
                "passes_seconds": round(total - gen, 4),
                "save_seconds": 0.0,
            }
        )
        self.manifest.data["steps_completed"] = state.global_step
        self.manifest.data["peak_memory"] = peak_memory(self.device)


class CheckpointInstaller(TrainerCallback):
    """Installs each checkpoint HF saved as ``checkpoints/step{N:04d}/`` (+ marker), times the save, and
    ends the job after ``stop_after`` steps (tests: a 'kill').

    HF logs (``on_log``) right before it writes a checkpoint and calls ``on_save`` right after, so the
    save time runs from the last log (or step end) to the installed checkpoint."""

    def __init__(self, manifest: Manifest, hf_dir: Path, run_dir: Path, stop_after: int | None) -> None:
        self.manifest = manifest
        self.hf_dir = hf_dir
        self.run_dir = run_dir
        self.stop_after = stop_after
        self.mark = 0.0

    def on_step_end(self, args, state, control, **kwargs):
        self.mark = time.perf_counter()

    def on_log(self, args, state, control, **kwargs):
        self.mark = time.perf_counter()

    def on_save(self, args, state, control, **kwargs):
        began = time.perf_counter()
        step = state.global_step
        ckpt.install(self.hf_dir / f"checkpoint-{step}", self.run_dir, step, kind="full")
        seconds = round(time.perf_counter() - self.mark, 4)
        data = self.manifest.data
        data["save_timings"].append(
            {"step": step, "seconds": seconds, "install_seconds": round(time.perf_counter() - began, 4)}
        )
        for entry in data["timings"]:
            if entry["step"] == step - 1:
                entry["save_seconds"] = seconds
        data["checkpoints"] = ckpt.list_steps(self.run_dir)
        self.manifest.save()
        if self.stop_after is not None and step >= self.stop_after:
            control.should_training_stop = True
        return control


class TokensPerSecond(TrainerCallback):
    """``train/tokens_per_second`` beside TRL's metrics in the run's TensorBoard file (training/event_log.py):
    the step's tokens (growth of TRL's cumulative ``num_tokens``, prompts and completions) over TRL's
    ``step_time`` (generation and passes). Runs after HF's TensorBoard callback, on the same writer."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.seen = 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        self.seen = float(state.num_input_tokens_seen)  # restored from the checkpoint on a resume

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "num_tokens" not in logs or not logs.get("step_time"):
            return  # HF's end-of-training summary carries neither
        tokens = float(logs["num_tokens"]) - self.seen
        self.seen = float(logs["num_tokens"])
        self.writer.add_scalar(
            "train/tokens_per_second", tokens / float(logs["step_time"]), state.global_step
        )
        self.writer.flush()

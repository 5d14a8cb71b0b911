"""Model factory: the real Qwen3.5-2B on GPU, a tiny randomly initialised Qwen3.5 text model on CPU.

Both are ``Qwen3_5ForCausalLM`` (hybrid Gated-DeltaNet + full attention), so the trainer, the
evaluation loop and the probe run one code path; only the settings differ.
"""

from __future__ import annotations

from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.settings import TrainingSettings

# The stand-in: every 4th layer full attention, like the real model; ~0.5 M parameters at hidden 96.
STANDIN_DEFAULTS: dict[str, Any] = {
    "hidden_size": 96,
    "intermediate_size": 256,
    "num_hidden_layers": 4,
    "full_attention_interval": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 24,
    "linear_value_head_dim": 24,
    "linear_conv_kernel_dim": 4,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
}

# Qwen3.5-2B text configuration, written from memory of the published config.json (text_config). It is
# used only by scripts/gpu_check.py to size a randomly initialised model; real runs load the checkpoint's
# own config. Uncertain values are marked; the vocabulary size and layer pattern are the important ones.
QWEN35_2B_TEXT: dict[str, Any] = {
    "vocab_size": 248320,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": 24,
    "full_attention_interval": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 16,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "max_position_embeddings": 262144,
    "tie_word_embeddings": True,
    "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
}


def standin_config(tokenizer: Any, overrides: dict[str, Any] | None = None) -> Any:
    """A tiny Qwen3.5 text config whose vocabulary and special ids match ``tokenizer``."""
    from transformers import Qwen3_5TextConfig

    values = dict(STANDIN_DEFAULTS)
    values.update(overrides or {})
    n_layers = values["num_hidden_layers"]
    interval = values.pop("full_attention_interval")
    values["layer_types"] = [
        "full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n_layers)
    ]
    return Qwen3_5TextConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **values,
    )


def build_random_model(config: Any, seed: int, dtype: str = "float32") -> Any:
    """A randomly initialised causal LM from ``config`` (no download), deterministic given ``seed``."""
    import torch
    from transformers import Qwen3_5ForCausalLM, set_seed

    set_seed(seed)
    model = Qwen3_5ForCausalLM(config)
    return model.to(getattr(torch, dtype))


def torch_dtype(name: str) -> Any:
    import torch

    if name not in {"float32", "bfloat16", "float16"}:
        raise UserError(f"settings: dtype {name!r} is not one of float32, bfloat16, float16")
    return getattr(torch, name)


def load_causal_lm(model_path: str, dtype: str, attn_implementation: str | None = None) -> Any:
    """Load the text-only causal LM of a stand-in or ``model prepare`` folder (checked by ``check_model``)."""
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": torch_dtype(dtype)}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    return AutoModelForCausalLM.from_pretrained(model_path, **kwargs)


def lora_config(training: TrainingSettings) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=training.lora_r,
        lora_alpha=training.lora_alpha,
        lora_dropout=training.lora_dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )

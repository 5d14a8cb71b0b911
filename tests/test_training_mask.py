"""Tool-result tokens are excluded from the loss: TRL's tool loop run through our environment with a
scripted 'model' (the generation call is replaced by fixed token ids), then the masks are decoded."""

from __future__ import annotations

import json

import pytest
from tiny_qwen35 import tiny_standin


@pytest.fixture(scope="module")
def trainer(tmp_path_factory, sim_tasks_dir, sim_pools):
    import datasets
    from paired_rollouts.settings import Settings
    from paired_rollouts.training.environment import EpisodeContext
    from paired_rollouts.training.rows import build_rows
    from paired_rollouts.training.trainer import build_trainer

    model, tokenizer = tiny_standin(sim_pools, 8)
    settings = Settings.from_manifest(
        {
            "steps": 1,
            "prompts_per_step": 1,
            "num_generations": 2,
            "micro_batch": 2,
            "max_completion_length": 400,
            "max_tool_calling_iterations": 3,
            "task_filter": "all",
        }
    )
    rows = build_rows(sim_pools["train"], "C0", "clean", 0, 1, 1)
    episodes = EpisodeContext.from_pools(sim_tasks_dir)
    out = tmp_path_factory.mktemp("mask")
    from peft import LoraConfig

    tr = build_trainer(
        model,
        tokenizer,
        settings,
        datasets.Dataset.from_list(rows),
        out,
        0,
        episodes,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    return tr, tokenizer, rows


def test_tool_results_masked(trainer, monkeypatch):
    tr, tokenizer, rows = trainer
    call = "<tool_call>\n<function=get_order>\n<parameter=order_id>\nO0001\n</parameter>\n</function>\n</tool_call><|im_end|>"
    done = "Done.<|im_end|>"
    turns = iter([call, done])

    def scripted(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        text = next(turns)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        return [list(ids) for _ in prompt_ids], None

    monkeypatch.setattr(tr, "_generate_single_turn", scripted)
    tr.model.train()
    output, _ = tr.roll_out([dict(rows[0]), dict(rows[0])])
    ids = output["completion_ids"][0]
    loss_mask = (output["completion_mask"][0] * output["tool_mask"][0]).bool()
    learned = tokenizer.decode(ids[loss_mask])
    ignored = tokenizer.decode(ids[~loss_mask & output["completion_mask"][0].bool()])
    assert learned == call + done
    assert "<tool_response>" in ignored and "</tool_response>" in ignored
    response = tr.environments[0]._session.call_log[0]
    assert response["tool"] == "get_order"
    assert '"order_id":"O0001"' in ignored  # the simulator's response is in the masked span
    assert "<tool_response>" not in learned
    record = tr.environments[0].last_episode
    assert record["calls"] == 1 and json.loads(record["noise"])["mode"] == "clean"

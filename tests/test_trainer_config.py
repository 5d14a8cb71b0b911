"""What shapes the update is set explicitly and recorded; the probe keeps the IS ratio; vLLM's seed
follows the run seed (issue 18, items 8-10). CPU only: vLLM's engine is replaced by a recorder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl")

import yaml  # noqa: E402
from paired_rollouts.settings import Settings, scale_block  # noqa: E402
from paired_rollouts.training import trainer as T  # noqa: E402

# The paper scale's training section (config/config.yaml) on a CUDA/vLLM stack (float32: no GPU here).
_CONFIG = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/config.yaml").read_text())
GPU_LIKE = {
    "training": scale_block(_CONFIG, "paper")["training"],
    "stack": {"device": "cuda", "backend": "vllm", "dtype": "float32"},
}


def test_update_shape_is_explicit_and_recorded(tmp_path) -> None:
    args = T.grpo_args(Settings.parse(GPU_LIKE), tmp_path, 0)
    config = T.trainer_configuration(args)
    assert set(config) == set(T.TRAINER_CONFIG_KEYS)
    json.dumps(config)  # plain JSON values
    # The original study's trainer ran with its libraries' defaults for all of these.
    assert config["lr_scheduler_type"] == "linear" and config["warmup_steps"] == 0
    assert config["max_grad_norm"] == 1.0
    assert config["epsilon"] == 0.2 and config["epsilon_high"] == 0.2
    assert config["learning_rate"] == 1e-5 and config["beta"] == 0.0 and config["num_iterations"] == 1
    assert config["vllm_importance_sampling_mode"] == "sequence_mask"
    assert config["vllm_importance_sampling_clip_max"] == 3.0  # the paper's cap


def test_training_builds_report_to_tensorboard_and_evaluation_builds_to_nothing(
    tmp_path, monkeypatch
) -> None:
    """TRL's own report_to carries the training metrics (docs/training.md#what-is-logged-for-tensorboard);
    evaluation and probe builds train nothing and log nothing; without tensorboard no run asks for it."""
    from paired_rollouts.training import event_log

    settings = Settings.parse(GPU_LIKE)
    monkeypatch.setattr(event_log, "installed", lambda: True)
    assert T.grpo_args(settings, tmp_path, 0).report_to == ["tensorboard"]
    assert T.grpo_args(settings, tmp_path, 0, evaluation=True).report_to == []
    assert T.grpo_args(settings, tmp_path, 0, evaluation=True, importance_sampling=True).report_to == []
    monkeypatch.setattr(event_log, "installed", lambda: False)
    assert T.grpo_args(settings, tmp_path, 0).report_to == []


def test_probe_builds_keep_the_importance_sampling_ratio(tmp_path) -> None:
    settings = Settings.parse(GPU_LIKE)
    assert T.grpo_args(settings, tmp_path, 0).vllm_importance_sampling_correction is True
    assert T.grpo_args(settings, tmp_path, 0, evaluation=True).vllm_importance_sampling_correction is False
    probe = T.grpo_args(settings, tmp_path, 0, evaluation=True, importance_sampling=True)
    assert probe.vllm_importance_sampling_correction is True


def test_probe_runner_asks_for_the_ratio(monkeypatch, tmp_path) -> None:
    """PolicyRunner(trainable=True), the probe's runner, builds its trainer with the IS correction."""
    from paired_rollouts.evaluation import rollout

    seen = {}

    def fake_build(*args, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop")

    monkeypatch.setattr(T, "build_trainer", fake_build)
    monkeypatch.setattr(rollout, "check_checkpoint", lambda p: p)
    monkeypatch.setattr("paired_rollouts.training.inputs.check_model", lambda d: d)
    monkeypatch.setattr("paired_rollouts.training.model.load_causal_lm", lambda *a, **k: object())
    monkeypatch.setattr("peft.PeftModel.from_pretrained", lambda base, folder, is_trainable: base)
    monkeypatch.setattr("transformers.AutoTokenizer.from_pretrained", lambda p: object())
    monkeypatch.setattr(
        "paired_rollouts.training.environment.EpisodeContext.from_pools", lambda d, **kwargs: None
    )
    for trainable in (True, False):
        with pytest.raises(RuntimeError, match="stop"):
            rollout.PolicyRunner("m", tmp_path, Settings(), "t", 0, trainable=trainable)
        assert seen["importance_sampling"] is trainable


def test_vllm_engine_seed_follows_the_run_seed(monkeypatch) -> None:
    """Constructing the trainer builds TRL's engine with the run's seed, and only while it is constructed."""
    import trl.generation.vllm_generation as vg
    from trl import GRPOTrainer

    calls = []

    def engine(**kwargs):
        calls.append(kwargs["seed"])

    def trl_init(self, *args, tp_rank=0, **kwargs):
        vg.LLM(model="m", seed=tp_rank)  # TRL passes process_index // tensor_parallel_size (0 on one GPU)

    monkeypatch.setattr(vg, "LLM", engine, raising=False)
    monkeypatch.setattr(GRPOTrainer, "__init__", trl_init)
    cls = T._trainer_class()
    for run_seed in (0, 1):
        cls(engine_seed=T.vllm_seed(run_seed))
    assert calls == [T.vllm_seed(0), T.vllm_seed(1)]
    assert calls[0] != calls[1] and all(0 < c < 2**31 for c in calls)
    cls(
        engine_seed=T.vllm_seed(1), tp_rank=1
    )  # a second process of a tensor-parallel group keeps TRL's offset
    assert calls[-1] == T.vllm_seed(1) + 1
    assert vg.LLM is engine  # restored once the trainer exists
    cls()  # no engine seed (the transformers backend): TRL's own
    vg.LLM(model="m", seed=0)
    assert calls[-1] == 0


def test_compact_fused_logprobs_give_the_same_values(monkeypatch) -> None:
    """The rehearsal's CPU speed-up (TRL's GPU path: completion positions only) changes no log-prob, and holds
    only inside the trainer's scoring call."""
    import torch
    import trl.trainer.utils as trl_utils
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig, set_seed
    from trl import GRPOTrainer

    set_seed(0)
    from tiny_qwen35 import TINY_TEXT_CONFIG

    config = Qwen3_5TextConfig(vocab_size=500, **TINY_TEXT_CONFIG)
    model = Qwen3_5ForCausalLM(config).eval()
    trl_utils.add_fused_lm_head(
        model, temperature=1.0, cast_lm_head_to_fp32=False, outputs=("log_probs", "entropy")
    )
    ids = torch.randint(0, 500, (2, 40))
    labels = ids.clone()
    labels[:, :-6] = -100
    seen = []

    def trl_scoring(self, model, input_ids, labels):
        seen.append(trl_utils._use_triton(torch.device("cpu")))
        return model(input_ids=input_ids, labels=labels, fused_lm_head=True)

    monkeypatch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies", trl_scoring)
    monkeypatch.setattr(GRPOTrainer, "__init__", lambda self, *args, **kwargs: None)
    cls = T._trainer_class()
    every = cls()._get_per_token_logps_and_entropies(model, ids, labels)
    compact = cls(compact_logprobs=True)._get_per_token_logps_and_entropies(model, ids, labels)
    assert seen == [False, True]
    assert trl_utils._use_triton(torch.device("cpu")) is False  # restored after the call
    assert torch.allclose(every.log_probs, compact.log_probs, atol=1e-6)
    assert torch.allclose(every.entropy, compact.entropy, atol=1e-5)


def test_private_trl_overrides_are_few_and_still_exist() -> None:
    """The subclass overrides only the TRL methods it documents, TRL still has them with the signatures they
    were written against (a TRL upgrade that renames one fails here, not mid-run), and the module names the
    overrides swap still exist where TRL 1.16.0 looks them up."""
    import inspect

    import trl.trainer.utils as trl_utils
    from trl import GRPOTrainer

    cls = T._trainer_class()
    own = {n for n, v in vars(cls).items() if callable(v) and n.startswith("_") and n != "__init__"}
    own = {n for n in own if not n.startswith("__")}
    assert own == {
        "_calculate_rewards",
        "_generate_and_score_completions",
        "_get_per_token_logps_and_entropies",
    }
    for name in own - {"_get_per_token_logps_and_entropies"}:  # that one passes its arguments on as given
        assert list(inspect.signature(getattr(GRPOTrainer, name)).parameters) == list(
            inspect.signature(getattr(cls, name)).parameters
        )
    scoring = list(inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies).parameters)
    assert scoring[1:6] == [
        "model",
        "input_ids",
        "attention_mask",
        "logits_to_keep",
        "batch_size",
    ]  # token_logps
    assert list(inspect.signature(cls.__init__).parameters)[-3:] == [
        "engine_seed",
        "compact_logprobs",
        "kwargs",
    ]
    # where the two scoped deviations act: TRL scores through the fused LM head in the method overridden, the
    # head asks trl.trainer.utils._use_triton, and TRL builds vLLM's engine by the module name LLM
    import trl.generation.vllm_generation as vg

    assert "fused_lm_head=True" in inspect.getsource(GRPOTrainer._get_per_token_logps_and_entropies)
    assert "compact = _use_triton(" in inspect.getsource(trl_utils.add_fused_lm_head)
    assert "self.llm = LLM(" in inspect.getsource(vg.VLLMGeneration)
    assert "TRL 1.16.0" in cls.__doc__

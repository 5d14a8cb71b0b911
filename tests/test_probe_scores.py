"""Probe score vectors on a tiny stand-in: one backward per rollout, LoRA coordinates only, weights
unchanged, and the statistics engineer's summaries fed with consistent Grams (MC identity holds)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tiny_qwen35 import tiny_standin

SETTINGS = {
    "task_filter": "all",
    "max_completion_length": 48,
    "max_tool_calling_iterations": 1,
    "probe_clean_tasks": 2,
    "probe_clean_rollouts": 3,
    "probe_diag_tasks": 2,
    "probe_schedules": 2,
    "probe_samples": 2,
    "probe_resamples": 3,
    "eval_batch": 8,
}


@pytest.fixture(scope="module")
def standin_run(tmp_path_factory, sim_pools) -> Path:
    """A tiny stand-in (``model/``) and a run folder with its step-0 checkpoint (``run/``: a folder name
    that is no run name)."""
    import peft
    from paired_rollouts.training import checkpoints as ckpt

    folder = tmp_path_factory.mktemp("probe")
    model, tokenizer = tiny_standin(sim_pools, folder=folder / "model")
    lora = peft.get_peft_model(
        model,
        peft.LoraConfig(
            r=2, lora_alpha=4, target_modules="all-linear", init_lora_weights=False, task_type="CAUSAL_LM"
        ),
    )
    tmp = folder / "run" / "checkpoints" / ".tmp"
    lora.save_pretrained(tmp)
    ckpt.install(tmp, folder / "run", 0, kind="initial")
    return folder


@pytest.fixture(scope="module")
def runner(standin_run, sim_tasks_dir):
    from paired_rollouts.evaluation.rollout import PolicyRunner
    from paired_rollouts.settings import Settings
    from paired_rollouts.training import checkpoints as ckpt

    settings = Settings.from_manifest(SETTINGS)
    r = PolicyRunner(
        str(standin_run / "model"),
        ckpt.step_dir(standin_run / "run", 0),
        settings,
        str(sim_tasks_dir),
        0,
        trainable=True,
    )
    yield r, settings, str(sim_tasks_dir)
    r.close()


def test_probe_checkpoint(runner, monkeypatch):
    from paired_rollouts.episode import EpisodeSession
    from paired_rollouts.probe.scores import ScoreEngine, probe_checkpoint

    original = EpisodeSession.finish_and_grade

    def graded(self):  # deterministic, varied successes (a random tiny model never succeeds)
        record = original(self)
        win = (self._meta["schedule_seed"] + self.episode_index) % 3 != 0
        record.update(true_success=win, observed_reward=float(win))
        return record

    monkeypatch.setattr(EpisodeSession, "finish_and_grade", graded)
    r, settings, tasks_dir = runner
    engine = ScoreEngine(r)
    before = engine.fingerprint()
    result = probe_checkpoint(
        r, run="c2-paired-s0", condition="C2", seed=0, step=0, tasks_dir=tasks_dir, settings=settings
    )
    assert engine.fingerprint() == before == result["lora_fingerprint"]
    lora = sum(p.numel() for n, p in r.trainer.model.named_parameters() if "lora_" in n)
    assert 0 < result["P"] <= lora
    assert result["counts"]["clean_rollouts"] == 6 and result["counts"]["diagnostic_rollouts"] == 8
    mc = result["outcome"]["mean_centered"]
    assert abs(mc["identity_residual"]) <= 1e-6 * max(1.0, abs(mc["trace_var"]["paired"]))
    assert result["transition"]["groups_per_design"]["paired"] == 4


def test_scores_match_autograd(runner):
    import torch
    from paired_rollouts.probe.scores import ScoreEngine
    from paired_rollouts.training.rows import build_rows

    r, _, _ = runner

    task = next(iter(r.episodes.tasks.values()))
    rows = build_rows([task], "C0", "clean", 0, 1, 1) * 2
    _, output = r.rollout(rows, "probe_clean:step0", 5)
    engine = ScoreEngine(r)
    scores, counts = engine.scores(output)
    assert scores.dtype == np.float32 and scores.shape == (2, engine.size)
    # Recompute rollout 0's score with an explicit log-softmax over the masked completion tokens.
    model = r.trainer.model
    model.zero_grad(set_to_none=True)
    keep = output["prompt_mask"][0].bool()
    n = int(output["completion_mask"][0].sum())
    ids = torch.cat([output["prompt_ids"][0][keep], output["completion_ids"][0][:n]]).unsqueeze(0)
    mask = (
        (output["completion_mask"][0] * output["tool_mask"][0])[:n].float()
        if "tool_mask" in output
        else output["completion_mask"][0][:n].float()
    )
    logits = model(input_ids=ids).logits[0, -n - 1 : -1].float()
    logp = torch.log_softmax(logits, -1).gather(1, ids[0, -n:].unsqueeze(1)).squeeze(1)
    (logp * mask).sum().backward()
    manual = torch.cat([p.grad.reshape(-1) for _, p in engine.params if p.grad is not None]).numpy()
    model.zero_grad(set_to_none=True)
    assert np.allclose(manual, scores[0], rtol=1e-3, atol=1e-5)
    assert counts[0] == float(mask.sum())


def test_probe_command_takes_the_run_and_the_design_from_its_arguments(
    standin_run, sim_tasks_dir, tmp_path, monkeypatch
):
    """``probe checkpoint`` probes the run named by --run under the design of --conditions: a condition the
    user added (C5, not the paper's) and a run folder whose name is no run name."""
    from paired_rollouts.cli import main
    from paired_rollouts.probe import scores

    probed = []
    original = scores.probe_checkpoint

    def spy(runner, **kwargs):
        probed.append({k: kwargs[k] for k in ("run", "condition", "seed", "step")})
        return original(runner, **kwargs)

    monkeypatch.setattr(scores, "probe_checkpoint", spy)
    conditions = {"C0": {"p": 0.0, "q": 0.0}, "C5": {"p": 0.15, "q": 0.0}}
    out = tmp_path / "step0.json"
    run_dir = tmp_path / "c5-paired-s3"  # the run's folder is named after it (probe checks --run-dir)
    run_dir.symlink_to(standin_run / "run", target_is_directory=True)
    argv = [
        "probe",
        "checkpoint",
        "--run",
        "c5-paired-s3",
        "--run-dir",
        str(run_dir),
        "--step",
        "0",
        "--model-dir",
        str(standin_run / "model"),
        "--tasks-dir",
        str(sim_tasks_dir),
        "--settings",
        json.dumps(SETTINGS),
        "--out",
        str(out),
    ]
    assert main(argv) == 1 and not out.exists() and not probed  # the paper's design has no C5
    assert main([*argv, "--conditions", json.dumps(conditions)]) == 0
    assert probed == [{"run": "c5-paired-s3", "condition": "C5", "seed": 3, "step": 0}]
    result = json.loads(out.read_text())
    assert (result["run"], result["step"]) == ("c5-paired-s3", 0)
    assert result["counts"]["clean_rollouts"] == 6 and result["counts"]["diagnostic_rollouts"] == 8

"""End-to-end GRPO on a tiny random Qwen3.5 stand-in (CPU): registers, checkpoints, LoRA-only updates,
seed sharing, and resume after a kill reproducing the uninterrupted registers byte for byte.

A randomly initialised model earns no reward, so the grader is patched to give alternating rewards by
slot: advantages are then non-zero and the LoRA weights must move (the register cross-checks stay on).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from records_fixtures import verification_report

SETTINGS = {
    "steps": 3,
    "prompts_per_step": 2,
    "num_generations": 2,
    "micro_batch": 4,
    "checkpoint_every": 2,
    "max_completion_length": 96,
    "max_tool_calling_iterations": 2,
    "learning_rate": 0.05,
    "task_filter": "all",
}


@pytest.fixture(scope="module")
def standin(tmp_path_factory, sim_pools):
    from paired_rollouts.settings import Settings
    from paired_rollouts.training.warmstart import build_tokenizer, save_standin, warm_start

    folder = tmp_path_factory.mktemp("standin")
    tasks = sim_pools["train"][:30]
    tokenizer = build_tokenizer(tasks, 12, 400)
    settings = Settings.from_manifest(
        {"warm_start_steps": 1, "warm_start_tasks": 4, "warm_start_batch": 2, "task_filter": "all"}
    )
    model, report = warm_start(tokenizer, tasks, settings.model, progress=False)
    save_standin(model, tokenizer, folder, report)
    verification = folder / "verification.json"
    verification.write_text(json.dumps(verification_report()))
    return folder, verification


def _alternate(monkeypatch) -> None:
    from paired_rollouts.episode import EpisodeSession

    original = EpisodeSession.finish_and_grade

    def graded(self):
        record = original(self)
        win = self._meta["slot"] % 2 == 1
        record.update(true_success=win, observed_reward=float(win))
        return record

    monkeypatch.setattr(EpisodeSession, "finish_and_grade", graded)


@pytest.fixture()
def alternating_rewards(monkeypatch):
    _alternate(monkeypatch)


def _train(run, standin, tasks_dir, out, **extra):
    from paired_rollouts.settings import Settings
    from paired_rollouts.training.grpo import run_training

    folder, verification = standin
    return run_training(
        run, str(tasks_dir), str(folder), str(verification), Settings.parse(SETTINGS), str(out), **extra
    )


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, standin, sim_tasks_dir):
    """c2-paired-s0 trained in one go (``full``) and killed after step 2 then resumed (``killed``): the
    manifests of the uninterrupted run, of the killed session and of the resumed one."""
    from paired_rollouts.io import sha256_file

    base_hash = sha256_file(standin[0] / "model.safetensors")
    root = tmp_path_factory.mktemp("trained")
    full, killed = root / "full", root / "killed"
    with pytest.MonkeyPatch.context() as monkeypatch:
        _alternate(monkeypatch)
        manifest = _train("c2-paired-s0", standin, sim_tasks_dir, full)
        partial = _train("c2-paired-s0", standin, sim_tasks_dir, killed, stop_after=2)
        # rows past the checkpoint in the working register must be dropped
        with (killed / "state" / "groups.jsonl").open("a") as handle:
            handle.write(json.dumps({"step": 2, "group": 0, "junk": True}) + "\n")
        # Snakemake deletes a failed job's declared outputs before it retries the job.
        for name in ("groups.jsonl", "train_episodes.jsonl", "manifest.json"):
            (killed / name).unlink(missing_ok=True)
        resumed = _train("c2-paired-s0", standin, sim_tasks_dir, killed)
    return {
        "full": full,
        "killed": killed,
        "manifest": manifest,
        "partial": partial,
        "resumed": resumed,
        "base_hash": base_hash,
    }


def test_train_resume_and_registers(trained, standin):
    from paired_rollouts.io import sha256_file
    from paired_rollouts.training import checkpoints as ckpt
    from safetensors.torch import load_file

    base_hash, full, manifest = trained["base_hash"], trained["full"], trained["manifest"]
    assert manifest["status"] == "complete" and manifest["steps_completed"] == 3
    assert ckpt.list_steps(full) == [0, 2, 3]
    assert all(ckpt.is_complete(ckpt.step_dir(full, s), resumable=True) for s in (2, 3))
    groups = _read(full / "groups.jsonl")
    assert [(g["step"], g["group"]) for g in groups] == [(s, g) for s in range(3) for g in range(2)]
    for g in groups:  # paired: one resolved seed per group, equal to the row's
        assert set(g["schedule_seeds"]) == {g["schedule_seed"]}
        assert g["observed_reward"] == [0.0, 1.0] and not g["zero_variance"]
        assert g["advantages"][0] < 0 < g["advantages"][1]
    assert len(_read(full / "train_episodes.jsonl")) == 12
    assert {t["step"] for t in manifest["timings"]} == {0, 1, 2}
    # The full trainer configuration that shaped the update is on record (issue 18, item 9).
    config = manifest["trainer_config"]
    assert (config["lr_scheduler_type"], config["warmup_steps"], config["max_grad_norm"]) == (
        "linear",
        0,
        1.0,
    )
    assert (config["epsilon"], config["epsilon_high"], config["loss_type"]) == (0.2, 0.2, "dapo")
    assert manifest["seeds"]["vllm_seed"] is None  # HF generate on CPU

    # LoRA moved, base weights untouched (the adapter holds only LoRA tensors).
    first = load_file(ckpt.step_dir(full, 0) / "adapter_model.safetensors")
    last = load_file(ckpt.step_dir(full, 3) / "adapter_model.safetensors")
    assert all("lora_" in k for k in last)
    assert any(not (first[k] == last[k]).all() for k in last)
    assert sha256_file(standin[0] / "model.safetensors") == base_hash

    # A job killed after step 2 (its checkpoint complete) and started again ends identical.
    killed, partial, resumed = trained["killed"], trained["partial"], trained["resumed"]
    assert partial["status"] == "stopped" and partial["steps_completed"] == 2
    assert resumed["status"] == "complete"
    assert [a["resumed_from_step"] for a in resumed["attempts"]] == [0, 2]
    assert (killed / "groups.jsonl").read_bytes() == (full / "groups.jsonl").read_bytes()
    # Episode records also carry the job attempt that produced them (1 before the kill, 2 after).
    after = _read(killed / "train_episodes.jsonl")
    assert [e.pop("attempt") for e in after] == [1] * 8 + [2] * 4
    assert after == [
        {k: v for k, v in e.items() if k != "attempt"} for e in _read(full / "train_episodes.jsonl")
    ]
    assert load_file(ckpt.step_dir(killed, 3) / "adapter_model.safetensors").keys() == last.keys()
    for key, value in load_file(ckpt.step_dir(killed, 3) / "adapter_model.safetensors").items():
        assert (value == last[key]).all()


# The scalars TRL logs every step (beta 0: no KL), and the throughput callback's.
STEP_SCALARS = (
    "reward",
    "reward_std",
    "frac_reward_zero_std",
    "clip_ratio/low_mean",
    "clip_ratio/high_mean",
    "clip_ratio/region_mean",
    "loss",
    "grad_norm",
    "entropy",
    "num_tokens",
    "step_time",
    "tokens_per_second",
)


def scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of a run's TensorBoard folder, read back by TensorBoard's own reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_training_metrics_are_tensorboard_event_files(trained):
    """TRL's report_to writes each run's metrics under tensorboard/, one file per session (the killed
    session's file kept); each scalar once per step and finite; reward, its spread and the zero-variance
    fraction are the group register's; tokens per second is TRL's token count growth over its step time."""
    import math

    import numpy as np
    from paired_rollouts.stats.groups import group_statistics
    from paired_rollouts.training import event_log

    if not event_log.installed():
        assert not (trained["full"] / "tensorboard").exists()  # trained all the same, and said so
        pytest.skip("tensorboard is not installed (pip install -e .[train])")
    for name, sessions in (("full", 1), ("killed", 2)):
        folder = trained[name] / "tensorboard"
        assert len(list(folder.glob("events.out.tfevents.*"))) == sessions, name
        logged = scalars(folder)
        for short in STEP_SCALARS:
            series = logged[f"train/{short}"]
            assert [step for step, _ in series] == [1, 2, 3], (name, short)
            assert all(math.isfinite(value) for _, value in series), (name, short)
        groups = _read(trained[name] / "groups.jsonl")
        by_step = {row["step"]: row for row in group_statistics(groups)["by_step"]}
        for step, value in logged["train/reward"]:
            rewards = [r for g in groups if g["step"] == step - 1 for r in g["observed_reward"]]
            assert value == pytest.approx(np.mean(rewards), abs=1e-6)
            assert dict(logged["train/reward_std"])[step] == pytest.approx(np.std(rewards, ddof=1), abs=1e-6)
            row = by_step[step - 1]
            frac = row["zero_variance_groups"] / row["groups"]
            assert dict(logged["train/frac_reward_zero_std"])[step] == pytest.approx(frac, abs=1e-6)
        tokens = [0.0] + [value for _, value in logged["train/num_tokens"]]
        throughput = zip(logged["train/tokens_per_second"], logged["train/step_time"], strict=True)
        for (step, value), (_, seconds) in throughput:
            assert value == pytest.approx((tokens[step] - tokens[step - 1]) / seconds, rel=1e-4)
            assert value > 0


def test_independent_groups_never_share(tmp_path, standin, sim_tasks_dir, alternating_rewards):
    from paired_rollouts.training import checkpoints as ckpt

    out = tmp_path / "indep"
    _train("c2-independent-s0", standin, sim_tasks_dir, out, stop_after=2)
    groups = _read(out / "groups.jsonl")
    assert groups and all(len(set(g["schedule_seeds"])) == len(g["schedule_seeds"]) for g in groups)
    # An incomplete checkpoint (marker missing) is never resumed from.
    (ckpt.step_dir(out, 2) / ckpt.MARKER).unlink()
    assert ckpt.last_complete(out) == 0


def test_checkpoints_of_other_settings_are_set_aside(tmp_path):
    """A run folder holding checkpoints made with other settings (another scale, say) is never resumed
    from: they are moved aside and the run starts afresh."""
    from paired_rollouts.training.grpo import _set_aside_if_stale

    run_dir = tmp_path / "c2-paired-s0"
    (run_dir / "checkpoints" / "step0002").mkdir(parents=True)
    state = run_dir / "state"
    state.mkdir()
    (state / "identity.json").write_text(json.dumps({"run": "c2-paired-s0", "settings": {"lora_r": 8}}))
    (run_dir / "tensorboard").mkdir()
    (run_dir / "tensorboard" / "events.out.tfevents.1.host.1.0").write_bytes(b"")
    _set_aside_if_stale(run_dir, state, {"run": "c2-paired-s0", "settings": {"lora_r": 32}})
    stale = [p for p in run_dir.iterdir() if p.name.startswith("stale-")]
    assert len(stale) == 1 and (stale[0] / "checkpoints" / "step0002").is_dir()
    # the other settings' training metrics go with them (TensorBoard would draw both runs as one)
    assert (stale[0] / "tensorboard" / "events.out.tfevents.1.host.1.0").is_file()
    assert not (run_dir / "tensorboard").exists()
    assert not (run_dir / "checkpoints").exists()
    assert json.loads((state / "identity.json").read_text())["settings"] == {"lora_r": 32}
    # Same settings again: nothing moves.
    (run_dir / "checkpoints" / "step0004").mkdir(parents=True)
    _set_aside_if_stale(run_dir, state, {"run": "c2-paired-s0", "settings": {"lora_r": 32}})
    assert (run_dir / "checkpoints" / "step0004").is_dir()


_SAVE_ADAPTER = """
import sys
from pathlib import Path
import torch
from peft import LoraConfig, get_peft_model
from paired_rollouts.training import checkpoints as ckpt

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
            setattr(self, name, torch.nn.Linear(4, 4))

torch.manual_seed(0)
model = get_peft_model(Block(), LoraConfig(r=2, target_modules=["q_proj", "k_proj", "v_proj", "o_proj",
                                                                  "gate_proj", "up_proj", "down_proj"]))
out = Path(sys.argv[1])
model.save_pretrained(str(out / "tmp"))
target = ckpt.install(out / "tmp", out / "run", 0, kind="initial")
print((target / "adapter_config.json").read_text())
"""


def test_checkpoint_adapter_config_is_the_same_under_every_hash_seed(tmp_path):
    """PEFT saves LoRA's target modules as a list in set order, which follows PYTHONHASHSEED (Snakemake
    jobs each get a random one): an installed checkpoint lists them sorted, so identical runs write
    identical checkpoint folders and COMPLETE markers."""
    import os
    import subprocess
    import sys

    from paired_rollouts.training import checkpoints as ckpt

    texts = set()
    for seed in range(3):
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        out = tmp_path / f"seed{seed}"
        done = subprocess.run(
            [sys.executable, "-c", _SAVE_ADAPTER, str(out)], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        texts.add(done.stdout)
        marker = json.loads((out / "run" / "checkpoints" / "step0000" / ckpt.MARKER).read_text())
        assert "adapter_config.json" in marker["files"]
    assert len(texts) == 1
    modules = json.loads(texts.pop())["target_modules"]
    assert modules == sorted(modules) and len(modules) == 7

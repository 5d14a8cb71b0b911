"""Replay determinism (docs/records.md section 9): a checkpoint's first final-set episodes rolled twice with
every seed fixed repeat token for token on HF/CPU, another sampling seed does not, and the register's
reader recomputes every divergence and the summary (tiny random stand-in, CPU)."""

from __future__ import annotations

import json

import pytest
from paired_rollouts.errors import UserError
from tiny_qwen35 import tiny_standin

RUN = "c2-paired-s0"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, sim_tasks_dir, sim_pools):
    """A tiny stand-in checkpoint, its final clean set (evaluate) and its replay register (replay-check)."""
    import peft
    from paired_rollouts.cli import main
    from paired_rollouts.settings import Settings
    from paired_rollouts.training import checkpoints as ckpt
    from paired_rollouts.training.model import lora_config

    tmp = tmp_path_factory.mktemp("replay")
    model, _ = tiny_standin(sim_pools, folder=tmp / "model")
    flat = {
        "task_filter": "all",
        "final_tasks": 2,
        "eval_batch": 4,
        "max_completion_length": 40,
        "max_tool_calling_iterations": 2,
        "lora_r": 2,
        "lora_alpha": 4,
    }
    settings = Settings.from_manifest(flat)
    peft.get_peft_model(model, lora_config(settings.training)).save_pretrained(tmp / "ck")
    ckpt.install(tmp / "ck", tmp / "run", 0, kind="initial")
    common = [
        "--run",
        RUN,
        "--step",
        "0",
        "--tasks-dir",
        str(sim_tasks_dir),
        "--checkpoint",
        str(ckpt.step_dir(tmp / "run", 0)),
        "--model-dir",
        str(tmp / "model"),
        "--settings",
        json.dumps(flat),
    ]
    evaluation = tmp / "final-step0-clean.jsonl"
    assert main(["evaluate", *common, "--phase", "final", "--regime", "clean", "--out", str(evaluation)]) == 0
    out = tmp / "replay" / RUN / "step0.json"
    assert (
        main(["replay-check", *common, "--evaluation", str(evaluation), "--episodes", "3", "--out", str(out)])
        == 0
    )
    return {"out": out, "settings": settings, "tmp": tmp, "common": common, "evaluation": evaluation}


def test_hf_on_cpu_replays_every_episode_exactly(replayed):
    from paired_rollouts.records import read_replay

    register = read_replay(replayed["out"])
    assert (register.backend, register.device) == ("hf", "cpu")
    assert register.summary.episodes == 3 and len(register.episodes) == 3
    # the whole batch holding them was rolled, with the evaluation's seed for that batch
    assert [(b["start"], b["rows"]) for b in register.batches] == [(0, 4)]
    for episode in register.episodes:
        assert episode.turns[0], "an episode with no model turn: nothing was compared"
        assert episode.first_divergence is None, (
            f"episode {episode.index} diverged at {episode.first_divergence}"
        )
    assert register.summary.exact == 3 and register.summary.outcome_changed == 0
    assert (
        register.summary.matches_evaluation == 3
    )  # the first roll is the evaluation's record, byte for byte
    assert register.summary.first_divergence is None
    assert str(replayed["evaluation"]) in register.files


def test_another_sampling_seed_diverges(replayed, sim_tasks_dir):
    """The check can fail: the same rows under another batch sampling seed give other tokens."""
    from paired_rollouts.evaluation.evaluate import evaluation_rows
    from paired_rollouts.evaluation.replay import model_turns
    from paired_rollouts.evaluation.rollout import PolicyRunner
    from paired_rollouts.records import read_replay
    from paired_rollouts.records.replay import first_divergence

    settings, tmp = replayed["settings"], replayed["tmp"]
    register = read_replay(replayed["out"])
    rows = evaluation_rows(str(sim_tasks_dir), "final", "clean", "C2", settings)[:4]
    runner = PolicyRunner(
        str(tmp / "model"), str(tmp / "run" / "checkpoints" / "step0000"), settings, str(sim_tasks_dir), 0
    )
    try:
        runner.restart_episodes()
        _, output = runner.rollout(rows, "final:step0", register.batches[0]["sampling_seed"] + 1)
    finally:
        runner.close()
    other = [model_turns(output, i) for i in range(3)]
    diverged = [
        first_divergence(e.turns[0], turns) for e, turns in zip(register.episodes, other, strict=True)
    ]
    assert any(d is not None for d in diverged)


def test_divergence_finder():
    from paired_rollouts.records.replay import earliest, first_divergence

    base = [[1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14]]
    changed = [list(t) for t in base]
    changed[2][5] = 99
    assert first_divergence(base, changed) == {"turn": 2, "token": 5}
    assert first_divergence(base, base) is None
    assert first_divergence(base, [base[0], base[1][:2]]) == {"turn": 1, "token": 2}  # a shorter turn
    assert first_divergence(base, base[:2]) == {"turn": 2, "token": 0}  # a missing turn
    assert earliest([None, {"turn": 2, "token": 5}, {"turn": 1, "token": 9}]) == {"turn": 1, "token": 9}
    assert earliest([None, None]) is None


def test_model_turns_cut_at_tool_results():
    import torch
    from paired_rollouts.evaluation.replay import model_turns

    output = {
        "completion_ids": torch.tensor([[5, 6, 7, 8, 9, 10, 0, 0]]),
        "completion_mask": torch.tensor([[1, 1, 1, 1, 1, 1, 0, 0]]),
        "tool_mask": torch.tensor([[1, 1, 0, 0, 1, 1, 1, 1]]),
    }
    assert model_turns(output, 0) == [[5, 6], [9, 10]]


def test_a_tampered_register_is_refused(replayed, tmp_path):
    from paired_rollouts.records import read_replay

    data = json.loads(replayed["out"].read_text())
    data["episodes"][1]["turns"][1][0][2] += 1  # a token of the second roll
    bad = tmp_path / "token.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"token\.json: episodes\[1\]: first_divergence is None, .* give"):
        read_replay(bad)

    data = json.loads(replayed["out"].read_text())
    data["summary"]["exact"] -= 1
    bad = tmp_path / "summary.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"summary\.json: summary\.exact is 2, its episodes give 3") as caught:
        read_replay(bad)
    assert "\n" not in str(caught.value)

    data = json.loads(replayed["out"].read_text())
    data["episodes"][0]["evaluation_sha256"] = "0" * 64
    bad = tmp_path / "evaluation.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(UserError, match="matches_evaluation is True, its token ids and hashes give False"):
        read_replay(bad)


def test_bad_input_is_one_line(replayed, tmp_path, capsys):
    from paired_rollouts.cli import main

    common, evaluation = replayed["common"], replayed["evaluation"]
    out = tmp_path / "r.json"
    short = tmp_path / "short.jsonl"
    short.write_text(evaluation.read_text().splitlines(keepends=True)[0])
    for given, episodes, message in (
        (evaluation, "9", "the final clean set has 8 episodes; give --episodes <= 8"),
        (short, "3", "short.jsonl: 1 episode records, the replay needs 3; rerun evaluate"),
    ):
        capsys.readouterr()
        assert (
            main(
                [
                    "replay-check",
                    *common,
                    "--evaluation",
                    str(given),
                    "--episodes",
                    episodes,
                    "--out",
                    str(out),
                ]
            )
            == 1
        )
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Loading weights" not in err
    assert not out.exists()


def test_table_18_shows_the_registers(tmp_path):
    """Table 18 shows each register's summary as written, runs in the study's order."""
    from paired_rollouts.render import tables
    from records_fixtures import replay_registers
    from test_render import rows_of

    paths = replay_registers(tmp_path, ["c2-independent-s0", "c2-paired-s0"])
    rows = rows_of(tables.render_table(18, {"replay": paths}, "stand-in"))
    assert [r[0] for r in rows] == [r"\texttt{c2-paired-s0}", r"\texttt{c2-independent-s0}"]
    assert rows[0][3:] == ["3", "3", "0", "none", "3"]
    assert rows[1][3:] == ["3", "2", "1", "turn 1, token 2", "3"]


def test_the_ledger_counts_replay_jobs_as_gpu_time(tmp_path):
    from paired_rollouts.compare.ledger import build_ledger
    from paired_rollouts.compare.published import load_published
    from test_compare import PAPER, _bench

    files = [
        _bench(tmp_path / "benchmarks" / "replay" / "c2-paired-s0" / "step100.tsv", 1800.0, 900.0, 1700.0)
    ]
    gpu = build_ledger(files, tmp_path, "h100", load_published(PAPER).budget, runs=1)
    assert gpu["stages"]["replay"]["gpu_hours"] == 0.5 and gpu["runs"]["c2-paired-s0"]["jobs"] == 1


def test_where_the_registers_lie_and_how_many_episodes():
    """One register per tier-1 run at its final step; K is 8 at the LLM scales, 4 at the tiny test scale."""
    from paired_rollouts.layout import Layout
    from test_layout import _config

    paper, tiny = (Layout.from_config(_config(), scale, "cpu") for scale in ("paper", "tiny"))
    assert paper.replay_files()[0] == "results/replay/c2-paired-s0/step100.json"
    assert len(paper.replay_files()) == len(paper.runs("study")) == 14
    assert (
        paper.replay_evaluation("c2-paired-s0", 100) == "results/evals/c2-paired-s0/final-step100-clean.jsonl"
    )
    assert (paper.replay_episodes(), tiny.replay_episodes()) == (8, 4)
    assert len(tiny.replay_files()) == 5

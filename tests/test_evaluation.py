"""Evaluation sets, schedules and the episode record (docs/CONTRACT.md#episode-record) (tiny random stand-in, CPU)."""

from __future__ import annotations

import json

import pytest
from paired_rollouts.errors import UserError
from tiny_qwen35 import tiny_standin

CONTRACT_KEYS = {
    "run",
    "condition",
    "arm",
    "seed",
    "phase",
    "step",
    "regime",
    "task_id",
    "schedule_index",
    "schedule_seed",
    "true_success",
    "observed_reward",
    "flipped",
    "exposed",
    "calls",
    "budget",
    "finished",
    "faults",
}


def _settings(**extra):
    from paired_rollouts.settings import Settings

    return Settings.from_manifest(
        {
            "task_filter": "all",
            "eval_tasks": 3,
            "final_tasks": 2,
            "diag_tasks": 2,
            "diag_schedules": 2,
            "diag_samples": 3,
            "max_completion_length": 48,
            "max_tool_calling_iterations": 1,
            **extra,
        }
    )


def test_sets_and_schedules(sim_tasks_dir):
    from paired_rollouts.evaluation.evaluate import diagnostic_rows, evaluation_rows, final_regimes
    from paired_rollouts.noise.seeds import diagnostic_seed, eval_schedule_seed

    s = _settings()
    clean = evaluation_rows(str(sim_tasks_dir), "periodic", "clean", "C2", s)
    assert [(r["task_id"], r["schedule_index"]) for r in clean][:2] == [
        (clean[0]["task_id"], 1),
        (clean[0]["task_id"], 2),
    ]
    assert len(clean) == 6 and all(
        r["schedule_seed"] == eval_schedule_seed(r["task_id"], r["schedule_index"]) for r in clean
    )
    assert len(evaluation_rows(str(sim_tasks_dir), "periodic", "challenge", "C2", s)) == 3
    final = evaluation_rows(str(sim_tasks_dir), "final", "noisy_p010", "C4", s)
    assert len(final) == 8 and final[0]["task_id"].startswith("test")
    # at_training: C2 transition, C4 flips, C0 evaluated under C2 defaults; always paired
    for cond, key, value in (("C2", "p", 0.25), ("C4", "q", 0.1), ("C0", "p", 0.25)):
        noise = json.loads(
            evaluation_rows(str(sim_tasks_dir), "periodic", "at_training", cond, s)[0]["noise"]
        )
        assert noise[key] == value and noise["mode"] == "paired"
    assert "at_training" in final_regimes("C4") and "at_training" not in final_regimes("C2")
    diag = diagnostic_rows(str(sim_tasks_dir), "C2", 1, s)
    assert len(diag) == 12
    assert diag[0]["schedule_seed"] == diagnostic_seed(1, diag[0]["task_id"], 0) == diag[2]["schedule_seed"]
    with pytest.raises(UserError, match="not a periodic set"):
        evaluation_rows(str(sim_tasks_dir), "periodic", "noisy_p010", "C2", s)


def test_diagnostic_pool_choice(sim_tasks_dir, sim_pools):
    """The paper's diagnostic pool is taken as it is; another pool goes through the run's task selection."""
    from paired_rollouts.backoffice.tasks import select_tasks
    from paired_rollouts.evaluation.evaluate import diagnostic_rows, diagnostic_tasks

    paper = _settings(diag_pool="diagnostic", task_filter="simple_id")
    assert [t["task_id"] for t in diagnostic_tasks(str(sim_tasks_dir), paper, 3)] == [
        t["task_id"] for t in sim_pools["diagnostic"][:3]
    ]
    standin = _settings(diag_pool="validation", task_filter="simple_id")
    wanted = [t["task_id"] for t in select_tasks(sim_pools["validation"], "simple_id")[:2]]
    rows = diagnostic_rows(str(sim_tasks_dir), "C2", 0, standin)
    assert sorted({r["task_id"] for r in rows}) == sorted(wanted)
    with pytest.raises(UserError, match="the settings need 999"):
        diagnostic_tasks(str(sim_tasks_dir), standin, 999)


def test_the_luck_share_diagnostic_runs_at_the_configs_p(sim_tasks_dir):
    """The diagnostic's tool-fault rate is config/config.yaml's diagnostics.p: editing it there moves every
    diagnostic row's noise (each run keeps its own fault mixture) and no evaluation set's."""
    from pathlib import Path

    import yaml
    from paired_rollouts.design import PAPER_CONDITIONS
    from paired_rollouts.evaluation.evaluate import diagnostic_rows, evaluation_rows
    from paired_rollouts.settings import Settings, stage_settings

    repo = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((repo / "config/config.yaml").read_text())
    config["scales"].update(yaml.safe_load((repo / ".test/config/config.yaml").read_text())["scales"])

    def noises(condition: str) -> tuple[list[dict], dict]:
        settings = Settings.parse(stage_settings(config, "tiny", "cpu", "evaluation", "diagnostics"))
        diag = diagnostic_rows(str(sim_tasks_dir), PAPER_CONDITIONS[condition], 0, settings)
        at_training = evaluation_rows(str(sim_tasks_dir), "periodic", "at_training", condition, settings)
        return [json.loads(r["noise"]) for r in diag], json.loads(at_training[0]["noise"])

    assert config["study"]["diagnostics"]["p"] == 0.25  # the paper's
    (paper, *_), c2_at_training = noises("C2")
    config["study"]["diagnostics"]["p"] = 0.4
    for condition in ("C2", "C2r", "C4"):
        diag, at_training = noises(condition)
        want = PAPER_CONDITIONS[condition].diagnostic_noise(0.4).to_json()
        assert {json.dumps(n, sort_keys=True) for n in diag} == {json.dumps(json.loads(want), sort_keys=True)}
        assert diag[0]["p"] == 0.4 and diag[0]["mode"] == "paired"
    assert paper["p"] == 0.25 and noises("C2")[1] == c2_at_training  # the evaluation sets do not move
    c2r = json.loads(PAPER_CONDITIONS["C2r"].diagnostic_noise(0.4).to_json())
    assert c2r != json.loads(PAPER_CONDITIONS["C2"].diagnostic_noise(0.4).to_json())  # its own mixture


def test_completeness_expects_the_tasks_the_diagnostic_rolls_out(sim_tasks_dir):
    """The completeness check and the rollout stages select the same tasks (one shared definition)."""
    from paired_rollouts.evaluation.evaluate import diagnostic_tasks
    from paired_rollouts.stats.completeness import pool_task_ids

    for pool, task_filter in (("diagnostic", "simple_id"), ("validation", "simple_id"), ("test", "all")):
        settings = _settings(diag_pool=pool, task_filter=task_filter)
        rolled = [t["task_id"] for t in diagnostic_tasks(str(sim_tasks_dir), settings, 3)]
        assert pool_task_ids(sim_tasks_dir, pool, 3, task_filter) == rolled
    with pytest.raises(UserError, match="the settings need 400"):
        pool_task_ids(sim_tasks_dir, "validation", 400, "all")


def test_rollout_records(tmp_path, sim_tasks_dir, sim_pools):
    from paired_rollouts.evaluation.evaluate import evaluation_rows, roll_rows
    from paired_rollouts.evaluation.rollout import PolicyRunner
    from paired_rollouts.training import checkpoints as ckpt
    from paired_rollouts.training.model import lora_config

    model, tokenizer = tiny_standin(sim_pools, folder=tmp_path / "model")
    import peft

    s = _settings(lora_r=2, lora_alpha=4)
    peft.get_peft_model(model, lora_config(s.training)).save_pretrained(tmp_path / "ck")
    ckpt.install(tmp_path / "ck", tmp_path / "run", 0, kind="initial")
    runner = PolicyRunner(
        str(tmp_path / "model"), ckpt.step_dir(tmp_path / "run", 0), s, str(sim_tasks_dir), 1
    )
    rows = evaluation_rows(str(sim_tasks_dir), "periodic", "at_training", "C4", s)
    kwargs = dict(
        run="c4-independent-s1",
        condition="C4",
        arm="independent",
        seed=1,
        phase="periodic",
        step=0,
        regime="at_training",
        batch=4,
        progress=False,
    )
    first = roll_rows(runner, rows, **kwargs)
    again = roll_rows(runner, rows, **kwargs)
    runner.close()

    def strip(recs):  # the environments' running episode counters grow across calls in one process
        return [{k: v for k, v in r.items() if k not in ("episode_index", "draw_index")} for r in recs]

    assert strip(first) == strip(again)  # deterministic sampling on CPU
    assert len(first) == 6
    for rec, row in zip(first, rows, strict=True):
        assert set(rec) >= CONTRACT_KEYS
        assert rec["task_id"] == row["task_id"] and rec["schedule_seed"] == row["schedule_seed"]
        assert rec["resolved_seed"] == row["schedule_seed"]  # evaluation schedules are paired
        assert (rec["phase"], rec["regime"], rec["condition"], rec["arm"]) == (
            "periodic",
            "at_training",
            "C4",
            "independent",
        )


def test_one_engine_for_all_regimes_writes_the_bytes_of_one_process_per_regime(
    tmp_path, sim_tasks_dir, sim_pools
):
    """Evaluation is one job per (run, checkpoint): its regimes share one process and one engine, and each
    regime's file is byte-identical to what a process of its own writes (issue 18, item 4)."""
    import peft
    from paired_rollouts.cli import main
    from paired_rollouts.training import checkpoints as ckpt
    from paired_rollouts.training.model import lora_config

    model, tokenizer = tiny_standin(sim_pools, folder=tmp_path / "model")
    s = _settings(lora_r=2, lora_alpha=4, eval_tasks=2, eval_batch=4)
    peft.get_peft_model(model, lora_config(s.training)).save_pretrained(tmp_path / "ck")
    ckpt.install(tmp_path / "ck", tmp_path / "run", 0, kind="initial")
    flat = s.manifest_dict()
    settings = json.dumps(
        {
            k: flat[k]
            for k in (
                "task_filter",
                "eval_tasks",
                "eval_batch",
                "max_completion_length",
                "max_tool_calling_iterations",
            )
        }
    )

    def evaluate(regimes: list[str], out: list[str]) -> None:
        assert (
            main(
                [
                    "evaluate",
                    "--run",
                    "c2-paired-s0",
                    "--step",
                    "0",
                    "--phase",
                    "periodic",
                    "--regime",
                    *regimes,
                    "--tasks-dir",
                    str(sim_tasks_dir),
                    "--checkpoint",
                    str(ckpt.step_dir(tmp_path / "run", 0)),
                    "--model-dir",
                    str(tmp_path / "model"),
                    "--settings",
                    settings,
                    "--out",
                    *out,
                ]
            )
            == 0
        )

    regimes = ["clean", "at_training", "challenge"]
    evaluate(regimes, [str(tmp_path / "one" / f"periodic-step0-{regime}.jsonl") for regime in regimes])
    for regime in regimes:
        evaluate([regime], [str(tmp_path / "own" / f"periodic-step0-{regime}.jsonl")])
    for regime in ("clean", "at_training", "challenge"):
        name = f"periodic-step0-{regime}.jsonl"
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "own" / name).read_bytes(), regime

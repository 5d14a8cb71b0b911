"""The compiled lean episode (surrogate/_lean_episode.c through surrogate/lean.py) against the Python one
(surrogate/menu.py ``play`` then ``EpisodeSession.finish_outcome``): the same decisions, the same outcome
record and the same number of draws from the rollout's generator, episode by episode, on the pools'
tasks under every regime the study runs and two stress settings, with policies that reach every menu,
small budgets, and trajectory trees (forced choices)."""

from __future__ import annotations

import copy
import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paired_rollouts.backoffice.pools import load_pool
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.seeds import independent_seed
from paired_rollouts.surrogate import lean, menu
from paired_rollouts.surrogate.policy import CHECK, MISTAKES, PAGE, PARAMETERS, RETRY, WAIT, P, Shape, score
from paired_rollouts.surrogate.rollout import SurrogateRunner, Trajectories
from simulator_golden_cases import conditions


def test_the_compiled_episode_is_built() -> None:
    """scripts/setup.sh builds it (gcc and the Python headers are installed with the other packages), and
    its fates and menus agree with Python's on this machine; ``PAIRED_ROLLOUTS_PURE_FATES=1`` switches it
    off in a fresh process."""
    import subprocess
    import sys

    assert lean.LEAN_EPISODE.startswith("compiled") and lean._FATES and lean._TABLE_OF
    probe = "from paired_rollouts.surrogate import lean; print(lean.LEAN_EPISODE)"
    pure = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PAIRED_ROLLOUTS_PURE_FATES": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert pure.stdout.startswith("Python")


def _policy(kind: str, seed: int) -> np.ndarray:
    """Action parameters: ``competent`` recovers from faults and rarely errs (most episodes succeed,
    every recovery menu is reached), ``careless`` is wide (mistakes, early finishes), ``uniform`` is 0."""
    noise = np.random.default_rng(seed).normal(0.0, 1.0, P)
    if kind == "uniform":
        return np.zeros(P)
    if kind == "careless":
        return 2.0 * noise
    base = [
        -3.0 if a in MISTAKES else 1.5 if a in (RETRY, WAIT, PAGE, CHECK) else -1.0 for _, a in PARAMETERS
    ]
    return np.array(base) + 0.7 * noise


def _tasks(pool: str, n: int) -> list[dict[str, Any]]:
    return load_pool(f"data/tasks/{pool}.jsonl")[:n]


def _runner(
    theta: np.ndarray, tasks: list[dict[str, Any]], tree: bool, lean_records: bool
) -> SurrogateRunner:
    return SurrogateRunner(
        theta.tolist(),
        {t["task_id"]: t for t in tasks},
        Shape(difficulty=0.8),
        Trajectories() if tree else None,
        lean=lean_records,
    )


def _play_both(
    monkeypatch: pytest.MonkeyPatch, theta, tasks, rows, tree: bool, lean_records: bool = True
) -> int:
    """Play ``rows`` with both implementations (outcome records, or full records with ``lean_records``
    False); assert each episode agrees; return the episodes played."""
    compiled_runner = _runner(theta, tasks, tree, lean_records)
    python_runner = _runner(theta, tasks, tree, lean_records)
    real = lean.compiled_task
    scored = 0
    for j, (row, resolved) in enumerate(rows):
        rng_c, rng_p = random.Random(j), random.Random(j)
        monkeypatch.setattr(lean, "compiled_task", real)
        got = compiled_runner.play_row(row, rng_c, phase="train", resolved_seed=resolved, slot=j)
        monkeypatch.setattr(lean, "compiled_task", lambda task: None)
        want = python_runner.play_row(row, rng_p, phase="train", resolved_seed=resolved, slot=j)
        assert got == want, (row, resolved)
        assert rng_c.getstate() == rng_p.getstate(), "the two took a different number of draws"
        assert python_runner.played_score is None
        played = compiled_runner.played_score
        if played is not None:  # None where a trajectory tree already knew the episode
            exact = score(compiled_runner.theta, want[1], compiled_runner.policy_for(row["task_id"]))
            assert played.tobytes() == exact.tobytes(), "the compiled score differs from policy.score"
            scored += 1
    monkeypatch.setattr(lean, "compiled_task", real)
    assert scored >= len(rows) // 3
    return len(rows)


def _rows(tasks, noise: NoiseConfig, seeds: range, budget: int | None, independent: bool):
    text = noise.to_json()
    rows = []
    for task in tasks:
        for seed in seeds:
            row = {"task_id": task["task_id"], "schedule_seed": seed, "noise": text, "condition": "C2"}
            if budget is not None:
                row["budget"] = budget
            resolved = (
                independent_seed(seed, len(rows), 3, "train") if independent and not noise.is_clean else None
            )
            rows.append((row, resolved))
    return rows


@pytest.mark.parametrize("lean_records", [True, False], ids=["outcome", "full"])
@pytest.mark.parametrize("regime", sorted(conditions()))
def test_every_regime_agrees(monkeypatch: pytest.MonkeyPatch, regime: str, lean_records: bool) -> None:
    """Every regime of the simulator's golden cases, validation tasks, three policies, paired schedules
    and independent; outcome records and full records (tool sequence, failed calls, faults, diffs)."""
    noise = conditions()[regime]
    tasks = _tasks("validation", 40)
    played = 0
    for k, kind in enumerate(("competent", "careless", "uniform")):
        theta = _policy(kind, k)
        rows = _rows(tasks, noise, range(1, 4), None, False) + _rows(tasks, noise, range(4, 6), None, True)
        played += _play_both(monkeypatch, theta, tasks, rows, False, lean_records)
    assert played == 40 * 3 * 5


def test_small_budgets_and_trees_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Budgets that run out mid-episode, and trajectory trees: rollouts of a shared schedule walk the
    tree, and the compiled episode plays on from forced choices."""
    tasks = _tasks("train", 30)
    noise = NoiseConfig.transition(0.4)
    theta = _policy("competent", 7)
    rows = _rows(tasks, noise, range(1, 3), 4, False) + _rows(tasks, noise, range(1, 3), None, False) * 4
    assert _play_both(monkeypatch, theta, tasks, rows, True) == len(rows)
    assert _play_both(monkeypatch, theta, tasks, rows, True, lean_records=False) == len(rows)


def test_compiles_the_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every task of the four pools compiles (none falls back to Python), and a task with an argument
    of another type than the pools' is left to Python."""
    for pool in ("train", "validation", "test", "diagnostic"):
        tasks = load_pool(f"data/tasks/{pool}.jsonl")
        assert all(lean.compiled_task(task) is not None for task in tasks), pool
    odd = dict(_tasks("validation", 1)[0])
    odd["oracle_plan"] = [dict(step, args={**step["args"], "order_id": 7}) for step in odd["oracle_plan"]]
    assert lean.compiled_task(odd) is None


def test_truncated_pages_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pools' lookups search a customer's full name (one hit), so no page is ever truncated there:
    with a search for "a" (most customers) truncations, pages and retries of the first page are
    reached, and both implementations still agree."""

    def broad_lookups(task: dict[str, Any], world: Any) -> list[dict[str, Any]]:
        calls = real_lookups(task, world)
        return [{"tool": "search_customers", "args": {"query": "a"}}, *calls[1:]]

    real_lookups = menu.lookup_calls
    monkeypatch.setattr(menu, "lookup_calls", broad_lookups)
    monkeypatch.setattr(lean, "lookup_calls", broad_lookups)
    tasks = [dict(task) for task in _tasks("test", 25)]  # new objects: compiled afresh
    noise = NoiseConfig(p=0.5, q=0.0, weights={"truncate": 3.0, "transient": 1.0, "stale": 1.0})
    rows = _rows(tasks, noise, range(1, 5), None, True)
    assert _play_both(monkeypatch, _policy("competent", 3), tasks, rows, False) == len(rows)
    assert _play_both(monkeypatch, _policy("competent", 3), tasks, rows, False, lean_records=False) == len(
        rows
    )
    pages = []
    runner = _runner(_policy("competent", 3), tasks, False, True)
    for j, (row, resolved) in enumerate(rows):
        _, decisions = runner.play_row(row, random.Random(j), phase="train", resolved_seed=resolved)
        pages += [ctx for ctx, _, _ in decisions if ctx == "truncated"]
    assert len(pages) >= 10


def test_full_records_replay_each_course_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full record replays only what executed (writes, waits, the finish) on a fresh world, and each
    such course once per task: the records served from the memo are the Python path's, no read is
    replayed, and with no memo every record is replayed and the same again."""
    noise = conditions()["all_types_p0.50_q0.30"]
    replays: list[tuple[dict[str, Any], tuple]] = []
    real_replay = lean._replay
    monkeypatch.setattr(
        lean, "_replay", lambda *args: replays.append((args[1], args[3])) or real_replay(*args)
    )
    for kept in (lean.REPLAYS_PER_TASK, 0):
        monkeypatch.setattr(lean, "REPLAYS_PER_TASK", kept)
        replays.clear()
        tasks = [dict(task) for task in _tasks("validation", 20)]  # new objects: compiled afresh
        rows = _rows(tasks, noise, range(1, 4), None, False) + _rows(tasks, noise, range(4, 8), None, True)
        played = _play_both(monkeypatch, _policy("competent", 11), tasks, rows, False, lean_records=False)
        keys = [(task["task_id"], course) for task, course in replays]
        if kept:
            assert len(set(keys)) == len(keys), "a course was replayed twice"
            served = played - len(keys)
            assert served >= played // 5, f"the memo served {served} of {played} records"
        else:
            assert len(keys) == played
        for task, course in replays:
            calls = lean.compiled_task(task).calls
            assert all(
                spec < 0 or calls[spec][0] not in ("search_customers", "get_order") for spec, _ in course
            )


@pytest.mark.parametrize("path", ["schedule_fates", "policy_tables"])
def test_the_python_fallbacks_agree(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Where the compiled fates or menus did not agree with Python's on import, the episode asks the
    schedule for each fate or takes the policy's own menus: the same episodes."""
    monkeypatch.setattr(lean, "_FATES" if path == "schedule_fates" else "_TABLE_OF", False)
    tasks = _tasks("validation", 30)
    noise = conditions()["all_types_p0.50_q0.30"]
    rows = _rows(tasks, noise, range(1, 3), None, False) + _rows(tasks, noise, range(3, 5), None, True)
    assert _play_both(monkeypatch, _policy("competent", 5), tasks, rows, False, lean_records=False) == len(
        rows
    )


def test_compiled_fates_are_the_schedules() -> None:
    """The compiled fate (SHA-256 of the event key, the lazy twist, the type bisection) is
    ``NoiseSchedule.fate`` for every tool, event and repeat met, faults of every type among them."""
    from paired_rollouts.noise.schedule import NoiseSchedule

    config = conditions()["all_types_p0.50_q0.30"]
    faults = lean.fault_tables(config)
    kinds = set()
    for seed in range(40):
        schedule = NoiseSchedule(seed * 7919, config)
        for j, tool in enumerate(lean.TOOLS):
            for event in ("{}", '{"order_id":"O0044"}', '{"customer_id":"C0003"}'):
                for k in range(3):
                    want = schedule.fate(tool, event, k)
                    got = lean._C.fate(faults, schedule._dice._prefix, j, event, k)
                    assert got == (None if want is None else tuple(want)), (seed, tool, event, k)
                    kinds.add(None if want is None else want.kind)
    assert kinds >= {None, "transient", "outage", "rate_limit", "stale", "field_dropout", "truncate"}


def test_worlds_of_another_shape_are_played_in_python() -> None:
    """A world whose records are not the generator's shapes compiles to nothing (played in Python)."""
    from paired_rollouts.backoffice.world import initial_state

    state = initial_state(7)
    assert lean._compile_world(state) is not None
    odd = copy.copy(state)
    first = next(iter(state.orders))
    odd.orders = {**state.orders, first: {**state.orders[first], "note": "x"}}
    with pytest.raises(lean.Unsupported):
        lean._compile_world(odd)
    odd.orders = {**state.orders, first: {**state.orders[first], "status": "lost"}}
    with pytest.raises(lean.Unsupported):
        lean._compile_world(odd)


def test_a_surrogate_run_writes_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A surrogate run of each arm, with the compiled episode and with the Python one: every record,
    register and checkpoint is the same bytes (the manifest differs in its timings only)."""
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.run import run_one

    calibration = Path(__file__).parent / "fixtures/render/results/models/surrogate/calibration.json"
    settings = Settings.parse(RUN)
    real = lean.compiled_task
    for name in ("c2-paired-s0", "c2-independent-s1", "c4-independent-s0"):
        for mode in ("compiled", "python"):
            monkeypatch.setattr(lean, "compiled_task", real if mode == "compiled" else (lambda task: None))
            run_one(
                name,
                tasks_dir="data/tasks",
                calibration=str(calibration),
                settings=settings,
                results=str(tmp_path / mode),
            )
    files = sorted(
        p.relative_to(tmp_path / "python") for p in (tmp_path / "python").rglob("*") if p.is_file()
    )
    compared = [f for f in files if "tensorboard" not in f.parts and f.name != "manifest.json"]
    assert len(compared) >= 15 and any(f.name == "groups.jsonl" for f in compared)
    for rel in compared:
        assert (tmp_path / "compiled" / rel).read_bytes() == (tmp_path / "python" / rel).read_bytes(), rel
    for rel in (f for f in files if f.name == "manifest.json"):
        compiled, python = (json.loads((tmp_path / m / rel).read_text()) for m in ("compiled", "python"))
        assert {k for k in compiled if compiled[k] != python[k]} <= {"timings", "seconds"}


RUN = {
    "task_filter": "all",
    "training": {
        "steps": 6,
        "prompts_per_step": 4,
        "num_generations": 4,
        "checkpoint_every": 3,
        "micro_batch": 16,
        "learning_rate": 0.05,
    },
    "evaluation": {"eval_tasks": 6, "final_tasks": 6, "eval_batch": 64},
    "diagnostics": {
        "pool": "diagnostic",
        "tasks": 2,
        "schedules": 2,
        "samples": 2,
        "steps": {"seed0": [0, 6], "other": [0]},
    },
    "surrogate": {"train_episodes_seeds": [0], "phrasing_tokens": 4, "error_phrasing_tokens": 12},
}

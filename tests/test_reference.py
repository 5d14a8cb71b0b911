"""Scripted reference agent (docs/simulator.md#reference-agent, traces in #check-numbers) and its register."""

from __future__ import annotations

import json
from pathlib import Path

from paired_rollouts.agents.reference import build_register, reference_conditions
from paired_rollouts.agents.scripted import run_scripted
from paired_rollouts.cli import main as cli_main
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.seeds import eval_schedule_seed

C2 = NoiseConfig.transition(0.25)


def test_trace_test_00000_recovering_and_naive(sim_pools: dict) -> None:
    task = sim_pools["test"][0]
    rec = run_scripted(task, C2, 659565755, "recovering", keep_log=True)
    assert rec["success"] and rec["calls"] == 10 and not rec["budget_exceeded"]
    assert [(e["tool"], e.get("fault")) for e in rec["call_log"]] == [
        ("search_customers", "transient"),
        ("search_customers", None),
        ("get_order", None),
        ("get_order", None),
        ("get_order", None),
        ("cancel_order", None),
        ("update_shipping_address", "transient"),
        ("update_shipping_address", None),
        ("schedule_shipment", None),
        ("finish", None),
    ]
    naive = run_scripted(task, C2, 659565755, "naive", keep_log=True)
    assert not naive["success"] and naive["calls"] == 8
    assert any("/orders/O0038/shipping_address" in d for d in naive["diffs"])


def test_trace_test_00010_outage(sim_pools: dict) -> None:
    task = sim_pools["test"][10]
    seed = eval_schedule_seed("test-00010", 2)
    assert seed == 878004715
    rec = run_scripted(task, C2, seed, "recovering")
    assert not rec["success"] and rec["calls"] == 18 and rec["budget"] == 17 and rec["budget_exceeded"]
    assert rec["faults"] == {"outage": 2, "outage_ongoing": 7, "transient": 3} and rec["outage_hit"]


def test_clean_reference_calls(sim_pools: dict) -> None:
    for pool in ("validation", "test"):
        for policy in ("naive", "recovering"):
            results = [run_scripted(t, None, None, policy) for t in sim_pools[pool]]
            assert all(r["success"] for r in results) and not any(r["exposed"] for r in results)
            assert sum(r["calls"] for r in results) == 1981, (pool, policy)


def test_naive_call_count_is_constant_and_exposure_matches(sim_pools: dict) -> None:
    for i, task in enumerate(sim_pools["validation"][:60]):
        orders = {s["args"].get("order_id") for s in task["oracle_plan"]} - {"", None}
        naive = run_scripted(task, C2, i, "naive")
        recovering = run_scripted(task, C2, i, "recovering")
        assert naive["calls"] == 1 + len(orders) + task["n_subgoals"] + 1
        assert not naive["budget_exceeded"]
        assert naive["exposed"] == recovering["exposed"]


def test_heldout_types_never_break_writes(sim_pools: dict) -> None:
    config = NoiseConfig.heldout_types(0.25)
    for i, task in enumerate(sim_pools["test"][:40]):
        assert run_scripted(task, config, i, "naive")["success"]
        assert run_scripted(task, config, i, "recovering")["success"]


def test_register_small_and_cli(sim_tasks_dir: Path, tmp_path: Path) -> None:
    reg = build_register(sim_tasks_dir, indices=(1, 2), limit=10, progress=False)
    assert set(reg["results"]) == {"validation", "test"}
    assert (
        set(reg["conditions"])
        == set(reference_conditions())
        == {"clean", "c1_p0.10", "c2_p0.25", "c2r_p0.25_no_outage", "heldout_types_p0.25"}
    )
    for pool in ("validation", "test"):
        for cond in reg["conditions"]:
            for policy in ("naive", "recovering"):
                cell = reg["results"][pool][cond][policy]
                assert cell["episodes"] == 20
                assert set(cell) == {
                    "episodes",
                    "success",
                    "exposed_frac",
                    "outage_hit_frac",
                    "budget_exceeded_frac",
                    "mean_calls",
                }
        clean = reg["results"][pool]["clean"]
        assert clean["naive"]["success"] == clean["recovering"]["success"] == 1.0
        assert clean["naive"]["exposed_frac"] == 0.0
        assert (
            reg["results"][pool]["c2_p0.25"]["naive"]["exposed_frac"]
            == (reg["results"][pool]["c2_p0.25"]["recovering"]["exposed_frac"])
        )
    out = tmp_path / "ref.json"
    assert cli_main(["reference", "--tasks-dir", str(sim_tasks_dir), "--out", str(out), "--limit", "2"]) == 0
    written = json.loads(out.read_text())
    assert written["results"]["test"]["clean"]["recovering"]["episodes"] == 8
    assert cli_main(["reference", "--tasks-dir", str(tmp_path), "--out", str(tmp_path / "x.json")]) == 1
    assert not (tmp_path / "x.json").exists()

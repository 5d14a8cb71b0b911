"""EpisodeSession (docs/simulator.md#episodes): call path, budget, records, grader flips, paired coupling."""

from __future__ import annotations

import json

import pytest
from paired_rollouts.backoffice.grader import diff, expected_state, normalise
from paired_rollouts.backoffice.tools import UnknownToolError
from paired_rollouts.episode import EpisodeSession
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.seeds import independent_seed

C2 = NoiseConfig.transition(0.25)
CONTRACT_KEYS = {
    "task_id",
    "true_success",
    "observed_reward",
    "flipped",
    "calls",
    "budget",
    "finished",
    "exposed",
    "faults",
    "schedule_seed",
}


def play_plan(session: EpisodeSession, task: dict) -> None:
    for step in task["oracle_plan"]:
        session.call(step["tool"], **step["args"])
    session.call("finish", summary="done")


def test_no_episode_and_bad_calls(sim_task_0: dict) -> None:
    session = EpisodeSession()
    assert json.loads(session.call("get_order", order_id="O0001"))["error"]["code"] == "NO_EPISODE"
    assert session.reward == 0.0
    with pytest.raises(UnknownToolError):
        session.call("drop_tables")
    session.reset(task=sim_task_0)
    out = json.loads(session.call("get_order", "O0011"))
    assert out["error"] == {"code": "INVALID_ARGUMENT", "message": "tools take keyword arguments only"}
    assert session.calls == 0
    with pytest.raises(TypeError):
        session.call("get_order", id="O0011")
    with pytest.raises(TypeError):
        session.call("cancel_order", order_id="O0011")
    assert session.calls == 2  # counted, like the original adapter
    assert session.call_log == []


def test_budget_and_end_of_episode(sim_task_0: dict) -> None:
    session = EpisodeSession()
    session.reset(task=sim_task_0, budget=3)
    assert session.budget == 3
    session.call("wait", seconds=1)  # wait counts
    session.call("get_order", order_id="O0011")
    session.call("get_order", order_id="O0011")
    over = json.loads(session.call("cancel_order", order_id="O0011", reason="x"))
    assert over["error"]["code"] == "BUDGET_EXCEEDED"
    assert over["error"]["message"].startswith("the budget of 3 tool calls is exhausted; the episode is over")
    assert session.world.orders["O0011"]["status"] == "pending"  # not executed
    for tool, kwargs in (("get_order", {"order_id": "O0011"}), ("finish", {"summary": "done"})):
        assert json.loads(session.call(tool, **kwargs))["error"]["code"] == "EPISODE_FINISHED"
    assert session.calls == 4
    record = session.finish_and_grade()
    assert record["calls"] == 4 and record["budget"] == 3 and record["budget_exceeded"] is True
    assert record["finished"] is False and record["true_success"] is False
    assert [e["tool"] for e in record["tool_sequence"]] == [
        "wait",
        "get_order",
        "get_order",
        "get_order",
        "finish",
    ]
    assert record["tool_sequence"][-1]["code"] == "EPISODE_FINISHED"


def test_finish_is_free_and_default_budget(sim_task_0: dict) -> None:
    session = EpisodeSession()
    session.reset(task=sim_task_0)
    assert session.budget == 13
    play_plan(session, sim_task_0)
    assert session.calls == 3
    record = session.finish_and_grade()
    assert record["true_success"] and record["observed_reward"] == 1.0 and record["finished"]
    assert record["changed_from_initial"] and record["diffs"] == [] and not record["flipped"]
    assert set(record) >= CONTRACT_KEYS
    assert record["resolved_seed"] is None and record["mode"] == "clean" and record["exposed"] is False
    assert all(e["event"] is None and e["repeat"] is None for e in record["tool_sequence"])
    assert session.finish_and_grade() is record and session.reward == 1.0


def test_grading_failures_and_diffs(sim_task_0: dict) -> None:
    session = EpisodeSession()
    session.reset(task=sim_task_0)
    session.call("finish", summary="nothing to do")
    record = session.finish_and_grade()
    assert not record["true_success"] and not record["changed_from_initial"]
    assert "/orders/O0009/has_shipment: expected true, got false" in record["diffs"]
    assert '/orders/O0011/status: expected "cancelled", got "pending"' in record["diffs"]
    assert len(record["diffs"]) == 5

    session.reset(task=sim_task_0)
    play_plan(session, sim_task_0)
    extra = EpisodeSession()
    extra.reset(task=sim_task_0)
    extra.call(
        "create_ticket", customer_id="C0017", order_id="", category="other", priority="low", summary="hi"
    )
    play_plan(extra, sim_task_0)
    assert session.finish_and_grade()["true_success"]
    rec = extra.finish_and_grade()
    assert not rec["true_success"] and rec["diffs"][0].startswith("/tickets: expected")
    # the fast diff equals the full recursive diff of the normalised states
    full = diff(normalise(expected_state(sim_task_0)), normalise(extra.world))
    assert rec["diffs"] == full[:5]


def test_address_is_case_sensitive_and_refund_reason_ignored(sim_pools: dict) -> None:
    task = next(t for t in sim_pools["validation"] if t["templates"] == ["address_change"])
    step = task["oracle_plan"][0]
    session = EpisodeSession()
    session.reset(task=task)
    session.call("update_shipping_address", **{**step["args"], "city": step["args"]["city"].upper()})
    assert not session.finish_and_grade()["true_success"]
    session.reset(task=task)
    session.call("update_shipping_address", **{**step["args"], "city": f"  {step['args']['city']} "})
    assert session.finish_and_grade()["true_success"]
    refund = next(t for t in sim_pools["validation"] if t["templates"] == ["partial_refund_delivered"])
    session.reset(task=refund)
    session.call("issue_refund", **{**refund["oracle_plan"][0]["args"], "reason": "any words at all"})
    assert session.finish_and_grade()["true_success"]


def test_grader_flip_is_one_sided_and_shared(sim_task_0: dict) -> None:
    # derive_seed(659565755, "outcome") draws 0.3576: flipped at q = 0.5, not at q = 0.3
    for q, expect in ((0.5, True), (0.3, False)):
        session = EpisodeSession()
        session.reset(task=sim_task_0, schedule_seed=659565755, noise=NoiseConfig.outcome(q))
        play_plan(session, sim_task_0)
        rec = session.finish_and_grade()
        assert rec["true_success"] and rec["flipped"] is expect
        assert rec["observed_reward"] == (0.0 if expect else 1.0)
    session = EpisodeSession()
    session.reset(task=sim_task_0, schedule_seed=659565755, noise=NoiseConfig.outcome(0.5))
    session.call("finish", summary="done")
    rec = session.finish_and_grade()
    assert not rec["true_success"] and not rec["flipped"] and rec["observed_reward"] == 0.0


def test_worked_trace_through_the_session(sim_task_0: dict) -> None:
    """The docs/simulator.md#check-numbers trace (test-00000, seed 659565755, C2), replayed by hand through the session."""
    session = EpisodeSession()
    session.reset(
        task=sim_task_0,
        schedule_seed=659565755,
        noise=C2.to_json(),
        phase="final_noisy:step100",
        condition="C2",
        slot=3,
    )
    assert (
        json.loads(session.call("search_customers", query="Priya Brown"))["error"]["code"]
        == "SERVICE_UNAVAILABLE"
    )
    assert json.loads(session.call("search_customers", query="Priya"))["total"] >= 1
    for oid in ("O0011", "O0038", "O0009"):
        assert json.loads(session.call("get_order", order_id=oid))["order_id"] == oid
    session.call("cancel_order", order_id="O0011", reason="customer request")
    args = sim_task_0["oracle_plan"][1]["args"]
    assert "error" in json.loads(session.call("update_shipping_address", **args))
    assert "error" not in json.loads(session.call("update_shipping_address", **args))
    session.call("schedule_shipment", order_id="O0009", carrier="standard", day=107)
    session.call("finish", summary="done")
    rec = session.finish_and_grade()
    assert rec["true_success"] and rec["calls"] == 9 and len(rec["tool_sequence"]) == 10
    assert rec["faults"] == {"transient": 2} and rec["exposed"]
    assert rec["schedule_seed"] == rec["resolved_seed"] == 659565755
    assert rec["phase"] == "final_noisy:step100" and rec["condition"] == "C2" and rec["slot"] == 3
    assert rec["tool_sequence"][0] == {
        "tool": "search_customers",
        "ok": False,
        "code": "SERVICE_UNAVAILABLE",
        "event": "{}",
        "repeat": 0,
    }
    assert rec["failed_calls"][0]["tool"] == "search_customers"
    assert json.loads(rec["failed_calls"][0]["args"]) == {"query": "Priya Brown"}


def _faulty_run(task: dict, seed: int, resolved: int | None) -> list:
    session = EpisodeSession()
    session.reset(task=task, schedule_seed=seed, noise=C2, resolved_seed=resolved)
    for _ in range(3):
        for step in task["oracle_plan"]:
            session.call(step["tool"], **step["args"])
            session.call("get_order", order_id=step["args"].get("order_id", "O0001"))
    return [(e["tool"], e.get("fault")) for e in session.call_log]


def test_paired_equal_independent_differ(sim_pools: dict) -> None:
    tasks = sim_pools["validation"][:30]
    differing = 0
    for i, task in enumerate(tasks):
        assert _faulty_run(task, 1000 + i, None) == _faulty_run(task, 1000 + i, 1000 + i)
        a = _faulty_run(task, 1000 + i, independent_seed(1000 + i, 0, 0, "train"))
        b = _faulty_run(task, 1000 + i, independent_seed(1000 + i, 1, 0, "train"))
        differing += a != b
    assert differing >= 10


def test_episode_index_counts_resets(sim_task_0: dict) -> None:
    session = EpisodeSession()
    for _ in range(3):
        session.reset(task=sim_task_0)
    assert session.finish_and_grade()["episode_index"] == 2
    with pytest.raises(ValueError):
        session.reset(task=sim_task_0, noise=C2)  # a noisy episode needs a seed


def test_fast_grader_equals_full_diff(sim_pools: dict) -> None:
    """The grader's shortcut (only touched records) gives exactly the full normalised diff."""
    from paired_rollouts.backoffice.grader import grade

    session = EpisodeSession()
    failures = 0
    for i, task in enumerate(sim_pools["validation"][:60]):
        session.reset(task=task, schedule_seed=i, noise=C2)
        for step in task["oracle_plan"][::-1]:  # reversed order: some writes now fail
            session.call(step["tool"], **step["args"])
        if i % 3 == 0:
            session.call(
                "create_ticket",
                customer_id=task["customer_id"],
                order_id="",
                category="other",
                priority="low",
                summary="extra",
            )
        result = grade(task, session.world, initial=session.world.history[0])
        full = diff(normalise(expected_state(task)), normalise(session.world))
        assert result.diffs == full
        assert result.changed_from_initial == (
            normalise(session.world.history[0]) != normalise(session.world)
        )
        failures += not result.success
    assert failures >= 20

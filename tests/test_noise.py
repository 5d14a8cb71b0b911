"""Noise layer (docs/simulator.md#noise-schedules): seeds, configs, fates, runtime semantics, coupling, fault-rate statistics."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from paired_rollouts.agents.scripted import run_scripted
from paired_rollouts.backoffice.world import World
from paired_rollouts.design import PAPER_CONDITIONS
from paired_rollouts.errors import UserError
from paired_rollouts.noise import schedule
from paired_rollouts.noise.config import NO_OUTAGE_WEIGHTS, NoiseConfig
from paired_rollouts.noise.noisy_api import NoisyToolAPI
from paired_rollouts.noise.schedule import APPLICABLE_TYPES, Fate, NoiseSchedule, event_key
from paired_rollouts.noise.seeds import (
    build_blocking_rows,
    build_training_rows,
    derive_seed,
    diagnostic_seed,
    eval_schedule_seed,
    independent_seed,
    resolve_seed,
    training_schedule_seed,
)

C2 = NoiseConfig.transition(0.25)
O11 = '{"order_id":"O0011"}'


# -- seeds (docs/simulator.md#check-numbers) ---------------------------------------------------------
def test_derive_seed_vectors() -> None:
    assert derive_seed("a") == 14598278634844962250
    assert derive_seed("eval", "test-00000", 1) == 11044687025718439099
    assert [eval_schedule_seed("test-00000", k) for k in (1, 2, 3, 4)] == [
        659565755,
        791815179,
        652831718,
        1281760880,
    ]
    assert [eval_schedule_seed("heldout-00000", k) for k in (1, 2, 3, 4)] == [
        659622489,
        558185965,
        1113430541,
        762132704,
    ]
    assert derive_seed(659565755, "outcome") == 17073024502458594512
    assert random.Random(derive_seed(659565755, "outcome")).random() == pytest.approx(0.35759, abs=1e-5)
    assert independent_seed(777, 0, 0, "train") == 5457687404510714343
    assert independent_seed(777, 0, 0, "eval") == 4967901123802250397
    assert [diagnostic_seed(0, "diagnostic-00000", k) for k in range(3)] == [
        1105879056,
        1638159019,
        1342958510,
    ]
    assert resolve_seed("paired", 777, 3, 9) == 777 and resolve_seed("clean", 777) == 777
    assert resolve_seed("independent", 777, 0, 0, "eval:step20") == 4967901123802250397
    with pytest.raises(ValueError):
        independent_seed(777, 0, 0, "test")


def _fake_train_pool() -> list[dict]:
    return [{"task_id": f"train-{i:05d}", "n_subgoals": 1 + i % 8} for i in range(2000)]


def test_training_rows_vectors() -> None:
    rows = build_training_rows(_fake_train_pool(), C2, "C2", 2400, run_seed=0)
    assert [r["task_id"] for r in rows[:5]] == [
        "train-01944",
        "train-00216",
        "train-01129",
        "train-01494",
        "train-01567",
    ]
    assert [r["schedule_seed"] for r in rows[:5]] == [307198333, 286348399, 489116549, 2144761333, 865645967]
    assert (
        rows[2000]["task_id"] == rows[0]["task_id"]
        and rows[2000]["schedule_seed"] != rows[0]["schedule_seed"]
    )
    assert (
        rows[0]["noise"] == C2.to_json()
        and rows[0]["condition"] == "C2"
        and rows[0]["budget"] == 7 + 2 * (1 + 1944 % 8)
    )
    rows1 = build_training_rows(_fake_train_pool(), C2, "C2", 3, run_seed=1)
    assert [r["task_id"] for r in rows1] == ["train-01380", "train-00783", "train-00300"]
    assert [r["schedule_seed"] for r in rows1] == [660297924, 1341452610, 747991274]
    assert training_schedule_seed(0, "C2", 0) == 307198333
    blocking = build_blocking_rows(_fake_train_pool(), C2, "C2", 4, run_seed=0)
    assert [r["condition"] for r in blocking] == ["C2:clean", "C2:noisy"] * 2
    assert blocking[0]["schedule_seed"] == blocking[1]["schedule_seed"] == 307198333
    assert NoiseConfig.from_json(blocking[0]["noise"]).is_clean and blocking[1]["noise"] == C2.to_json()


# -- config ------------------------------------------------------------------------------------------
def test_config_serialisation_and_constructors() -> None:
    assert C2.to_json() == (
        '{"challenge": null, "mode": "paired", "p": 0.25, "q": 0.0, "weights": {"outage": 0.1, '
        '"rate_limit": 0.15, "stale": 0.15, "transient": 0.45, "truncate": 0.15}}'
    )
    assert NoiseConfig.from_json(C2.to_json()) == C2
    assert NoiseConfig.from_json(json.loads(C2.to_json())) == C2
    assert NoiseConfig.clean().is_clean and NoiseConfig().is_clean
    assert not NoiseConfig.outcome(0.1).is_clean and NoiseConfig.outcome(0.1).p == 0
    assert NoiseConfig.transition(0.25, "independent").mode == "independent"
    assert NoiseConfig.transition(0.25, "clean").is_clean
    challenge = NoiseConfig.challenge_writes()
    assert challenge.mode == "paired" and challenge.challenge == "writes_once" and not challenge.is_clean
    assert NoiseConfig.heldout_types(0.25).weights == {"timeout_after_commit": 0.5, "field_dropout": 0.5}
    assert NO_OUTAGE_WEIGHTS == {
        "transient": 0.5,
        "rate_limit": 0.5 / 3,
        "stale": 0.5 / 3,
        "truncate": 0.5 / 3,
    }
    assert PAPER_CONDITIONS["C2r"].noise().weights == NO_OUTAGE_WEIGHTS
    assert PAPER_CONDITIONS["C4"].noise().q == 0.10
    assert hash(C2) == hash(NoiseConfig.transition(0.25))
    with pytest.raises(AttributeError):
        C2.p = 0.5  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"p": 1.5},
        {"q": -0.1},
        {"p": True},
        {"mode": "shared"},
        {"challenge": "always"},
        {"weights": {"gremlins": 1.0}},
        {"weights": {"transient": -1.0}},
        {"p": 0.2, "weights": {"transient": 0.0}},
        {"challenge": "writes_once", "p": 0.1},
        {"challenge": "writes_once", "mode": "clean"},
    ],
)
def test_config_validation(kwargs: dict) -> None:
    with pytest.raises(UserError):
        NoiseConfig(**kwargs)


def test_config_from_bad_json() -> None:
    with pytest.raises(UserError):
        NoiseConfig.from_json("{not json")
    with pytest.raises(UserError, match="unknown keys"):
        NoiseConfig.from_json('{"p": 0.1, "rate": 2}')


# -- fates -----------------------------------------------------------------------------------------------
def test_fates_under_schedule_659565755() -> None:
    schedule = NoiseSchedule(659565755, C2)

    def kinds(tool: str, event: str) -> list[str | None]:
        return [None if (f := schedule.fate(tool, event, k)) is None else f.kind for k in range(8)]

    assert kinds("get_order", O11) == [None, None, "rate_limit", None, None, None, None, None]
    assert schedule.fate("get_order", O11, 2) == Fate("rate_limit", 30, 816133)
    assert kinds("cancel_order", O11) == [
        None,
        None,
        "rate_limit",
        None,
        "outage",
        None,
        "transient",
        "outage",
    ]
    assert kinds("search_customers", "{}") == ["transient"] + [None] * 7


def test_event_keys_ignore_free_text() -> None:
    assert event_key("get_order", {"order_id": "O0001"}) == '{"order_id":"O0001"}'
    assert event_key("reserve_stock", {"sku": "SKU-0001", "quantity": 3, "order_id": "O0001"}) == (
        '{"order_id":"O0001","sku":"SKU-0001"}'
    )
    assert event_key("search_customers", {"query": "omar"}) == "{}"
    assert event_key("get_order", {"order_id": " O0001 "}) == event_key("get_order", {"order_id": "O0001"})
    assert event_key("issue_refund", {"order_id": "O1", "amount_cents": 5, "reason": "a"}) == event_key(
        "issue_refund", {"order_id": "O1", "amount_cents": 999, "reason": "something else"}
    )
    assert event_key("create_ticket", {"customer_id": "C0001", "order_id": "O1", "summary": "x"}) == (
        '{"customer_id":"C0001"}'
    )


def test_free_text_never_changes_a_draw() -> None:
    """Two rollouts that differ only in free-text arguments meet identical faults."""
    seed = 659565755
    logs = []
    for reason, query in (("customer request", "Priya Brown"), ("asked by phone", "priya")):
        api = NoisyToolAPI(World.generate(126704), NoiseSchedule(seed, C2))
        api.invoke("search_customers", {"query": query})
        for _ in range(8):
            api.invoke("cancel_order", {"order_id": "O0011", "reason": reason})
            api.invoke("wait", {"seconds": 60})
        logs.append([(e["tool"], e.get("fault"), e.get("repeat")) for e in api.call_log])
    assert logs[0] == logs[1]
    assert ("search_customers", "transient", 0) in logs[0]


def test_applicable_types() -> None:
    assert APPLICABLE_TYPES["get_order"] == ("transient", "rate_limit", "outage", "stale", "field_dropout")
    assert APPLICABLE_TYPES["list_orders"] == (
        "transient",
        "rate_limit",
        "outage",
        "stale",
        "field_dropout",
        "truncate",
    )
    assert APPLICABLE_TYPES["issue_refund"] == ("transient", "rate_limit", "outage", "timeout_after_commit")
    assert APPLICABLE_TYPES["create_ticket"] == ("transient", "rate_limit", "outage")
    assert APPLICABLE_TYPES["wait"] == () and APPLICABLE_TYPES["finish"] == ()
    heldout = NoiseSchedule(1, NoiseConfig.heldout_types(1.0))
    for k in range(50):
        assert heldout.fate("create_ticket", '{"customer_id":"C0001"}', k) is None
        assert heldout.fate("get_order", O11, k).kind == "field_dropout"
        assert heldout.fate("cancel_order", O11, k).kind == "timeout_after_commit"


def test_challenge_fates() -> None:
    schedule = NoiseSchedule(5, NoiseConfig.challenge_writes())
    assert schedule.fate("create_ticket", "{}", 0).kind == "transient"
    assert schedule.fate("cancel_order", O11, 0).kind == "transient"
    assert schedule.fate("cancel_order", O11, 1) is None
    assert schedule.fate("get_order", O11, 0) is None


# -- runtime semantics with scripted fates ---------------------------------------------------------------
class FixedSchedule(NoiseSchedule):
    """Fates from a table keyed (tool, event, k) or (tool, k); everything else is fault-free."""

    __slots__ = ("table",)

    def __init__(self, table: dict[tuple, Fate]) -> None:
        super().__init__(0, C2)
        self.table = table

    def fate(self, tool: str, event: str, k: int) -> Fate | None:
        return self.table.get((tool, event, k), self.table.get((tool, k)))


def noisy(table: dict) -> NoisyToolAPI:
    return NoisyToolAPI(World.generate(126704), FixedSchedule(table))


def codes(api: NoisyToolAPI, tool: str, **kwargs) -> dict:
    return json.loads(api.invoke(tool, kwargs))


def test_rate_limit_blocks_every_tool_until_waited() -> None:
    api = noisy({("get_order", 0): Fate("rate_limit", 45, 0)})
    first = codes(api, "get_order", order_id="O0011")
    assert first["error"]["code"] == "RATE_LIMITED" and first["error"]["retry_after_seconds"] == 45
    blocked = codes(api, "get_customer", customer_id="C0017")
    assert blocked["error"] == {
        "code": "RATE_LIMITED",
        "retry_after_seconds": 45,
        "message": "too many requests; wait 45 seconds before calling again",
    }
    assert codes(api, "wait", seconds=30) == {"waited_seconds": 30, "clock_seconds": 30}
    assert codes(api, "cancel_order", order_id="O0011", reason="x")["error"]["retry_after_seconds"] == 15
    assert api.world.orders["O0011"]["status"] == "pending"
    codes(api, "wait", seconds=15)
    assert codes(api, "get_order", order_id="O0011")["order_id"] == "O0011"
    assert [e["kind"] for e in api.fault_log] == ["rate_limit", "rate_limit_ongoing", "rate_limit_ongoing"]
    assert [e.get("repeat") for e in api.call_log if e["tool"] == "get_order"] == [0, 1]
    assert api.exposure_counts == {"rate_limit": 1, "rate_limit_ongoing": 2}


def test_outage_persists_per_tool_and_resource() -> None:
    api = noisy({("cancel_order", O11, 0): Fate("outage", 15, 0)})
    for _ in range(3):
        out = codes(api, "cancel_order", order_id="O0011", reason="x")
        assert out["error"] == {
            "code": "SERVICE_UNAVAILABLE",
            "message": "temporary failure; the request was not applied, retry it",
        }
    assert codes(api, "get_order", order_id="O0011")["status"] == "pending"  # other tool, same order: fine
    assert (
        codes(api, "cancel_order", order_id="O0038", reason="x")["status"] == "cancelled"
    )  # other order: fine
    assert [e["kind"] for e in api.fault_log] == ["outage", "outage_ongoing", "outage_ongoing"]
    assert [e["repeat"] for e in api.call_log[:3]] == [0, 1, 2]


def test_transient_does_not_execute_and_next_attempt_draws_afresh() -> None:
    api = noisy({("cancel_order", 0): Fate("transient", 15, 0)})
    assert codes(api, "cancel_order", order_id="O0011", reason="x")["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert api.world.version == 0
    assert codes(api, "cancel_order", order_id="O0011", reason="x")["status"] == "cancelled"
    entry = api.call_log[0]
    assert (entry["ok"], entry["code"], entry["fault"], entry["event"], entry["repeat"]) == (
        False,
        "SERVICE_UNAVAILABLE",
        "transient",
        O11,
        0,
    )


def test_stale_reads_serve_the_state_before_the_last_write() -> None:
    api = noisy({("get_order", 0): Fate("stale", 15, 0), ("get_order", 1): Fate("stale", 15, 0)})
    assert codes(api, "get_order", order_id="O0011")["status"] == "pending"
    assert api.fault_log == []  # no write yet: a fresh read, no fault
    codes(api, "cancel_order", order_id="O0011", reason="x")
    stale = codes(api, "get_order", order_id="O0011")
    assert stale["status"] == "pending" and api.world.orders["O0011"]["status"] == "cancelled"
    assert codes(api, "get_order", order_id="O0011")["status"] == "cancelled"  # one call only
    assert [e["kind"] for e in api.fault_log] == ["stale"]
    assert api.call_log[2]["ok"] is True and api.call_log[2]["code"] is None


def test_truncate_timeout_and_field_dropout() -> None:
    api = noisy(
        {
            ("search_customers", 0): Fate("truncate", 15, 0),
            ("cancel_order", 0): Fate("timeout_after_commit", 15, 0),
            ("get_order", 0): Fate("field_dropout", 15, 7),
            ("list_orders", 0): Fate("truncate", 15, 0),
        }
    )
    page = codes(api, "search_customers", query="example")
    assert page["total"] == 40 and len(page["results"]) == 2 and page["truncated"] is True
    assert page["next_offset"] == 2 and page["offset"] == 0
    out = codes(api, "cancel_order", order_id="O0011", reason="x")
    assert out["error"]["code"] == "TIMEOUT" and api.world.orders["O0011"]["status"] == "cancelled"
    assert api.call_log[1]["ok"] is True and api.call_log[1]["code"] is None
    order = codes(api, "get_order", order_id="O0011")
    full_keys = sorted(
        [
            "customer_id",
            "items",
            "order_id",
            "paid_before_cancel",
            "placed_on_day",
            "refunded_cents",
            "refunds",
            "reservations",
            "shipment_id",
            "shipping_address",
            "status",
            "total_cents",
        ]
    )
    assert sorted(order) == [k for k in full_keys if k != full_keys[7 % 12]]
    error = codes(api, "list_orders", customer_id="C9999")  # errors pass through, no fault logged
    assert error["error"]["code"] == "NOT_FOUND"
    assert [e["kind"] for e in api.fault_log] == ["truncate", "timeout_after_commit", "field_dropout"]


def test_invalid_and_blocked_calls_advance_the_repeat_index() -> None:
    api = noisy({})
    codes(api, "get_order", order_id="O9999")
    codes(api, "get_order", order_id="O9999")
    codes(api, "wait", seconds=5)
    assert [e.get("repeat") for e in api.call_log] == [0, 1, None]
    assert api.repeats == {("get_order", '{"order_id":"O9999"}'): 2}


def test_clean_api_has_no_event_keys() -> None:
    api = NoisyToolAPI(World.generate(126704), None)
    api.invoke("get_order", {"order_id": "O0011"})
    assert "event" not in api.call_log[0] and not api.exposed


# -- statistics (docs/simulator.md#check-numbers) -------------------------------------------------------
def test_fault_rates_per_call() -> None:
    counts: dict[str | None, int] = {}
    for seed in range(200):
        schedule = NoiseSchedule(seed, C2)
        for k in range(100):
            fate = schedule.fate("get_order", O11, k)
            kind = None if fate is None else fate.kind
            counts[kind] = counts.get(kind, 0) + 1
    n = 200 * 100
    assert abs(1 - counts[None] / n - 0.25) < 0.02
    for kind, weight in (("transient", 0.45), ("rate_limit", 0.15), ("outage", 0.10), ("stale", 0.15)):
        assert abs(counts.get(kind, 0) / n - 0.25 * weight / 0.85) < 0.02, kind
    assert "truncate" not in counts and "field_dropout" not in counts


def test_outcome_flip_rate_and_one_sidedness() -> None:
    config = NoiseConfig.outcome(0.1)
    flips = sum(NoiseSchedule(seed, config).outcome_flip() for seed in range(5000))
    assert abs(flips / 5000 - 0.1) < 0.015
    assert NoiseSchedule(659565755, NoiseConfig.outcome(0.5)).outcome_flip()  # draw 0.3576 < 0.5
    assert not NoiseSchedule(659565755, NoiseConfig.outcome(0.3)).outcome_flip()
    assert not NoiseSchedule(659565755, C2).outcome_flip()  # q = 0


def test_recovering_reference_statistics(sim_pools: dict) -> None:
    tasks = sim_pools["validation"][:80]
    rec = sum(run_scripted(t, C2, i, "recovering")["success"] for i, t in enumerate(tasks)) / 80
    naive = sum(run_scripted(t, C2, i, "naive")["success"] for i, t in enumerate(tasks)) / 80
    assert rec >= 0.75 and rec - naive > 0.1
    no_outage = NoiseConfig.transition(0.25, weights={"transient": 0.6, "rate_limit": 0.2, "stale": 0.2})
    assert (
        sum(run_scripted(t, no_outage, i, "recovering")["success"] for i, t in enumerate(tasks)) / 80 >= 0.97
    )


def test_challenge_set(sim_pools: dict) -> None:
    config = NoiseConfig.challenge_writes()
    for task in sim_pools["validation"][:40]:
        seed = eval_schedule_seed(task["task_id"], 1)
        assert run_scripted(task, config, seed, "recovering")["success"], task["task_id"]
        assert not run_scripted(task, config, seed, "naive")["success"], task["task_id"]


def test_paired_siblings_share_draws_independent_do_not(sim_pools: dict) -> None:
    tasks = sim_pools["validation"][:40]
    same, differ = 0, 0
    for i, task in enumerate(tasks):
        seed = eval_schedule_seed(task["task_id"], 1)
        a = run_scripted(task, C2, seed, "recovering", keep_log=True)
        b = run_scripted(task, C2, seed, "recovering", keep_log=True)
        assert a["fault_log"] == b["fault_log"] and a["success"] == b["success"]
        s0, s1 = independent_seed(seed, 0, i, "train"), independent_seed(seed, 1, i, "train")
        x = run_scripted(task, C2, s0, "recovering", keep_log=True)["fault_log"]
        y = run_scripted(task, C2, s1, "recovering", keep_log=True)["fault_log"]
        same += x == y
        differ += x != y
    assert differ >= 15  # at p = 0.25 most episodes meet a fault somewhere


def test_a_shared_schedule_memoises_the_fates_a_fresh_one_draws() -> None:
    """Rollouts that share (seed, config) share one schedule; its memoised fates and flip are the ones a
    fresh schedule draws, whatever order they are asked in."""
    config = NoiseConfig(p=0.5, q=0.5)
    shared = schedule.shared_schedule(659565755, config)
    assert schedule.shared_schedule(659565755, NoiseConfig.from_json(config.to_json())) is shared
    assert schedule.shared_schedule(659565756, config) is not shared
    assert schedule.shared_schedule(659565755, C2) is not shared
    calls = [
        (tool, event_key(tool, {"order_id": f"O{i:04d}", "customer_id": "C0001", "sku": "SKU-0001"}), k)
        for tool in APPLICABLE_TYPES
        for i in range(1, 4)
        for k in range(4)
    ]
    fresh = [NoiseSchedule(659565755, config).fate(*call) for call in calls]
    assert any(f is not None for f in fresh) and any(f is None for f in fresh)
    assert [shared.fate(*call) for call in reversed(calls)] == fresh[::-1]
    assert [shared.fate(*call) for call in calls] == fresh
    flips = [NoiseSchedule(seed, config).outcome_flip() for seed in range(64)]
    assert [schedule.shared_schedule(seed, config).outcome_flip() for seed in range(64)] * 2 == flips * 2
    assert 0 < sum(flips) < 64


FATE_LISTING = """
import json
from paired_rollouts.noise import schedule as s
from paired_rollouts.noise.config import NoiseConfig
tools = [t for t in s.APPLICABLE_TYPES if s.APPLICABLE_TYPES[t]]
out = {"path": s.FATE_DRAWS, "fates": [], "flips": []}
for seed in range(200):
    sched = s.NoiseSchedule(seed * 7919, NoiseConfig.transition(0.25))
    for tool in tools:
        for k in range(3):
            out["fates"].append(sched.fate(tool, '{"order_id":"O%04d"}' % seed, k))
    out["flips"].append(s.NoiseSchedule(seed, NoiseConfig.outcome(0.1)).outcome_flip())
print(json.dumps(out))
"""


def test_pure_path_draws_the_same_fates() -> None:
    """``PAIRED_ROLLOUTS_PURE_FATES=1`` (or a machine without a C compiler) gives the same fates and flips."""

    def listing(**env: str) -> dict:
        run = subprocess.run(
            [sys.executable, "-c", FATE_LISTING],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(run.stdout)

    compiled, pure = listing(PAIRED_ROLLOUTS_PURE_FATES="0"), listing(PAIRED_ROLLOUTS_PURE_FATES="1")
    assert compiled["path"].startswith("compiled") and pure["path"] == "random.Random"
    assert compiled["fates"] == pure["fates"] and compiled["flips"] == pure["flips"]
    assert sum(f is not None for f in pure["fates"]) > 1000 and 0 < sum(pure["flips"]) < 200

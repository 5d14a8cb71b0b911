"""State-based grading (docs/simulator.md#grader): replay the oracle plan on a fresh world, normalise both states
and diff them. Refund reasons, ticket ids/summaries and shipment ids are dropped by the normalisation, so
only the *effects* the task asked for count, in any order.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, TypeVar

from paired_rollouts.backoffice.tools import dumps_sorted
from paired_rollouts.backoffice.world import WORLD_CACHE, State, World

MAX_DIFFS = 20
T = TypeVar("T")


class GradingError(RuntimeError):
    """The task's own oracle plan does not replay cleanly: the task record is corrupt."""


@dataclass
class GradeResult:
    success: bool
    diffs: list[str] = field(default_factory=list)
    changed_from_initial: bool = True


def _norm_order(order: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in order.items() if k not in ("refunds", "reservations", "shipment_id")}
    out["refunds"] = sorted(r["amount_cents"] for r in order["refunds"])
    out["reservations"] = sorted([r["sku"], r["quantity"]] for r in order["reservations"])
    out["has_shipment"] = order["shipment_id"] is not None
    return out


def _norm_shipment(s: dict[str, Any]) -> list[Any]:
    return [s["order_id"], s["carrier"], s["scheduled_day"], s["status"]]


def _norm_ticket(t: dict[str, Any]) -> list[Any]:
    return [t["customer_id"], t["order_id"] or "", t["category"], t["priority"], t["status"]]


def _norm_shipments(state: State) -> list[list[Any]]:
    return sorted(_norm_shipment(s) for s in state.shipments.values())


def _norm_tickets(state: State) -> list[list[Any]]:
    return sorted(_norm_ticket(t) for t in state.tickets.values())


def normalise(state: State | dict[str, Any]) -> dict[str, Any]:
    """The graded view of a state (a ``State`` or a ``snapshot()`` dict)."""
    if isinstance(state, dict):
        state = State(
            state["today_day"],
            state.get("clock_seconds", 0),
            state.get("version", 0),
            state["customers"],
            state["products"],
            state["orders"],
            state["shipments"],
            state["tickets"],
        )
    return {
        "today_day": state.today_day,
        "customers": {k: state.customers[k] for k in sorted(state.customers)},
        "products": {k: state.products[k] for k in sorted(state.products)},
        "orders": {k: _norm_order(state.orders[k]) for k in sorted(state.orders)},
        "shipments": _norm_shipments(state),
        "tickets": _norm_tickets(state),
    }


def diff(
    expected: Any, actual: Any, path: str = "", out: list[str] | None = None, limit: int = MAX_DIFFS
) -> list[str]:
    """Recursive diff over dicts (sorted union of keys); other values are compared whole."""
    if out is None:
        out = []
    if len(out) >= limit:
        return out
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if len(out) >= limit:
                break
            if key not in expected:
                out.append(f"{path}/{key}: unexpected")
            elif key not in actual:
                out.append(f"{path}/{key}: missing")
            elif expected[key] != actual[key]:  # equal values add no line (records hold no NaN)
                diff(expected[key], actual[key], f"{path}/{key}", out, limit)
    elif expected != actual:
        out.append(f"{path}: expected {dumps_sorted(expected)}, got {dumps_sorted(actual)}")
    return out


def replay_plan(world_seed: int, plan: list[dict[str, Any]]) -> World:
    """Apply the plan with the plain API on a fresh world; GradingError if any call fails."""
    from paired_rollouts.backoffice.tools import ToolAPI

    world = World.generate(world_seed)
    api = ToolAPI(world)
    for step in plan:
        payload, code = api.execute(step["tool"], dict(step["args"]))
        if code is not None:
            raise GradingError(
                f"oracle plan step {step['tool']} failed on world {world_seed}: {payload['error']['message']}"
            )
    return world


@lru_cache(maxsize=WORLD_CACHE)
def _expected_state(world_seed: int, plan_json: str) -> State:
    return replay_plan(world_seed, json.loads(plan_json)).frozen()


class ByTask(Generic[T]):
    """Values derived from a task record (its expected state, its compiled episode), found by task object:
    a hit needs the same task dict, world seed and plan object, and a plan still equal to the one the value
    was derived from (task records are pool lines; they are not meant to be edited in place). Skips
    serialising the plan on every episode. Emptied when it holds ``limit`` tasks."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._entries: dict[int, tuple[dict[str, Any], Any, Any, Any, T]] = {}

    def get(self, task: dict[str, Any], derive: Callable[[dict[str, Any]], T]) -> T:
        entry = self._entries.get(id(task))
        if (
            entry is not None
            and entry[0] is task
            and entry[1] == task["world_seed"]
            and entry[2] is task["oracle_plan"]
            and entry[3] == task["oracle_plan"]
        ):
            return entry[4]
        value = derive(task)
        if len(self._entries) >= self.limit:
            self._entries.clear()
        plan = task["oracle_plan"]
        self._entries[id(task)] = (task, task["world_seed"], plan, copy.deepcopy(plan), value)
        return value


_EXPECTED: ByTask[State] = ByTask()


def expected_state(task: dict[str, Any]) -> State:
    """The state the task asks for (cached per world seed and plan, found by task object: ``ByTask``)."""
    return _EXPECTED.get(
        task,
        lambda t: _expected_state(int(t["world_seed"]), json.dumps(t["oracle_plan"], sort_keys=True)),
    )


def _changed_keys(expected: dict, actual: dict) -> list[str]:
    """Sorted keys whose records are not the very same object in both collections."""
    keys = [key for key, rec in actual.items() if expected.get(key) is not rec]
    if len(expected) != len(actual) or any(key not in actual for key in expected):
        keys.extend(key for key in expected if key not in actual)
    keys.sort()
    return keys


_RECORD_NORMS = {"customers": None, "orders": _norm_order, "products": None}
_LIST_NORMS = (("shipments", _norm_shipment, _norm_shipments), ("tickets", _norm_ticket, _norm_tickets))


def _diff_record(name: str, key: str, exp_rec: Any, act_rec: Any, out: list[str], limit: int) -> None:
    if exp_rec is None:
        out.append(f"/{name}/{key}: unexpected")
    elif act_rec is None:
        out.append(f"/{name}/{key}: missing")
    elif name == "orders":
        diff(_norm_order(exp_rec), _norm_order(act_rec), f"/{name}/{key}", out, limit)
    else:
        diff(exp_rec, act_rec, f"/{name}/{key}", out, limit)


def _fast_diff(expected: State, actual: State, limit: int) -> list[str]:
    """``diff(normalise(expected), normalise(actual))`` that skips records shared by both states.

    Worlds are copy-on-write from one cached initial state, so records the episode did not touch are the
    very same objects in both states; identical objects normalise identically, and so do equal records
    (normalisation is a function of the record), so only records that differ are normalised and diffed.
    """
    if expected.touched is None or actual.touched is None:
        return _identity_diff(expected, actual, limit)
    out: list[str] = []
    # (collection, key) pairs sort by collection first, and customers < orders < products < shipments <
    # tickets is the order of the normalised view's keys, so one sorted pass visits records in diff order.
    lists: dict[str, list[str]] = {}
    for name, key in sorted(expected.touched | actual.touched):
        if name not in _RECORD_NORMS:
            lists.setdefault(name, []).append(key)
            continue
        if len(out) >= limit:
            return out
        exp_rec, act_rec = getattr(expected, name).get(key), getattr(actual, name).get(key)
        if exp_rec is act_rec or exp_rec == act_rec:
            continue
        _diff_record(name, key, exp_rec, act_rec, out, limit)
    for name, norm_one, norm_list in _LIST_NORMS:
        if len(out) >= limit:
            return out
        keys = lists.get(name)
        if keys is None:
            continue
        exp_coll, act_coll = getattr(expected, name), getattr(actual, name)
        # The lists are sorted multisets and untouched records are common to both states, so the lists
        # are equal exactly when the touched records' rows are.
        if sorted(norm_one(exp_coll[k]) for k in keys if k in exp_coll) == sorted(
            norm_one(act_coll[k]) for k in keys if k in act_coll
        ):
            continue
        _diff_list(name, norm_list, expected, actual, out, limit)
    return _with_today(expected, actual, out, limit)


def _diff_list(name: str, norm_list: Any, expected: State, actual: State, out: list[str], limit: int) -> None:
    """The diff lines of one list collection (normalised whole, as the grader compares it)."""
    exp_l, act_l = norm_list(expected), norm_list(actual)
    if exp_l != act_l:
        diff(exp_l, act_l, f"/{name}", out, limit)


def _with_today(expected: State, actual: State, out: list[str], limit: int) -> list[str]:
    """``out`` plus the simulated day's line if the day differs, cut at ``limit``."""
    if len(out) < limit and expected.today_day != actual.today_day:
        diff(expected.today_day, actual.today_day, "/today_day", out, limit)
    return out[:limit]


def _identity_diff(expected: State, actual: State, limit: int) -> list[str]:
    """``_fast_diff`` for states that do not know their touched records: compare by record identity."""
    out: list[str] = []
    for name in _RECORD_NORMS:  # the sorted order of the normalised keys
        exp_coll, act_coll = getattr(expected, name), getattr(actual, name)
        for key in _changed_keys(exp_coll, act_coll):
            if len(out) >= limit:
                return out
            exp_rec, act_rec = exp_coll.get(key), act_coll.get(key)
            if exp_rec is act_rec or exp_rec == act_rec:
                continue
            _diff_record(name, key, exp_rec, act_rec, out, limit)
    for name, _, norm_list in _LIST_NORMS:
        if len(out) >= limit:
            return out
        if not _changed_keys(getattr(expected, name), getattr(actual, name)):
            continue
        _diff_list(name, norm_list, expected, actual, out, limit)
    return _with_today(expected, actual, out, limit)


def grade(
    task: dict[str, Any], final: State, initial: State | None = None, limit: int = MAX_DIFFS
) -> GradeResult:
    """Compare ``final`` with the task's expected state; success iff there is no difference."""
    expected = expected_state(task)
    diffs = _fast_diff(expected, final, limit)
    changed = True if initial is None else bool(_fast_diff(initial, final, 1))
    return GradeResult(success=not diffs, diffs=diffs, changed_from_initial=changed)


def observe(true_success: bool, schedule: Any) -> tuple[float, bool]:
    """Apply one-sided outcome noise: returns (observed reward, flipped)."""
    flipped = bool(schedule is not None and true_success and schedule.outcome_flip())
    return (0.0 if flipped or not true_success else 1.0), flipped

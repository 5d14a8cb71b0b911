"""The scripted reference agent (docs/simulator.md#reference-agent): it knows the task's oracle plan and only has to
survive the noise. ``naive`` makes each planned call once; ``recovering`` retries, waits out rate limits
and verifies writes that timed out. It is a strong reference, not a proven ceiling.
"""

from __future__ import annotations

import json
from typing import Any

from paired_rollouts.backoffice.grader import MAX_DIFFS, grade, observe
from paired_rollouts.backoffice.tasks import budget_for
from paired_rollouts.backoffice.world import World, order_refunded, reserved_on_order
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.noisy_api import NoisyToolAPI
from paired_rollouts.noise.schedule import NoiseSchedule

POLICIES: tuple[str, ...] = ("naive", "recovering")
MAX_ATTEMPTS = 5
VERIFY_READS = 2
DEFAULT_WAIT = 30


class _OutOfBudget(Exception):
    pass


def lookup_calls(task: dict[str, Any], world: World) -> list[dict[str, Any]]:
    """Reads the reference makes first: find the customer by exact name, then open each named order."""
    calls = [{"tool": "search_customers", "args": {"query": world.customers[task["customer_id"]]["name"]}}]
    seen: set[str] = set()
    for step in task["oracle_plan"]:
        order_id = step["args"].get("order_id")
        if order_id and order_id not in seen:
            seen.add(order_id)
            calls.append({"tool": "get_order", "args": {"order_id": order_id}})
    return calls


def _before(call: dict[str, Any], world: World) -> int:
    """The live quantity a timed-out write is verified against (refunded cents / reserved units)."""
    tool = call["tool"]
    if tool != "issue_refund" and tool != "reserve_stock":
        return 0
    args = call["args"]
    order = world.orders.get(args.get("order_id"))
    if order is None:
        return 0
    if tool == "issue_refund":
        return order_refunded(order)
    return reserved_on_order(order, args["sku"])


def _verified(call: dict[str, Any], order: dict[str, Any], before: int) -> bool | None:
    """True/False when the read settles whether the write happened; None when the read lacks the field."""
    tool, args = call["tool"], call["args"]
    if tool == "update_shipping_address":
        address = order.get("shipping_address")
        if not isinstance(address, dict):
            return None
        return address == {"street": args["street"], "city": args["city"], "postal_code": args["postal_code"]}
    if tool in ("cancel_order", "schedule_shipment"):
        if "status" not in order:
            return None
        return order["status"] == ("cancelled" if tool == "cancel_order" else "shipped")
    if tool == "issue_refund":
        if "refunded_cents" not in order:
            return None
        return order["refunded_cents"] >= before + args["amount_cents"]
    if tool == "reserve_stock":
        if not isinstance(order.get("reservations"), list):
            return None
        have = sum(r["quantity"] for r in order["reservations"] if r["sku"] == args["sku"])
        return have >= before + args["quantity"]
    return None  # create_ticket: undecidable (tickets never time out)


_PARSED_ERRORS: dict[str, dict[str, Any]] = {}


def _parse_error(text: str) -> dict[str, Any]:
    """``json.loads`` of an error response, memoised (few distinct texts; the result is only read)."""
    parsed = _PARSED_ERRORS.get(text)
    if parsed is None:
        parsed = json.loads(text)
        if len(_PARSED_ERRORS) >= 4096:
            _PARSED_ERRORS.clear()
        _PARSED_ERRORS[text] = parsed
    return parsed


class _Runner:
    __slots__ = ("api", "budget", "used")

    def __init__(self, api: NoisyToolAPI, budget: int) -> None:
        self.api = api
        self.budget = budget
        self.used = 0

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The parsed response, or None for a success (tool responses with errors start '{"error"')."""
        if self.used >= self.budget:
            raise _OutOfBudget
        self.used += 1
        text = self.api.invoke(tool, args)  # tools never mutate their arguments; the log keeps them
        return _parse_error(text) if text.startswith('{"error"') else None

    def attempt(self, tool: str, args: dict[str, Any]) -> None:
        """A call whose response the caller does not read (the naive policy)."""
        if self.used >= self.budget:
            raise _OutOfBudget
        self.used += 1
        self.api.invoke(tool, args, False)

    def read(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.used >= self.budget:
            raise _OutOfBudget
        self.used += 1
        return json.loads(self.api.invoke(tool, dict(args)))


def _recover(runner: _Runner, call: dict[str, Any], world: World, is_write: bool) -> None:  # noqa: C901 - one branch per fault kind; the reference agent's recovery order is its specification
    before = _before(call, world) if is_write else 0
    tool, args = call["tool"], call["args"]
    invoke = runner.api.invoke
    for _ in range(MAX_ATTEMPTS):
        # ``runner.call`` inlined (the hot loop of the reference): budget, count, response
        if runner.used >= runner.budget:
            raise _OutOfBudget
        runner.used += 1
        text = invoke(tool, args, False)  # no text for a success; tools never mutate their arguments
        if text is None or not text.startswith('{"error"'):
            return
        error = _parse_error(text)["error"]
        code = error.get("code") if isinstance(error, dict) else None
        if code == "RATE_LIMITED":
            runner.call("wait", {"seconds": error.get("retry_after_seconds", DEFAULT_WAIT)})
            continue
        if code == "SERVICE_UNAVAILABLE":
            continue
        if code == "TIMEOUT":
            order_id = args.get("order_id")
            verdict = None
            for _ in range(VERIFY_READS):
                read = runner.read("get_order", {"order_id": order_id})
                if "error" in read:
                    continue
                verdict = _verified(call, read, before)
                if verdict is not None:
                    break
            if verdict:
                return
            continue
        return  # any other error: give up on this call


def run_scripted(
    task: dict[str, Any],
    config: NoiseConfig | None = None,
    schedule_seed: int | None = None,
    policy: str = "recovering",
    lookups: bool = True,
    budget: int | None = None,
    keep_log: bool = False,
) -> dict[str, Any]:
    """One scripted episode; returns success, observed_reward, flipped, calls, faults, exposed, ..."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    config = NoiseConfig.clean() if config is None else config
    schedule = None if config.is_clean else NoiseSchedule(int(schedule_seed), config)  # type: ignore[arg-type]
    world = World.generate(int(task["world_seed"]))
    api = NoisyToolAPI(world, schedule)
    runner = _Runner(api, budget_for(task) if budget is None else budget)
    reads = lookup_calls(task, world) if lookups else []
    budget_exceeded = False
    try:
        if policy == "naive":
            for call in reads:
                runner.attempt(call["tool"], call["args"])
            for call in task["oracle_plan"]:
                runner.attempt(call["tool"], call["args"])
        else:
            for call in reads:
                _recover(runner, call, world, False)
            for call in task["oracle_plan"]:
                _recover(runner, call, world, True)
    except _OutOfBudget:
        budget_exceeded = True
    api.invoke("finish", {"summary": "done"})
    result = grade(task, world, initial=None, limit=MAX_DIFFS if keep_log else 1)  # success needs one diff
    observed, flipped = observe(result.success, schedule)
    counts: dict[str, int] = {}  # api.exposure_counts without building a Counter
    for entry in api.fault_log:
        counts[entry["kind"]] = counts.get(entry["kind"], 0) + 1
    out = {
        "task_id": task["task_id"],
        "policy": policy,
        "schedule_seed": schedule_seed,
        "success": result.success,
        "observed_reward": observed,
        "flipped": flipped,
        "calls": len(api.call_log),
        "budget": runner.budget,
        "budget_exceeded": budget_exceeded,
        "faults": dict(sorted(counts.items())),
        "exposed": api.exposed,
        "outage_hit": "outage" in counts or "outage_ongoing" in counts,  # the kinds that start "outage"
    }
    if keep_log:
        out["call_log"] = api.call_log
        out["fault_log"] = api.fault_log
        out["diffs"] = result.diffs
    return out

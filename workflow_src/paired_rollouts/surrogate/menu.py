"""The surrogate's action menu and episode driver: it acts in the real back office through
``EpisodeSession`` (the same budgeted, noisy call path and grader as the LLM's environment).

Plan = the scripted reference's lookups (find the customer, open each order) followed by the task's
oracle writes. At each turn the menu is built from the plan and the last observation: the next planned
call; retry the failed call; wait out a rate limit; page through a truncated list; read the order again
after a write; check a write that timed out; and the plausible mistakes: a wrong argument, a skipped
step, finishing early. Which context the agent is in depends on tool results; its choice given the
context depends only on the policy.
"""

from __future__ import annotations

import json
import random
from typing import Any

from paired_rollouts.agents.scripted import _before, _verified, lookup_calls
from paired_rollouts.backoffice.tools import LIST_TOOLS, WRITE_TOOLS
from paired_rollouts.backoffice.words import TICKET_PRIORITIES
from paired_rollouts.episode import EpisodeSession
from paired_rollouts.surrogate.policy import (
    CHECK,
    CONTEXTS,
    FINISH,
    NEXT,
    PAGE,
    PROCEED,
    REREAD,
    RETRY,
    SKIP,
    WAIT,
    WRONG,
    Decision,
    Policy,
)

_WRITES = frozenset(WRITE_TOOLS)
_LISTS = frozenset(LIST_TOOLS)
_POS = {ctx: {a: j for j, a in enumerate(actions)} for ctx, actions in CONTEXTS.items()}
MAX_TURNS = 64  # decisions; the tool budget ends an episode long before (finish and waits are free)


def plan_of(task: dict[str, Any], world: Any) -> list[dict[str, Any]]:
    return lookup_calls(task, world) + [dict(step, write=True) for step in task["oracle_plan"]]


def wrong_call(call: dict[str, Any], world: Any) -> dict[str, Any]:
    """A plausible mistake: the planned write on a neighbouring order (or, without an order, another
    priority). The grader sees the wrong effect, or the API refuses the call."""
    args = dict(call["args"])
    order_id = args.get("order_id")
    if order_id:
        ids = sorted(world.orders)
        args["order_id"] = ids[(ids.index(order_id) + 1) % len(ids)] if order_id in ids else ids[0]
    else:
        args["priority"] = TICKET_PRIORITIES[
            (TICKET_PRIORITIES.index(args.get("priority", "low")) + 1) % len(TICKET_PRIORITIES)
        ]
    return {"tool": call["tool"], "args": args, "write": True}


_PROCEED_CONTEXTS = frozenset({"next_read", "next_write", "next_write_unread"})
# Available positions per context: all actions, or all but NEXT ("move on") once the plan is done.
_ALL = {ctx: tuple(range(len(actions))) for ctx, actions in CONTEXTS.items()}
_NO_NEXT = {ctx: tuple(j for j, a in enumerate(actions) if a != NEXT) for ctx, actions in CONTEXTS.items()}


_CODES: dict[str, tuple[str | None, dict[str, Any] | None]] = {}


def _code(text: str) -> tuple[str | None, dict[str, Any] | None]:
    """The error code of a response (None for a success); the payload only where its fields are needed.
    Memoised per error text (a few hundred distinct ones; the payload is only read)."""
    if not text.startswith('{"error"'):
        return None, None
    found = _CODES.get(text)
    if found is None:
        if len(_CODES) >= 4096:
            _CODES.clear()
        found = _CODES[text] = _parse_code(text)
    return found


def _parse_code(text: str) -> tuple[str | None, dict[str, Any] | None]:
    if '"RATE_LIMITED"' in text:
        payload = json.loads(text)
        return payload["error"].get("code"), payload
    start = text.find('"code":"')
    if start < 0:
        payload = json.loads(text)
        return payload["error"].get("code"), payload
    start += 8
    return text[start : text.index('"', start)], None


def play(session: EpisodeSession, task: dict[str, Any], policy: Policy, rng: random.Random) -> list[Decision]:  # noqa: C901 - the surrogate's hot loop, inlined: one branch per menu decision (docs/simulator.md#speed)
    """Run one episode on a session that has just been ``reset``; returns the decisions taken.
    The caller grades with ``session.finish_and_grade()``."""
    world = session.world
    plan = plan_of(task, world)
    decisions: list[Decision] = []
    read_orders: set[str] = set()
    i = 0  # next planned call
    pending: dict[str, Any] | None = None  # the last call made (what RETRY repeats)
    ctx = "start"
    retry_after = 30
    next_offset: int | None = None
    before = 0

    def call(c: dict[str, Any]) -> str | None:
        """The response text of a list page; of any other call only an error's (None for a success)."""
        tool = c["tool"]
        return session.invoke(tool, c["args"], tool in _LISTS)

    def proceed_context() -> str | None:
        if i >= len(plan):
            return None
        nxt = plan[i]
        if not nxt.get("write"):
            return "next_read"
        order_id = nxt["args"].get("order_id")
        return "next_write_unread" if order_id and order_id not in read_orders else "next_write"

    def observe(c: dict[str, Any], text: str | None) -> str | None:
        """The context after a call's response (None = plan done and nothing pending: finish)."""
        nonlocal retry_after, next_offset
        code, payload = (None, None) if text is None else _code(text)
        is_write = bool(c.get("write"))
        if code is None:
            if not is_write and c["tool"] == "get_order":
                read_orders.add(c["args"]["order_id"])
            if is_write:
                return "after_write" if i < len(plan) else "after_last_write"
            if text is not None and '"truncated":true' in text:  # only list pages carry text and truncate
                next_offset = json.loads(text).get("next_offset")
                if next_offset is not None:
                    return "truncated"
            return proceed_context()
        if code == "SERVICE_UNAVAILABLE":
            return "unavailable_write" if is_write else "unavailable_read"
        if code == "RATE_LIMITED":
            retry_after = int(payload["error"].get("retry_after_seconds", 30))
            return "rate_write" if is_write else "rate_read"
        if code == "TIMEOUT":
            return "timeout"
        if code == "BUDGET_EXCEEDED":
            return "over"
        return "error"

    api = session.api  # the episode's API: ``session.finished`` is its flag
    choose = policy.choose
    ctx = proceed_context() or "done"
    for _ in range(MAX_TURNS):
        if ctx in ("done", "over") or api.finished:
            break
        avail = _NO_NEXT[ctx] if i >= len(plan) and ctx not in _PROCEED_CONTEXTS else _ALL[ctx]
        chosen = choose(ctx, avail, rng)
        decisions.append((ctx, avail, chosen))
        action = CONTEXTS[ctx][chosen]
        if action == FINISH:
            break
        if action == PROCEED or (action == NEXT and ctx not in _PROCEED_CONTEXTS):
            pending = None
            ctx = proceed_context() or "done"
            continue
        if action in (NEXT, WRONG):
            planned = plan[i]
            i += 1
            pending = planned if action == NEXT else wrong_call(planned, world)
            if pending.get("write"):
                before = _before(pending, world)
            ctx = observe(pending, call(pending)) or "done"
            continue
        if action == SKIP:
            i += 1
            ctx = proceed_context() or "done"
            continue
        if action == RETRY:
            ctx = observe(pending, call(pending)) or "done"
            continue
        if action == WAIT:
            session.call("wait", seconds=retry_after)
            ctx = "waited"
            continue
        if action == PAGE:
            page = {"tool": pending["tool"], "args": {**pending["args"], "offset": next_offset}}
            ctx = observe(page, call(page)) or "done"
            continue
        if action == REREAD:
            read = {"tool": "get_order", "args": {"order_id": pending["args"].get("order_id")}}
            if not read["args"]["order_id"]:
                ctx = proceed_context() or "done"
                continue
            text = call(read)
            code = None if text is None else _code(text)[0]
            ctx = "over" if code == "BUDGET_EXCEEDED" else (proceed_context() or "done")
            continue
        if action == CHECK:
            order_id = pending["args"].get("order_id")
            text = session.call("get_order", order_id=order_id) if order_id else '{"error":{}}'
            code, _ = _code(text)
            if code == "BUDGET_EXCEEDED":
                ctx = "over"
                continue
            verdict = None if code is not None else _verified(pending, json.loads(text), before)
            ctx = ("after_write" if i < len(plan) else "after_last_write") if verdict else "unverified"
            continue
        raise AssertionError(action)
    if not api.finished:
        session.call("finish", summary="done")
    return decisions


__all__ = ["play", "plan_of", "wrong_call", "MAX_TURNS", "_POS"]

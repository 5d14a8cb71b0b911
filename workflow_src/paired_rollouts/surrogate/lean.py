"""The surrogate's episodes compiled: ``menu.play`` in this back office, then ``finish_outcome`` or
``finish_and_grade``, played by surrogate/_lean_episode.c (docs/simulator.md#speed, seventh pass).

The C episode is a second implementation of the Python one, which stays the reference. This module
compiles what it needs from the Python definitions, once per world seed and task: the world's orders and
stock, and every call the task's episode can make (the plan's, ``menu.wrong_call``'s variant of each
planned write, the get_order of each call's order) with its event key (``noise.schedule.event_key``) and
every check of ``backoffice/tools.py`` that does not depend on the world's state already made. The
episode draws the policy's choices from the rollout's own ``random.Random``; it computes each fate as
``NoiseSchedule.fate`` does (the same SHA-256 seed and CPython's Mersenne draws, checked on import, else
it asks the schedule) and each menu's probabilities as ``Policy`` does (checked on import, else it takes
the policy's). An outcome record comes back directly, with the episode's exact action score; a full
record is built by ``full_record``, which replays the writes, waits and finish the episode executed on a
fresh world without noise (each such course once per task) and hands the world's grade and the call log to
``EpisodeSession.graded_record``, the grader and record of the Python path.

A task or world the compiled episode does not cover (arguments of other types than the pools', a tool
the menu never calls, an oracle plan that does not replay, records of other shapes) compiles to None and
is played in Python, as is everything when the extension is not built or ``PAIRED_ROLLOUTS_PURE_FATES=1``
(the switch of every compiled helper: to audit or time the pure path). tests/test_lean_episode.py plays
both on the pools under every regime, decision by decision and record by record.
"""

from __future__ import annotations

import os
import random
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from paired_rollouts.backoffice import words
from paired_rollouts.backoffice.grader import ByTask, GradeResult
from paired_rollouts.backoffice.tools import _PARAM_NAMES, _REQUIRED_SET, WRITE_TOOLS, ToolAPI, _search_hits
from paired_rollouts.backoffice.world import (
    SHIPPING_WINDOW_DAYS,
    TODAY_DAY,
    WORLD_CACHE,
    World,
    initial_state,
)
from paired_rollouts.episode import EpisodeSession
from paired_rollouts.noise.config import FAULT_TYPES, NoiseConfig
from paired_rollouts.noise.schedule import NoiseSchedule, _fate_tables, event_key
from paired_rollouts.surrogate.menu import _ALL, _NO_NEXT, MAX_TURNS, lookup_calls, wrong_call
from paired_rollouts.surrogate.policy import (
    CHECK,
    CONTEXTS,
    FINISH,
    NEXT,
    PAGE,
    PARAM_INDEX,
    PROCEED,
    REREAD,
    RETRY,
    SKIP,
    WAIT,
    WRONG,
    Decision,
    P,
    Policy,
)

#: the tools the menu calls, in the C file's order (``setup`` checks the names)
TOOLS = ("search_customers", "get_order", *WRITE_TOOLS)
ACTIONS = (NEXT, RETRY, WAIT, PAGE, REREAD, CHECK, WRONG, SKIP, FINISH, PROCEED)
C_CONTEXTS = (
    "next_read",
    "next_write",
    "next_write_unread",
    "after_write",
    "after_last_write",
    "unavailable_read",
    "unavailable_write",
    "rate_read",
    "rate_write",
    "timeout",
    "error",
    "truncated",
    "waited",
    "unverified",
)
C_STATUSES = ("pending", "paid", "shipped", "delivered", "cancelled")
_LIMIT = 2**62


class Unsupported(Exception):
    """A world or call the compiled episode does not cover: the episode is played in Python."""


def _load() -> Any:
    """The extension, set up with the menu's actions, or None (not built, switched off, or built for
    other contexts, statuses or actions than these)."""
    if os.environ.get("PAIRED_ROLLOUTS_PURE_FATES", "") not in ("", "0"):
        return None
    if tuple(CONTEXTS) != C_CONTEXTS or words.ORDER_STATUSES != C_STATUSES:
        return None
    if any(action not in ACTIONS for actions in CONTEXTS.values() for action in actions):
        return None
    try:
        from paired_rollouts.surrogate import _lean_episode
    except ImportError:
        return None
    menus = tuple(
        (ctx, tuple(ACTIONS.index(a) for a in actions), tuple(PARAM_INDEX[ctx]), _ALL[ctx], _NO_NEXT[ctx])
        for ctx, actions in CONTEXTS.items()
    )
    _lean_episode.setup(menus, P, MAX_TURNS, TOOLS)
    return _lean_episode


_C = _load()
#: which path plays the surrogate's episodes in this process, for benchmarks and tests
LEAN_EPISODE = "compiled (surrogate/_lean_episode.c)" if _C is not None else "Python (surrogate/menu.py)"


def _int(value: Any) -> int:
    if type(value) is not int or not -_LIMIT < value < _LIMIT:
        raise Unsupported(f"not a plain int: {value!r}")
    return value


def _text(value: Any) -> str:
    if type(value) is not str:
        raise Unsupported(f"not a str: {value!r}")
    return value


class CompiledWorld(NamedTuple):
    capsule: Any
    orders: dict[str, int]
    skus: dict[str, int]
    customers: dict[str, int]
    state: Any  # the initial State it was compiled from


@lru_cache(maxsize=WORLD_CACHE)
def compiled_world(seed: int) -> CompiledWorld | None:
    """The compiled initial world of ``seed`` (None where its records are not the generator's shapes)."""
    if _C is None:
        return None
    state = initial_state(seed)
    try:
        return _compile_world(state)
    except Unsupported:
        return None


def _compile_world(state: Any) -> CompiledWorld:
    orders = {key: j for j, key in enumerate(state.orders)}
    skus = {key: j for j, key in enumerate(state.products)}
    customers = {key: j for j, key in enumerate(state.customers)}
    capsule = _C.world_of(state.orders, state.products, customers, skus, C_STATUSES)
    if capsule is None:
        raise Unsupported("a record of another shape than the generator's")
    return CompiledWorld(capsule, orders, skus, customers, state)


class _Specs:
    """The calls of one task's episode, numbered; each with its event key's number."""

    def __init__(self, world: CompiledWorld) -> None:
        self.world = world
        self.rows: list[tuple] = []
        self.calls: list[tuple[str, dict[str, Any], str]] = []  # (tool, args, event) of each row
        self.index: dict[tuple, int] = {}
        self.keys: dict[tuple[str, str], int] = {}

    def add(self, call: dict[str, Any]) -> int:
        tool, args = call["tool"], call["args"]
        write = bool(call.get("write"))
        try:
            memo = (tool, write, *((key, type(value), value) for key, value in sorted(args.items())))
            found = self.index.get(memo)
        except TypeError:  # an argument value that is not hashable or not comparable
            raise Unsupported("arguments of other types than the pools'") from None
        if found is not None:
            return found
        if tool not in TOOLS:
            raise Unsupported(f"a call of {tool}")
        if not (_PARAM_NAMES[tool].issuperset(args) and args.keys() >= _REQUIRED_SET[tool]):
            raise Unsupported("arguments Python refuses")
        number = self.index[memo] = len(self.rows)
        self.rows.append(())  # reserved: a get_order call may name itself below
        event = event_key(tool, args)
        self.calls.append((tool, args, event))
        key = self.keys.setdefault((tool, event), len(self.keys))
        fields = self._fields(tool, args)
        order_id = args.get("order_id")
        read = self.add({"tool": "get_order", "args": {"order_id": order_id}}) if order_id else -1
        self.rows[number] = (TOOLS.index(tool), int(write), key, *fields[:1], tool, event, *fields[1:], read)
        return number

    def _fields(self, tool: str, args: dict[str, Any]) -> tuple:  # noqa: C901 - one branch per tool's static checks (backoffice/tools.py)
        """(ok, order, sku, customer, carrier, day, category, priority, linked, amount, qty, needed,
        offset, hits, street, city, postal, raw street, raw city, raw postal)."""
        world = self.world
        f: dict[str, Any] = dict.fromkeys(
            ("order", "sku", "customer", "carrier", "day", "category", "priority", "linked"), -1
        )
        f.update(amount=0, qty=0, needed=0, offset=0, hits=0)
        texts: tuple[Any, ...] = (None,) * 6
        ok = True
        if "order_id" in args and tool != "create_ticket":
            f["order"] = world.orders.get(_text(args["order_id"]), -1)
            ok = f["order"] >= 0
        if tool == "search_customers":
            query = _text(args["query"]).strip()
            f["offset"] = _int(args.get("offset", 0))
            ok = bool(query) and f["offset"] >= 0
            f["hits"] = len(_search_hits(world.state.customers, query.lower())) if ok else 0
        elif tool == "update_shipping_address":
            raw = tuple(_text(args[k]) for k in ("street", "city", "postal_code"))
            stripped = tuple(v.strip() for v in raw)
            ok = ok and all(stripped)
            texts = (*stripped, *raw)
        elif tool == "cancel_order":
            ok = ok and bool(_text(args["reason"]).strip())
        elif tool == "issue_refund":
            f["amount"] = _int(args["amount_cents"])
            ok = ok and f["amount"] >= 1 and bool(_text(args["reason"]).strip())
        elif tool == "reserve_stock":
            sku = _text(args["sku"])
            f["sku"] = world.skus.get(sku, -1)
            f["qty"] = _int(args["quantity"])
            order = world.state.orders.get(args["order_id"]) if ok else None
            on_order = order is not None and any(item["sku"] == sku for item in order["items"])
            f["needed"] = (
                sum(item["quantity"] for item in order["items"] if item["sku"] == sku) if order else 0
            )
            ok = ok and f["sku"] >= 0 and f["qty"] >= 1 and on_order
        elif tool == "schedule_shipment":
            carrier = _text(args["carrier"]).strip().lower()
            f["day"] = _int(args["day"])
            ok = (
                ok and carrier in words.CARRIERS and TODAY_DAY <= f["day"] <= TODAY_DAY + SHIPPING_WINDOW_DAYS
            )
            f["carrier"] = words.CARRIERS.index(carrier) if carrier in words.CARRIERS else -1
        elif tool == "create_ticket":
            customer_id = _text(args["customer_id"])
            category = _text(args["category"]).strip().lower()
            priority = _text(args["priority"]).strip().lower()
            linked = _text(args["order_id"]).strip()
            f["customer"] = world.customers.get(customer_id, -1)
            f["category"] = (
                words.TICKET_CATEGORIES.index(category) if category in words.TICKET_CATEGORIES else -1
            )
            f["priority"] = (
                words.TICKET_PRIORITIES.index(priority) if priority in words.TICKET_PRIORITIES else -1
            )
            ok = f["customer"] >= 0 and f["category"] >= 0 and f["priority"] >= 0
            ok = ok and bool(_text(args["summary"]).strip())
            if linked:
                f["linked"] = world.orders.get(linked, -1)
                order = world.state.orders.get(linked)
                ok = ok and order is not None and order["customer_id"] == customer_id
        elif tool != "get_order":
            raise Unsupported(f"a call of {tool}")
        return (int(ok), *f.values(), *texts)


def _compile_task(task: dict[str, Any]) -> CompiledTask | None:
    world = compiled_world(int(task["world_seed"]))
    if world is None:
        return None
    lookups = lookup_calls(task, world.state)
    plan = lookups + [dict(step, write=True) for step in task["oracle_plan"]]
    specs = _Specs(world)
    try:
        steps = []
        for step in plan:
            next_call = specs.add(step)
            write = bool(step.get("write"))
            wrong = specs.add(wrong_call(step, world.state)) if write else -1
            order_id = step["args"].get("order_id")
            unread = -2 if not order_id else world.orders.get(order_id, -3)
            steps.append((next_call, wrong, int(write), unread))
    except Unsupported:
        return None
    oracle = tuple(next_call for next_call, _, _, _ in steps[len(lookups) :])
    capsule = _C.task(world.capsule, tuple(specs.rows), tuple(steps), oracle, len(specs.keys))
    return None if capsule is None else CompiledTask(capsule, specs.calls, {}, {})


class CompiledTask(NamedTuple):
    """A task compiled for the C episode, with each of its calls' (tool, arguments, event key) and the
    codes its reads return (filled as met: a read's code never depends on the world's state, as no
    tool creates or deletes a customer or an order)."""

    capsule: Any
    calls: list[tuple[str, dict[str, Any], str]]
    read_codes: dict[tuple[int, int], str | None]
    #: each course of executed writes, waits and finish replayed so far (its calls and pages, in order) ->
    #: their codes and the final world's grade
    replays: dict[tuple, tuple[list[str | None], GradeResult]]


_TASKS: ByTask[CompiledTask | None] = ByTask()


def compiled_task(task: dict[str, Any]) -> CompiledTask | None:
    """The compiled task (None: play it in Python), found by task object as the grader finds its
    expected state (``grader.ByTask``)."""
    if _C is None:
        return None
    return _TASKS.get(task, _compile_task)


def _python_table(policy: Policy) -> Any:
    """The policy's menus from ``Policy.cdf`` and ``Policy.probabilities`` themselves."""
    rows = tuple(
        (
            ctx,
            tuple(
                (
                    avail,
                    *(
                        (policy.cdf(ctx, avail), policy.probabilities(ctx, avail))
                        if len(avail) > 1
                        else (None, None)
                    ),
                )
                for avail in (_ALL[ctx], _NO_NEXT[ctx])
            ),
        )
        for ctx in CONTEXTS
    )
    return _C.table(rows)


def _tables_agree() -> bool:
    """Does ``table_of`` compute ``Policy``'s very probabilities on this Python (its ``sum`` adds left to
    right and its ``math.exp`` is the C library's)? Checked on policies from uniform to extreme."""
    rng = random.Random(20261204)
    for scale in (0.0, 0.5, 2.0, 8.0, 40.0):
        theta = [rng.gauss(0.0, scale) for _ in range(P)]
        if _C.menus(_C.table_of(theta)) != _C.menus(_python_table(Policy(theta))):
            return False
    return True


def policy_table(policy: Policy) -> Any:
    """The policy's menus compiled (cached on the policy): per context, with and without NEXT, the
    positions, the probabilities and the cumulative probabilities that ``Policy.choose`` bisects."""
    table = policy.__dict__.get("_lean_table")
    if table is None:
        table = _C.table_of(policy.theta) if _TABLE_OF else _python_table(policy)
        policy.__dict__["_lean_table"] = table
    return table


def fault_tables(config: NoiseConfig) -> Any:
    """A noise configuration's fault tables compiled (cached on the frozen config, as ``_fate_tables``)."""
    faults = config.__dict__.get("_lean_faults")
    if faults is None:
        tables = _fate_tables(config)
        rows = tuple(
            None
            if tool not in tables
            else (tables[tool].rate, tuple(tables[tool].cum_weights), tables[tool].types)
            for tool in TOOLS
        )
        faults = _C.faults(rows, config.challenge == "writes_once")
        object.__setattr__(config, "_lean_faults", faults)  # derived data, as _fate_tables is
    return faults


def _fates_agree() -> bool:
    """Do the compiled fates equal ``NoiseSchedule.fate``'s (SHA-256, the lazy twist, the type draw) on
    this Python? Checked on every tool under configurations that reach every fault type."""
    configs = (
        NoiseConfig.transition(0.5),
        NoiseConfig(p=0.7, q=0.2, weights={t: 1.0 + k for k, t in enumerate(FAULT_TYPES)}),
        NoiseConfig.challenge_writes(),
    )
    for config in configs:
        faults = fault_tables(config)
        for seed in (0, 7, 2**31 - 1, 2**40 + 3):
            schedule = NoiseSchedule(seed, config)
            prefix = schedule._dice._prefix
            for j, tool in enumerate(TOOLS):
                for event in ("{}", '{"order_id":"O0007"}', '{"order_id":"O0012","sku":"SKU-0003"}'):
                    for k in range(4):
                        got = _C.fate(faults, prefix, j, event, k)
                        want = schedule.fate(tool, event, k)
                        if got is not NotImplemented and got != (None if want is None else tuple(want)):
                            return False
    return True


_TABLE_OF = _C is not None and _tables_agree()
_FATES = _C is not None and _fates_agree()


class Played(NamedTuple):
    """What a compiled lean episode returns: its decisions, what its outcome record needs, and its exact
    action score (``policy.score`` of the decisions)."""

    decisions: list[Decision]
    success: bool
    calls: int
    budget_exceeded: bool
    exposed: bool
    score: bytes

    def score_vector(self) -> np.ndarray:
        return np.frombuffer(self.score, dtype=np.float64)


def play(
    compiled: CompiledTask,
    policy: Policy,
    rng: random.Random,
    schedule: NoiseSchedule | None,
    budget: int,
    forced: list[int],
    trace: list[tuple[int, int, int, int]] | None = None,
) -> Played:
    """Play a compiled task's episode: ``forced`` choices first (a trajectory tree's), then the policy's;
    ``trace`` (a list) receives the calls that reached the API, for ``full_record``."""
    if schedule is None:
        fates: Any = None
    elif _FATES:
        fates = (fault_tables(schedule.config), schedule._dice._prefix, schedule.fate)
    else:
        fates = schedule.fate
    return Played(*_C.play(compiled.capsule, policy_table(policy), rng.random, fates, budget, forced, trace))


#: the faults a trace entry's call log records (the C file's TRACE_* codes), and the blocked ones' codes
TRACE_FAULTS = (
    None,
    "transient",
    "outage",
    "rate_limit",
    "stale",
    "field_dropout",
    "truncate",
    "timeout_after_commit",
    "rate_limit_ongoing",
    "outage_ongoing",
)
_READS = frozenset(("search_customers", "get_order"))
_UNKNOWN: Any = object()  # a read code not met yet
_BLOCKED = {
    "transient": "SERVICE_UNAVAILABLE",
    "outage": "SERVICE_UNAVAILABLE",
    "outage_ongoing": "SERVICE_UNAVAILABLE",
    "rate_limit": "RATE_LIMITED",
    "rate_limit_ongoing": "RATE_LIMITED",
}


def full_record(
    session: EpisodeSession,
    task: dict[str, Any],
    compiled: CompiledTask,
    trace: list[tuple[int, int, int, int]],
    played: Played,
    budget: int,
) -> dict[str, Any]:
    """The full episode record (``finish_and_grade``'s) of a compiled episode: its traced calls replayed
    without noise on a fresh world (what the noisy API executed, in its order: a blocked call executes
    nothing, a stale read or a truncated page changes nothing), giving every call's code and the final
    world that ``EpisodeSession.grade_of`` grades for ``graded_record``. Only the writes, waits and the
    finish that executed change the world, so each such course is replayed once per task; a blocked
    call's code is its fault's and a read's code is its task's."""
    faults = [TRACE_FAULTS[logged] for _, _, logged, _ in trace]
    course = tuple(
        (spec, offset)
        for (spec, offset, _, _), fault in zip(trace, faults, strict=True)
        if spec < 0 or (fault not in _BLOCKED and compiled.calls[spec][0] not in _READS)
    )
    replayed = compiled.replays.get(course)
    if replayed is None:
        replayed = _replay(session, task, compiled, course)
        if len(compiled.replays) < REPLAYS_PER_TASK:
            compiled.replays[course] = replayed
    executed, result = replayed
    codes = iter(executed)
    noisy = session.schedule is not None
    call_log: list[dict[str, Any]] = []
    fault_kinds: list[str] = []
    for (spec, offset, _, k), fault in zip(trace, faults, strict=True):
        tool, args = _call_of(compiled, spec, offset)
        if spec < 0:  # wait or the closing finish
            code = next(codes)
            call_log.append({"tool": tool, "args": args, "ok": code is None, "code": code})
            continue
        code = _BLOCKED.get(fault)  # type: ignore[arg-type]
        if code is None:
            code = _read_code(task, compiled, spec, offset) if tool in _READS else next(codes)
        if fault is not None:
            fault_kinds.append(fault)
        entry = {"tool": tool, "args": args, "ok": code is None, "code": code}
        if noisy:
            entry.update(fault=fault, event=compiled.calls[spec][2], repeat=k)
        call_log.append(entry)
    return session.graded_record(
        result, call_log, fault_kinds, played.calls, budget, played.budget_exceeded, True
    )


#: courses of calls kept per compiled task (a bound on memory; a course not kept is replayed again)
REPLAYS_PER_TASK = 256


def _read_code(task: dict[str, Any], compiled: CompiledTask, spec: int, offset: int) -> str | None:
    """A read's code, the same in every state of its task's world (met once, on a fresh world)."""
    code = compiled.read_codes.get((spec, offset), _UNKNOWN)
    if code is _UNKNOWN:
        api = ToolAPI(World.generate(int(task["world_seed"])))
        code = compiled.read_codes[spec, offset] = api.execute(*_call_of(compiled, spec, offset))[1]
    return code


def _call_of(compiled: CompiledTask, spec: int, offset: int) -> tuple[str, dict[str, Any]]:
    """The tool and arguments of a trace entry: a wait (``offset``: its seconds, spec -1), the closing
    finish (spec -2), or the compiled call ``spec`` (with its page's ``offset`` where one was asked)."""
    if spec < 0:
        return ("wait", {"seconds": offset}) if spec == -1 else ("finish", {"summary": "done"})
    tool, args, _ = compiled.calls[spec]
    return tool, args if offset < 0 else {**args, "offset": offset}


def _replay(
    session: EpisodeSession,
    task: dict[str, Any],
    compiled: CompiledTask,
    course: tuple[tuple[int, int], ...],
) -> tuple[list[str | None], GradeResult]:
    """The codes of a course of writes, waits and the finish executed in order on a fresh world, and the
    final world's grade."""
    world = World.generate(int(task["world_seed"]))
    api = ToolAPI(world)
    codes: list[str | None] = []
    for spec, offset in course:
        codes.append(api.execute(*_call_of(compiled, spec, offset))[1])
    return codes, session.grade_of(world)

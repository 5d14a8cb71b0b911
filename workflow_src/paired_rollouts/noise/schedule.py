"""A noise schedule: the fate of the k-th call of a tool on a resource, and the episode's grader flip.

Fates are pure functions of (schedule seed, tool, event key, k), so every rollout that shares a seed meets
the same faults at the same logical points (common random numbers), whatever else it does (docs/simulator.md#event-keys-and-fates).
"""

from __future__ import annotations

import json
from typing import Any

from paired_rollouts.backoffice.tools import LIST_TOOLS, READ_TOOLS, TOOL_NAMES, WRITE_TOOLS
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.pairing.dice import FATE_DRAWS as FATE_DRAWS  # which path draws (benchmarks)
from paired_rollouts.pairing.dice import Dice, Fate, FaultMixture, FaultTable

#: Fields that identify the resource a call acts on (v3 event keys); free text never enters the key.
RESOURCE_FIELDS: dict[str, tuple[str, ...]] = {
    "search_customers": (),
    "get_customer": ("customer_id",),
    "list_orders": ("customer_id",),
    "get_order": ("order_id",),
    "check_inventory": ("sku",),
    "update_shipping_address": ("order_id",),
    "cancel_order": ("order_id",),
    "issue_refund": ("order_id",),
    "reserve_stock": ("order_id", "sku"),
    "schedule_shipment": ("order_id",),
    "create_ticket": ("customer_id",),
}


def applicable_types(tool: str) -> tuple[str, ...]:
    """Fault types that can hit ``tool``, in the order used by the weighted draw (docs/simulator.md#fault-types-per-tool)."""
    if tool not in RESOURCE_FIELDS:
        return ()
    types = ["transient", "rate_limit", "outage"]
    if tool in READ_TOOLS:
        types += ["stale", "field_dropout"]
    if tool in LIST_TOOLS:
        types.append("truncate")
    if tool in WRITE_TOOLS and tool != "create_ticket":
        types.append("timeout_after_commit")
    return tuple(types)


APPLICABLE_TYPES: dict[str, tuple[str, ...]] = {name: applicable_types(name) for name in TOOL_NAMES}


def canonical_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


_SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_ .")


_SORTED_FIELDS: dict[str, tuple[str, ...]] = {tool: tuple(sorted(f)) for tool, f in RESOURCE_FIELDS.items()}


_EVENT_KEYS: dict[
    tuple[str, ...], str
] = {}  # (tool, plain ids...) -> event key, for one- and two-field tools


def event_key(tool: str, args: dict[str, Any]) -> str:
    """Compact sorted JSON of the canonical resource fields, e.g. ``{"order_id":"O0001"}``."""
    fields = _SORTED_FIELDS.get(tool, ())
    if len(fields) == 1:
        value = args.get(fields[0])
        if type(value) is str:
            key = _EVENT_KEYS.get((tool, value))
            if key is None:
                key = _event_key(fields, args)
                if len(_EVENT_KEYS) < 65536:
                    _EVENT_KEYS[(tool, value)] = key
            return key
    elif len(fields) == 2:  # reserve_stock: (order_id, sku)
        first, second = args.get(fields[0]), args.get(fields[1])
        if type(first) is str and type(second) is str:
            memo = (tool, first, second)
            key = _EVENT_KEYS.get(memo)
            if key is None:
                key = _event_key(fields, args)
                if len(_EVENT_KEYS) < 65536:
                    _EVENT_KEYS[memo] = key
            return key
    return _event_key(fields, args)


def _event_key(fields: tuple[str, ...], args: dict[str, Any]) -> str:
    # fast path for plain ids: the JSON of a stripped string of safe characters is the string in quotes
    parts = []
    for name in fields:
        value = args.get(name)
        if type(value) is not str:
            break
        text = value.strip()
        if not _SAFE_CHARS.issuperset(text):
            break
        parts.append(f'"{name}":"{text}"')
    else:
        return "{" + ",".join(parts) + "}"
    return json.dumps(
        {name: canonical_value(args.get(name)) for name in fields}, sort_keys=True, separators=(",", ":")
    )


_CHALLENGE_FATE = Fate("transient", 30, 0)
_WRITE_SET = frozenset(WRITE_TOOLS)


def _fate_tables(config: NoiseConfig) -> dict[str, FaultTable]:
    """Per-tool fault tables of ``config`` (cached on the frozen config): the pairing package's draw
    tables over each tool's applicable types, in the order of the weighted draw.

    A tool is absent when it can never fault: clean config, p <= 0, no applicable type, or all weights 0.
    """
    tables = config.__dict__.get("_fate_tables")
    if tables is None:
        tables = {}
        if not config.is_clean and config.p > 0:
            mixture = FaultMixture(config.p, config.weights)
            for tool, types in APPLICABLE_TYPES.items():
                table = mixture.table(types)
                if table is not None:
                    tables[tool] = table
        object.__setattr__(config, "_fate_tables", tables)  # derived data, not a field (asdict/eq ignore it)
    return tables


class NoiseSchedule:
    """Fates for one resolved seed under one config, drawn by ``pairing.Dice`` with the event key
    (tool, event): ``Random(derive_seed(seed, "event", tool, event, k))``. Memoised: a fate is a pure
    function of (seed, config, tool, event, k), so every rollout that shares the schedule
    (``shared_schedule``) draws it once."""

    __slots__ = ("seed", "config", "_tables", "_dice", "_challenge", "_fates", "_flip")

    def __init__(self, seed: int, config: NoiseConfig) -> None:
        self.seed = int(seed)
        self.config = config
        self._tables = _fate_tables(config)
        self._dice = Dice(self.seed)
        self._challenge = config.challenge == "writes_once"
        self._fates: dict[tuple[str, str, int], Fate | None] = {}
        self._flip: bool | None = None

    def fate(self, tool: str, event: str, k: int) -> Fate | None:
        """The fault of the k-th call (0-based) of ``tool`` on ``event``, or None (``Dice.fate``: u,
        retry_after, detail, then the type over the tool's applicable types)."""
        table = self._tables.get(tool)
        if table is None:  # no fault type can hit ``tool``; a challenge config (p = 0) has no tables
            return _CHALLENGE_FATE if self._challenge and k == 0 and tool in _WRITE_SET else None
        key = (tool, event, k)
        fates = self._fates
        if key in fates:
            return fates[key]
        fate = fates[key] = self._dice.fate(table, tool, event, repeat=k)
        return fate

    def outcome_flip(self) -> bool:
        """One draw per episode: does the grader report a true success as a failure? (``Dice.flip``,
        drawn once per schedule)"""
        flip = self._flip
        if flip is None:
            q = self.config.q
            flip = self._flip = not self.config.is_clean and q > 0 and self._dice.flip(q)
        return flip


#: schedules by (seed, config JSON): rollouts that share a resolved seed (a paired group, an evaluation
#: schedule at every checkpoint) share one schedule and so its memoised fates
_SHARED: dict[tuple[int, str], NoiseSchedule] = {}
_SHARED_MAX = 4096


def shared_schedule(seed: int, config: NoiseConfig) -> NoiseSchedule:
    """The process's schedule of (seed, config); a new one when absent (the cache is emptied when full)."""
    key = (seed, config.to_json())
    schedule = _SHARED.get(key)
    if schedule is None:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        schedule = _SHARED[key] = NoiseSchedule(seed, config)
    return schedule

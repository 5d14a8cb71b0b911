"""A noise schedule: the fate of the k-th call of a tool on a resource, and the episode's grader flip.

Fates are pure functions of (schedule seed, tool, event key, k), so every rollout that shares a seed meets
the same faults at the same logical points (common random numbers), whatever else it does (docs/simulator.md#event-keys-and-fates).
"""

from __future__ import annotations

import _random
import json
import os
import random
import struct
import threading
from bisect import bisect as _bisect
from hashlib import sha256 as _sha256
from itertools import accumulate
from typing import Any, NamedTuple

from paired_rollouts.backoffice.tools import LIST_TOOLS, READ_TOOLS, TOOL_NAMES, WRITE_TOOLS
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.seeds import derive_seed

RETRY_AFTER_CHOICES: tuple[int, ...] = (15, 30, 45, 60)

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


class Fate(NamedTuple):
    kind: str
    retry_after: int
    dropped: int


_CHALLENGE_FATE = Fate("transient", 30, 0)
_WRITE_SET = frozenset(WRITE_TOOLS)
#: ``Random.seed`` of the C base class: what ``Random(n)`` does for an int n, without the Python wrapper
_reseed = _random.Random.seed
#: the first 8 bytes of a digest as a big-endian unsigned int (``int.from_bytes(d[:8], "big")``)
_first_u64 = struct.Struct(">Q").unpack_from
#: one reseedable generator per thread (schedules of concurrent rollouts may live in different threads)
_THREAD = threading.local()


class _FateTable(NamedTuple):
    """What one tool's draw needs, precomputed once per config."""

    types: tuple[str, ...]
    cum_weights: list[float]


def _fate_tables(config: NoiseConfig) -> dict[str, _FateTable]:
    """Per-tool fault types and cumulative weights of ``config`` (cached on the frozen config).

    A tool is absent when it can never fault: clean config, p <= 0, no applicable type, or all weights 0.
    ``choices(types, cum_weights=accumulate(weights))`` is exactly ``choices(types, weights)``.
    """
    tables = config.__dict__.get("_fate_tables")
    if tables is None:
        tables = {}
        if not config.is_clean and config.p > 0:
            for tool, types in APPLICABLE_TYPES.items():
                weights = [config.weights.get(t, 0.0) for t in types]
                if types and sum(weights) > 0:
                    tables[tool] = _FateTable(types, list(accumulate(weights)))
        object.__setattr__(config, "_fate_tables", tables)  # derived data, not a field (asdict/eq ignore it)
    return tables


def _draws_after_u(rng: random.Random) -> tuple[int, int, float]:
    """(retry index, dropped, type draw): what ``choice(RETRY_AFTER_CHOICES)``, ``randrange(0, 1000000)``
    and ``choices(types, cum_weights=...)`` draw after u (CPython's ``random.py``), without their calls:
    rejection sampling on ``getrandbits``, then the ``random()`` that ``choices`` bisects with."""
    getrandbits = rng.getrandbits
    r = getrandbits(3)  # _randbelow(4): 4 .bit_length() == 3
    while r >= 4:
        r = getrandbits(3)
    dropped = getrandbits(20)  # _randbelow(1000000): 1000000 .bit_length() == 20
    while dropped >= 1000000:
        dropped = getrandbits(20)
    return r, dropped, rng.random()


def _fault(draws: tuple[int, int, float], table: _FateTable) -> Fate:
    retry_index, dropped, v = draws
    cum = table.cum_weights
    kind = table.types[_bisect(cum, v * (cum[-1] + 0.0), 0, len(cum) - 1)]
    return Fate(kind, RETRY_AFTER_CHOICES[retry_index], dropped)


def _inline_draws_agree() -> bool:
    """Do ``_draws_after_u`` and ``_fault`` give what the ``random`` methods give on this Python?"""
    table = _FateTable(("a", "b", "c", "d", "e"), [0.45, 0.6, 0.7, 0.85, 1.0])
    for seed in range(64):
        rng = random.Random(seed)
        expect = Fate("", rng.choice(RETRY_AFTER_CHOICES), rng.randrange(0, 1000000))
        expect = expect._replace(kind=rng.choices(table.types, cum_weights=table.cum_weights)[0])
        if _fault(_draws_after_u(random.Random(seed)), table) != expect:
            return False
    return True


_INLINE_DRAWS = _inline_draws_agree()


def _pure_draws(n: int, p: float) -> tuple[int, int, float] | None:
    """What ``_fate_draws.fault_draws(n, p)`` returns, drawn with ``random.Random``: a per-thread generator
    reseeded in place (the state ``Random(n)`` would have) instead of one built per call."""
    try:
        rng = _THREAD.rng
    except AttributeError:
        rng = _THREAD.rng = random.Random(0)
    _reseed(rng, n)
    return None if rng.random() >= p else _draws_after_u(rng)


def _fate_by_methods(n: int, p: float, table: _FateTable) -> Fate | None:
    """The fate drawn with ``random``'s own methods: the path of a Python where the inlined draws differ."""
    rng = random.Random(n)
    if rng.random() >= p:
        return None
    retry_after = rng.choice(RETRY_AFTER_CHOICES)
    dropped = rng.randrange(0, 1000000)
    return Fate(rng.choices(table.types, cum_weights=table.cum_weights)[0], retry_after, dropped)


def _compiled_draws_agree(fault_draws: Any) -> bool:
    """Does the compiled helper draw what ``random.Random`` draws on this Python? (checked once, on
    one- and two-word keys, both sides of p, and every retry index)"""
    seeds = (0, 1, 2**32 - 1, 2**32, 2**64 - 1, *range(2, 34), *(derive_seed("check", i) for i in range(96)))
    return all(fault_draws(n, p) == _pure_draws(n, p) for n in seeds for p in (0.25, 1.0))


def _load_compiled_draws() -> Any:
    """``_fate_draws.fault_draws`` when it is built and agrees with CPython, else None (the pure path).

    ``PAIRED_ROLLOUTS_PURE_FATES=1`` switches it off (to audit or time the pure path): the fates are the
    same either way, only slower.
    """
    if os.environ.get("PAIRED_ROLLOUTS_PURE_FATES", "") not in ("", "0") or not _INLINE_DRAWS:
        return None
    try:
        from paired_rollouts.noise._fate_draws import fault_draws
    except ImportError:  # installed where no C compiler was found: the pure path
        return None
    return fault_draws if _compiled_draws_agree(fault_draws) else None


_COMPILED_DRAWS = _load_compiled_draws()
#: which path draws the fates in this process, for benchmarks and logs
FATE_DRAWS = "compiled (noise/_fate_draws.c)" if _COMPILED_DRAWS is not None else "random.Random"


class NoiseSchedule:
    """Fates for one resolved seed under one config, memoised: a fate is a pure function of (seed, config,
    tool, event, k), so every rollout that shares the schedule (``shared_schedule``) draws it once."""

    __slots__ = ("seed", "config", "_tables", "_prefix", "_p", "_challenge", "_fates", "_flip")

    def __init__(self, seed: int, config: NoiseConfig) -> None:
        self.seed = int(seed)
        self.config = config
        self._tables = _fate_tables(config)
        self._prefix = (
            f"{self.seed}|event|"  # derive_seed(seed, "event", tool, event, k) = hash of prefix + rest
        )
        self._p = config.p
        self._challenge = config.challenge == "writes_once"
        self._fates: dict[tuple[str, str, int], Fate | None] = {}
        self._flip: bool | None = None

    def fate(self, tool: str, event: str, k: int) -> Fate | None:
        """The fault of the k-th call (0-based) of ``tool`` on ``event``, or None.

        Draws ``Random(derive_seed(seed, "event", tool, event, k))``: u, retry_after, dropped, then the
        type; when u >= p the later draws cannot matter and are skipped. The compiled helper makes the
        same draws without seeding a whole generator; without it a per-thread generator is reseeded in
        place (the state a new one would have).
        """
        table = self._tables.get(tool)
        if table is None:  # no fault type can hit ``tool``; a challenge config (p = 0) has no tables
            return _CHALLENGE_FATE if self._challenge and k == 0 and tool in _WRITE_SET else None
        key = (tool, event, k)
        fates = self._fates
        if key in fates:
            return fates[key]
        n = _first_u64(_sha256(f"{self._prefix}{tool}|{event}|{k}".encode()).digest())[0]
        draws = _COMPILED_DRAWS(n, self._p) if _COMPILED_DRAWS is not None else NotImplemented
        if draws is NotImplemented:
            if not _INLINE_DRAWS:
                fate = fates[key] = _fate_by_methods(n, self._p, table)
                return fate
            draws = _pure_draws(n, self._p)
        fate = fates[key] = None if draws is None else _fault(draws, table)
        return fate

    def outcome_flip(self) -> bool:
        """One draw per episode: does the grader report a true success as a failure?"""
        flip = self._flip
        if flip is None:
            flip = self._flip = self._draw_flip()
        return flip

    def _draw_flip(self) -> bool:
        q = self.config.q
        if self.config.is_clean or q <= 0:
            return False
        n = derive_seed(self.seed, "outcome")
        draws = _COMPILED_DRAWS(n, q) if _COMPILED_DRAWS is not None else NotImplemented
        # None exactly when Random(n).random() >= q
        return random.Random(n).random() < q if draws is NotImplemented else draws is not None


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

"""A noise schedule: the fate of the k-th call of a tool on a resource, and the episode's grader flip.

Fates are pure functions of (schedule seed, tool, event key, k), so every rollout that shares a seed meets
the same faults at the same logical points (common random numbers), whatever else it does (docs/simulator.md#event-keys-and-fates).
"""

from __future__ import annotations

import json
import random
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


def event_key(tool: str, args: dict[str, Any]) -> str:
    """Compact sorted JSON of the canonical resource fields, e.g. ``{"order_id":"O0001"}``."""
    fields = RESOURCE_FIELDS.get(tool, ())
    if len(fields) == 1:  # fast path for plain ids (the JSON of a string without specials is itself)
        value = args.get(fields[0])
        if type(value) is str:
            text = value.strip()
            if _SAFE_CHARS.issuperset(text):
                return f'{{"{fields[0]}":"{text}"}}'
    return json.dumps({name: canonical_value(args.get(name)) for name in fields}, sort_keys=True,
                      separators=(",", ":"))


def request_key(tool: str, args: dict[str, Any]) -> str:
    """All arguments canonicalised (v2 keyed faults by this; kept for logs and tests only)."""
    return json.dumps({k: canonical_value(v) for k, v in args.items()}, sort_keys=True, separators=(",", ":"))


class Fate(NamedTuple):
    kind: str
    retry_after: int
    dropped: int


_CHALLENGE_FATE = Fate("transient", 30, 0)


class NoiseSchedule:
    """Fates for one resolved seed under one config."""

    __slots__ = ("seed", "config", "_weights")

    def __init__(self, seed: int, config: NoiseConfig) -> None:
        self.seed = int(seed)
        self.config = config
        self._weights = {
            tool: [config.weights.get(t, 0.0) for t in types] for tool, types in APPLICABLE_TYPES.items()
        }

    def fate(self, tool: str, event: str, k: int) -> Fate | None:
        """The fault of the k-th call (0-based) of ``tool`` on ``event``, or None."""
        config = self.config
        if config.challenge == "writes_once":
            return _CHALLENGE_FATE if tool in WRITE_TOOLS and k == 0 else None
        types = APPLICABLE_TYPES.get(tool, ())
        if config.is_clean or config.p <= 0 or not types:
            return None
        rng = random.Random(derive_seed(self.seed, "event", tool, event, k))
        u = rng.random()
        retry_after = rng.choice(RETRY_AFTER_CHOICES)
        dropped = rng.randrange(0, 1000000)
        if u >= config.p:
            return None
        weights = self._weights[tool]
        if sum(weights) <= 0:
            return None
        kind = rng.choices(types, weights)[0]
        return Fate(kind, retry_after, dropped)

    def outcome_flip(self) -> bool:
        """One draw per episode: does the grader report a true success as a failure?"""
        q = self.config.q
        if self.config.is_clean or q <= 0:
            return False
        return random.Random(derive_seed(self.seed, "outcome")).random() < q

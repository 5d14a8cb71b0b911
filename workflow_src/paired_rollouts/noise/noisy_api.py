"""The noisy tool API (docs/simulator.md#runtime-semantics): the plain API wrapped with a schedule's faults at run time.

Handles ongoing rate limits (a clock-based block on every non-control call), outages (a per tool+resource
block for the rest of the episode), stale reads (the state before the most recent write), truncated pages,
timeouts after commit and dropped fields, and records what the agent was exposed to.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from paired_rollouts.backoffice.tools import (
    _IMPLS,
    _PARAM_NAMES,
    _REQUIRED_SET,
    CONTROL_TOOLS,
    ToolAPI,
    ToolFailure,
    check_arguments,
    dumps_compact,
    error_payload,
)
from paired_rollouts.backoffice.world import World
from paired_rollouts.noise.schedule import Fate, NoiseSchedule, event_key

MSG_UNAVAILABLE = "temporary failure; the request was not applied, retry it"
MSG_TIMEOUT = "the request timed out; it may or may not have been applied, check before retrying"
BLOCKING_KINDS = frozenset({"transient", "outage", "outage_ongoing", "rate_limit", "rate_limit_ongoing"})
_CONTROL = frozenset(CONTROL_TOOLS)


def _rate_limited(seconds: int) -> dict[str, Any]:
    return error_payload(
        "RATE_LIMITED",
        f"too many requests; wait {seconds} seconds before calling again",
        retry_after_seconds=seconds,
    )


_UNAVAILABLE_TEXT = dumps_compact(error_payload("SERVICE_UNAVAILABLE", MSG_UNAVAILABLE))
_TIMEOUT = error_payload("TIMEOUT", MSG_TIMEOUT)
_TIMEOUT_TEXT = dumps_compact(_TIMEOUT)
_RATE_LIMITED_TEXT: dict[int, str] = {}


def _rate_limited_text(seconds: int) -> str:
    """The encoded RATE_LIMITED response (a handful of distinct waits per study: cached)."""
    text = _RATE_LIMITED_TEXT.get(seconds)
    if text is None:
        text = dumps_compact(_rate_limited(seconds))
        if len(_RATE_LIMITED_TEXT) < 4096:
            _RATE_LIMITED_TEXT[seconds] = text
    return text


class NoisyToolAPI(ToolAPI):
    """ToolAPI whose calls meet the faults of ``schedule`` (None = clean: plain behaviour, no event keys)."""

    def __init__(self, world: World, schedule: NoiseSchedule | None = None) -> None:
        super().__init__(world)
        self.schedule = schedule
        self.rate_limited_until = 0
        self.outages: set[tuple[str, str]] = set()
        self.repeats: dict[tuple[str, str], int] = {}
        self.fault_log: list[dict[str, Any]] = []

    # -- exposure ------------------------------------------------------------------------------------
    @property
    def exposed(self) -> bool:
        return bool(self.fault_log)

    @property
    def exposure_counts(self) -> Counter:
        return Counter(entry["kind"] for entry in self.fault_log)

    # -- the noisy call path -----------------------------------------------------------------------------
    def invoke(self, tool: str, args: dict[str, Any], text: bool = True) -> str | None:
        """``ToolAPI.invoke`` entering the noisy path directly (the hot path of every rollout).

        With ``text=False`` a successful call returns None instead of its response (the scripted
        reference reads only errors; the call is executed and logged all the same).
        """
        if self.schedule is None or tool in _CONTROL or self.finished:
            return ToolAPI.invoke(self, tool, args)
        names = _PARAM_NAMES.get(tool)
        if names is None or not names.issuperset(args) or not args.keys() >= _REQUIRED_SET[tool]:
            check_arguments(tool, args)  # raises the precise error
        event = event_key(tool, args)
        key = (tool, event)
        repeats = self.repeats
        k = repeats.get(key, 0)
        repeats[key] = k + 1
        world = self.world

        if world.clock_seconds < self.rate_limited_until:
            return self._blocked(
                tool,
                args,
                event,
                k,
                "rate_limit_ongoing",
                "RATE_LIMITED",
                _rate_limited_text(self.rate_limited_until - world.clock_seconds),
            )
        if key in self.outages:
            return self._blocked(
                tool, args, event, k, "outage_ongoing", "SERVICE_UNAVAILABLE", _UNAVAILABLE_TEXT
            )

        fate = self.schedule.fate(tool, event, k)
        if fate is None:  # the common case: ``execute`` and ``encode`` inlined
            try:
                payload, code = _IMPLS[tool](self, world, **args), None
            except ToolFailure as failure:
                payload, code = failure.payload(), failure.code
            self.call_log.append(
                {
                    "tool": tool,
                    "args": args,
                    "ok": code is None,
                    "code": code,
                    "fault": None,
                    "event": event,
                    "repeat": k,
                }
            )
            known = self._known
            if known is not None:
                self._known = None
                if known[0] is payload:
                    return known[1] if text or code is not None else None
            return dumps_compact(payload) if text or code is not None else None
        return self._faulted(tool, args, event, k, fate, text)

    def _dispatch(self, tool: str, args: dict[str, Any]) -> str:
        if self.schedule is None or tool in _CONTROL:
            return super()._dispatch(tool, args)
        return self.invoke(tool, args)

    def _faulted(  # noqa: C901 - one branch per fault kind of the mixture (docs/simulator.md#fault-types-per-tool)
        self, tool: str, args: dict[str, Any], event: str, k: int, fate: Fate, text: bool = True
    ) -> str | None:
        """A call whose fate is a fault (``invoke``'s rarer branch)."""
        world = self.world
        key = (tool, event)
        kind = fate.kind
        if kind == "transient":
            return self._blocked(tool, args, event, k, kind, "SERVICE_UNAVAILABLE", _UNAVAILABLE_TEXT)
        if kind == "outage":
            self.outages.add(key)
            return self._blocked(tool, args, event, k, kind, "SERVICE_UNAVAILABLE", _UNAVAILABLE_TEXT)
        if kind == "rate_limit":
            self.rate_limited_until = world.clock_seconds + fate.retry_after
            return self._blocked(
                tool, args, event, k, kind, "RATE_LIMITED", _rate_limited_text(fate.retry_after)
            )

        logged_fault: str | None = None
        if kind == "stale" and world.version >= 1:
            payload, code = self.execute(tool, args, view=world.state_at(world.version - 1))
            logged_fault = "stale"
        else:
            payload, code = self.execute(tool, args)
            if code is None:
                if kind == "truncate":
                    payload = self._truncate(payload)
                    logged_fault = kind
                elif kind == "timeout_after_commit":
                    payload = _TIMEOUT
                    logged_fault = kind
                elif kind == "field_dropout":
                    keys = sorted(payload)
                    payload = dict(payload)
                    del payload[keys[fate.detail % len(keys)]]
                    logged_fault = kind
        if logged_fault is not None:
            self._log_fault(tool, event, k, logged_fault)
        self.call_log.append(
            {
                "tool": tool,
                "args": args,
                "ok": code is None,
                "code": code,
                "fault": logged_fault,
                "event": event,
                "repeat": k,
            }
        )
        if payload is _TIMEOUT:
            return _TIMEOUT_TEXT
        if code is None and not text:
            self._known = None
            return None
        return self.encode(payload)

    def _truncate(self, payload: dict[str, Any]) -> dict[str, Any]:
        shown = payload["results"][:2]
        end = payload["offset"] + len(shown)
        out = dict(payload)
        out["results"] = shown
        out["truncated"] = True
        out["next_offset"] = end if end < payload["total"] else None
        return out

    def _log_fault(self, tool: str, event: str, k: int, kind: str) -> None:
        self.fault_log.append(
            {"call_no": len(self.call_log), "tool": tool, "index": k, "kind": kind, "event": event}
        )

    def _blocked(
        self, tool: str, args: dict[str, Any], event: str, k: int, kind: str, code: str, text: str
    ) -> str:
        """Log a call that the noise stopped (``text`` is the encoded error response with ``code``)."""
        self._log_fault(tool, event, k, kind)
        self.call_log.append(
            {
                "tool": tool,
                "args": args,
                "ok": False,
                "code": code,
                "fault": kind,
                "event": event,
                "repeat": k,
            }
        )
        return text

"""``EpisodeSession``: one framework-free episode of the back office (docs/simulator.md#episodes).

Training and evaluation code wrap this object (one per concurrent rollout): ``reset`` starts an episode
on a task with a noise config and a schedule seed, ``call`` is the budgeted tool call path, and
``finish_and_grade`` grades the final state, applies the grader flip and returns the episode record.
"""

from __future__ import annotations

from typing import Any

from paired_rollouts.backoffice.grader import GradeResult, grade, observe
from paired_rollouts.backoffice.tasks import budget_for
from paired_rollouts.backoffice.tools import (
    CONTROL_TOOLS,
    MSG_EPISODE_FINISHED,
    TOOL_NAMES,
    UnknownToolError,
    dumps_sorted,
    error_response,
)
from paired_rollouts.backoffice.world import World
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.noisy_api import NoisyToolAPI
from paired_rollouts.noise.schedule import NoiseSchedule, shared_schedule

MSG_NO_EPISODE = "no episode is active; reset the environment before calling tools"
MSG_POSITIONAL = "tools take keyword arguments only"
MAX_DIFFS_IN_RECORD = 5
MAX_FAILED_CALLS_IN_RECORD = 6
_CONTROL = frozenset(CONTROL_TOOLS)
_TOOLS = frozenset(TOOL_NAMES)
_META_FIELDS = frozenset(
    (
        "task_id",
        "phase",
        "attempt",
        "condition",
        "mode",
        "schedule_seed",
        "resolved_seed",
        "slot",
        "episode_index",
    )
)


def budget_message(budget: int) -> str:
    return (
        f"the budget of {budget} tool calls is exhausted; the episode is over; do not call any more "
        "tools; reply with one short sentence"
    )


class EpisodeSession:
    """A reusable episode runner. Not thread-safe: use one instance per concurrent rollout."""

    def __init__(self) -> None:
        self.episode_index = -1  # counts every reset, all phases
        self.task: dict[str, Any] | None = None
        self.api: NoisyToolAPI | None = None
        self.world: World | None = None
        self.schedule: NoiseSchedule | None = None
        self.config: NoiseConfig | None = None
        self.calls = 0
        self.budget = 0
        self.budget_exceeded = False
        self.record: dict[str, Any] | None = None
        self._meta: dict[str, Any] = {}

    # -- episode start -------------------------------------------------------------------------------
    def reset(
        self,
        task: dict[str, Any],
        schedule_seed: int | None = None,
        noise: NoiseConfig | str | dict | None = None,
        budget: int | None = None,
        resolved_seed: int | None = None,
        slot: int = 0,
        phase: str = "train",
        condition: str = "",
        attempt: int = 1,
    ) -> None:
        """Start an episode. ``noise`` None means clean. ``resolved_seed`` None => ``schedule_seed``
        (paired/clean); independent arms pass ``independent_seed(...)``. ``budget`` None => budget_for."""
        config, resolved = self._begin(
            task, schedule_seed, noise, resolved_seed, slot, phase, condition, attempt
        )
        self.schedule = None if resolved is None else shared_schedule(int(resolved), config)
        self.world = World.generate(int(task["world_seed"]))
        self.api = NoisyToolAPI(self.world, self.schedule)
        self.calls = 0
        self.budget = budget_for(task) if budget is None else int(budget)
        self.budget_exceeded = False

    def repeat(
        self,
        course: dict[str, Any],
        task: dict[str, Any],
        schedule_seed: int | None = None,
        noise: NoiseConfig | str | dict | None = None,
        resolved_seed: int | None = None,
        slot: int = 0,
        phase: str = "train",
        condition: str = "",
        attempt: int = 1,
    ) -> dict[str, Any]:
        """The record of an episode that need not be played: ``course`` is ``course_of`` the record of an
        earlier episode on the same task, resolved seed, noise config and budget that took the same
        decisions. An episode is a pure function of those (the world, the fates and the flip are drawn
        from them), so only the meta fields differ. Counted as ``reset`` counts; the session then holds no
        live episode, and ``finish_and_grade`` returns this record."""
        self._begin(task, schedule_seed, noise, resolved_seed, slot, phase, condition, attempt)
        self.schedule = self.world = self.api = None
        self.record = {**self._meta, **course}
        return self.record

    def _begin(
        self,
        task: dict[str, Any],
        schedule_seed: int | None,
        noise: NoiseConfig | str | dict | None,
        resolved_seed: int | None,
        slot: int,
        phase: str,
        condition: str,
        attempt: int,
    ) -> tuple[NoiseConfig, int | None]:
        """Count the episode and set its task, config and meta fields; returns (config, resolved seed)."""
        config = NoiseConfig.clean() if noise is None else NoiseConfig.from_json(noise)
        if config.is_clean:
            resolved = None
        else:
            resolved = schedule_seed if resolved_seed is None else resolved_seed
            if resolved is None:
                raise ValueError("a noisy episode needs schedule_seed (or resolved_seed)")
        self.episode_index += 1
        self.task = task
        self.config = config
        self.record = None
        self._meta = {
            "task_id": task["task_id"],
            "phase": phase,
            "attempt": attempt,
            "condition": condition,
            "mode": config.mode,
            "schedule_seed": schedule_seed,
            "resolved_seed": resolved,
            "slot": slot,
            "episode_index": self.episode_index,
        }
        return config, resolved

    @property
    def active(self) -> bool:
        return self.api is not None

    @property
    def finished(self) -> bool:
        return self.api is not None and self.api.finished

    # -- the call path (docs/simulator.md#episodes) -----------------------------------------------------
    def call(self, tool: str, *args: Any, **kwargs: Any) -> str:
        """Call a tool; returns its JSON string. Raises UnknownToolError for names outside the 13 tools
        and TypeError (after counting the call) for missing or unknown keyword arguments."""
        if args and tool in _TOOLS and self.api is not None:
            return error_response("INVALID_ARGUMENT", MSG_POSITIONAL)
        return self.invoke(tool, kwargs)  # type: ignore[return-value]

    def invoke(self, tool: str, args: dict[str, Any], text: bool = True) -> str | None:
        """``call(tool, **args)`` with the arguments as one dict, which the call log keeps (never change it
        afterwards). ``text=False``: a successful call returns None instead of its response text (the
        surrogate reads the text of list pages only); it is counted, executed and logged the same."""
        if tool not in _TOOLS:
            raise UnknownToolError(f"unknown tool {tool!r}; the tools are: {', '.join(TOOL_NAMES)}")
        api = self.api
        if api is None:
            return error_response("NO_EPISODE", MSG_NO_EPISODE)
        if tool != "finish" and not api.finished:
            self.calls += 1
            if self.calls > self.budget:
                self.budget_exceeded = True
                api.finished = True
                return error_response("BUDGET_EXCEEDED", budget_message(self.budget))
        return api.invoke(tool, args, text)

    def tool(self, name: str):
        """A bound callable for one tool (``session.tool("get_order")(order_id="O0001")``)."""

        def _call(*args: Any, **kwargs: Any) -> str:
            return self.call(name, *args, **kwargs)

        _call.__name__ = name
        return _call

    # -- the end ----------------------------------------------------------------------------------------
    def finish_and_grade(self) -> dict[str, Any]:
        """Grade (once) and return the episode record (docs/simulator.md#episodes); later calls return the same record."""
        if self.record is not None:
            return self.record
        if self.api is None or self.task is None or self.world is None:
            raise RuntimeError("finish_and_grade() before reset()")
        api = self.api
        self.record = self.graded_record(
            self.grade_of(self.world),
            api.call_log,
            [fault["kind"] for fault in api.fault_log],
            self.calls,
            self.budget,
            self.budget_exceeded,
            api.finished,
        )
        return self.record

    def grade_of(self, world: World) -> GradeResult:
        """The grade a full record states for this session's task ended in ``world``."""
        assert self.task is not None
        # The record keeps the first MAX_DIFFS_IN_RECORD diffs; the diff list is built in order, so a
        # smaller limit yields exactly that prefix.
        return grade(self.task, world, initial=world.history[0], limit=MAX_DIFFS_IN_RECORD)

    def graded_record(
        self,
        result: GradeResult,
        call_log: list[dict[str, Any]],
        fault_kinds: list[str],
        calls: int,
        budget: int,
        budget_exceeded: bool,
        finished: bool,
    ) -> dict[str, Any]:
        """The full episode record of a played episode: the grade of its final world (``grade_of``), its
        call log and logged faults, on this session's task, schedule and meta fields
        (``finish_and_grade``'s, and the compiled lean episode's in surrogate/lean.py, which grades each
        course of executed calls once)."""
        outcome = self.outcome_of(result.success, calls, budget, budget_exceeded, finished, bool(fault_kinds))
        clean = self.schedule is None
        failed = []
        for entry in call_log:
            if not entry["ok"]:
                failed.append(
                    {
                        "tool": entry["tool"],
                        "code": entry["code"],
                        "args": dumps_sorted(entry["args"], str)[:200],
                    }
                )
                if len(failed) >= MAX_FAILED_CALLS_IN_RECORD:
                    break
        counts: dict[str, int] = {}  # exposure counts without building a Counter
        for kind in fault_kinds:
            counts[kind] = counts.get(kind, 0) + 1
        return {
            **outcome,
            "faults": {kind: counts[kind] for kind in sorted(counts)},
            "changed_from_initial": result.changed_from_initial,
            "diffs": result.diffs[:MAX_DIFFS_IN_RECORD],
            "tool_sequence": [
                {"tool": e["tool"], "ok": e["ok"], "code": e["code"], "event": None, "repeat": None}
                if clean or e["tool"] in _CONTROL
                else {
                    "tool": e["tool"],
                    "ok": e["ok"],
                    "code": e["code"],
                    "event": e.get("event"),
                    "repeat": e.get("repeat"),
                }
                for e in call_log
            ],
            "failed_calls": failed,
            "noise": self.config.to_json() if self.config is not None else None,
        }

    def finish_outcome(self) -> dict[str, Any]:
        """The outcome of the episode without its account: the record's meta fields and ``true_success``,
        ``observed_reward``, ``flipped``, ``calls``, ``budget``, ``budget_exceeded``, ``finished`` and
        ``exposed``, the same values ``finish_and_grade`` gives (the same grade and flip), but no diffs,
        tool sequence, failed calls, fault counts or noise text. For a trainer that writes no episode
        record (docs/simulator.md#speed, fifth pass); the session keeps no record of it."""
        if self.record is not None:
            return self.record
        api, task, world = self.api, self.task, self.world
        if api is None or task is None or world is None:
            raise RuntimeError("finish_outcome() before reset()")
        return self._outcome(grade(task, world, limit=1).success)  # no diff at all: the first one decides

    def _outcome(self, success: bool) -> dict[str, Any]:
        """The record's meta fields and outcome, in the record's key order: the grade, the schedule's flip
        of it, and the call counts and exposure of the live episode."""
        api = self.api
        assert api is not None
        return self.outcome_of(
            success, self.calls, self.budget, self.budget_exceeded, api.finished, api.exposed
        )

    def outcome_of(
        self, success: bool, calls: int, budget: int, budget_exceeded: bool, finished: bool, exposed: bool
    ) -> dict[str, Any]:
        """The outcome record (``finish_outcome``'s) of an episode played elsewhere on this session's
        schedule and meta fields: the compiled lean episode's (surrogate/lean.py)."""
        observed, flipped = observe(success, self.schedule)
        return {
            **self._meta,
            "true_success": success,
            "observed_reward": observed,
            "flipped": flipped,
            "calls": calls,
            "budget": budget,
            "budget_exceeded": budget_exceeded,
            "finished": finished and not budget_exceeded,
            "exposed": exposed,
        }

    def begin_elsewhere(
        self,
        task: dict[str, Any],
        schedule_seed: int | None = None,
        noise: NoiseConfig | str | dict | None = None,
        resolved_seed: int | None = None,
        slot: int = 0,
        phase: str = "train",
        condition: str = "",
        attempt: int = 1,
    ) -> NoiseSchedule | None:
        """Count and start an episode that is played elsewhere (the compiled lean episode): its meta
        fields and schedule as ``reset`` sets them, no live world; returns the schedule (None: clean)."""
        config, resolved = self._begin(
            task, schedule_seed, noise, resolved_seed, slot, phase, condition, attempt
        )
        self.schedule = None if resolved is None else shared_schedule(int(resolved), config)
        self.world = self.api = None
        return self.schedule

    @staticmethod
    def course_of(record: dict[str, Any]) -> dict[str, Any]:
        """What ``repeat`` needs of a record: every field but the meta fields that ``reset`` sets."""
        return {key: value for key, value in record.items() if key not in _META_FIELDS}

    @property
    def reward(self) -> float:
        """The observed reward of the current episode (grading it if needed); 0.0 without an episode."""
        if self.api is None:
            return 0.0
        return float(self.finish_and_grade()["observed_reward"])

    @property
    def call_log(self) -> list[dict[str, Any]]:
        return self.api.call_log if self.api is not None else []


__all__ = ["EpisodeSession", "MSG_EPISODE_FINISHED", "budget_message"]

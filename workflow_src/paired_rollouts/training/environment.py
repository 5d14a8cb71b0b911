"""The back office as a TRL environment (docs/simulator.md#episodes): one instance per concurrent rollout.

TRL (``environment_factory``) builds a pool of instances, calls ``reset(**row)`` with every dataset column
before each rollout, exposes every public method as a tool (schema from type hints + Google docstring)
and calls ``get_reward()`` once the rollout ends. All episode logic lives in ``EpisodeSession``; this class
only resolves the schedule seed and adapts the call convention.

The 13 tool methods are generated from ``TOOL_SIGNATURES``, so their names, argument names, order, types
and defaults are the simulator's by construction; their docstrings are ours (``chat.TOOL_DOCS``).
Generating them (rather than spelling out 13 methods) also lets a call with a missing or unknown argument
reach the session, which counts it against the budget before raising, as docs/simulator.md#episodes describes.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, ClassVar

from paired_rollouts.training import chat

POOL_FILES = ("train", "validation", "test", "diagnostic")


class BackOfficeEnv:
    """One rollout's view of the simulated back office.

    Class-level state: ``phase`` ("train", "train:step{N}", "periodic:step{N}", ...), the
    job ``attempt``, and the slot counter that numbers instances in construction order. The slot and the
    instance's episode counters feed the independent arm's seeds, so they must be reset when a trainer
    is (re)built: see ``reset_class_state``.
    """

    phase: ClassVar[str] = "train"
    attempt: ClassVar[int] = 1
    _next_slot: ClassVar[int] = 0
    # On resume at step N every instance has already served N training episodes (one per step).
    initial_train_episodes: ClassVar[int] = 0
    tasks: ClassVar[dict[str, dict[str, Any]]] = {}

    @classmethod
    def reset_class_state(cls, phase: str = "train", attempt: int = 1, initial_train_episodes: int = 0) -> None:
        cls.phase = phase
        cls.attempt = attempt
        cls._next_slot = 0
        cls.initial_train_episodes = initial_train_episodes

    @classmethod
    def load_tasks(cls, tasks_dir: str | Path) -> None:
        """Cache the tasks of every pool by task_id (reset looks them up by the row's task_id)."""
        from paired_rollouts.backoffice.tasks import load_pool

        index: dict[str, dict[str, Any]] = {}
        for pool in POOL_FILES:
            path = Path(tasks_dir) / f"{pool}.jsonl"
            if path.is_file():
                for task in load_pool(path):
                    index[task["task_id"]] = task
        cls.tasks = index

    def __init__(self) -> None:
        cls = type(self)
        self.slot = cls._next_slot
        cls._next_slot += 1
        self.episode_index = cls.initial_train_episodes - 1
        self.train_episode_index = cls.initial_train_episodes - 1
        self._session: Any = None
        self._row: dict[str, Any] = {}
        self.last_episode: dict[str, Any] | None = None
        self._reward: float | None = None
        self.resolved_seed: int | None = None
        self._draw_index = -1

    # -- TRL hooks ------------------------------------------------------------------------------------
    def reset(self, **row: Any) -> None:
        """Start a fresh episode for one dataset row (TRL passes every column)."""
        from paired_rollouts.episode import EpisodeSession
        from paired_rollouts.noise.config import NoiseConfig
        from paired_rollouts.noise.seeds import resolve_seed

        cls = type(self)
        task_id = row["task_id"]
        task = cls.tasks.get(task_id)
        if task is None:
            raise KeyError(f"task {task_id} is not in the loaded pools; call BackOfficeEnv.load_tasks first")
        self.episode_index += 1
        training = cls.phase.startswith("train")
        if training:
            self.train_episode_index += 1
        draw_index = self.train_episode_index if training else self.episode_index
        noise = NoiseConfig.from_json(row["noise"])
        schedule_seed = int(row["schedule_seed"])
        resolved = resolve_seed(noise.mode, schedule_seed, self.slot, draw_index, cls.phase)
        self._row = {k: v for k, v in row.items() if k != "prompt"}
        self._session = EpisodeSession()
        self._session.reset(
            task=task,
            schedule_seed=schedule_seed,
            noise=noise,
            budget=row.get("budget"),
            resolved_seed=None if noise.mode != "independent" else resolved,
            slot=self.slot,
            phase=cls.phase,
            condition=row.get("condition", ""),
        )
        self.last_episode = None
        self._reward = None
        # The seed this rollout's schedule uses (the row's seed when paired or clean): the register's
        # ``schedule_seeds`` entry for this slot.
        self.resolved_seed = int(resolved)
        self._draw_index = draw_index
        return None

    def get_reward(self) -> float:
        """Grade the final state; the reward is the *observed* (possibly flipped) one."""
        if self._session is None:
            return 0.0
        if self._reward is None:
            record = dict(self._session.finish_and_grade())
            record.update(
                slot=self.slot,
                episode_index=self.episode_index,
                draw_index=self._draw_index,
                phase=type(self).phase,
                attempt=type(self).attempt,
            )
            for key in ("row_index", "step", "group", "condition"):
                if key in self._row:
                    record.setdefault(f"row_{key}" if key in record else key, self._row[key])
            self.last_episode = record
            self._reward = float(record["observed_reward"])
        return self._reward

    # -- the call path ----------------------------------------------------------------------------------
    def _call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        if self._session is None:
            from paired_rollouts.backoffice.tools import error_response

            return error_response("NO_EPISODE", "no episode is running; the environment was not reset")
        return self._session.call(name, *args, **kwargs)


def _make_tool(name: str) -> Any:
    from paired_rollouts.backoffice.tools import TOOL_SIGNATURES

    signature = TOOL_SIGNATURES[name]

    def tool(self: BackOfficeEnv, *args: Any, **kwargs: Any) -> str:
        return self._call(name, args, kwargs)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += list(signature.parameters.values())
    tool.__name__ = name
    tool.__qualname__ = f"BackOfficeEnv.{name}"
    tool.__doc__ = chat.docstring(name)
    tool.__signature__ = signature.replace(parameters=params, return_annotation=str)
    tool.__annotations__ = {
        **{p.name: p.annotation for p in signature.parameters.values()},
        "return": str,
    }
    return tool


def _install_tools() -> None:
    from paired_rollouts.backoffice.tools import TOOL_NAMES

    for tool_name in TOOL_NAMES:
        setattr(BackOfficeEnv, tool_name, _make_tool(tool_name))


_install_tools()


def tool_methods(env: BackOfficeEnv) -> list[Any]:
    """The bound tool methods in the order TRL lists them (alphabetical, like ``inspect.getmembers``)."""
    names = [
        n for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    ]
    return [getattr(env, n) for n in names]

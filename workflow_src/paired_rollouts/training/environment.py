"""The back office as a TRL environment (docs/simulator.md#episodes): one instance per concurrent rollout.

TRL (``environment_factory``) builds a pool of instances, calls ``reset(**row)`` with every dataset column
before each rollout, exposes every public method as a tool (schema from type hints + Google docstring)
and calls ``get_reward()`` once the rollout ends. All episode logic lives in ``EpisodeSession``; this class
only resolves the schedule seed and adapts the call convention.

The run context the instances share (phase, job attempt, tasks, slot counter) is one ``EpisodeContext``
per trainer; its ``new_environment`` is the factory given to TRL, so nothing is kept on the class.

The 13 tool methods are generated from the tools' declarations (``backoffice.tools.TOOL_DECLARATIONS``),
so their names, argument names, order, types, defaults and the prose the model sees are the simulator's by
construction. Generating them (rather than spelling out 13 methods) also lets a call with a missing or
unknown argument reach the session, which counts it against the budget before raising, as
docs/simulator.md#episodes describes.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class EpisodeContext:
    """What the environments of one trainer share, owned by whoever runs the trainer.

    ``phase`` ("train", "train:step{N}", "periodic:step{N}", ...) and ``attempt`` are stamped on every
    episode record. ``slots`` numbers the instances in construction order; the slot and each instance's
    episode counters feed the independent arm's seeds, so a rebuilt trainer needs a fresh context. On
    resume at step N every instance has already served N training episodes (``initial_train_episodes``).
    """

    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    phase: str = "train"
    attempt: int = 1
    initial_train_episodes: int = 0
    slots: int = 0

    @classmethod
    def from_pools(cls, tasks_dir: str | Path, **kwargs: Any) -> EpisodeContext:
        """A context with the tasks of every pool in ``tasks_dir`` by task_id (reset looks rows up there)."""
        from paired_rollouts.backoffice.tasks import POOL_ORDER, load_pool

        index: dict[str, dict[str, Any]] = {}
        for pool in POOL_ORDER:
            path = Path(tasks_dir) / f"{pool}.jsonl"
            if path.is_file():
                for task in load_pool(path):
                    index[task["task_id"]] = task
        return cls(tasks=index, **kwargs)

    def new_environment(self) -> BackOfficeEnv:
        """The ``environment_factory`` TRL calls (no arguments) for every instance of its pool."""
        return BackOfficeEnv(self)


class BackOfficeEnv:
    """One rollout's view of the simulated back office, within its trainer's ``EpisodeContext``."""

    def __init__(self, context: EpisodeContext) -> None:
        self.context = context
        self.slot = context.slots
        context.slots += 1
        self._session: Any = None
        self._row: dict[str, Any] = {}
        self.last_episode: dict[str, Any] | None = None
        self._reward: float | None = None
        self.resolved_seed: int | None = None
        restart_counters(self)

    # -- TRL hooks ------------------------------------------------------------------------------------
    def reset(self, **row: Any) -> None:
        """Start a fresh episode for one dataset row (TRL passes every column)."""
        from paired_rollouts.episode import EpisodeSession
        from paired_rollouts.noise.config import NoiseConfig
        from paired_rollouts.noise.seeds import resolve_seed

        context = self.context
        task_id = row["task_id"]
        task = context.tasks.get(task_id)
        if task is None:
            raise KeyError(
                f"task {task_id} is not in the context's pools; build it with EpisodeContext.from_pools"
            )
        self.episode_index += 1
        training = context.phase.startswith("train")
        if training:
            self.train_episode_index += 1
        draw_index = self.train_episode_index if training else self.episode_index
        noise = NoiseConfig.from_json(row["noise"])
        schedule_seed = int(row["schedule_seed"])
        resolved = resolve_seed(noise.mode, schedule_seed, self.slot, draw_index, context.phase)
        self._row = {k: v for k, v in row.items() if k != "prompt"}
        self._session = EpisodeSession()
        self._session.reset(
            task=task,
            schedule_seed=schedule_seed,
            noise=noise,
            budget=row.get("budget"),
            resolved_seed=None if noise.mode != "independent" else resolved,
            slot=self.slot,
            phase=context.phase,
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
                phase=self.context.phase,
                attempt=self.context.attempt,
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


def _install_tools() -> None:
    from paired_rollouts.backoffice.tools import TOOL_NAMES, tool_function

    for tool_name in TOOL_NAMES:
        setattr(BackOfficeEnv, tool_name, tool_function(tool_name, "BackOfficeEnv", BackOfficeEnv._call))


_install_tools()


def restart_counters(env: BackOfficeEnv) -> None:
    """Set an instance's episode counters as a fresh instance has them (one engine can then roll out several
    evaluation sets and write the same bytes as one process per set). A function, not a method: TRL would
    expose a public method to the model as a tool."""
    env.episode_index = env.context.initial_train_episodes - 1
    env.train_episode_index = env.context.initial_train_episodes - 1
    env._draw_index = -1


def tool_methods(env: BackOfficeEnv) -> list[Any]:
    """The bound tool methods in the order TRL lists them (alphabetical, like ``inspect.getmembers``)."""
    names = [
        n
        for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    ]
    return [getattr(env, n) for n in names]

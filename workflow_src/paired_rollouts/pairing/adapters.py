"""Adapters that hand each rollout its schedule seed, so an environment never needs to know about groups.

- :class:`PairedEnvironmentFactory` is an ``environment_factory`` for TRL's ``GRPOTrainer``. TRL builds a
  pool of environment instances with it and calls ``reset(**row)`` with every dataset column before each
  rollout; the ``G`` rollouts of a prompt receive the same row. The factory's instances replace the row's
  group seed (column ``schedule_seed``) by the rollout's own seed before your ``reset`` sees it: the same
  seed for every rollout of the group when paired, one per rollout when independent, None when clean.
- :class:`GroupEnvs` runs ``G`` environments with the ``reset(seed=...)`` / ``step(action)`` shape of
  gymnasium and OpenEnv as one group.

Both number their instances (slots) in construction order and count each instance's episodes, which is
what the independent design's seeds are derived from (:class:`~paired_rollouts.pairing.RolloutCounter`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from paired_rollouts.pairing.errors import PairingError
from paired_rollouts.pairing.schedules import (
    GroupSchedules,
    RolloutCounter,
    group_schedules,
    group_seed_value,
)
from paired_rollouts.pairing.seeds import phase_name

E = TypeVar("E")

#: The dataset column that carries a group's schedule seed.
SEED_COLUMN = "schedule_seed"


def _with_rollout_seeds(environment: type, seed_column: str) -> type:
    """A subclass of ``environment`` whose ``reset`` swaps the group seed for the rollout's seed.

    It adds no public method (TRL exposes every public method as a tool) and keeps the class's name
    (TRL names the reward column of ``get_reward`` after it).
    """
    base_reset = environment.reset

    def reset(self: Any, **row: Any) -> Any:
        factory, counter = self._pairing_rollout
        group_seed = row.get(seed_column)
        if factory.schedules.mode != "clean":  # clean rollouts draw nothing: the column may be absent
            if seed_column not in row:
                raise PairingError(
                    f"{environment.__name__}.reset got no {seed_column!r} column; give every dataset row "
                    f"its group's schedule seed (pairing.training_schedule_seed)"
                )
            group_seed = group_seed_value(
                group_seed, f"{environment.__name__}.reset's {seed_column!r} column"
            )
        seed = counter.next_seed(factory.schedules, group_seed, factory.phase)
        return base_reset(self, **{**row, seed_column: seed})

    reset.__doc__ = base_reset.__doc__
    namespace = {"reset": reset, "__doc__": environment.__doc__, "__module__": environment.__module__}
    subclass = type(environment.__name__, (environment,), namespace)
    subclass.__qualname__ = environment.__qualname__
    return subclass


def _phase_property(doc: str) -> property:
    """``phase`` of the two adapters: read as set, and set only to a str (checked when assigned)."""

    def get(self: Any) -> str:
        return self._phase

    def set_(self: Any, phase: str) -> None:
        self._phase = phase_name(phase)

    return property(get, set_, doc=doc)


class PairedEnvironmentFactory(Generic[E]):
    """TRL's ``environment_factory`` with group schedules: ``GRPOTrainer(..., environment_factory=
    PairedEnvironmentFactory(MyEnv, GroupSchedules.paired()))``.

    ``environment`` is your environment class (TRL's contract: public methods are the tools, ``reset(**row)``
    starts an episode, ``get_reward()`` may score it); it reads its rollout's seed from ``row[seed_column]``
    and builds its :class:`~paired_rollouts.pairing.Schedule` from it. ``args`` and ``kwargs`` go to its
    constructor. Set ``phase`` to "eval" (anything not starting with "train") around evaluations so that
    independent evaluation seeds never shift the training draws; ``initial_train_episodes`` is the number of
    training episodes every instance had served before a resumed run.
    """

    def __init__(
        self,
        environment: type[E],
        schedules: GroupSchedules,
        *,
        seed_column: str = SEED_COLUMN,
        phase: str = "train",
        initial_train_episodes: int = 0,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(environment, type) or not callable(getattr(environment, "reset", None)):
            raise PairingError(f"{environment!r} is not an environment class with a reset method")
        self.environment: type[E] = _with_rollout_seeds(environment, seed_column)
        self.schedules = group_schedules(schedules)
        self.seed_column = seed_column
        self.phase = phase
        self.initial_train_episodes = initial_train_episodes
        self.instances: list[E] = []
        self._args = tuple(args)
        self._kwargs = dict(kwargs or {})

    def __call__(self) -> E:
        """A new instance in the next slot (TRL calls this with no arguments)."""
        env = self.environment(*self._args, **self._kwargs)
        counter = RolloutCounter(len(self.instances), self.initial_train_episodes)
        env._pairing_rollout = (self, counter)  # type: ignore[attr-defined]
        self.instances.append(env)
        return env

    phase = _phase_property(
        'The phase of the next resets ("train..." or e.g. "eval"; set it around evaluations).'
    )

    @staticmethod
    def counter(env: Any) -> RolloutCounter:
        """The slot and episode counts of an instance this factory made (``.seed`` is its last seed)."""
        try:
            return env._pairing_rollout[1]
        except AttributeError:
            raise PairingError(f"{env!r} was not made by a PairedEnvironmentFactory") from None


class GroupEnvs(Generic[E]):
    """``group_size`` environments of the ``reset(seed=...)`` / ``step(action)`` shape run as one group.

    ``reset(group_seed, **kwargs)`` resets environment i with ``**{seed_keyword: seed_i}`` (the rollout
    seeds of ``schedules``; None when clean: the environment must then run without noise) and returns the
    observations; ``step(actions)`` steps environment i with ``actions[i]`` and returns the results. The
    environments are the slots ``first_slot ...``: give each group of a batch its own range.
    """

    def __init__(
        self,
        make_env: Callable[[], E],
        group_size: int,
        schedules: GroupSchedules,
        *,
        first_slot: int = 0,
        seed_keyword: str = "seed",
        phase: str = "train",
    ) -> None:
        if group_size < 1:
            raise PairingError(f"a group needs at least one environment, not {group_size}")
        self.schedules = group_schedules(schedules)
        self.phase = phase
        self.envs: list[E] = [make_env() for _ in range(group_size)]
        self.counters = [RolloutCounter(first_slot + i) for i in range(group_size)]
        self.seed_keyword = seed_keyword

    @property
    def seeds(self) -> list[int | None]:
        """The rollout seeds of the last reset."""
        return [counter.seed for counter in self.counters]

    phase = _phase_property('The phase of the next reset ("train..." or e.g. "eval").')

    def reset(self, group_seed: int, **kwargs: Any) -> list[Any]:
        """Start one episode per environment, each on its rollout's seed; returns what each reset returns.

        ``group_seed`` is an int in [0, 2**64) (None is fine when clean): the counters refuse another."""
        return [
            env.reset(
                **{self.seed_keyword: counter.next_seed(self.schedules, group_seed, self.phase)}, **kwargs
            )  # type: ignore[attr-defined]
            for env, counter in zip(self.envs, self.counters, strict=True)
        ]

    def step(self, actions: Sequence[Any]) -> list[Any]:
        """Step environment i with ``actions[i]``; returns the step results in order."""
        if len(actions) != len(self.envs):
            raise PairingError(f"{len(actions)} actions for a group of {len(self.envs)} environments")
        return [env.step(action) for env, action in zip(self.envs, actions, strict=True)]  # type: ignore[attr-defined]

"""Group schedules: which seed each of the G rollouts of a group draws its luck from.

- **paired**: every rollout of a group uses the group's schedule seed (one schedule per group: the G
  attempts meet the same faults and the same grader flip, so their rewards differ only by what the
  policy did);
- **independent**: each rollout resolves its own seed from the group's (``independent_seed``), the usual
  design in which a rollout's reward mixes skill with its own luck;
- **clean**: no schedule at all (``None``): nothing faults, nothing flips.

Every group draws a fresh schedule (``training_schedule_seed``), so pairing shares luck within a group,
never across groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from paired_rollouts.pairing.errors import PairingError, seed_value
from paired_rollouts.pairing.seeds import independent_seed, seed_family

Mode = Literal["paired", "independent", "clean"]
#: The group designs: one schedule per group, one per rollout, none.
MODES: tuple[Mode, ...] = ("paired", "independent", "clean")


def group_seed_value(seed: Any, name: str = "group_seed") -> int:
    """``seed`` as an int in [0, 2**64) (what ``Dice`` takes); a float such as 42.9 is refused, not
    truncated, and ``name`` says where the bad value came from."""
    return seed_value(seed, f"{name} (a group seed)")


def group_schedules(schedules: Any) -> GroupSchedules:
    """``schedules`` if it is a GroupSchedules (what the adapters and counters are given), else one line."""
    if not isinstance(schedules, GroupSchedules):
        raise PairingError(
            f"schedules must be a GroupSchedules, e.g. GroupSchedules.paired() or .independent(), not {schedules!r}"
        )
    return schedules


@dataclass(frozen=True)
class GroupSchedules:
    """The design of a group's schedules: ``mode`` is "paired", "independent" or "clean"."""

    mode: Mode

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise PairingError(f"schedule mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    @classmethod
    def paired(cls) -> GroupSchedules:
        """One schedule per group, shared by its rollouts."""
        return cls("paired")

    @classmethod
    def independent(cls) -> GroupSchedules:
        """One schedule per rollout."""
        return cls("independent")

    @classmethod
    def clean(cls) -> GroupSchedules:
        """No schedule: the noise-free environment."""
        return cls("clean")

    def rollout_seed(
        self, group_seed: int, slot: int, draw_index: int = 0, phase: str = "train"
    ) -> int | None:
        """The seed of one rollout of the group seeded ``group_seed`` (None when clean).

        ``slot`` identifies the rollout's environment instance (or its position in the batch) and
        ``draw_index`` that instance's episode count; only the independent design uses them, with the
        family of ``phase`` ("train..." or anything else: "eval"). ``group_seed`` must be an int in
        [0, 2**64) unless clean, where it is unused (None is fine).
        """
        if self.mode == "clean":
            return None
        seed = group_seed_value(group_seed)
        if self.mode == "paired":
            return seed
        return independent_seed(seed, slot, draw_index, seed_family(phase))

    def group_seeds(
        self,
        group_seed: int,
        group_size: int,
        *,
        first_slot: int = 0,
        draw_index: int = 0,
        phase: str = "train",
    ) -> list[int | None]:
        """The seeds of a group's ``group_size`` rollouts, in slots ``first_slot, first_slot + 1, ...``
        (all equal when paired, all None when clean)."""
        if group_size < 1:
            raise PairingError(f"a group needs at least one rollout, not {group_size}")
        return [self.rollout_seed(group_seed, first_slot + i, draw_index, phase) for i in range(group_size)]


class RolloutCounter:
    """An environment instance's identity in the independent design: its slot and episode counts.

    ``draw_index`` is the count of training episodes during training phases and of all episodes
    otherwise (so evaluations never shift training draws); a run resumed after N training episodes per
    instance starts at ``initial_train_episodes=N``. ``seed`` is the rollout seed of the last episode.
    """

    __slots__ = ("slot", "episode_index", "train_episode_index", "draw_index", "seed")

    def __init__(self, slot: int, initial_train_episodes: int = 0) -> None:
        self.slot = slot
        self.restart(initial_train_episodes)

    def restart(self, initial_train_episodes: int = 0) -> None:
        """Counters as a fresh instance has them."""
        self.episode_index = initial_train_episodes - 1
        self.train_episode_index = initial_train_episodes - 1
        self.draw_index = -1
        self.seed: int | None = None

    def next_seed(self, schedules: GroupSchedules, group_seed: int, phase: str = "train") -> int | None:
        """Count one more episode in ``phase`` and return its rollout seed."""
        group_schedules(schedules)
        training = seed_family(phase) == "train"
        if schedules.mode != "clean":  # refused before counting, so a bad seed shifts no later draw
            group_seed = group_seed_value(group_seed)
        self.episode_index += 1
        if training:
            self.train_episode_index += 1
        self.draw_index = self.train_episode_index if training else self.episode_index
        self.seed = schedules.rollout_seed(group_seed, self.slot, self.draw_index, phase)
        return self.seed

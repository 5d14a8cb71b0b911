"""The registers over several runs: a condition's curves register (its arms' means over their seeds, its
seed pairs' differences, the differences of its final means to other conditions') and the cross-stack
replication register (docs/records.md sections 3.2 and 3.3)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.records.schema import (
    At,
    by_step,
    curves_by_step,
    differing_keys,
    each,
    is_bool,
    is_condition,
    is_dict,
    is_int,
    is_num,
    is_sha256,
    is_str,
    key,
    list_of,
    map_of,
    nullable,
    one,
    one_of,
    parse,
    read_register,
    steps_of,
)

CURVES_COMMAND = "paired-rollouts curves-register"
BY_SET = map_of(nullable(is_num))


@dataclass(frozen=True)
class PooledGroups:
    """An arm's group statistics pooled over its runs (stats/groups.py pool_group_stats)."""

    runs: list[str] = key(list_of(is_str))
    groups: int = key(is_int)
    zero_variance_groups: int = key(is_int)
    zero_variance_frac: float | None = key(nullable(is_num))
    all_correct_groups: int = key(is_int)
    spurious_groups: int = key(is_int)
    spurious_among_all_correct: float | None = key(nullable(is_num))


@dataclass(frozen=True)
class ArmMeans:
    """One arm's means over its seeds: the runs averaged, the mean curve per periodic set (steps as
    integers), how many runs each curve averages, the mean final success per set."""

    runs: list[str] = key(list_of(is_str))
    curves: dict[str, dict[int, float]] = key(map_of(steps_of(is_num)), read=curves_by_step)
    curve_runs: dict[str, int] = key(map_of(is_int))
    final: dict[str, float | None] = key(BY_SET)
    group_stats: PooledGroups | None = key(is_dict, read=one(PooledGroups), default=None)

    def _check(self, at: At) -> None:
        if set(self.curve_runs) != set(self.curves):
            arm = at.keys[-1]
            raise UserError(
                f"{at.path}: arms.{arm}.curve_runs names other sets than arms.{arm}.curves; {at.fix}"
            )

    def curve(self, regime: str) -> list[tuple[int, float]]:
        """The mean curve of ``regime`` as (step, value) in step order (empty when not averaged)."""
        return sorted(self.curves.get(regime, {}).items())


@dataclass(frozen=True)
class SeedPair:
    """One seed pair of the condition: paired - independent (stats/condition_curves.py seed_pairs)."""

    paired: str = key(is_str)
    independent: str = key(is_str)
    curves_difference: dict[str, dict[int, float]] = key(map_of(steps_of(is_num)), read=curves_by_step)
    auc_difference: dict[str, float | None] = key(BY_SET)


@dataclass(frozen=True)
class FinalDifferences:
    """Per arm, this condition's final means minus another condition's, and that register's sha256."""

    arms: dict[str, dict[str, float | None]] = key(map_of(BY_SET))
    sha256: str = key(is_sha256)


def _arms(value: dict[str, Any], at: At) -> dict[str, ArmMeans]:
    for arm in value:
        if arm not in design.ARMS:
            raise UserError(f"{at.path}: arms.{arm} is not an arm ({', '.join(design.ARMS)}); {at.fix}")
    return {arm: parse(ArmMeans, block, at.at(arm)) for arm, block in value.items()}


def _differences(value: dict[str, Any], at: At) -> dict[str, FinalDifferences]:
    for name in value:
        if not is_condition(name):
            raise UserError(f"{at.path}: differences.{name} is not a condition; {at.fix}")
    return {name: parse(FinalDifferences, block, at.at(name)) for name, block in value.items()}


def _pairs(value: dict[str, Any], at: At) -> dict[int, SeedPair]:
    for seed in value:
        if not seed.isdigit():
            raise UserError(f"{at.path}: pairs.{seed} is not a seed; {at.fix}")
    return by_step({seed: parse(SeedPair, pair, at.at(seed)) for seed, pair in value.items()}, at)


@dataclass(frozen=True)
class CurvesRegister:
    """results/curves/CONDITION.json (stats/condition_curves.py, docs/records.md section 3.2)."""

    path: str
    raw: dict[str, Any]
    condition: str = key(is_condition)
    arms: dict[str, ArmMeans] = key(is_dict, read=_arms)
    pairs: dict[int, SeedPair] = key(is_dict, read=_pairs)
    differences: dict[str, FinalDifferences] = key(is_dict, read=_differences)
    registers: dict[str, str] = key(map_of(is_sha256))


def read_curves_register(path: str | Path) -> CurvesRegister:
    """results/curves/CONDITION.json (stats/condition_curves.py, docs/records.md section 3.2), typed:
    per arm the runs averaged, the mean curve per periodic set and the mean final success per set."""
    return read_register(CurvesRegister, path, "curves register", CURVES_COMMAND)


# ---------------------------------------------------------------- cross-stack replication


@dataclass(frozen=True)
class StackRun:
    run: str = key(is_str)
    root: str = key(is_str)
    stack: str = key(is_str)
    register: bool = key(is_bool)
    auc: float | None = key(nullable(is_num))
    final: dict[str, float | None] = key(BY_SET)


@dataclass(frozen=True)
class StackDifference:
    auc: float | None = key(nullable(is_num))
    final: dict[str, float | None] = key(BY_SET)


@dataclass(frozen=True)
class Replication:
    """One run (condition, arm, seed) under several stacks, and with two their difference."""

    condition: str = key(is_condition)
    arm: str = key(one_of(*design.ARMS))
    seed: int = key(is_int)
    runs: list[StackRun] = key(list_of(is_dict), read=each(StackRun))
    difference: StackDifference | None = key(is_dict, read=one(StackDifference), default=None)

    def _check(self, at: At) -> None:
        """The difference is its two runs' (never trusted as written): present exactly when two runs of two
        stacks replicate each other, and then the first run's AUC and final successes minus the second's
        (stats/cross_stack.py)."""
        if len(self.runs) < 2 or len({r.stack for r in self.runs}) < 2:
            raise at.error(
                f"{len(self.runs)} run(s) on {len({r.stack for r in self.runs})} stack(s) replicate nothing"
            )
        if (self.difference is None) != (len(self.runs) != 2):
            raise at.error("difference must be given exactly when two runs replicate each other")
        if self.difference is None:
            return
        from paired_rollouts.stats.cross_stack import run_difference  # the writer's own arithmetic

        def flat(values: dict[str, Any]) -> dict[str, Any]:
            return {"auc": values["auc"]} | {f"final.{k}": v for k, v in values["final"].items()}

        wanted = flat(run_difference(*({"auc": r.auc, "final": r.final} for r in self.runs)))
        stated = flat({"auc": self.difference.auc, "final": self.difference.final})
        wrong = differing_keys(stated, wanted)
        if wrong:
            raise at.error(
                f"difference.{wrong[0]} is {stated.get(wrong[0])}, its runs give {wanted.get(wrong[0])}"
            )


@dataclass(frozen=True)
class CrossStack:
    """results/cross_stack.json (stats/cross_stack.py, docs/records.md section 3.3)."""

    path: str
    raw: dict[str, Any]
    manifests: int = key(is_int)
    stacks: list[str] = key(list_of(is_str))
    replications: list[Replication] = key(list_of(is_dict), read=each(Replication))


def read_cross_stack(path: str | Path) -> CrossStack:
    """results/cross_stack.json (stats/cross_stack.py, docs/records.md section 3.3), typed: each
    replication's runs and, with two runs, their difference."""
    return read_register(CrossStack, path, "cross-stack register", "paired-rollouts cross-stack")

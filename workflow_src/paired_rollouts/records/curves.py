"""The registers over several runs: a condition's curves register (its arms' means over their seeds, its
seed pairs' differences, the differences of its final means to other conditions') and the cross-stack
replication register (docs/records.md sections 3.2 and 3.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.design import parse_run
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

    def check_arithmetic(self) -> None:
        """The register's own arithmetic, checked wherever it is read (with or without the files it
        names; ``stats/condition_curves.verified_curves`` recomputes the whole register from them): the
        arms' runs are the runs it names, of this condition and arm; each curve averages at most the
        arm's runs; the pooled group statistics are of the arm's runs and their shares are those of their
        counts; the pairs are the seeds with both arms, each pairing that seed's runs, and where they
        cover every run of both arms their mean curve difference is the arms' mean curves' difference;
        a final difference is null where this arm's final mean is (stats/condition_curves.py)."""
        at = At.of(self.path, "curves register", CURVES_COMMAND)
        named = [
            run for arm, block in self.arms.items() for run in _check_arm(arm, block, self.condition, at)
        ]
        if len(set(named)) != len(named) or set(named) != set(self.registers):
            raise at.error("the arms' runs are not the runs whose registers it names (registers)")
        self._check_pairs(at)
        for name, other in self.differences.items():
            for arm, by_set in other.arms.items():
                mine = self.arms.get(arm)
                if mine is None:
                    raise at.error(f"differences.{name}.arms.{arm}: this register has no {arm} arm")
                # _difference: null where either final mean is; every set of either is there
                wrong = [
                    r
                    for r, v in mine.final.items()
                    if r not in by_set or (v is None and by_set[r] is not None)
                ]
                if wrong:
                    raise at.error(
                        f"differences.{name}.arms.{arm}.{wrong[0]} is {by_set.get(wrong[0])}, but this arm's "
                        f"final mean is {mine.final[wrong[0]]}"
                    )

    def _check_pairs(self, at: At) -> None:
        def seeds(arm: str) -> dict[int, str]:
            block = self.arms.get(arm)
            return {parse_run(run).seed: run for run in block.runs} if block else {}

        paired, independent = seeds("paired"), seeds("independent")
        if set(self.pairs) != set(paired) & set(independent):
            raise at.error(
                f"pairs are seeds {sorted(self.pairs)}, the seeds with both arms are "
                f"{sorted(set(paired) & set(independent))}"
            )
        for seed, pair in self.pairs.items():
            if (pair.paired, pair.independent) != (paired[seed], independent[seed]):
                raise at.error(
                    f"pairs.{seed} pairs {pair.paired} with {pair.independent}, not the seed's "
                    f"{paired[seed]} and {independent[seed]}"
                )
        if self.pairs and len(self.pairs) == len(paired) == len(independent):
            self._check_mean_difference(at)

    def _check_mean_difference(self, at: At) -> None:
        """With every run of both arms in a pair: at each step of a set that every run evaluated, the mean
        of the pairs' differences is the difference of the arms' means (up to rounding)."""
        a, b = self.arms["paired"], self.arms["independent"]
        for regime in sorted(set(a.curves) & set(b.curves)):
            if a.curve_runs[regime] != len(self.pairs) or b.curve_runs[regime] != len(self.pairs):
                continue
            for step in sorted(set(a.curves[regime]) & set(b.curves[regime])):
                values = {s: p.curves_difference.get(regime, {}).get(step) for s, p in self.pairs.items()}
                lacking = [s for s, v in values.items() if v is None]
                if lacking:
                    raise at.error(
                        f"pairs.{lacking[0]}.curves_difference.{regime} lacks step {step}, which both runs "
                        "evaluated"
                    )
                mean = sum(values.values()) / len(values)
                want = a.curves[regime][step] - b.curves[regime][step]
                if not math.isclose(mean, want, rel_tol=1e-9, abs_tol=1e-12):
                    raise at.error(
                        f"pairs' curves_difference.{regime}.{step} average {mean}, the arms' mean curves "
                        f"differ by {want} there"
                    )


def _check_arm(arm: str, block: ArmMeans, condition: str, at: At) -> list[str]:
    """An arm's runs (returned) are of its condition and arm, each curve averages at most them, and their
    pooled group statistics add up."""
    for run in block.runs:
        try:
            ident = parse_run(run)
        except UserError as exc:
            raise at.error(f"arms.{arm}.runs: {exc}") from None
        if (ident.condition, ident.arm) != (condition, arm):
            raise at.error(f"arms.{arm}.runs holds {run}, not a {condition} {arm} run")
    for regime, count in block.curve_runs.items():
        if not 1 <= count <= len(block.runs):
            raise at.error(
                f"arms.{arm}.curve_runs.{regime} is {count}, the arm averages {len(block.runs)} run(s)"
            )
    if block.group_stats is not None:
        _check_pooled(block.group_stats, block.runs, f"arms.{arm}.group_stats", at)
    return block.runs


def _check_pooled(pooled: PooledGroups, runs: list[str], where: str, at: At) -> None:
    """Pooled group statistics: of exactly the arm's runs, counts that can be (a spurious group is
    all-correct, each kind at most all groups) and the shares of those counts (stats/groups.py
    pool_group_stats)."""
    if pooled.runs != sorted(runs):
        raise at.error(f"{where}.runs are {', '.join(pooled.runs)}, the arm's runs {', '.join(sorted(runs))}")
    counts = (pooled.spurious_groups, pooled.all_correct_groups, pooled.groups)
    if not (0 <= counts[0] <= counts[1] <= counts[2] and 0 <= pooled.zero_variance_groups <= counts[2]):
        raise at.error(
            f"{where}: counts no group statistics give (spurious {counts[0]}, all-correct {counts[1]}, "
            f"zero-variance {pooled.zero_variance_groups}, groups {counts[2]})"
        )
    shares = {
        "zero_variance_frac": (pooled.zero_variance_groups, pooled.groups, pooled.zero_variance_frac),
        "spurious_among_all_correct": (
            pooled.spurious_groups,
            pooled.all_correct_groups,
            pooled.spurious_among_all_correct,
        ),
    }
    for name, (part, whole, stated) in shares.items():
        want = part / whole if whole else None
        if stated != want:
            raise at.error(f"{where}.{name} is {stated}, its counts give {want} ({part}/{whole})")


def read_curves_register(path: str | Path, arithmetic: bool = True) -> CurvesRegister:
    """results/curves/CONDITION.json (stats/condition_curves.py, docs/records.md section 3.2), typed:
    per arm the runs averaged, the mean curve per periodic set and the mean final success per set; with
    ``arithmetic`` (the default) refused unless its own numbers agree (``check_arithmetic``;
    ``verified_curves`` checks it after the recomputation, which names a wrong value more exactly)."""
    register = read_register(CurvesRegister, path, "curves register", CURVES_COMMAND)
    if arithmetic:
        register.check_arithmetic()
    return register


# ---------------------------------------------------------------- cross-stack replication


@dataclass(frozen=True)
class StackRun:
    run: str = key(is_str)
    root: str = key(is_str)
    stack: str = key(is_str)
    register: bool = key(is_bool)
    auc: float | None = key(nullable(is_num))
    final: dict[str, float | None] = key(BY_SET)

    def _check_register(self, at: At) -> None:
        from paired_rollouts.layout import Layout
        from paired_rollouts.records.runs import read_run_register
        from paired_rollouts.stats.cross_stack import run_values  # the writer's own reading

        path = Layout(self.root).register(self.run)
        if not Path(path).is_file():
            return  # another tree's run, not here: as written
        register = read_run_register(path)
        if register.run != self.run:
            raise at.error(f"its run register {path} is the register of {register.run}, not of {self.run}")
        if not self.register:
            raise at.error(f"says no run register of {self.run} was given, but {path} is at hand")
        wanted = _flat(run_values(self.run, register))
        stated = _flat({"register": self.register, "auc": self.auc, "final": self.final})
        wrong = differing_keys(stated, wanted)
        if wrong:
            raise at.error(
                f"{wrong[0]} of {self.run} is {stated.get(wrong[0])}, its run register {path} gives "
                f"{wanted.get(wrong[0])}"
            )


def _flat(values: dict[str, Any]) -> dict[str, Any]:
    """A run's or a difference's values as flat keys (``final.clean``)."""
    return {k: v for k, v in values.items() if k != "final"} | {
        f"final.{k}": v for k, v in values["final"].items()
    }


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
        """Each run's values are its run register's where that is at hand (ROOT/runs/RUN/register.json,
        read by ``read_run_register``): what the writer takes from it (stats/cross_stack.py run_values).
        The difference is its two runs' (never trusted as written): present exactly when two runs of two
        stacks replicate each other, and then the first run's AUC and final successes minus the second's
        (stats/cross_stack.py)."""
        self._check_difference(at)
        for index, run in enumerate(self.runs):
            run._check_register(at.at("runs").item(index))

    def _check_difference(self, at: At) -> None:
        if len(self.runs) < 2 or len({r.stack for r in self.runs}) < 2:
            raise at.error(
                f"{len(self.runs)} run(s) on {len({r.stack for r in self.runs})} stack(s) replicate nothing"
            )
        if (self.difference is None) != (len(self.runs) != 2):
            raise at.error("difference must be given exactly when two runs replicate each other")
        if self.difference is None:
            return
        from paired_rollouts.stats.cross_stack import run_difference  # the writer's own arithmetic

        wanted = _flat(run_difference(*({"auc": r.auc, "final": r.final} for r in self.runs)))
        stated = _flat({"auc": self.difference.auc, "final": self.difference.final})
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

"""The curves register of one condition (``curves-register``): per arm, the mean over its seeds of the
run registers' periodic curves and final sets.

The learning-curve figures and the fault-robustness table show these means beside each run's own
values (which stay in its run register, ``stats/run_register.py``), so the render stage averages
nothing. A mean curve covers the arm's runs that evaluated the set, at the steps they all have; a
final mean is null unless every run of the arm has the set (docs/records.md section 3.2).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from paired_rollouts.design import ARM_ORDER, parse_run
from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file
from paired_rollouts.records import CurvesRegister, RunRegister
from paired_rollouts.records.schema import differing_keys
from paired_rollouts.stats.run_register import verified_register

CURVES_FORMAT = "paired-rollouts-curves/1"


def _mean(values: list[float]) -> float:
    """Full precision, summed in seed order (the order the figures and table 8 averaged in before)."""
    return sum(values) / len(values)


def _order(run: str) -> tuple[int, str]:
    return (parse_run(run).seed, run)


def build_curves_register(
    paths: Iterable[str | Path],
    group_stats: Iterable[str | Path] = (),
    compare: Iterable[str | Path] = (),
    read: Callable[[str | Path], RunRegister] = verified_register,
) -> dict[str, Any]:
    """The content of ``results/curves/{condition}.json`` from the run registers of one condition; with
    the runs' group statistics, each arm also holds them pooled over its runs (``group_stats``); with
    other conditions' curves registers, the differences of the final means to theirs (``differences``).
    ``read``: each register is read only if it equals its recomputation (tests of the averaging alone
    pass ``records.read_run_register``)."""
    registers: dict[str, RunRegister] = {}
    for path in paths:
        register = read(path)
        if register.run in registers:
            raise UserError(f"{path}: a second run register of {register.run}; give each run once")
        registers[register.run] = register
    if not registers:
        raise UserError("curves-register: no run register given (--registers results/runs/RUN/register.json)")
    conditions = sorted({register.condition for register in registers.values()})
    if len(conditions) != 1:
        raise UserError(
            f"curves-register: run registers of several conditions {conditions}; one register per condition"
        )
    by_arm: dict[str, list[RunRegister]] = defaultdict(list)
    for run in sorted(registers, key=_order):
        by_arm[registers[run].arm].append(registers[run])
    arms = {arm: _arm_means(by_arm[arm]) for arm in sorted(by_arm, key=ARM_ORDER.__getitem__)}
    for arm, block in _pooled_groups(group_stats, conditions[0], arms).items():
        arms[arm]["group_stats"] = block
    return {
        "format": CURVES_FORMAT,
        "condition": conditions[0],
        "arms": arms,
        "pairs": seed_pairs(by_arm),
        "differences": final_differences(conditions[0], arms, compare),
        "registers": {run: sha256_file(register.path) for run, register in sorted(registers.items())},
    }


def verified_curves(
    path: str | Path,
    register_of: Callable[[str], str],
    group_stats_of: Callable[[str], str] | None = None,
    curves_of: Callable[[str], str] | None = None,
) -> CurvesRegister:
    """A curves register read for quoting: every run register it names has the sha256 it records and
    equals its recomputation (``verified_register``), and the whole register equals its recomputation by
    ``build_curves_register`` from them, with the group statistics of each arm whose runs' files are at
    hand and the other conditions' curves registers its ``differences`` name (by their sha256) where at
    hand. An arm's ``group_stats`` or a ``differences`` block whose files are not here keeps only the
    reader's own arithmetic checks (records/curves.py). ``register_of``: run name -> its register's path
    (``Layout.register``); ``group_stats_of``: run name -> its group statistics (default: beside its
    register, ``Layout.group_stats``); ``curves_of``: condition -> its curves register (default: beside
    this one, ``Layout.curves``)."""
    from paired_rollouts.records import read_curves_register

    register = read_curves_register(path, arithmetic=False)  # checked below, after the recomputation
    paths = [register_of(run) for run in register.registers]
    for run, named in zip(register.registers, paths, strict=True):
        if not Path(named).is_file() or sha256_file(named) != register.registers[run]:
            raise UserError(
                f"{path}: the run register {named} is not the one it was built from; rebuild both"
            )
    stats, compare, unchecked = _inputs_at_hand(
        register,
        group_stats_of or (lambda run: str(Path(register_of(run)).parent / "group_stats.json")),
        curves_of or (lambda condition: str(Path(path).parent / f"{condition.lower()}.json")),
    )
    try:
        wanted = _flat(build_curves_register(paths, stats, compare))
    except UserError as exc:
        raise UserError(f"{path}: not recomputable from the files it names ({exc}); {CURVES_FIX}") from None
    written = _flat(register.raw)
    wrong = [
        k
        for k in differing_keys(written, wanted)
        if not any(k == u or k.startswith(f"{u}.") for u in unchecked)
    ]
    if wrong:
        field = ".".join(wrong[0].split(".")[:3])
        source = (
            "its group statistics give"
            if ".group_stats" in field
            else "the curves register it names gives"
            if field.startswith("differences.")
            else "its run registers give"
        )
        raise UserError(
            f"{path}: {field} is not what {source} ({wrong[0]} is {written.get(wrong[0])!r}, "
            f"recomputed {wanted.get(wrong[0])!r}); {CURVES_FIX}"
        )
    register.check_arithmetic()  # the blocks whose files are not here
    return register


CURVES_FIX = "rebuild it (curves-register)"


def _inputs_at_hand(
    register: CurvesRegister, group_stats_of: Callable[[str], str], curves_of: Callable[[str], str]
) -> tuple[list[str], list[str], list[str]]:
    """The group statistics (of each arm all its runs' or none) and compared curves registers (with the
    sha256 its differences record) at hand, and the blocks whose files are not."""
    unchecked: list[str] = []
    stats: list[str] = []
    for arm, block in register.arms.items():
        files = [group_stats_of(run) for run in block.runs]
        absent = [f for f in files if not Path(f).is_file()]
        if len(absent) == len(files):
            unchecked.append(f"arms.{arm}.group_stats")
        elif absent:
            raise UserError(
                f"{register.path}: the group statistics {absent[0]} of a {arm} run are not at hand; "
                f"{CURVES_FIX}"
            )
        else:
            stats += files
    compare: list[str] = []
    for name, block in register.differences.items():
        other = curves_of(name)
        if not Path(other).is_file():
            unchecked.append(f"differences.{name}")
        elif sha256_file(other) != block.sha256:
            raise UserError(
                f"{register.path}: differences.{name} are not of the curves register {other} (another "
                f"sha256); {CURVES_FIX}"
            )
        else:
            compare.append(other)
    return stats, compare, unchecked


def _flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested record as {dotted key: value} (an empty object and any other value are leaves), so that
    a difference from its recomputation is named by its full key."""
    out: dict[str, Any] = {}
    for name, value in record.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, dict) and value:
            out |= _flat(value, f"{dotted}.")
        else:
            out[dotted] = value
    return out


def _arm_means(members: list[RunRegister]) -> dict[str, Any]:
    """One arm's runs, its mean curve per periodic set (over the runs that have the set, at the steps
    they all have), and its mean final success per set (null unless every run has the set)."""
    curves, curve_runs = {}, {}
    for regime in sorted({r for m in members for r, c in m.curves.items() if c}):
        having = [m.curves[regime] for m in members if m.curves.get(regime)]
        steps = sorted(set.intersection(*(set(c) for c in having)))
        curves[regime] = {str(step): _mean([c[step] for c in having]) for step in steps}
        curve_runs[regime] = len(having)
    final = {}
    for regime in sorted({r for m in members for r in m.final}):
        values = [m.final.get(regime) for m in members]
        final[regime] = None if any(v is None for v in values) else _mean(values)
    return {"runs": [m.run for m in members], "curves": curves, "curve_runs": curve_runs, "final": final}


def _pooled_groups(
    paths: Iterable[str | Path], condition: str, arms: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Per arm, the group statistics of exactly the arm's runs, pooled (stats/groups.py)."""
    from paired_rollouts.records import GroupStats, read_group_stats
    from paired_rollouts.stats.groups import pool_group_stats

    by_arm: dict[str, list[GroupStats]] = defaultdict(list)
    for path in paths:
        stats = read_group_stats(path)
        if stats.condition != condition or stats.arm not in arms:
            raise UserError(
                f"{path}: group statistics of {stats.run}, which has no run register among those given "
                f"for {condition}; pass the group statistics of the condition's runs"
            )
        by_arm[stats.arm].append(stats)
    out = {}
    for arm, stats in by_arm.items():
        pooled = pool_group_stats(stats)
        if pooled["runs"] != sorted(arms[arm]["runs"]):
            raise UserError(
                f"curves-register: group statistics of {', '.join(pooled['runs'])} for the {condition} {arm} "
                f"runs {', '.join(arms[arm]['runs'])}; give one per run"
            )
        out[arm] = pooled
    return out


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def seed_pairs(by_arm: dict[str, list[RunRegister]]) -> dict[str, Any]:
    """Per seed with both a paired and an independent run: the pair's runs and paired - independent of
    their curves (each periodic set, at the steps both evaluated) and of their AUC per set, from the
    run registers' numbers as written (table 9 shows them beside the two runs' own values)."""
    paired = {m.seed: m for m in by_arm.get("paired", [])}
    independent = {m.seed: m for m in by_arm.get("independent", [])}
    out = {}
    for seed in sorted(set(paired) & set(independent)):
        a, b = paired[seed], independent[seed]
        curves = {}
        for regime in sorted(set(a.curves) | set(b.curves)):
            ca, cb = a.curves.get(regime) or {}, b.curves.get(regime) or {}
            curves[regime] = {str(step): ca[step] - cb[step] for step in sorted(set(ca) & set(cb))}
        out[str(seed)] = {
            "paired": a.run,
            "independent": b.run,
            "curves_difference": curves,
            "auc_difference": {
                regime: _difference(a.auc.get(regime), b.auc.get(regime))
                for regime in sorted(set(a.auc) | set(b.auc))
            },
        }
    return out


def final_differences(condition: str, arms: dict[str, Any], compare: Iterable[str | Path]) -> dict[str, Any]:
    """Per other condition's curves register: this arm's final mean minus that condition's same arm (or
    its only arm, C0's clean) per final set, null unless both have the set (table 8's difference rows),
    with the sha256 of the register compared against."""
    from paired_rollouts.records import read_curves_register

    out: dict[str, Any] = {}
    for path in compare:
        other = read_curves_register(path)
        name = other.condition
        if name == condition or name in out:
            raise UserError(f"{path}: compare with each other condition once (this register is {condition})")
        by_arm = {}
        for arm, block in arms.items():
            theirs = other.arms.get(arm)
            if theirs is None and len(other.arms) == 1:
                theirs = next(iter(other.arms.values()))
            if theirs is None:
                continue
            by_arm[arm] = {
                regime: _difference(block["final"].get(regime), theirs.final.get(regime))
                for regime in sorted(set(block["final"]) | set(theirs.final))
            }
        out[name] = {"arms": by_arm, "sha256": sha256_file(path)}
    return out

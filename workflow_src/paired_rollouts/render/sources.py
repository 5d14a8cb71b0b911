"""The rendering stage's inputs: the ``--input KEY=PATH`` files a table or figure declares, the registers
read through the typed readers of ``paired_rollouts.records`` (shared with the stats stage), and the
study's order of conditions, arms and runs from ``paired_rollouts.design``.

A missing file or a missing required key is a :class:`UserError` that names the file and the key (the
reader's), so a broken upstream register is fixed upstream, not papered over in a table. Render reads
registers only (no episode records) and computes no statistics.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paired_rollouts import design, records
from paired_rollouts.errors import UserError
from paired_rollouts.records import (
    ArmMeans,
    CurvesRegister,
    DecisionRegister,
    PooledGroups,
    ProbeRegister,
    RunRegister,
    SeedPair,
)

if TYPE_CHECKING:
    from paired_rollouts.layout import Layout

# ---------------------------------------------------------------- --input KEY=PATH


def parse_input_args(values: Sequence[str] | None) -> dict[str, list[Path]]:
    """``['decisions=a.json', 'decisions=b.json', 'probe=c.json']`` -> ``{key: [paths]}`` (order kept)."""
    inputs: dict[str, list[Path]] = {}
    for value in values or []:
        key, sep, raw = value.partition("=")
        key = key.strip()
        if not sep or not key or not raw:
            raise UserError(
                f"--input {value!r}: expected KEY=PATH, e.g. --input decisions=results/decisions/c2.json"
            )
        inputs.setdefault(key, []).append(Path(raw))
    return inputs


@dataclass(frozen=True)
class KeySpec:
    """One ``--input`` key a table or figure reads."""

    description: str
    required: bool = True
    many: bool = True
    # the workflow's files for the key: a look-up on the scale's Layout (rules/common.smk render_inputs)
    files: Callable[[Layout], list[str]] | None = None


class Inputs:
    """The files given for one table/figure, checked against what it declares."""

    def __init__(self, given: dict[str, list[Path]], declared: dict[str, KeySpec], what: str) -> None:
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise UserError(
                f"{what}: unknown --input key(s) {', '.join(unknown)}; it reads {', '.join(sorted(declared))} "
                "(see 'paired-rollouts render --help' or docs/render.md)"
            )
        for key, spec in declared.items():
            paths = given.get(key, [])
            if spec.required and not paths:
                raise UserError(f"{what}: missing --input {key}=PATH ({spec.description})")
            if not spec.many and len(paths) > 1:
                raise UserError(f"{what}: --input {key} takes one file, got {len(paths)}")
            for path in paths:
                if not path.exists():
                    raise UserError(f"{path}: file not found (given as --input {key}=...); build it first")
        self.given = given
        self.declared = declared
        self.what = what

    def files(self, key: str) -> list[Path]:
        return list(self.given.get(key, []))

    def all_files(self) -> list[Path]:
        return [p for key in self.declared for p in self.given.get(key, [])]


# ---------------------------------------------------------------- the registers, in the study's order


def condition_rank(condition: str) -> tuple[int, int, str]:
    """Tables list tier 1's decided conditions first (C2, C4, in design order), then tier 1's other
    conditions (the clean reference C0), then any other condition (a registered tier's) by name."""
    decided = list(design.decided_comparisons())
    if condition in decided:
        return (0, decided.index(condition), condition)
    if condition in design.TIER1:
        return (1, design.TIER1.index(condition), condition)
    return (2, 0, condition)


def arm_rank(arm: str) -> int:
    return design.ARM_ORDER.get(arm, len(design.ARM_ORDER))


def run_order(run: str, condition: str, arm: str, seed: int) -> tuple:
    """The study's order of runs: by condition, arm (design order), seed, then name."""
    return (condition_rank(condition), arm_rank(arm), arm, seed, run)


def decisions(paths: Iterable[Path]) -> list[DecisionRegister]:
    return [records.read_decision_register(p) for p in paths]


def decision_for(registers: Sequence[DecisionRegister], condition: str, what: str) -> DecisionRegister:
    """The one decision register of ``condition`` among the inputs."""
    found = [d for d in registers if d.condition == condition]
    if not found:
        raise UserError(
            f"{what}: no decision register with condition {condition} among "
            f"{', '.join(d.path for d in registers) or 'the inputs'}; pass results/decisions/"
            f"{condition.lower()}.json"
        )
    if len(found) > 1:
        raise UserError(
            f"{what}: several decision registers for {condition}: {', '.join(d.path for d in found)}; pass one"
        )
    return found[0]


def probes(paths: Iterable[Path]) -> list[ProbeRegister]:
    """The probe registers, by trajectory."""
    return sorted((records.read_probe_register(p) for p in paths), key=lambda probe: probe.trajectory)


def single_runs(paths: Iterable[Path], what: str) -> list[RunRegister]:
    """The run registers, one per run name, in study order; a run given twice is an error here."""
    by_name: dict[str, RunRegister] = {}
    for path in paths:
        entry = records.read_run_register(path)
        if entry.run in by_name:
            raise UserError(
                f"{what}: run {entry.run} is given twice ({by_name[entry.run].root} and {entry.root}); pass one"
            )
        by_name[entry.run] = entry
    return sorted(by_name.values(), key=lambda r: run_order(r.run, r.condition, r.arm, r.seed))


def _curves_register(path: Path) -> CurvesRegister:
    """A curves register, verified against the run registers it names where they are at hand (under its
    results root, RESULTS/curves/C.json beside RESULTS/runs/RUN/register.json): their sha256 and the
    arms' runs, curves and final means they give (``verified_curves``); the means are never taken on
    trust where the numbers behind them are here."""
    from paired_rollouts.layout import Layout
    from paired_rollouts.stats.condition_curves import verified_curves

    register = records.read_curves_register(path)
    layout = Layout(str(Path(path).parent.parent))
    if any(Path(layout.register(run)).is_file() for run in register.registers):
        return verified_curves(path, layout.register)
    return register


def curves_registers(paths: Iterable[Path], what: str) -> list[CurvesRegister]:
    """The curves registers given, one per condition."""
    out: dict[str, CurvesRegister] = {}
    for path in paths:
        register = _curves_register(path)
        if register.condition in out:
            raise UserError(f"{what}: two curves registers for {register.condition}; pass one ({path})")
        out[register.condition] = register
    return list(out.values())


def arm_means(
    paths: Iterable[Path], runs: Sequence[RunRegister], what: str
) -> dict[tuple[str, str], ArmMeans]:
    """{(condition, arm): means} of the curves registers. Where run registers of the condition are given
    too, each arm's averaged runs must be exactly those (else the means and the single seeds shown beside
    them would disagree)."""
    out: dict[tuple[str, str], ArmMeans] = {}
    for register in curves_registers(paths, what):
        condition = register.condition
        for arm, block in register.arms.items():
            given = sorted(r.run for r in runs if (r.condition, r.arm) == (condition, arm))
            if any(r.condition == condition for r in runs) and sorted(block.runs) != given:
                raise UserError(
                    f"{register.path}: the {condition} {arm} means are over {', '.join(block.runs)} but the run "
                    f"registers given for it are {', '.join(given) or 'none'}; rebuild it (curves-register) "
                    "or pass the matching run registers"
                )
            out[(condition, arm)] = block
    return out


def pooled_groups(paths: Iterable[Path], what: str) -> dict[tuple[str, str], tuple[PooledGroups, str]]:
    """{(condition, arm): (the arm's group statistics pooled over its runs, the curves register)}."""
    return {
        (register.condition, arm): (block.group_stats, register.path)
        for register in curves_registers(paths, what)
        for arm, block in register.arms.items()
        if block.group_stats is not None
    }


def final_differences(
    paths: Sequence[Path], what: str
) -> dict[tuple[str, str, str], dict[str, float | None]]:
    """{(condition, arm, other condition): final mean minus the other's, per set} of the curves
    registers; each difference must be against the other condition's register given (by sha256)."""
    from paired_rollouts.io import sha256_file

    given = {register.condition: register for register in curves_registers(paths, what)}
    out: dict[tuple[str, str, str], dict[str, float | None]] = {}
    for condition, register in given.items():
        for other, block in register.differences.items():
            theirs = given.get(other)
            if theirs is None:
                continue
            if sha256_file(theirs.path) != block.sha256:
                raise UserError(
                    f"{register.path}: its differences to {other} were taken against another {theirs.path} "
                    "(sha256 differs); rebuild it (curves-register --compare) after the register it compares with"
                )
            for arm, values in block.arms.items():
                out[(condition, arm, other)] = values
    return out


def pair_differences(
    paths: Iterable[Path], paired: RunRegister, independent: RunRegister, what: str
) -> SeedPair:
    """The differences of the seed pair (``paired``, ``independent``) from the curves register of their
    condition, which must pair exactly these two runs."""
    for register in curves_registers(paths, what):
        if register.condition != paired.condition:
            continue
        pair = register.pairs.get(paired.seed)
        if pair is None:
            break
        if (pair.paired, pair.independent) != (paired.run, independent.run):
            raise UserError(
                f"{register.path}: seed {paired.seed} pairs {pair.paired} with {pair.independent}, not "
                f"{paired.run} with {independent.run}; rebuild it (curves-register) or pass the matching "
                "run registers"
            )
        return pair
    raise UserError(
        f"{what}: no curves register among the inputs holds the {paired.condition} seed {paired.seed} pair; "
        f"pass results/curves/{paired.condition.lower()}.json"
    )


# ---------------------------------------------------------------- captions


def describe_sources(paths: Iterable[Path]) -> list[str]:
    """Compact, deterministic list of source files for a caption.

    Files that differ only in their run folder collapse to ``results/evals/{a, b}/x.jsonl``; many files
    in a folder collapse to ``folder/*.jsonl (n files)``.
    """
    rel: list[Path] = []
    cwd = Path.cwd().resolve()
    for path in paths:
        resolved = Path(path).resolve()
        try:
            rel.append(resolved.relative_to(cwd))
        except ValueError:
            rel.append(Path(path))
    by_folder: dict[Path, list[str]] = defaultdict(list)
    for path in rel:
        by_folder[path.parent].append(path.name)
    # folder -> short description of its files
    folder_desc: dict[Path, str] = {}
    for folder, names in by_folder.items():
        names = sorted(set(names))
        if len(names) <= 2:
            folder_desc[folder] = ", ".join(names)
        else:
            suffixes = sorted({Path(n).suffix for n in names})
            folder_desc[folder] = (
                f"*{suffixes[0]} ({len(names)} files)" if len(suffixes) == 1 else f"({len(names)} files)"
            )
    # collapse folders with the same parent and the same description
    grouped: dict[tuple[Path, str], list[str]] = defaultdict(list)
    for folder, desc in folder_desc.items():
        grouped[(folder.parent, desc)].append(folder.name)
    out = []
    for (parent, desc), names in sorted(grouped.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        names = sorted(names)
        middle = names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"
        prefix = "" if str(parent) in ("", ".") else f"{parent}/"
        out.append(f"{prefix}{middle}/{desc}")
    return out

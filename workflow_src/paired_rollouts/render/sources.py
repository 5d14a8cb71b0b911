"""Reading the rendering stage's inputs, and every assumption about their shapes, in one place.

The registers are defined in ``docs/records.md`` (luck share, group statistics, run and curves
registers, decisions, predictions, probe, power table, calibration, run manifest, verification); the
typed readers of ``paired_rollouts.records`` (shared with the stats stage) check their shapes. A
missing file or a missing required key is a :class:`UserError` that names the file and the key, so a
broken upstream register is fixed upstream, not papered over in a table. Render reads registers only
(no episode records) and computes no statistics. Nothing here searches for synonyms.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paired_rollouts import records
from paired_rollouts.errors import UserError
from paired_rollouts.records import RunManifest

if TYPE_CHECKING:
    from paired_rollouts.layout import Layout

_ABSENT = object()
RUN_RE = re.compile(r"^(?P<condition>c\d+)-(?P<arm>[a-z]+)-s(?P<seed>\d+)(?:-(?P<suffix>[a-z0-9_.-]+))?$")
CONDITION_ORDER = {"C2": 0, "C4": 1, "C0": 2}
ARM_ORDER = {"paired": 0, "independent": 1, "clean": 2}
PERIODIC_REGIMES = ("clean", "at_training", "challenge")
FINAL_REGIMES = ("clean", "noisy_p010", "noisy_p025", "heldout_types", "challenge", "at_training")


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


# ---------------------------------------------------------------- one JSON document


class Doc:
    """A parsed input file; ``req``/``opt`` fetch nested keys and name the file when one is missing."""

    def __init__(self, path: Path, data: Any, kind: str, prefix: str = "") -> None:
        self.path = Path(path)
        self.data = data
        self.kind = kind
        self.prefix = prefix
        if not isinstance(data, dict):
            where = f"key '{prefix}'" if prefix else "the file"
            raise UserError(f"{self.path}: {where} should be a JSON object ({kind})")

    def _dotted(self, keys: Sequence[str | int]) -> str:
        return ".".join([self.prefix, *[str(k) for k in keys]] if self.prefix else [str(k) for k in keys])

    def _walk(self, keys: Sequence[str | int], default: Any) -> Any:
        node: Any = self.data
        for key in keys:
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, dict) and isinstance(key, int) and str(key) in node:
                node = node[str(key)]
            elif isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node):
                node = node[key]
            else:
                return default
        return node

    def req(self, *keys: str | int) -> Any:
        value = self._walk(keys, _ABSENT)
        if value is _ABSENT:
            raise UserError(
                f"{self.path}: missing key '{self._dotted(keys)}' in the {self.kind}; regenerate the "
                "file with the current pipeline (docs/records.md gives its shape)"
            )
        return value

    def opt(self, *keys: str | int, default: Any = None) -> Any:
        return self._walk(keys, default)

    def number(self, *keys: str | int, allow_null: bool = True) -> float | None:
        value = self.req(*keys)
        if value is None and allow_null:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UserError(f"{self.path}: key '{self._dotted(keys)}' should be a number, found {value!r}")
        return float(value)

    def numbers(self, *keys: str | int) -> list[float | None]:
        value = self.req(*keys)
        if not isinstance(value, list):
            raise UserError(
                f"{self.path}: key '{self._dotted(keys)}' should be a list of numbers, found {value!r}"
            )
        for item in value:
            if item is not None and (isinstance(item, bool) or not isinstance(item, int | float)):
                raise UserError(
                    f"{self.path}: key '{self._dotted(keys)}' should hold numbers, found {item!r}"
                )
        return [None if v is None else float(v) for v in value]

    def sub(self, *keys: str | int) -> Doc:
        """A nested object as its own Doc (errors still name this file and the full key path)."""
        return Doc(self.path, self.req(*keys), self.kind, self._dotted(keys))


# ---------------------------------------------------------------- registers (docs/records.md)


def load_decision(path: Path) -> Doc:
    """A decision register (records.md section 4): tier 1's (C2, C4) or a registered tier's comparison."""
    doc = Doc(path, records.read_decision_register(path), "decision register")
    condition = doc.req("condition")
    if condition not in ("C2", "C4") and doc.opt("comparison") is None:
        raise UserError(
            f"{path}: key 'condition' is {condition!r}; tier 1's decision registers are for C2 or C4 "
            "(a tier's register names its 'comparison')"
        )
    doc.req("seeds")
    doc.req("bootstrap")
    return doc


def comparison_name(doc: Doc) -> str:
    """c2, c4 for tier 1's registers; the tier's comparison name (c2r, c4-scale_none, ...) otherwise."""
    return str(doc.opt("comparison") or doc.req("condition")).lower()


def auc_gap_block(doc: Doc) -> dict[str, Any]:
    """The AUC-gap block of a decision register: a tier's `auc_gap`, tier 1's H2a or H2b."""
    return doc.opt("auc_gap") or doc.opt("H2a") or doc.opt("H2b") or {}


def step0_luck_share(doc: Doc) -> float | None:
    """Mean step-0 luck share over the register's runs (a tier's `luck_share_step0.by_run`, tier 1's
    H1a block), or None when no run has one."""
    by_run = doc.opt("luck_share_step0", "by_run") or {
        run: v.get("lam") for run, v in (doc.opt("H1a", "luck_share_step0") or {}).items()
    }
    values = [v for v in by_run.values() if v is not None]
    return sum(values) / len(values) if values else None


def decision_for(docs: Iterable[Doc], condition: str, what: str) -> Doc:
    """The one decision register of ``condition`` among the inputs."""
    found = [d for d in docs if d.req("condition") == condition]
    if not found:
        raise UserError(
            f"{what}: no decision register with condition {condition} among "
            f"{', '.join(str(d.path) for d in docs) or 'the inputs'}; pass results/decisions/"
            f"{condition.lower()}.json"
        )
    if len(found) > 1:
        raise UserError(
            f"{what}: several decision registers for {condition}: "
            f"{', '.join(str(d.path) for d in found)}; pass one"
        )
    return found[0]


def hypothesis(doc: Doc, name: str) -> Doc | None:
    """The hypothesis block, or None when the register does not have it."""
    if doc.opt(name) is None:
        return None
    block = doc.sub(name)
    block.req("passes")
    return block


def load_probe(path: Path) -> Doc:
    """A probe register (records.md section 6)."""
    doc = Doc(path, records.read_probe_register(path), "probe register")
    doc.req("trajectory")
    checkpoints = doc.req("checkpoints")
    if not isinstance(checkpoints, dict) or not checkpoints:
        raise UserError(f"{path}: key 'checkpoints' should be a non-empty object keyed by step")
    doc.req("verdict")
    return doc


def probe_steps(doc: Doc) -> list[int]:
    try:
        return sorted(int(k) for k in doc.req("checkpoints"))
    except ValueError as exc:
        raise UserError(f"{doc.path}: key 'checkpoints' should be keyed by integer steps") from exc


def load_luck(path: Path) -> Doc:
    """A luck-share file (records.md section 1), through the typed reader the stats stage uses."""
    doc = Doc(path, records.read_luck(path), "luck-share file")
    for key in ("run", "step", "lam", "tasks", "tasks_defined"):
        doc.req(key)
    return doc


def load_group_stats(path: Path) -> Doc:
    """A training-group statistics file (records.md section 2)."""
    return Doc(path, records.read_group_stats(path), "group statistics")


def load_run_register(path: Path) -> Doc:
    """A per-run register (records.md section 3.1, written by ``paired-rollouts run-register``)."""
    return Doc(path, records.read_run_register(path), "run register")


def load_curves(path: Path) -> Doc:
    """A condition's curves register (records.md section 3.2, ``paired-rollouts curves-register``)."""
    return Doc(path, records.read_curves_register(path), "curves register")


def load_predictions(path: Path) -> Doc:
    """A predictions register (records.md section 4.1, ``paired-rollouts predictions``)."""
    return Doc(path, records.read_predictions(path), "predictions register")


def load_power(path: Path) -> Doc:
    """The power table (records.md section 8.3, ``paired-rollouts surrogate power``)."""
    return Doc(path, records.read_power_table(path), "power table")


def load_calibration(path: Path) -> Doc:
    """The surrogate calibration register (records.md section 8.2, ``paired-rollouts surrogate calibrate``)."""
    return Doc(path, records.read_calibration(path), "calibration register")


def parse_run(name: str) -> tuple[str, str, int, str] | None:
    """'c4-paired-s1' -> ('C4', 'paired', 1, ''); 'c4-paired-s1-h100' -> (..., 'h100')."""
    match = RUN_RE.match(name)
    if not match:
        return None
    return match["condition"].upper(), match["arm"], int(match["seed"]), match["suffix"] or ""


@dataclass(frozen=True)
class RunId:
    run: str
    condition: str
    arm: str
    seed: int

    @property
    def order(self) -> tuple:
        return (
            CONDITION_ORDER.get(self.condition, 9),
            self.condition,
            ARM_ORDER.get(self.arm, 9),
            self.arm,
            self.seed,
            self.run,
        )


def manifest_identity(manifest: RunManifest) -> RunId:
    """The run identity a (typed) run manifest records."""
    return RunId(manifest.run, manifest.condition.upper(), manifest.arm, manifest.seed)


# ---------------------------------------------------------------- run and curves registers


@dataclass(frozen=True)
class RunCurves:
    """One run's curves, AUC and final sets as its run register holds them (stats/run_register.py)."""

    run: str
    condition: str
    arm: str
    seed: int
    root: str
    curves: dict[str, dict[int, float]]
    auc: dict[str, float | None]
    final: dict[str, float | None]

    @property
    def ident(self) -> RunId:
        return RunId(self.run, self.condition, self.arm, self.seed)

    def value(self, step: int, regime: str) -> float | None:
        return self.curves.get(regime, {}).get(step)

    def steps(self) -> list[int]:
        return sorted({s for curve in self.curves.values() for s in curve})

    def curve(self, regime: str) -> list[tuple[int, float]]:
        return sorted(self.curves.get(regime, {}).items())


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def run_curves(path: Path) -> RunCurves:
    """A run register as a :class:`RunCurves`; ``root`` is its results tree (``RESULTS/runs/RUN/register.json``)."""
    doc = load_run_register(path)
    return RunCurves(
        str(doc.req("run")),
        str(doc.req("condition")).upper(),
        str(doc.req("arm")),
        int(doc.req("seed")),
        str(Path(path).resolve().parent.parent.parent),
        {regime: {int(k): float(v) for k, v in curve.items()} for regime, curve in doc.req("curves").items()},
        {regime: _number(v) for regime, v in doc.req("auc").items()},
        {regime: _number(v) for regime, v in doc.req("final").items()},
    )


def single_runs(paths: Iterable[Path], what: str) -> list[RunCurves]:
    """The run registers, one per run name, in study order; a run given twice is an error here."""
    by_name: dict[str, RunCurves] = {}
    for path in paths:
        entry = run_curves(path)
        if entry.run in by_name:
            raise UserError(
                f"{what}: run {entry.run} is given twice ({by_name[entry.run].root} and {entry.root}); pass one"
            )
        by_name[entry.run] = entry
    return sorted(by_name.values(), key=lambda e: e.ident.order)


@dataclass(frozen=True)
class ArmMeans:
    """One arm's means over its seeds, as the condition's curves register holds them."""

    condition: str
    arm: str
    runs: list[str]
    curves: dict[str, list[tuple[int, float]]]
    curve_runs: dict[str, int]
    final: dict[str, float | None]


def arm_means(paths: Iterable[Path], runs: Sequence[RunCurves], what: str) -> dict[tuple[str, str], ArmMeans]:
    """{(condition, arm): means} of the curves registers. Where run registers of the condition are given
    too, each arm's averaged runs must be exactly those (else the means and the single seeds shown beside
    them would disagree)."""
    out: dict[tuple[str, str], ArmMeans] = {}
    for path in paths:
        doc = load_curves(path)
        condition = str(doc.req("condition")).upper()
        for arm, block in doc.req("arms").items():
            key = (condition, arm)
            if key in out:
                raise UserError(f"{what}: two curves registers for {condition}; pass one ({path})")
            given = sorted(r.run for r in runs if (r.condition, r.arm) == key)
            if any(r.condition == condition for r in runs) and sorted(block["runs"]) != given:
                raise UserError(
                    f"{path}: the {condition} {arm} means are over {', '.join(block['runs'])} but the run "
                    f"registers given for it are {', '.join(given) or 'none'}; rebuild it (curves-register) "
                    "or pass the matching run registers"
                )
            out[key] = ArmMeans(
                condition,
                arm,
                list(block["runs"]),
                {r: sorted((int(s), float(v)) for s, v in c.items()) for r, c in block["curves"].items()},
                dict(block["curve_runs"]),
                {r: _number(v) for r, v in block["final"].items()},
            )
    return out


def pooled_groups(paths: Iterable[Path], what: str) -> dict[tuple[str, str], dict[str, Any]]:
    """{(condition, arm): the arm's group statistics pooled over its runs} of the curves registers."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in paths:
        doc = load_curves(path)
        condition = str(doc.req("condition")).upper()
        for arm, block in doc.req("arms").items():
            if (condition, arm) in out:
                raise UserError(f"{what}: two curves registers for {condition}; pass one ({path})")
            if "group_stats" in block:
                out[(condition, arm)] = {**block["group_stats"], "path": str(path)}
    return out


def final_differences(
    paths: Sequence[Path], what: str
) -> dict[tuple[str, str, str], dict[str, float | None]]:
    """{(condition, arm, other condition): final mean minus the other's, per set} of the curves
    registers; each difference must be against the other condition's register given (by sha256)."""
    from paired_rollouts.io import sha256_file

    docs = {str(load_curves(p).req("condition")).upper(): (p, load_curves(p)) for p in paths}
    out: dict[tuple[str, str, str], dict[str, float | None]] = {}
    for condition, (path, doc) in docs.items():
        for other, block in doc.req("differences").items():
            given = docs.get(str(other).upper())
            if given is None:
                continue
            if sha256_file(given[0]) != block["sha256"]:
                raise UserError(
                    f"{path}: its differences to {other} were taken against another {given[0]} (sha256 "
                    "differs); rebuild it (curves-register --compare) after the register it compares with"
                )
            for arm, values in block["arms"].items():
                out[(condition, arm, str(other).upper())] = {r: _number(v) for r, v in values.items()}
    return out


@dataclass(frozen=True)
class PairDifferences:
    """paired - independent of one seed pair, as the condition's curves register holds them."""

    curves: dict[str, dict[int, float]]
    auc: dict[str, float | None]


def pair_differences(
    paths: Iterable[Path], paired: RunCurves, independent: RunCurves, what: str
) -> PairDifferences:
    """The differences of the seed pair (``paired``, ``independent``) from the curves register of their
    condition, which must pair exactly these two runs."""
    for path in paths:
        doc = load_curves(path)
        if str(doc.req("condition")).upper() != paired.condition:
            continue
        pair = doc.opt("pairs", str(paired.seed))
        if pair is None:
            break
        if (pair["paired"], pair["independent"]) != (paired.run, independent.run):
            raise UserError(
                f"{path}: seed {paired.seed} pairs {pair['paired']} with {pair['independent']}, not "
                f"{paired.run} with {independent.run}; rebuild it (curves-register) or pass the matching "
                "run registers"
            )
        return PairDifferences(
            {r: {int(k): float(v) for k, v in c.items()} for r, c in pair["curves_difference"].items()},
            {r: _number(v) for r, v in pair["auc_difference"].items()},
        )
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

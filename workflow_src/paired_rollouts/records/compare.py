"""What the compare stage hands the document: the published-versus-reproduced comparison and the cost
ledger (docs/compare.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.records.schema import (
    At,
    by_name,
    each,
    is_bool,
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
    read_register,
)

COMPARISON_STATUS = ("reproduced", "differs", "not computed")
COMPARE = "paired-rollouts compare"


def is_value(v: Any) -> bool:
    return v is not None


is_value.__name__ = "a value (a number, [low, high], a sha256 or true/false)"


@dataclass(frozen=True, kw_only=True)
class ComparedNumber:
    """One published number: its id (``family.detail``), the published value and how it reads (unit,
    rounding, op), what this results root reproduced (null where it could not be computed) and what that
    says: status, agrees, difference, all recomputed from these numbers by :func:`read_comparison`."""

    id: str = key(is_str)
    status: str = key(one_of(*COMPARISON_STATUS))
    published: Any = key(is_value)
    unit: str = key(is_str)
    rounding: float | None = key(nullable(is_num))
    op: str | None = key(nullable(is_str), default=None)  # older writers: the published file's op
    reproduced: Any = key(lambda v: True)
    difference: Any = key(lambda v: True)
    agrees: bool | None = key(nullable(is_bool))
    reason: str | None = key(nullable(is_str))

    @property
    def family(self) -> str:
        return self.id.split(".")[0]


@dataclass(frozen=True, kw_only=True)
class ComparisonSummary:
    entries: int = key(is_int)
    reproduced: int = key(is_int)
    differs: int = key(is_int)
    not_computed: int = key(is_int, name="not computed")


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """RESULTS/comparison.json (compare/compare.py, docs/compare.md)."""

    path: str
    published_source: str = key(is_str)
    published_sha256: str = key(is_sha256)
    entries: list[ComparedNumber] = key(list_of(is_dict), read=each(ComparedNumber))
    summary: ComparisonSummary = key(is_dict, read=one(ComparisonSummary))
    mismatch_expected: bool = key(is_bool)
    scale: str = key(is_str)
    scale_label: str = key(is_str)

    def _check(self, at: At) -> None:
        """The summary is its entries' count by status (never trusted as written)."""
        counted = {status: sum(e.status == status for e in self.entries) for status in COMPARISON_STATUS}
        stated = {
            "reproduced": self.summary.reproduced,
            "differs": self.summary.differs,
            "not computed": self.summary.not_computed,
        }
        if self.summary.entries != len(self.entries) or stated != counted:
            raise at.error(
                f"summary says {self.summary.entries} entries {stated}, its entries are {len(self.entries)} "
                f"{counted}"
            )


def _published_entries(c: Comparison) -> dict[str, Any] | None:
    """The entries of the published file the comparison names, by id, when that file is at hand (None
    otherwise); refused unless it is the pinned transcription the comparison states it compared with and
    the comparison's entries are exactly its entries, with their published values, units and roundings."""
    from paired_rollouts.compare.published import PINNED_SHA256, load_published
    from paired_rollouts.io import sha256_file

    source = Path(c.published_source)
    pinned = PINNED_SHA256.get(source.name)
    if pinned is None or c.published_sha256 != pinned:
        raise UserError(
            f"{c.path}: published_sha256 {c.published_sha256} of {c.published_source} is not the pinned "
            f"transcription of the paper ({pinned or 'no published file of that name'}, compare/published.py "
            f"PINNED_SHA256); regenerate it with '{COMPARE}'"
        )
    if not source.is_file():
        return None
    if sha256_file(source) != c.published_sha256:
        raise UserError(
            f"{c.path}: {source} is not the published file it was compared with (sha256 differs from "
            f"published_sha256); restore it (git checkout) or regenerate the comparison with '{COMPARE}'"
        )
    published = {e.id: e for e in load_published(source).entries}
    ids = [n.id for n in c.entries]
    if ids != list(published):
        lost, extra = sorted(set(published) - set(ids)), sorted(set(ids) - set(published))
        raise UserError(
            f"{c.path}: its entries are not those of {source} (missing {lost}, not published {extra}, or "
            f"another order); regenerate it with '{COMPARE}'"
        )
    for n in c.entries:
        e = published[n.id]
        written = (n.published, n.unit, n.rounding, n.op or e.op)
        if written != (e.value, e.unit, e.rounding, e.op):
            raise UserError(
                f"{c.path}: entry {n.id} says published {n.published!r} ({n.unit}, rounding {n.rounding}, op "
                f"{n.op or e.op}), {source} says {e.value!r} ({e.unit}, rounding {e.rounding}, op {e.op}); "
                f"regenerate it with '{COMPARE}'"
            )
    return published


def _check_entry(c: Comparison, n: ComparedNumber, published: dict[str, Any] | None) -> None:
    """One row's status, agrees and difference, recomputed from its published and reproduced values with
    the comparison's own rule (compare/compare.py ``judged``)."""
    from paired_rollouts.compare.compare import judged
    from paired_rollouts.compare.published import OPS, Entry

    stated = {"status": n.status, "agrees": n.agrees, "difference": n.difference}
    if n.reproduced is None:
        again: dict[str, Any] = {"status": "not computed", "agrees": None, "difference": None}
    else:
        op = n.op or (published[n.id].op if published is not None else None)
        if op not in OPS:
            raise UserError(
                f"{c.path}: entry {n.id} names no op{'' if op is None else f' it knows ({op!r})'} and "
                f"{c.published_source} is not at hand, so its agreement cannot be recomputed; regenerate "
                f"it with '{COMPARE}'"
            )
        entry = Entry(
            id=n.id, where="", printed="", value=n.published, rounding=n.rounding, unit=n.unit, op=op, keys=()
        )
        try:
            again = judged(entry, n.reproduced)
        except (TypeError, IndexError, KeyError, ZeroDivisionError):
            raise UserError(
                f"{c.path}: entry {n.id}: reproduced {n.reproduced!r} is no value of the published "
                f"{n.published!r}'s kind; regenerate it with '{COMPARE}'"
            ) from None
    if stated != again:
        raise UserError(
            f"{c.path}: entry {n.id} says {stated} for published {n.published!r}, reproduced "
            f"{n.reproduced!r} (rounding {n.rounding}), which give {again}; a status follows from its "
            f"numbers, regenerate it with '{COMPARE}'"
        )


def read_comparison(path: str | Path) -> Comparison:
    """RESULTS/comparison.json, typed. The published file it names must be the pinned transcription it
    states (``published_sha256``); where that file is at hand the entries must be its entries, with its
    values. Every entry's status, agrees and difference must be what its own numbers give."""
    comparison = read_register(Comparison, path, "comparison", COMPARE)
    published = _published_entries(comparison)
    for number in comparison.entries:
        _check_entry(comparison, number, published)
    return comparison


@dataclass(frozen=True, kw_only=True)
class Cost:
    """What a set of jobs cost: how many, wall and CPU seconds, peak memory, GPU-hours (GPU profiles)."""

    jobs: int = key(is_int)
    wall_s: float = key(is_num)
    cpu_s: float = key(is_num)
    peak_rss_mb: float | None = key(nullable(is_num))
    gpu_hours: float | None = key(nullable(is_num))


@dataclass(frozen=True, kw_only=True)
class PublishedBudget:
    """The paper's budget (data/published/paper.yaml ``budget``), as the ledger carries it."""

    episodes_per_run: int = key(is_int)
    gpu_hours_per_run: float = key(is_num)
    accelerator: str = key(is_str)


@dataclass(frozen=True, kw_only=True)
class Ledger:
    """RESULTS/ledger.json (compare/ledger.py, docs/compare.md): per stage, per run and in all."""

    path: str
    accelerator: str = key(is_str)
    stages: dict[str, Cost] = key(map_of(is_dict), read=by_name(Cost))
    runs: dict[str, Cost] = key(map_of(is_dict), read=by_name(Cost))
    total: Cost = key(is_dict, read=one(Cost))
    runs_in_study: int | None = key(nullable(is_int))
    gpu_hours_per_run: float | None = key(nullable(is_num))
    published_budget: PublishedBudget | None = key(nullable(is_dict), read=one(PublishedBudget))

    def _check(self, at: At) -> None:
        """The total is its stages' (every job lies in one stage): jobs, wall and CPU time add up (each
        rounded to the millisecond), peak memory is the largest; GPU-hours (null on the cpu profile) add up
        (each rounded to GPU_DIGITS decimals) and the per-run figure is the ledger writer's own
        ``gpu_hours_per_run`` of the total and runs_in_study."""
        from paired_rollouts.compare.ledger import GPU_DIGITS, counts_gpu_hours, gpu_hours_per_run

        stages = list(self.stages.values())
        slack = 1e-3 * (len(stages) + 1)
        peaks = [c.peak_rss_mb for c in stages if c.peak_rss_mb is not None]
        if (
            self.total.jobs != sum(c.jobs for c in stages)
            or abs(self.total.wall_s - sum(c.wall_s for c in stages)) > slack
            or abs(self.total.cpu_s - sum(c.cpu_s for c in stages)) > slack
            or self.total.peak_rss_mb != (max(peaks) if peaks else None)
        ):
            raise at.error(
                "total is not the sum of its stages (jobs, wall_s, cpu_s) and their largest peak_rss_mb"
            )
        gpu = counts_gpu_hours(self.accelerator)
        costs = {"total": self.total} | {f"stages.{n}": c for n, c in self.stages.items()}
        costs |= {f"runs.{n}": c for n, c in self.runs.items()}
        wrong = [name for name, c in costs.items() if (c.gpu_hours is not None) != gpu]
        if wrong:
            raise at.error(
                f"gpu_hours of {', '.join(wrong)} {'is null' if gpu else 'is not null'}, but the "
                f"{self.accelerator} profile {'counts' if gpu else 'has no'} GPU-hours"
            )
        stage_sum = sum(c.gpu_hours for c in stages) if gpu else None
        if stage_sum is not None and abs(self.total.gpu_hours - stage_sum) > 10**-GPU_DIGITS * (
            len(stages) + 1
        ):
            raise at.error(
                f"total.gpu_hours {self.total.gpu_hours} is not the sum of its stages' ({stage_sum:.{GPU_DIGITS}f})"
            )
        per_run = gpu_hours_per_run(self.total.gpu_hours, self.runs_in_study)
        if self.gpu_hours_per_run != per_run:
            raise at.error(
                f"gpu_hours_per_run is {self.gpu_hours_per_run}, but total.gpu_hours "
                f"{self.total.gpu_hours} over runs_in_study {self.runs_in_study} gives {per_run}"
            )


def read_ledger(path: str | Path) -> Ledger:
    """RESULTS/ledger.json, typed."""
    return read_register(Ledger, path, "ledger", "paired-rollouts ledger")

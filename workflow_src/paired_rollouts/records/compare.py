"""What the compare stage hands the document: the published-versus-reproduced comparison and the cost
ledger (docs/compare.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from paired_rollouts.records.schema import (
    At,
    by_name,
    each,
    is_bool,
    is_dict,
    is_int,
    is_num,
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


@dataclass(frozen=True, kw_only=True)
class ComparedNumber:
    """One published number: its id (``family.detail``) and whether it was reproduced."""

    id: str = key(is_str)
    status: str = key(one_of(*COMPARISON_STATUS))

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


def read_comparison(path: str | Path) -> Comparison:
    """RESULTS/comparison.json, typed."""
    return read_register(Comparison, path, "comparison", "paired-rollouts compare")


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
        rounded to the millisecond), peak memory is the largest."""
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


def read_ledger(path: str | Path) -> Ledger:
    """RESULTS/ledger.json, typed."""
    return read_register(Ledger, path, "ledger", "paired-rollouts ledger")

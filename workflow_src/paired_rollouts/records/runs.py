"""The records of one run: its manifest, completeness record, luck-share files, group statistics and run
register (docs/records.md sections 0-3.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.records.schema import (
    At,
    by_name,
    curves_by_step,
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
    pair_of,
    read_register,
    steps_of,
)

ARM = one_of(*design.ARMS)


def _is_text(v: Any) -> bool:
    return isinstance(v, str)


# ---------------------------------------------------------------- run manifest


@dataclass(frozen=True)
class RunShape:
    """``settings`` of a run manifest: the steps and batch the run trained with."""

    steps: int = key(is_int)
    prompts_per_step: int = key(is_int)
    num_generations: int = key(is_int)


@dataclass(frozen=True)
class RunNoise:
    p: float = key(is_num)
    q: float = key(is_num)


@dataclass(frozen=True)
class Hardware:
    device: str = key(is_str)
    gpu: str | None = key(is_str, default=None)


@dataclass(frozen=True)
class CodeStamp:
    sources_sha256: str = key(is_str)


@dataclass(frozen=True)
class RunManifest:
    """results/runs/RUN/manifest.json as training/grpo.py and surrogate/run.py write it."""

    path: str
    run: str = key(is_str)
    condition: str = key(is_condition)
    arm: str = key(ARM)
    seed: int = key(is_int)
    settings: RunShape = key(is_dict, read=one(RunShape))
    recorded_settings: dict[str, Any] = key(is_dict, name="settings")  # every key, as the run recorded it
    noise: RunNoise = key(is_dict, read=one(RunNoise))
    pools_sha256: dict[str, str] = key(is_dict)
    all_versions: dict[str, str | None] = key(is_dict, name="versions")
    hardware: Hardware = key(is_dict, read=one(Hardware))
    code: CodeStamp = key(is_dict, read=one(CodeStamp))
    attempts: list[dict[str, Any]] = key(list_of(is_dict))  # the lineage as written
    timings: list[dict[str, Any]] = key(list_of(is_dict), factory=list)

    def _check(self, at: At) -> None:
        for name, digest in self.pools_sha256.items():
            if not is_sha256(digest):
                raise UserError(f"{at.path}: pools_sha256.{name} is {digest!r}, expected a sha256 hex digest")
        for name, version in self.all_versions.items():
            if version is not None and not _is_text(version):
                raise UserError(f"{at.path}: versions.{name} is {version!r}, expected a string or null")
        for i, attempt in enumerate(self.attempts):
            if "code_version" in attempt and not is_str(attempt["code_version"]):
                raise at.at(f"attempts[{i}]").wrong("code_version", attempt["code_version"], is_str)

    @property
    def steps(self) -> int:
        return self.settings.steps

    @property
    def prompts_per_step(self) -> int:
        return self.settings.prompts_per_step

    @property
    def num_generations(self) -> int:
        return self.settings.num_generations

    @property
    def p(self) -> float:
        return float(self.noise.p)

    @property
    def q(self) -> float:
        return float(self.noise.q)

    @property
    def device(self) -> str:
        return self.hardware.device

    @property
    def gpu(self) -> str | None:
        return self.hardware.gpu

    @property
    def versions(self) -> dict[str, str]:
        """The software versions the run recorded (those it could not tell left out)."""
        return {str(name): v for name, v in self.all_versions.items() if v is not None}

    @property
    def code_versions(self) -> list[str]:
        """The distinct code versions of the attempts (the code stamp when no attempt records one)."""
        per_attempt = [a["code_version"] for a in self.attempts if "code_version" in a]
        return sorted(set(per_attempt or [self.code.sources_sha256]))


def read_run_manifest(path: str | Path) -> RunManifest:
    """The run manifest, typed; a missing or mistyped key is one UserError naming the file and key."""
    return read_register(RunManifest, path, "run manifest")


# ---------------------------------------------------------------- completeness


@dataclass(frozen=True)
class PoolCheck:
    """One task pool of a completeness record: the sha256 the run used (null when it recorded none)."""

    sha256: str | None = key(nullable(is_str))


@dataclass(frozen=True)
class Completeness:
    """results/runs/RUN/complete.json (stats/completeness/, docs/records.md section 3)."""

    path: str
    raw: dict[str, Any]
    run: str = key(is_str)
    complete: bool = key(is_bool)
    files: dict[str, str] = key(is_dict)  # relative path -> sha256
    task_pools: dict[str, PoolCheck] = key(map_of(is_dict), read=by_name(PoolCheck))
    code_versions: list[str] = key(list_of(is_str))
    missing: list[dict[str, Any]] = key(list_of(is_dict))
    defects: list[dict[str, Any]] = key(list_of(is_dict))
    paper_pools: bool | None = key(is_bool, default=None)
    settings: dict[str, Any] | None = key(is_dict, default=None)  # the evidence it was checked against

    def _check(self, at: At) -> None:
        for rel, digest in self.files.items():
            if not is_sha256(digest):
                raise UserError(f"{at.path}: files.{rel} is {digest!r}, expected a sha256 hex digest")
        if self.complete != (not self.missing and not self.defects):
            raise UserError(
                f"{at.path}: complete is {str(self.complete).lower()} with {len(self.missing)} missing and "
                f"{len(self.defects)} defects (complete means none); rerun the completeness check"
            )

    @property
    def pool_sha256(self) -> dict[str, str | None]:
        """{pool: the sha256 the run used}."""
        return {name: pool.sha256 for name, pool in self.task_pools.items()}


def read_completeness(path: str | Path) -> Completeness:
    """results/runs/RUN/complete.json, typed; its ``files`` map relative paths to sha256 digests."""
    return read_register(Completeness, path, "completeness record")


# ---------------------------------------------------------------- luck share


@dataclass(frozen=True)
class TaskLuck:
    lam: float | None = key(nullable(is_num))


@dataclass(frozen=True)
class LuckShare:
    """results/diagnostics/RUN/luck-stepN.json (stats/luck_share.py, docs/records.md section 1)."""

    path: str
    raw: dict[str, Any]
    run: str = key(is_str)
    step: int = key(is_int)
    source_sha256: str = key(is_sha256)
    lam: float | None = key(nullable(is_num))
    ci95: list[float | None] = key(pair_of(nullable(is_num)))
    tasks: int = key(is_int)
    tasks_defined: int = key(is_int)
    defects: list[dict[str, Any]] = key(list_of(is_dict))
    per_task: list[TaskLuck] = key(
        list_of(is_dict), read=lambda v, at: [_task_luck(t, at, i) for i, t in enumerate(v)]
    )

    def _check(self, at: At) -> None:
        """The summary is its per-task values' (never trusted as written): the task counts, and lam the
        mean of the defined per-task shares, as pairing.luck_share computes it."""
        import numpy as np

        defined = [t.lam for t in self.per_task if t.lam is not None]
        if self.tasks != len(self.per_task) or self.tasks_defined != len(defined):
            raise UserError(
                f"{at.path}: tasks {self.tasks} and tasks_defined {self.tasks_defined}, but per_task holds "
                f"{len(self.per_task)} tasks, {len(defined)} defined; rerun luck-share"
            )
        lam = float(np.mean(defined)) if defined else None
        if (lam is None) != (self.lam is None) or (
            lam is not None and not math.isclose(lam, self.lam, rel_tol=1e-12, abs_tol=1e-15)
        ):
            raise UserError(f"{at.path}: lam is {self.lam}, its per-task values give {lam}; rerun luck-share")


def _task_luck(data: dict[str, Any], at: At, index: int) -> TaskLuck:
    lam = data.get("lam")
    if lam is not None and not is_num(lam):
        raise UserError(f"{at.path}: per_task[{index}].lam is {lam!r}, expected a finite number or null")
    return TaskLuck(lam)


def read_luck(path: str | Path) -> LuckShare:
    """results/diagnostics/RUN/luck-stepN.json, typed (per-task lam a finite number or null)."""
    return read_register(LuckShare, path, "luck-share record")


# ---------------------------------------------------------------- group statistics


@dataclass(frozen=True)
class ExpectedSpuriousRate:
    """1-(1-q)^G-q^G at the q of the run's condition."""

    q: float = key(is_num)
    group_size: int = key(is_int, name="G")
    rate: float = key(is_num)


@dataclass(frozen=True)
class SeedSharing:
    passes: bool | None = key(nullable(is_bool))


@dataclass(frozen=True)
class GroupStats:
    """results/runs/RUN/group_stats.json (stats/groups.py, docs/records.md section 2)."""

    path: str
    raw: dict[str, Any]
    run: str = key(is_str)
    condition: str = key(is_condition)
    arm: str = key(ARM)
    seed: int = key(is_int)
    groups: int = key(is_int)
    rollouts: int = key(is_int)
    group_size: int = key(is_int, name="G")
    steps: int = key(is_int)
    zero_variance_groups: int = key(is_int)
    zero_variance_frac: float = key(is_num)
    all_correct_groups: int = key(is_int)
    spurious_groups: int = key(is_int)
    spurious_among_all_correct: float | None = key(nullable(is_num))
    expected_spurious_rate: ExpectedSpuriousRate | None = key(
        nullable(is_dict), read=one(ExpectedSpuriousRate)
    )
    seed_sharing: SeedSharing = key(is_dict, read=one(SeedSharing))
    by_step: list[dict[str, Any]] = key(list_of(is_dict))
    defects: list[dict[str, Any]] = key(list_of(is_dict))

    def _check(self, at: At) -> None:
        """Every share and verdict is its counts' (never trusted as written): the fractions, the per-step
        rows' sums and the seed-sharing verdict of the arm (stats/groups.py: seed_sharing)."""
        mismatch = _group_stats_mismatch(self)
        if mismatch is not None:
            raise UserError(f"{at.path}: {mismatch}; {at.fix}")


def _group_stats_mismatch(stats: GroupStats) -> str | None:
    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    def differs(stated: float | None, counted: float | None) -> bool:
        return (stated is None) != (counted is None) or (
            stated is not None and not math.isclose(stated, counted, rel_tol=1e-9, abs_tol=1e-12)
        )

    if differs(stats.zero_variance_frac, ratio(stats.zero_variance_groups, stats.groups)):
        return f"zero_variance_frac {stats.zero_variance_frac} is not {stats.zero_variance_groups}/{stats.groups}"
    if differs(stats.spurious_among_all_correct, ratio(stats.spurious_groups, stats.all_correct_groups)):
        return (
            f"spurious_among_all_correct {stats.spurious_among_all_correct} is not "
            f"{stats.spurious_groups}/{stats.all_correct_groups}"
        )
    for name in ("groups", "zero_variance_groups", "all_correct_groups", "spurious_groups"):
        if stats.by_step and sum(int(row.get(name, 0)) for row in stats.by_step) != getattr(stats, name):
            return f"{name} is {getattr(stats, name)}, its by_step rows sum to another count"
    sharing = stats.raw["seed_sharing"]
    n, one = sharing.get("groups"), sharing.get("groups_sharing_one_seed")
    if not (is_int(n) and is_int(one)) or n != stats.groups:
        return f"seed_sharing counts {n} groups, the register {stats.groups}"
    from paired_rollouts.stats.groups import sharing_passes

    # at the design's thresholds (1 and 2) a paired group breaks the rule with several seeds, an
    # independent one with one
    verdict = sharing_passes(stats.arm, n, n - one if stats.arm == "paired" else one)
    if stats.seed_sharing.passes != verdict:
        return (
            f"seed_sharing.passes is {stats.seed_sharing.passes}, but {one} of the {stats.arm} arm's {n} groups "
            f"share one seed (passes: {verdict})"
        )
    return None


def read_group_stats(path: str | Path) -> GroupStats:
    """results/runs/RUN/group_stats.json (stats/groups.py, docs/records.md section 2), typed."""
    return read_register(GroupStats, path, "group statistics", "paired-rollouts group-stats")


# ---------------------------------------------------------------- run register


def _finite_or_null(block: str):
    def read(value: dict[str, Any], at: At) -> dict[str, float | None]:
        for regime, v in value.items():
            if v is not None and not is_num(v):
                raise UserError(f"{at.path}: {block}.{regime} is {v!r}, expected a finite number or null")
        return value

    return read


def _curves(value: dict[str, Any], at: At) -> dict[str, dict[int, float]]:
    for regime, curve in value.items():
        if not steps_of(is_num)(curve):
            raise UserError(f"{at.path}: curves.{regime} must map steps to finite numbers")
    return curves_by_step(value, at)


@dataclass(frozen=True)
class RunLuck:
    """One diagnostic checkpoint's luck share in a run register."""

    lam: float | None = key(nullable(is_num))


@dataclass(frozen=True)
class RunRegister:
    """results/runs/RUN/register.json (stats/run_register.py, docs/records.md section 3.1): one run's
    curves per periodic set (steps as integers), AUC and final success per set."""

    path: str
    raw: dict[str, Any]
    run: str = key(is_str)
    condition: str = key(is_condition)
    arm: str = key(ARM)
    seed: int = key(is_int)
    curves: dict[str, dict[int, float]] = key(is_dict, read=_curves)
    auc: dict[str, float | None] = key(is_dict, read=_finite_or_null("auc"))
    final: dict[str, float | None] = key(is_dict, read=_finite_or_null("final"))
    complete_sha256: str = key(is_sha256)
    luck_share: dict[str, RunLuck] = key(map_of(is_dict), read=by_name(RunLuck))
    attempts: list[dict[str, Any]] = key(list_of(is_dict))
    checkpoints: list[int] = key(list_of(is_int))

    @property
    def root(self) -> str:
        """The results tree the register belongs to (``RESULTS/runs/RUN/register.json``)."""
        return str(Path(self.path).resolve().parent.parent.parent)

    @property
    def ident(self) -> design.RunId:
        return design.parse_run(self.run)

    def value(self, step: int, regime: str) -> float | None:
        return self.curves.get(regime, {}).get(step)

    def steps(self) -> list[int]:
        return sorted({s for curve in self.curves.values() for s in curve})

    def curve(self, regime: str) -> list[tuple[int, float]]:
        return sorted(self.curves.get(regime, {}).items())


def read_run_register(path: str | Path) -> RunRegister:
    """results/runs/RUN/register.json (stats/run_register.py), typed."""
    return read_register(RunRegister, path, "run register", "paired-rollouts run-register")

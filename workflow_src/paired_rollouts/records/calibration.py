"""The records that fix the starting point before any training: the surrogate's calibration register
and checkpoints, the zero-shot calibration gate and the scripted reference agent (docs/records.md
sections 8.1-8.2, docs/prereg.md, docs/simulator.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.io import read_json, sha256_file
from paired_rollouts.records.schema import (
    At,
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
    parse,
    read_register,
)

# ---------------------------------------------------------------- surrogate calibration

CALIBRATE = "paired-rollouts surrogate calibrate"


@dataclass(frozen=True, kw_only=True)
class CalibrationTarget:
    """One step-0 target of the paper's agent: its value, tolerance, what the surrogate achieved."""

    target_name: str = key(is_str)
    target: float = key(is_num)
    tolerance: float = key(is_num)
    achieved: float | None = key(nullable(is_num))
    difference: float | None = key(nullable(is_num))
    passes: bool = key(is_bool)
    source: str = key(is_str)


@dataclass(frozen=True, kw_only=True)
class CalibrationLuck:
    lam: float | None = key(nullable(is_num))
    tasks: int = key(is_int)
    tasks_defined: int = key(is_int)


@dataclass(frozen=True, kw_only=True)
class CalibrationEstimation:
    eval_tasks: int = key(is_int)
    samples: int = key(is_int)
    clean_episodes: int = key(is_int)
    noisy_episodes: int = key(is_int)
    diagnostic_episodes: int = key(is_int)


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """results/<scale>/models/surrogate/calibration.json (surrogate/calibration.py, docs/records.md
    section 8.2): theta has one value per parameter name."""

    path: str
    raw: dict[str, Any]
    passes: bool = key(is_bool)
    knobs: dict[str, float] = key(map_of(is_num))
    theta: list[float] = key(list_of(is_num))
    parameter_names: list[str] = key(list_of(is_str))
    targets: list[CalibrationTarget] = key(list_of(is_dict), read=each(CalibrationTarget))
    luck_share: CalibrationLuck = key(is_dict, read=one(CalibrationLuck))
    iterations: list[dict[str, Any]] = key(list_of(is_dict))
    estimation: CalibrationEstimation = key(is_dict, read=one(CalibrationEstimation))

    def _check(self, at: At) -> None:
        if len(self.theta) != len(self.parameter_names):
            raise at.error(f"{len(self.theta)} theta values for {len(self.parameter_names)} parameter names")

    def target(self, name: str) -> CalibrationTarget | None:
        return {t.target_name: t for t in self.targets}.get(name)


def read_calibration(path: str | Path) -> Calibration:
    """results/<scale>/models/surrogate/calibration.json, typed."""
    return read_register(Calibration, path, "surrogate calibration register", CALIBRATE)


# ---------------------------------------------------------------- surrogate checkpoints

ARM_JOB = "paired-rollouts surrogate arm"


@dataclass(frozen=True, kw_only=True)
class CheckpointMarker:
    """A checkpoint folder's COMPLETE marker, written last: its step and the sha256 of its files."""

    step: int = key(is_int)
    files: dict[str, str] = key(map_of(is_sha256))


@dataclass(frozen=True, kw_only=True)
class SurrogateCheckpoint:
    """RUN/checkpoints/stepNNNN/theta.json of a surrogate arm job (surrogate/run.py)."""

    path: str
    step: int = key(is_int)
    theta: list[float] = key(list_of(is_num))
    parameter_names: list[str] = key(list_of(is_str))
    adam: dict[str, Any] = key(is_dict)


def read_surrogate_checkpoint(folder: str | Path) -> SurrogateCheckpoint:
    """A surrogate checkpoint folder, typed and checked against its COMPLETE marker (same step,
    theta.json's sha256), one value per parameter name."""
    folder = Path(folder)
    what = "surrogate checkpoint"
    marker_path = folder / "COMPLETE"
    marker = parse(CheckpointMarker, read_json(marker_path), At.of(marker_path, what, ARM_JOB))
    where = f"{folder}/theta.json"
    if marker.files.get("theta.json") != sha256_file(where):
        raise UserError(f"{where}: does not match its COMPLETE marker; rerun the surrogate arm job")
    data = read_register(SurrogateCheckpoint, where, what, ARM_JOB)
    if data.step != marker.step or len(data.theta) != len(data.parameter_names):
        raise UserError(
            f"{where}: step {data.step} with {len(data.theta)} values for "
            f"{len(data.parameter_names)} parameter names (marker step {marker.step}); rerun '{ARM_JOB}'"
        )
    return data


# ---------------------------------------------------------------- zero-shot calibration gate

ZERO_SHOT_FORMAT = "paired-rollouts-zero-shot-calibration/1"
STATUS = one_of("pass", "fail", "not_applicable")


@dataclass(frozen=True, kw_only=True)
class ZeroShotBand:
    name: str = key(is_str)
    target: dict[str, Any] | None = key(nullable(is_dict))
    achieved: float | None = key(nullable(is_num))
    applies: bool = key(is_bool)
    status: str = key(STATUS)


@dataclass(frozen=True, kw_only=True)
class ZeroShot:
    """results/<scale>/calibration/zero_shot.json (calibration/zero_shot.py, docs/prereg.md): the register
    and each band (its target, what was achieved, whether it applies). ``raw`` is the register as
    written, which the gate's own ``describe``/``check_register`` read (they judge the writer's output
    before it is written, too)."""

    path: str
    raw: dict[str, Any]
    format: str = key(one_of(ZERO_SHOT_FORMAT))
    model: str = key(is_str)
    registered: bool = key(is_bool)
    bands: list[ZeroShotBand] = key(list_of(is_dict), read=each(ZeroShotBand))
    status: str = key(STATUS)
    passes: bool | None = key(nullable(is_bool))


def read_zero_shot(path: str | Path) -> ZeroShot:
    """results/<scale>/calibration/zero_shot.json, typed."""
    return read_register(
        ZeroShot, path, "zero-shot calibration register", "paired-rollouts calibrate zero-shot"
    )


# ---------------------------------------------------------------- scripted reference agent

REFERENCE_METRICS = ("success", "exposed_frac", "outage_hit_frac", "budget_exceeded_frac", "mean_calls")


@dataclass(frozen=True, kw_only=True)
class ReferenceCell:
    """One pool x condition x policy of the scripted reference (metrics only when it has episodes)."""

    episodes: int = key(is_int)
    success: float | None = key(is_num, default=None)
    exposed_frac: float | None = key(is_num, default=None)
    outage_hit_frac: float | None = key(is_num, default=None)
    budget_exceeded_frac: float | None = key(is_num, default=None)
    mean_calls: float | None = key(is_num, default=None)

    def _check(self, at: At) -> None:
        if self.episodes > 0:
            for name in REFERENCE_METRICS:
                if getattr(self, name) is None:
                    raise at.missing(name)


def _results(value: dict[str, Any], at: At) -> dict[str, dict[str, dict[str, ReferenceCell]]]:
    out: dict[str, dict[str, dict[str, ReferenceCell]]] = {}
    for pool, conditions in value.items():
        here = at.at(pool)
        if not is_dict(conditions):
            raise here.not_object()
        out[pool] = {}
        for condition, policies in conditions.items():
            there = here.at(condition)
            if not is_dict(policies):
                raise there.not_object()
            out[pool][condition] = {
                p: parse(ReferenceCell, cell, there.at(p)) for p, cell in policies.items()
            }
    return out


@dataclass(frozen=True, kw_only=True)
class ScriptedReference:
    """results/reference/scripted_reference.json (agents/reference.py, docs/simulator.md):
    ``results[pool][condition][policy]`` is a cell of metrics."""

    path: str
    raw: dict[str, Any]
    pools: dict[str, Any] = key(is_dict)
    schedule_indices: list[int] = key(list_of(is_int))
    conditions: dict[str, Any] = key(is_dict)
    policies: list[str] = key(list_of(is_str))
    results: dict[str, dict[str, dict[str, ReferenceCell]]] = key(is_dict, read=_results)


def read_scripted_reference(path: str | Path) -> ScriptedReference:
    """results/reference/scripted_reference.json, typed."""
    return read_register(ScriptedReference, path, "scripted reference register", "paired-rollouts reference")

"""The records that fix the starting point before any training: the surrogate's calibration register
and checkpoints, the zero-shot calibration gate and the scripted reference agent (docs/records.md
sections 8.1-8.2, docs/prereg.md, docs/simulator.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.design import ARMS
from paired_rollouts.errors import UserError
from paired_rollouts.io import read_json, sha256_file
from paired_rollouts.records.schema import (
    At,
    by_name,
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
    pair_of,
    parse,
    read_register,
)

# ---------------------------------------------------------------- surrogate calibration

CALIBRATE = "paired-rollouts surrogate calibrate"
CURVES = "paired-rollouts surrogate curves"


@dataclass(frozen=True, kw_only=True)
class CalibrationTarget:
    """One target of the calibration: its value, tolerance, what the surrogate achieved, and its kind
    (fitted, fitted offline, checked, or reported where the scale does not check it)."""

    target_name: str = key(is_str)
    target: float = key(is_num)
    tolerance: float = key(is_num)
    achieved: float | None = key(nullable(is_num))
    difference: float | None = key(nullable(is_num))
    passes: bool = key(is_bool)
    kind: str = key(is_str)
    source: str = key(is_str)


@dataclass(frozen=True, kw_only=True)
class CalibrationLuck:
    """The zero-shot luck share: the mean over the probe captures' diagnostic schedules and each one's."""

    lam: float | None = key(nullable(is_num))
    lam_by_capture: list[float | None] = key(list_of(nullable(is_num)))
    tasks: int = key(is_int)
    tasks_defined: int = key(is_int)


@dataclass(frozen=True, kw_only=True)
class CalibrationEstimation:
    eval_tasks: int = key(is_int)
    samples: int = key(is_int)
    clean_episodes: int = key(is_int)
    noisy_episodes: int = key(is_int)
    diagnostic_episodes: int = key(is_int)
    probe_captures: int = key(is_int)
    snr_groups: int = key(is_int)


@dataclass(frozen=True, kw_only=True)
class CalibrationCurve:
    """One unpaired arm's mean learning curve against the published one (the register of stage curves)."""

    condition: str = key(is_condition)
    arm: str = key(one_of(*ARMS))
    regime: str = key(is_str)
    runs: list[str] = key(list_of(is_str))
    points: list[dict[str, Any]] = key(list_of(is_dict))
    rms_gap: float | None = key(nullable(is_num))
    tolerance: float = key(is_num)
    checked: bool = key(is_bool)


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """results/<scale>/models/surrogate/{step0,calibration}.json (surrogate/calibration.py, docs/records.md
    section 8.2): theta has one value per parameter name; the calibration register proper (stage
    ``curves``) also carries the unpaired arms' curves and the step-0 register's sha256. Every summary and
    verdict must follow from the register's own detail (``summary_mismatch``)."""

    path: str
    raw: dict[str, Any]
    stage: str = key(one_of("step0", "curves"))
    passes: bool = key(is_bool)
    knobs: dict[str, float] = key(map_of(is_num))
    shape: dict[str, float] = key(map_of(is_num))
    theta: list[float] = key(list_of(is_num))
    parameter_names: list[str] = key(list_of(is_str))
    targets: list[CalibrationTarget] = key(list_of(is_dict), read=each(CalibrationTarget))
    luck_share: CalibrationLuck = key(is_dict, read=one(CalibrationLuck))
    mechanism: dict[str, Any] = key(is_dict)
    signal_to_noise: dict[str, dict[str, Any]] = key(map_of(is_dict))
    iterations: list[dict[str, Any]] = key(list_of(is_dict))
    estimation: CalibrationEstimation = key(is_dict, read=one(CalibrationEstimation))
    step0_sha256: str | None = key(is_sha256, default=None)
    curves: dict[str, CalibrationCurve] = key(is_dict, read=by_name(CalibrationCurve), factory=dict)

    def _check(self, at: At) -> None:
        if len(self.theta) != len(self.parameter_names):
            raise at.error(f"{len(self.theta)} theta values for {len(self.parameter_names)} parameter names")
        if self.stage == "curves":
            fix = replace(at, fix=f"regenerate it with '{CURVES}'")
            for name in ("step0_sha256", "curves"):
                if name not in self.raw:
                    raise fix.missing(name)
        mismatch = summary_mismatch(self.raw)
        if mismatch is not None:
            raise at.error(f"{mismatch}; its summaries must follow from its detail")

    def target(self, name: str) -> CalibrationTarget | None:
        return {t.target_name: t for t in self.targets}.get(name)


def read_calibration(path: str | Path) -> Calibration:
    """results/<scale>/models/surrogate/{step0,calibration}.json, typed, its summaries recomputed."""
    return read_register(Calibration, path, "surrogate calibration register", CALIBRATE)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _mechanism_mismatch(mechanism: dict[str, Any]) -> str | None:
    """The mechanism's means and SDs against its captures (None where a capture's value is None)."""
    from paired_rollouts.surrogate.calibration import capture_summary

    captures = mechanism.get("captures", [])
    if not captures:
        return "mechanism has no captures to give its means and SDs" if mechanism.get("mean") else None
    given = capture_summary(captures)
    for part in ("mean", "sd"):
        stated = mechanism.get(part, {})
        if set(stated) != set(given[part]):
            return f"mechanism.{part} names {sorted(stated)}, its captures give {sorted(given[part])}"
        for name, value in stated.items():
            if not _same(value, given[part][name]):
                return f"mechanism.{part}.{name} is {value}, its captures give {given[part][name]}"
    return None


def _curve_mismatch(name: str, curve: dict[str, Any]) -> tuple[str | None, float | None]:
    """A curve's gaps against its points and its RMS gap against its gaps; and that RMS gap."""
    for point in curve["points"]:
        if not _same(point["gap"], point["achieved"] - point["target"]):
            return f"curves.{name} step {point['step']}: gap {point['gap']} is not achieved - target", None
    gaps = [p["gap"] ** 2 for p in curve["points"]]
    rms = math.sqrt(float(np.mean(gaps))) if gaps else None
    if not _same(curve["rms_gap"], rms):
        return f"curves.{name}.rms_gap is {curve['rms_gap']}, its points give {rms}", None
    return None, rms


def _stated(register: dict[str, Any]) -> tuple[str | None, dict[str, tuple[float | None, float | None]]]:
    """What the register's detail gives for the targets it summarises: {name: (achieved, tolerance)}."""
    from paired_rollouts.surrogate.calibration import CURVE_TOLERANCE, MECHANISM, mechanism_tolerance

    mechanism, luck = register["mechanism"], register["luck_share"]
    if luck.get("lam_by_capture") and None not in luck["lam_by_capture"]:
        lam = float(np.mean(luck["lam_by_capture"]))
        if not _same(luck["lam"], lam):
            return f"luck_share.lam is {luck['lam']}, its captures give {lam}", {}
    stated: dict[str, tuple[float | None, float | None]] = {"luck_share_p025": (luck["lam"], None)}
    captures = len(mechanism.get("captures", []))
    for name, (_, part) in MECHANISM.items():
        if part in mechanism.get("mean", {}):
            stated[name] = (mechanism["mean"][part], mechanism_tolerance(mechanism["sd"][part], captures))
    for name, curve in register.get("curves", {}).items():
        mismatch, rms = _curve_mismatch(name, curve)
        if mismatch is not None:
            return mismatch, {}
        stated[f"curve_rms_{name}"] = (rms, CURVE_TOLERANCE)
    return None, stated


def _target_mismatch(register: dict[str, Any], row: dict[str, Any], stated: dict[str, tuple]) -> str | None:
    """One target row's achieved value, tolerance, difference, kind and verdict against the detail."""
    name = row["target_name"]
    achieved, tolerance = stated.get(name, (row["achieved"], row["tolerance"]))
    if not _same(row["achieved"], achieved):
        return f"targets {name}: achieved {row['achieved']}, the register's detail gives {achieved}"
    if tolerance is not None and not _same(row["tolerance"], tolerance):
        return f"targets {name}: tolerance {row['tolerance']}, the register's detail gives {tolerance}"
    difference = None if achieved is None else achieved - row["target"]
    if not _same(row["difference"], difference):
        return f"targets {name}: difference {row['difference']} is not achieved - target"
    reported = row["kind"].startswith("reported")
    curve = register.get("curves", {}).get(name.removeprefix("curve_rms_"))
    if name.startswith("curve_rms_") and curve is not None and curve["checked"] == reported:
        return f"targets {name}: kind {row['kind']!r} but curves checked is {curve['checked']}"
    verdict = reported or (difference is not None and abs(difference) <= row["tolerance"])
    if row["passes"] != verdict:
        return f"targets {name}: passes is {row['passes']}, its values give {verdict}"
    return None


def summary_mismatch(register: dict[str, Any]) -> str | None:
    """The first stated summary or verdict of a calibration register (as written) that its own detail does
    not give back, or None: the mechanism's means and SDs from its captures, the luck share from its
    captures, each curve's gaps and RMS gap from its points, each target row's achieved value (from those),
    tolerance, difference and verdict, and the overall verdict."""
    mismatch = _mechanism_mismatch(register["mechanism"])
    if mismatch is not None:
        return mismatch
    mismatch, stated = _stated(register)
    if mismatch is not None:
        return mismatch
    for row in register["targets"]:
        mismatch = _target_mismatch(register, row, stated)
        if mismatch is not None:
            return mismatch
    if register["passes"] != all(r["passes"] for r in register["targets"]):
        return f"passes is {register['passes']}, its targets give {not register['passes']}"
    return None


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


def _band_target(v: Any) -> bool:
    return v is None or (
        isinstance(v, dict)
        and (set(v) == {"low", "high"} or set(v) == {"at_least"})
        and all(is_num(x) for x in v.values())
    )


_band_target.__name__ = "null, {low, high} or {at_least} of finite numbers"


def _band_interval(v: Any) -> bool:
    return v is None or pair_of(nullable(is_num))(v)


_band_interval.__name__ = "null or a pair [low, high] of finite numbers or nulls"


@dataclass(frozen=True, kw_only=True)
class ZeroShotBand:
    name: str = key(is_str)
    target: dict[str, Any] | None = key(_band_target)
    achieved: float | None = key(nullable(is_num))
    interval: list[float | None] | None = key(_band_interval, default=None)
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

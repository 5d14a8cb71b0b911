"""Amendment A3: the calibrated surrogate's paired arms as a registered prediction (docs/prereg.md).

The surrogate is calibrated on the arms the paper ran without pairing; its paired-minus-independent gaps
are therefore a prediction, not a fit. Amendment A3 freezes the scale's calibration register and the
comparison rule (``prereg/prediction_rules.yaml``) before any paired run starts. This module turns the
decision registers' per-seed-pair gaps into the predicted mean and its bootstrap interval over seed pairs,
and judges each published gap: ``inside`` or ``outside`` the predicted interval. Nothing here fits or
refits anything; the register also records A3's time stamp and the first paired checkpoint's time, and
decides nothing unless A3 came first.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError

FORMAT = "paired-rollouts-prediction-a3/1"
INSIDE, OUTSIDE = "inside", "outside"
TOO_FEW = "too_few_seed_pairs"  # fewer admitted seed pairs than the rules require: never a pass
NOT_COMPUTED = "not_computed"  # the decision register has no per-pair values for the gap
TOO_LATE = "registered_too_late"  # A3's time stamp is not earlier than the first paired checkpoint
VERDICTS = (INSIDE, OUTSIDE, TOO_FEW, NOT_COMPUTED, TOO_LATE)


def predicted_interval(values: Sequence[float], interval: dict[str, Any]) -> tuple[float, list[float]]:
    """Mean of the per-pair gaps and its percentile bootstrap interval over seed pairs (pairs drawn with
    replacement, ``default_rng(interval.seed)``, ``interval.resamples`` draws, ``interval.level`` per cent)."""
    gaps = np.asarray(values, dtype=float)
    rng = np.random.default_rng(int(interval["seed"]))
    draws = rng.integers(0, len(gaps), size=(int(interval["resamples"]), len(gaps)))
    means = gaps[draws].mean(axis=1)
    tail = (100.0 - float(interval["level"])) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(gaps.mean()), [float(low), float(high)]


def judge(
    values: Sequence[float] | None, published: float, rules: dict[str, Any], in_time: bool
) -> dict[str, Any]:
    """One gap's prediction and verdict from its per-seed-pair values (None: not computed)."""
    pairs = 0 if values is None else len(values)
    row: dict[str, Any] = {"seed_pairs": pairs, "by_seed": None if values is None else list(values)}
    row["mean"], row["interval"] = (
        (None, None) if pairs == 0 else predicted_interval(values, rules["interval"])
    )
    if not in_time:
        row["verdict"] = TOO_LATE
    elif values is None:
        row["verdict"] = NOT_COMPUTED
    elif pairs < rules["min_seed_pairs"]:
        row["verdict"] = TOO_FEW
    else:
        low, high = row["interval"]
        row["verdict"] = INSIDE if low <= published <= high else OUTSIDE
    return row


def counts(gaps: list[dict[str, Any]]) -> dict[str, int]:
    return {verdict: sum(g["verdict"] == verdict for g in gaps) for verdict in VERDICTS}


def gap_values(register: Any, by_seed: str) -> list[float] | None:
    """``H2a.auc_difference_by_seed`` and the like, from a typed decision register; None when the
    hypothesis was not computed."""
    name, field = by_seed.split(".")
    block = register.hypothesis(name)
    if block is None or not block.computed:
        return None
    values = getattr(block, field)
    return None if values is None else [float(v) for v in values]


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _epoch(iso: str) -> float:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def a3_stamp(verification: str | Path) -> dict[str, Any]:
    """A3's verified time stamp: the latest genTime of the branch record's tokens (every witness must
    precede the paired runs), from the verification report of ``prereg verify --branch``."""
    from paired_rollouts.records import read_verification

    report = read_verification(verification)
    if not report.passes or report.failures:
        raise UserError(f"{verification}: amendment A3 does not verify; fix what it lists and rerun it")
    last = report.records[-1] if report.records else None
    if last is None or not last.record.startswith("branch "):
        raise UserError(
            f"{verification}: its last record is not a branch amendment (A3); write it with "
            "'paired-rollouts prereg verify --branch DIR'"
        )
    times = [t.gen_time for t in last.tokens if t.verified and t.gen_time]
    if not times:
        raise UserError(f"{verification}: A3's record has no verified token with a genTime; make A3 again")
    latest = max(times, key=_epoch)
    return {
        "record": last.record.removeprefix("branch "),
        "gen_time": latest,
        "gen_time_epoch": _epoch(latest),
    }


def first_checkpoint(results: str | Path, runs: Sequence[str]) -> dict[str, Any]:
    """The earliest checkpoint marker (``runs/RUN/checkpoints/stepN/COMPLETE``, written when the checkpoint
    is whole) of the paired runs, by modification time."""
    markers = sorted(
        p for run in runs for p in (Path(results) / "runs" / run / "checkpoints").glob("step*/COMPLETE")
    )
    if not markers:
        raise UserError(
            f"{results}/runs: no checkpoint of the paired runs {', '.join(runs)}; run the paired arms first"
        )
    first = min(markers, key=lambda p: (p.stat().st_mtime, str(p)))
    epoch = first.stat().st_mtime
    return {"path": str(first), "time": _iso(epoch), "time_epoch": epoch}


def prediction_register(
    decisions: Sequence[str | Path],
    rules_path: str | Path,
    verification: str | Path,
    calibration: str | Path,
    results: str | Path,
    paired_runs: Sequence[str],
) -> dict[str, Any]:
    """The A3 prediction register (docs/records.md section 8.4)."""
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import load_prediction_rules
    from paired_rollouts.prereg.verify import require_covered
    from paired_rollouts.records import read_calibration, read_decision_register

    rules = load_prediction_rules(rules_path)
    # the rules and the calibration register must be the bytes A3 froze (the report is recomputed here)
    require_covered(verification, rules_path)
    require_covered(verification, calibration)
    if not read_calibration(calibration).passes:
        raise UserError(
            f"{calibration}: the calibration does not pass; no prediction from an uncalibrated surrogate"
        )
    registers = {}
    for path in decisions:
        register = read_decision_register(path)
        if register.comparison is not None or register.condition in registers:
            raise UserError(f"{path}: not one of tier 1's decision registers (c2.json, c4.json); pass those")
        registers[register.condition] = (str(path), register)
    stamp = a3_stamp(verification)
    checkpoint = first_checkpoint(results, paired_runs)
    in_time = stamp["gen_time_epoch"] < checkpoint["time_epoch"]
    gaps = []
    for gap in rules["gaps"]:
        if gap["condition"] not in registers:
            raise UserError(
                f"--decisions: no decision register of {gap['condition']}; pass c2.json and c4.json"
            )
        path, register = registers[gap["condition"]]
        row = {key: gap[key] for key in ("name", "label", "condition", "published_id", "published")}
        row["by_seed_key"], row["decision"] = gap["by_seed"], path  # where the per-pair values were read
        row.update(judge(gap_values(register, gap["by_seed"]), gap["published"], rules, in_time))
        gaps.append(row)
    inputs = [
        *sorted({p for p, _ in registers.values()}),
        str(rules_path),
        str(calibration),
        str(verification),
    ]
    return {
        "format": FORMAT,
        "amendment": stamp,
        "first_paired_checkpoint": checkpoint,
        "registered_before_paired_runs": in_time,
        "paired_runs": list(paired_runs),
        "min_seed_pairs": rules["min_seed_pairs"],
        "interval": rules["interval"],
        "gaps": gaps,
        "counts": counts(gaps),
        "files": {path: sha256_file(path) for path in inputs},
        "rules": str(rules_path),
        "calibration": str(calibration),
        "verification": str(verification),
    }


def summary_mismatch(register: dict[str, Any]) -> str | None:
    """The first stated figure of a prediction register that its own detail does not give back, or None:
    each gap's mean, interval and verdict from its per-pair values, the time order, the counts."""
    rules = {"interval": register["interval"], "min_seed_pairs": register["min_seed_pairs"]}
    in_time = register["amendment"]["gen_time_epoch"] < register["first_paired_checkpoint"]["time_epoch"]
    if in_time != register["registered_before_paired_runs"]:
        return "registered_before_paired_runs does not follow from the two times"
    for gap in register["gaps"]:
        again = judge(gap["by_seed"], gap["published"], rules, in_time)
        for name in ("seed_pairs", "verdict"):
            if again[name] != gap[name]:
                return f"gaps.{gap['name']}.{name} is {gap[name]!r}, its per-pair values give {again[name]!r}"
        stated = [gap["mean"], *(gap["interval"] or [None, None])]
        recomputed = [again["mean"], *(again["interval"] or [None, None])]
        for value, expected in zip(stated, recomputed, strict=True):
            if (value is None) != (expected is None) or (
                value is not None and not math.isclose(value, expected, rel_tol=1e-12, abs_tol=1e-15)
            ):
                return f"gaps.{gap['name']}: mean or interval does not follow from its per-pair values"
    if counts(register["gaps"]) != register["counts"]:
        return "counts do not follow from the gaps' verdicts"
    return None

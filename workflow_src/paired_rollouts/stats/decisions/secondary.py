"""The secondary endpoints of a decision register (docs/records.md section 5): descriptive only, per run
and per arm, with the clean reference's contrast."""

from __future__ import annotations

from typing import Any

import numpy as np

from paired_rollouts.pairing.numeric import dot
from paired_rollouts.prereg.rules import DecisionRules
from paired_rollouts.stats.curves import auc_weights, round4, steps_to_threshold
from paired_rollouts.stats.decisions.evidence import RunEvidence, score
from paired_rollouts.stats.decisions.hypotheses import applied_auc_weights, common_tasks

THRESHOLD_CURVE = "at_training"
SECONDARY_ARMS = ("paired", "independent", "clean")


def _per_run(
    ev: RunEvidence, threshold: float, rules: DecisionRules | None, out: dict[str, Any]
) -> list[int]:
    """One run's AUC and curve per periodic set, final and recovery success and exposure per final set,
    steps to the threshold; returns the steps of its threshold curve."""
    out["auc"][ev.run] = {}
    out["curves"][ev.run] = {}
    steps_used: list[int] = []
    for regime, table in sorted(ev.periodic.items()):
        steps = sorted(table)
        tasks = common_tasks(table[s] for s in steps)
        if not tasks:
            continue
        curve = ev.curve(regime, steps, tasks).mean(axis=1)
        weights = applied_auc_weights(steps, rules)[0] if rules is not None else auc_weights(steps)
        out["auc"][ev.run][regime] = float(dot(weights, curve))
        out["curves"][ev.run][regime] = {str(step): float(v) for step, v in zip(steps, curve, strict=True)}
        if regime == THRESHOLD_CURVE:
            reached = steps_to_threshold(steps, curve, threshold)
            out["steps_to_threshold"][ev.run] = {"step": reached, "censored": reached is None}
            steps_used = steps
    out["final"][ev.run] = {
        reg: float(np.mean([score(v) for v in table.values()])) for reg, table in sorted(ev.final.items())
    }
    out["recovery_success"][ev.run] = {
        reg: (float(np.mean(ev.final_exposed[reg])) if ev.final_exposed.get(reg) else None)
        for reg in sorted(ev.final)
    }
    out["exposure"][ev.run] = {
        reg: len(ev.final_exposed.get(reg, [])) / sum(len(v) for v in ev.final[reg].values())
        for reg in sorted(ev.final)
        if ev.final[reg]
    }
    return steps_used


def _clean_reference(reference: list[RunEvidence], by_arm: dict[str, Any]) -> dict[str, Any] | None:
    """Each arm's means minus the clean reference's, for every set both have."""
    if not reference or "clean" not in by_arm:
        return None
    ref = by_arm["clean"]
    out: dict[str, Any] = {"runs": [ev.run for ev in reference], "arm_minus_reference": {}}
    for arm in ("paired", "independent"):
        if arm in by_arm:
            out["arm_minus_reference"][arm] = {
                part: {
                    k: v - ref[part][k]
                    for k, v in by_arm[arm][part].items()
                    if k in ref[part] and v is not None and ref[part][k] is not None
                }
                for part in ("auc", "final")
            }
    return out


def secondary(
    runs: list[RunEvidence],
    reference: list[RunEvidence],
    threshold: float,
    rules: DecisionRules | None = None,
) -> dict[str, Any]:
    """Descriptive endpoints: steps-to-threshold, AUC and final means per run, arm means, C0 contrast."""
    everyone = runs + reference
    per_run: dict[str, Any] = {
        key: {} for key in ("auc", "final", "recovery_success", "steps_to_threshold", "curves", "exposure")
    }
    steps_used: list[int] = []
    for ev in everyone:
        steps = _per_run(ev, threshold, rules, per_run)
        steps_used = steps_used or steps
    by_arm: dict[str, Any] = {}
    stt_arm: dict[str, Any] = {}
    stt = per_run["steps_to_threshold"]
    for arm in SECONDARY_ARMS:
        members = [ev.run for ev in everyone if ev.arm == arm]
        if not members:
            continue
        by_arm[arm] = {
            "auc": _mean_dicts([per_run["auc"][r] for r in members]),
            "final": _mean_dicts([per_run["final"][r] for r in members]),
            "curve": _mean_curves([per_run["curves"][r] for r in members]),
        }
        hits = [stt[r]["step"] for r in members if r in stt and stt[r]["step"] is not None]
        stt_arm[arm] = {
            "reached": len(hits),
            "runs": len(members),
            "median_reached": float(np.median(hits)) if hits else None,
        }
    return round4(
        {
            "threshold": threshold,
            "threshold_curve": THRESHOLD_CURVE,
            "steps": steps_used,
            "steps_to_threshold_by_arm": stt_arm,
            "arms": by_arm,
            "clean_reference": _clean_reference(reference, by_arm),
            **per_run,
        }
    )


def _mean_curves(curves: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean over runs of each regime's curve, at the steps every run has (the blog's learning curves)."""
    regimes = set.intersection(*[set(c) for c in curves]) if curves else set()
    out = {}
    for regime in sorted(regimes):
        steps = set.intersection(*[set(c[regime]) for c in curves])
        out[regime] = {
            step: float(np.mean([c[regime][step] for c in curves])) for step in sorted(steps, key=int)
        }
    return out


def _mean_dicts(dicts: list[dict[str, float]]) -> dict[str, float]:
    keys = set.intersection(*[set(d) for d in dicts]) if dicts else set()
    return {k: float(np.mean([d[k] for d in dicts])) for k in sorted(keys)}

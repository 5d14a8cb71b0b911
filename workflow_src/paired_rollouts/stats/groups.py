"""Training-group statistics: zero-variance groups, spurious variance, seed sharing.

Under outcome noise an all-correct group of G independent rollouts shows reward variance unless all
G or none of its rewards flip: 1 - (1-q)^G - q^G of them carry a spurious learning signal. A paired
group flips as one, so it never does. The seed-sharing check proves the arms were run as designed.
The flags and the closed form are ``paired_rollouts.pairing``'s diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from paired_rollouts import pairing
from paired_rollouts.design import parse_run
from paired_rollouts.errors import UserError

if TYPE_CHECKING:
    from paired_rollouts.records import GroupStats


def group_flags(true_success: list[Any], observed: list[float]) -> dict[str, bool]:
    """zero_variance (ddof-1 std of observed == 0), all_correct, spurious (all correct yet varying)."""
    return pairing.group_flags(true_success, observed)._asdict()


def sharing_passes(arm: str, groups: int, breaking: int) -> bool | None:
    """The seed-sharing verdict of an arm: some group and none breaking its threshold (None for an arm
    without one). ``seed_sharing`` judges with it, and the readers of its registers judge again."""
    if arm not in ("paired", "independent"):
        return None
    return groups > 0 and breaking == 0


def seed_sharing(
    groups: Iterable[dict[str, Any]],
    arm: str,
    paired_max: int = 1,
    independent_min: int = 2,
    report_rule: bool = False,
) -> dict[str, Any]:
    """Count groups by distinct resolved seeds and judge them against the arm's design: a paired group
    has at most ``paired_max`` distinct seeds, an independent one at least ``independent_min`` (the
    frozen ``h1a_c2`` thresholds)."""
    n = one = several = too_many = too_few = 0
    for g in groups:
        n += 1
        distinct = len({int(s) for s in g["schedule_seeds"]})
        if distinct == 1:
            one += 1
        else:
            several += 1
        too_many += distinct > paired_max
        too_few += distinct < independent_min
    passes = sharing_passes(arm, n, too_many if arm == "paired" else too_few)
    out = {
        "arm": arm,
        "groups": n,
        "groups_sharing_one_seed": one,
        "groups_with_several_seeds": several,
        "passes": passes,
    }
    if report_rule:  # the decision register shows the frozen thresholds it applied
        out.update(
            paired_max_seeds_per_group=paired_max,
            independent_min_seeds_per_group=independent_min,
            groups_breaking_the_rule=too_many if arm == "paired" else too_few if arm == "independent" else 0,
        )
    return out


REQUIRED = (
    "run",
    "step",
    "group",
    "task_id",
    "schedule_seeds",
    "true_success",
    "observed_reward",
    "advantages",
)


def group_statistics(
    records: list[dict[str, Any]], *, source: str = "", source_sha256: str = "", q: float | None = None
) -> dict[str, Any]:
    """The content of ``group_stats.json`` (docs/records.md section 2)."""
    if not records:
        raise UserError(f"{source or 'groups'}: no training-group records")
    runs = {r.get("run") for r in records}
    if len(runs) != 1:
        raise UserError(
            f"{source}: records of several runs {sorted(map(str, runs))}; one groups.jsonl per run"
        )
    run = str(next(iter(runs)))
    ident = parse_run(run)
    defects: list[dict[str, Any]] = []
    sizes = set()
    zero = all_correct = spurious = 0
    max_adv: list[float] = []
    by_step: dict[int, dict[str, int]] = {}
    for line, rec in enumerate(records, start=1):
        missing = [k for k in REQUIRED if k not in rec]
        if missing:
            raise UserError(
                f"{source}:{line}: group record lacks {missing}; see docs/CONTRACT.md#training-group-record"
            )
        lengths = {len(rec[k]) for k in ("schedule_seeds", "true_success", "observed_reward", "advantages")}
        if len(lengths) != 1:
            defects.append({"step": rec["step"], "group": rec["group"], "problem": "lists of unequal length"})
            continue
        sizes.add(lengths.pop())
        flags = group_flags(rec["true_success"], rec["observed_reward"])
        for key in ("zero_variance", "spurious"):
            if key in rec and bool(rec[key]) != flags[key]:
                defects.append(
                    {
                        "step": rec["step"],
                        "group": rec["group"],
                        "problem": f"{key} flag {bool(rec[key])}, recomputed {flags[key]}",
                    }
                )
        row = by_step.setdefault(
            int(rec["step"]),
            {"groups": 0, "zero_variance_groups": 0, "all_correct_groups": 0, "spurious_groups": 0},
        )
        row["groups"] += 1
        zero += flags["zero_variance"]
        row["zero_variance_groups"] += flags["zero_variance"]
        all_correct += flags["all_correct"]
        row["all_correct_groups"] += flags["all_correct"]
        spurious += flags["spurious"]
        row["spurious_groups"] += flags["spurious"]
        adv = np.abs(np.asarray(rec["advantages"], dtype=float))
        max_adv.append(float(adv.max()) if adv.size else 0.0)
    if len(sizes) > 1:
        defects.append({"step": None, "group": None, "problem": f"groups of several sizes {sorted(sizes)}"})
    group_size = max(sizes) if sizes else 0
    n = len(records)
    steps = sorted(by_step)
    return {
        "run": run,
        "condition": ident.condition,
        "arm": ident.arm,
        "seed": ident.seed,
        "source": source,
        "source_sha256": source_sha256,
        "groups": n,
        "rollouts": int(sum(len(r["true_success"]) for r in records)),
        "G": group_size,
        "steps": len(steps),
        "step_range": [steps[0], steps[-1]] if steps else None,
        "zero_variance_groups": zero,
        "zero_variance_frac": zero / n,
        "all_correct_groups": all_correct,
        "spurious_groups": spurious,
        "spurious_among_all_correct": spurious / all_correct if all_correct else None,
        "mean_max_abs_advantage": float(np.mean(max_adv)) if max_adv else None,
        "expected_spurious_rate": (
            {"q": q, "G": group_size, "rate": pairing.spurious_rate_closed_form(q, group_size)}
            if q is not None
            else None
        ),
        "seed_sharing": seed_sharing(records, ident.arm),
        "by_step": [{"step": s, **by_step[s]} for s in steps],
        "defects": defects,
    }


def pool_group_stats(stats: list[GroupStats]) -> dict[str, Any]:
    """One arm's group statistics pooled over its runs (table 10's pooled row): the sums of the runs'
    counts and the shares of those sums (not the mean of the runs' shares)."""
    groups = sum(s.groups for s in stats)
    zero = sum(s.zero_variance_groups for s in stats)
    correct = sum(s.all_correct_groups for s in stats)
    spurious = sum(s.spurious_groups for s in stats)
    return {
        "runs": sorted(s.run for s in stats),
        "groups": groups,
        "zero_variance_groups": zero,
        "zero_variance_frac": zero / groups if groups else None,
        "all_correct_groups": correct,
        "spurious_groups": spurious,
        "spurious_among_all_correct": spurious / correct if correct else None,
    }

"""The registered predictions (P1-P13) and H4, judged on the decision registers (docs/analysis.md#predictions).

Each prediction of amendment A2 (`prereg/tier_rules.yaml`) names a check and its numbers; this module
reads the registers that check needs and records the observed values and a verdict: `met`, `missed`,
`not run` (the register of a condition the matrix did not train is absent) or `not decided` (a register
exists but its seed matrix is incomplete: nothing is judged on partial evidence).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.records import AucGap, DecisionRegister, ProbeRegister

MET, MISSED, NOT_RUN, NOT_DECIDED = "met", "missed", "not run", "not decided"


class Registers:
    """The decision registers by comparison name (c2, c4, c2r, c4-scale_none, ...) plus the probe's."""

    def __init__(self, decisions: Mapping[str, DecisionRegister], probes: Mapping[str, ProbeRegister]):
        self.decisions = dict(decisions)
        self.probes = dict(probes)

    def need(self, *names: str) -> tuple[list[DecisionRegister] | None, str | None]:
        """The named registers, or (None, verdict) when one is absent or undecided."""
        found = []
        for name in names:
            register = self.decisions.get(name)
            if register is None:
                return None, NOT_RUN
            if register.decided is not True:
                return None, NOT_DECIDED
            found.append(register)
        return found, None


def closed_form_spurious_rate(q: float, group_size: int) -> float:
    """P(an all-correct group of size G shows unequal rewards) under independent flips: 1-(1-q)^G-q^G."""
    return 1.0 - (1.0 - q) ** group_size - q**group_size


def _gap(block: AucGap | None) -> float | None:
    return block.auc_difference_mean if block is not None else None


def _mean(values: list[float] | None) -> float | None:
    return sum(values) / len(values) if values else None


def _in(value: float | None, low: float, high: float) -> bool:
    return value is not None and low <= value <= high


def check_spurious_rate(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    found, verdict = regs.need(spec["condition"].lower())
    if found is None:
        return verdict, {}
    h1a = found[0].h1a
    expected = spec["expected"]
    adapted = closed_form_spurious_rate(0.10, group_size) if group_size != 8 else None
    target = adapted if adapted is not None else expected
    ind, par = h1a.spurious_rate_independent, h1a.spurious_rate_paired
    observed = {"independent_rate": ind, "paired_rate": par, "group_size": group_size, "expected": expected}
    if adapted is not None:
        observed["expected_for_group_size"] = round(adapted, 6)
    ok = (
        ind is not None
        and par is not None
        and abs(ind - target) <= spec["within"]
        and par < spec["paired_below"]
    )
    return (MET if ok else MISSED), observed


def check_auc_gap_and_final_vs_clean(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    found, verdict = regs.need(spec["condition"].lower())
    if found is None:
        return verdict, {}
    register = found[0]
    gap = _gap(register.h2)
    arms = register.secondary.arms
    paired = arms["paired"].final.get("clean") if "paired" in arms else None
    clean = arms["clean"].final.get("clean") if "clean" in arms else None
    observed = {"auc_gap": gap, "final_clean_paired": paired, "final_clean_reference": clean}
    if clean is None:
        return NOT_RUN, {**observed, "reason": "no clean reference run"}
    ok = (
        gap is not None
        and gap >= spec["gap_at_least"]
        and paired is not None
        and (abs(paired - clean) <= spec["final_clean_within"])
    )
    return (MET if ok else MISSED), observed


def check_auc_gap_range(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    found, verdict = regs.need(spec["condition"].lower())
    if found is None:
        return verdict, {}
    gap = _gap(found[0].auc_gap)
    return (MET if _in(gap, spec["min"], spec["max"]) else MISSED), {"auc_gap": gap}


def check_auc_gap_and_final_range(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    found, verdict = regs.need(spec["condition"].lower())
    if found is None:
        return verdict, {}
    h2 = found[0].h2a  # None only in a register without H2a (a tier's, or C4's): nothing to judge
    gap, final = (h2.auc_difference_mean, h2.final_difference_mean) if h2 is not None else (None, None)
    ok = _in(gap, spec["min"], spec["max"]) and _in(final, spec["final_min"], spec["final_max"])
    return (MET if ok else MISSED), {"auc_gap": gap, "final_gap": final}


def check_gap_below_reference(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    found, verdict = regs.need(spec["condition"].lower(), spec["reference"].lower())
    if found is None:
        return verdict, {}
    gap, reference = _gap(found[0].auc_gap), _gap(found[1].h2a)
    observed = {
        "auc_gap": gap,
        "reference_gap": reference,
        "reading": "smaller than the reference's gap, by at most `within`",
    }
    ok = gap is not None and reference is not None and gap < reference and reference - gap <= spec["within"]
    return (MET if ok else MISSED), observed


def check_challenge_gap(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    found, verdict = regs.need(spec["condition"].lower())
    if found is None:
        return verdict, {}
    h3 = found[0].h3
    diff = h3.difference_mean
    observed = {"challenge_gap": diff, "steps": h3.steps}
    return (MET if diff is not None and diff >= spec["at_least"] else MISSED), observed


def check_scaling_shrink(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    key = spec["condition"].lower()
    found, verdict = regs.need(key, f"{key}-scale_none")
    if found is None:
        return verdict, {}
    group, none = _gap(found[0].h2b), _gap(found[1].auc_gap)
    observed: dict[str, Any] = {"gap_group": group, "gap_none": none}
    if group is None or none is None or group <= 0:
        return MISSED, {
            **observed,
            "reason": "the gap with group scaling is not positive: no shrink to measure",
        }
    shrink = 1.0 - none / group
    observed["shrink"] = round(shrink, 6)
    ok = none > 0 and spec["shrink_min"] <= shrink <= spec["shrink_max"]
    return (MET if ok else MISSED), observed


def check_blocking_order(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    observed: dict[str, Any] = {}
    ok = True
    for condition in spec["conditions"]:
        key = condition.lower()
        found, verdict = regs.need(key, f"{key}-blocking")
        if found is None:
            return verdict, observed
        tier1, blocking = found
        h2, gap = tier1.h2, blocking.auc_gap
        auc = {
            "paired": _mean(h2.auc_paired),
            "independent": _mean(h2.auc_independent),
            "blocking_paired": _mean(gap.auc_paired),
            "blocking": _mean(gap.auc_independent),
        }
        observed[condition] = auc
        if None in auc.values():
            ok = False
            continue
        ok &= auc["blocking_paired"] > auc["blocking"]
        ok &= auc["independent"] <= auc["blocking"] <= auc["paired"]
    return (MET if ok else MISSED), observed


def check_heldout_noninferior(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    found, verdict = regs.need(spec["condition"].lower())
    if found is None:
        return verdict, {}
    h5 = found[0].h5
    lower, diff = h5.ci90_lower, h5.difference_mean
    ok = (
        lower is not None
        and lower > spec["lower_bound_above"]
        and diff is not None
        and (abs(diff) <= spec["point_within"])
    )
    return (MET if ok else MISSED), {"ci90_lower": lower, "difference": diff}


def check_luck_share_at_least(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    found, verdict = regs.need(spec["condition"].lower())
    if found is None:
        return verdict, {}
    by_run = found[0].h1a.luck_share_step0 or {}
    lams = [v.lam for v in by_run.values() if v is not None and v.lam is not None]
    mean = _mean(lams)
    return (MET if mean is not None and mean >= spec["at_least"] else MISSED), {
        "luck_share_step0": mean,
        "runs": len(lams),
    }


def check_probe_p13(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    if not regs.probes:
        return NOT_RUN, {}
    observed = {}
    for name, probe in sorted(regs.probes.items()):
        p13 = probe.verdict.p13 if probe.verdict is not None else None
        if p13 is None:
            return NOT_DECIDED, {**observed, name: "no P13 block"}
        observed[name] = p13.flags()
    ok = all(all(block.values()) for block in observed.values())
    return (MET if ok else MISSED), observed


def check_not_run(spec, regs: Registers, group_size: int) -> tuple[str, dict[str, Any]]:
    return NOT_RUN, {"reason": spec["reason"]}


CHECKS: dict[str, Callable[..., tuple[str, dict[str, Any]]]] = {
    "spurious_rate": check_spurious_rate,
    "auc_gap_and_final_vs_clean": check_auc_gap_and_final_vs_clean,
    "auc_gap_range": check_auc_gap_range,
    "auc_gap_and_final_range": check_auc_gap_and_final_range,
    "gap_below_reference": check_gap_below_reference,
    "challenge_gap": check_challenge_gap,
    "scaling_shrink": check_scaling_shrink,
    "blocking_order": check_blocking_order,
    "heldout_noninferior": check_heldout_noninferior,
    "luck_share_at_least": check_luck_share_at_least,
    "probe_p13": check_probe_p13,
    "not_run": check_not_run,
}


def hypothesis_h4(spec: Mapping[str, Any], regs: Registers) -> dict[str, Any]:
    """H4: in C4, the paired-minus-independent AUC gap is larger with scale_rewards group than none, and the
    gap with none stays positive (a 2 x 2 of design x reward scaling)."""
    key = spec["condition"].lower()
    found, verdict = regs.need(key, f"{key}-scale_none")
    out: dict[str, Any] = {
        "hypothesis": "H4",
        "condition": spec["condition"],
        "scalings": list(spec["scalings"]),
    }
    if found is None:
        return {
            **out,
            "passes": None,
            "decided": False,
            "reason": f"{verdict}: needs {key} and {key}-scale_none",
        }
    group, none = _gap(found[0].h2b), _gap(found[1].auc_gap)
    exceeds = group is not None and none is not None and group > none
    positive = none is not None and none > spec["none_gap_above"]
    passes = (exceeds or not spec["group_gap_exceeds_none"]) and positive
    return {
        **out,
        "gap_group": group,
        "gap_none": none,
        "gap_none_ci95": found[1].auc_gap.auc_difference_ci95,
        "seeds": found[1].seeds,
        "rule": {"group_gap_exceeds_none": exceeds, "none_gap_positive": positive},
        "passes": bool(passes),
        "decided": True,
    }


def judge(
    tier_rules: Mapping[str, Any],
    decisions: Mapping[str, DecisionRegister],
    probes: Mapping[str, ProbeRegister],
    group_size: int,
    source: str = "tier rules",
) -> dict[str, Any]:
    """The predictions register: one row per registered prediction, plus H4."""
    regs = Registers(decisions, probes)
    rows = []
    for pid, spec in tier_rules["predictions"].items():
        check = CHECKS.get(spec["check"])
        if check is None:
            raise UserError(
                f"{source}: predictions.{pid}.check {spec['check']!r} is unknown; use one of "
                f"{', '.join(CHECKS)}"
            )
        verdict, observed = check(spec, regs, group_size)
        rows.append(
            {
                "id": pid,
                "statement": spec["statement"],
                "confidence": spec["confidence"],
                "check": spec["check"],
                "verdict": verdict,
                "observed": observed,
            }
        )
    counts = {v: sum(r["verdict"] == v for r in rows) for v in (MET, MISSED, NOT_RUN, NOT_DECIDED)}
    return {
        "predictions": rows,
        "counts": counts,
        "H4": hypothesis_h4(tier_rules["h4"], regs),
        "registers": sorted(decisions),
        "probes": sorted(probes),
    }

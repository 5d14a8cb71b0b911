"""The pre-registered hypotheses H1a, H2a/H2b, H3 and H5 on admitted seed pairs (docs/analysis.md#decisions).

Every hypothesis draws from a fresh ``numpy.random.default_rng(bootstrap.seed)``: first the seed-index
matrix, then the task-index matrix (see ``pairing.bootstrap``). Register numbers are rounded to 4
decimals; the pass rules are evaluated on the unrounded numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from paired_rollouts.pairing import (
    luck_share_interval,
    paired_bootstrap,
    percentile_interval,
    spurious_rate_closed_form,
    variance_components,
)
from paired_rollouts.pairing.numeric import dot
from paired_rollouts.prereg.rules import DecisionRules
from paired_rollouts.stats.curves import auc_weights, round4
from paired_rollouts.stats.decisions.evidence import Luck, RunEvidence
from paired_rollouts.stats.groups import group_flags, seed_sharing
from paired_rollouts.stats.luck_share import build_tables

H2_NAME = {"C2": "H2a", "C4": "H2b"}

Pairs = list[tuple[RunEvidence, RunEvidence]]


def not_computed(name: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {"hypothesis": name, "passes": None, "computed": False, "reason": reason, **extra}


def common_tasks(tables: Iterable[dict[str, Any]]) -> list[str]:
    sets = [set(t) for t in tables]
    return sorted(set.intersection(*sets)) if sets else []


def h3_steps(rule_steps: Sequence[int], rule_grid: Sequence[int], steps: Sequence[int]) -> list[int]:
    """Rule steps if evaluated, else the evaluated steps nearest by relative position (deduplicated).

    A rule step s sits at f = (s - grid[0]) / (grid[-1] - grid[0]) of the pre-registered grid; it maps
    to the evaluated step nearest to first + f (last - first), ties to the earlier step.
    """
    if all(s in steps for s in rule_steps):
        return list(rule_steps)
    first, last = steps[0], steps[-1]
    g0, g1 = rule_grid[0], rule_grid[-1]
    out: list[int] = []
    for s in rule_steps:
        target = first + ((s - g0) / (g1 - g0)) * (last - first)
        nearest = min(steps, key=lambda x: (abs(x - target), x))
        if nearest not in out:
            out.append(nearest)
    return out


def _periodic_frame(pairs: Pairs, regime: str) -> tuple[list[int], list[str], str]:
    """Common steps and tasks of a periodic regime across all runs of the pairs (or a reason)."""
    runs = [r for pair in pairs for r in pair]
    missing = [r.run for r in runs if regime not in r.periodic]
    if missing:
        return [], [], f"no periodic '{regime}' episodes for {', '.join(missing)}"
    steps = sorted(set.intersection(*[set(r.periodic_steps(regime)) for r in runs]))
    if not steps:
        return [], [], f"no periodic step common to all runs for '{regime}'"
    tasks = common_tasks(r.periodic[regime][s] for r in runs for s in steps)
    if not tasks:
        return steps, [], f"no task common to all runs and steps for '{regime}'"
    return steps, tasks, ""


def _final_frame(pairs: Pairs, regime: str) -> tuple[list[str], str]:
    runs = [r for pair in pairs for r in pair]
    missing = [r.run for r in runs if regime not in r.final]
    if missing:
        return [], f"no final '{regime}' episodes for {', '.join(missing)}"
    tasks = common_tasks(r.final[regime] for r in runs)
    return tasks, "" if tasks else f"no final task common to all runs for '{regime}'"


def applied_auc_weights(steps: list[int], rules: DecisionRules) -> tuple[np.ndarray, dict[str, Any]]:
    """The frozen ``auc_weights`` when the evaluated steps are the frozen grid; otherwise (a smaller
    scale evaluates another grid) the trapezoid on the evaluated steps, recording both and which decided."""
    frozen, grid = rules.frozen_auc_weights(steps)
    if list(steps) == grid:
        return np.array(frozen), {"source": "rules", "rule_weights": frozen, "rule_steps": grid}
    return auc_weights(steps), {
        "source": "trapezoid on the evaluated steps (the frozen weights are for another step grid)",
        "rule_weights": frozen,
        "rule_steps": grid,
    }


def _bootstrap(rules: DecisionRules) -> dict[str, int]:
    return {"resamples": rules.resamples, "seed": rules.seed}


def hypothesis_h2(
    pairs: Pairs,
    condition: str,
    rules: DecisionRules,
    *,
    sets: dict[str, str] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """H2a/H2b; with ``sets`` and ``name`` the same AUC-gap statistic for a registered tier's comparison."""
    names = sets or rules.sets(condition)
    name = name or H2_NAME[condition]
    boot = _bootstrap(rules)
    if not pairs:
        return not_computed(name, "no admitted seed pair", bootstrap=boot)
    steps, tasks, why = _periodic_frame(pairs, names["validation"])
    final_tasks, why_final = _final_frame(pairs, names["final"])
    if why or why_final:
        return not_computed(name, why or why_final, bootstrap=boot)
    w, weights_applied = applied_auc_weights(steps, rules)
    cp = [p.curve(names["validation"], steps, tasks) for p, _ in pairs]
    ci = [i.curve(names["validation"], steps, tasks) for _, i in pairs]
    auc_p = np.array([dot(w, c.mean(axis=1)) for c in cp])
    auc_i = np.array([dot(w, c.mean(axis=1)) for c in ci])
    diffs = auc_p - auc_i
    contrib = np.stack([dot(w, a - b) for a, b in zip(cp, ci, strict=True)])
    reps = paired_bootstrap(contrib, rules.resamples, np.random.default_rng(rules.seed))
    fin_p = np.array([p.final_scores(names["final"], final_tasks).mean() for p, _ in pairs])
    fin_i = np.array([i.final_scores(names["final"], final_tasks).mean() for _, i in pairs])
    seeds = [p.seed for p, _ in pairs]
    mean_criterion = bool(diffs.mean() >= rules.h2_mean_at_least)
    every = bool(np.all(diffs > 0))
    direction = bool(fin_p.mean() >= fin_i.mean())
    passes = (
        mean_criterion
        and (every or not rules.h2_every_seed_positive)
        and (direction or not rules.h2_final_direction)
    )
    return round4(
        {
            "hypothesis": name,
            "computed": True,
            "condition": condition,
            "validation_set": names["validation"],
            "final_set": names["final"],
            "steps": steps,
            "auc_weights": w.tolist(),
            "auc_weights_applied": weights_applied,
            "tasks": len(tasks),
            "final_tasks": len(final_tasks),
            "seeds": seeds,
            "runs": [[p.run, i.run] for p, i in pairs],
            "curve_paired": {str(s): c.mean(axis=1).tolist() for s, c in zip(seeds, cp, strict=True)},
            "curve_independent": {str(s): c.mean(axis=1).tolist() for s, c in zip(seeds, ci, strict=True)},
            "auc_paired": auc_p.tolist(),
            "auc_independent": auc_i.tolist(),
            "auc_difference_by_seed": diffs.tolist(),
            "auc_difference_positive_seeds": int((diffs > 0).sum()),
            "auc_paired_mean": float(auc_p.mean()),
            "auc_independent_mean": float(auc_i.mean()),
            "auc_difference_mean": float(diffs.mean()),
            "auc_difference_ci95": percentile_interval(reps, *rules.interval("h2")),
            "final_paired_by_seed": fin_p.tolist(),
            "final_independent_by_seed": fin_i.tolist(),
            "final_difference_by_seed": (fin_p - fin_i).tolist(),
            "final_paired_mean": float(fin_p.mean()),
            "final_independent_mean": float(fin_i.mean()),
            "final_difference_mean": float(fin_p.mean() - fin_i.mean()),
            "rule": {
                "mean_at_least": rules.h2_mean_at_least,
                "mean_criterion": mean_criterion,
                "every_seed_positive": every,
                "final_direction": direction,
            },
            "passes": passes,
            "bootstrap": boot,
        }
    )


def hypothesis_h3(pairs: Pairs, rules: DecisionRules) -> dict[str, Any]:
    boot = _bootstrap(rules)
    if not pairs:
        return not_computed("H3", "no admitted seed pair", bootstrap=boot)
    h3_set = rules.h3_set
    steps_all, tasks, why = _periodic_frame(pairs, h3_set)
    if why:
        return not_computed("H3", why, bootstrap=boot)
    steps = h3_steps(rules.h3_steps, rules.rule_steps, steps_all)
    contrib = np.stack(
        [(p.curve(h3_set, steps, tasks) - i.curve(h3_set, steps, tasks)).mean(axis=0) for p, i in pairs]
    )
    diffs = contrib.mean(axis=1)
    reps = paired_bootstrap(contrib, rules.resamples, np.random.default_rng(rules.seed))
    mean_criterion = bool(diffs.mean() >= rules.h3_mean_at_least)
    every = bool(np.all(diffs > 0))
    return round4(
        {
            "hypothesis": "H3",
            "computed": True,
            "set": h3_set,
            "steps": steps,
            "steps_rule": rules.h3_steps,
            "tasks": len(tasks),
            "seeds": [p.seed for p, _ in pairs],
            "runs": [[p.run, i.run] for p, i in pairs],
            "difference_by_seed": diffs.tolist(),
            "difference_positive_seeds": int((diffs > 0).sum()),
            "difference_mean": float(diffs.mean()),
            "ci95": percentile_interval(reps, *rules.interval("h3")),
            "rule": {
                "mean_at_least": rules.h3_mean_at_least,
                "mean_criterion": mean_criterion,
                "every_seed_positive": every,
            },
            "passes": mean_criterion and (every or not rules.h3_every_seed_positive),
            "bootstrap": boot,
        }
    )


def hypothesis_h5(pairs: Pairs, rules: DecisionRules) -> dict[str, Any]:
    boot = _bootstrap(rules)
    if not pairs:
        return not_computed("H5", "no admitted seed pair", bootstrap=boot)
    h5_set = rules.h5_set
    tasks, why = _final_frame(pairs, h5_set)
    if why:
        return not_computed("H5", why, bootstrap=boot)
    contrib = np.stack([p.final_scores(h5_set, tasks) - i.final_scores(h5_set, tasks) for p, i in pairs])
    diffs = contrib.mean(axis=1)
    reps = paired_bootstrap(contrib, rules.resamples, np.random.default_rng(rules.seed))
    lo, hi = percentile_interval(reps, *rules.interval("h5"))
    return round4(
        {
            "hypothesis": "H5",
            "computed": True,
            "set": h5_set,
            "tasks": len(tasks),
            "seeds": [p.seed for p, _ in pairs],
            "runs": [[p.run, i.run] for p, i in pairs],
            "difference_by_seed": diffs.tolist(),
            "difference_mean": float(diffs.mean()),
            "difference_ci90": [lo, hi],
            "ci90_lower": lo,
            "rule": {"lower_bound_above": rules.h5_lower_bound_above},
            "passes": bool(lo > rules.h5_lower_bound_above),
            "bootstrap": boot,
        }
    )


# ---------------------------------------------------------------- H1a


def base_lams(run: str, ev: RunEvidence | None, luck: Luck, step: int = 0) -> tuple[np.ndarray | None, str]:
    """Per-task lam at the base checkpoint from the luck file, else from diagnostic episodes."""
    entry = luck.get((run, step))
    if entry is not None:
        record = entry.record
        if record.defects:
            return None, f"{record.path}: luck-share tables have defects"
        lams = [np.nan if t.lam is None else float(t.lam) for t in record.per_task]
        return np.array(lams, dtype=float), record.path
    if ev is not None and step in ev.diagnostic:
        built = build_tables(ev.diagnostic[step])
        if built["defects"]:
            return None, f"diagnostic episodes at step {step} are not complete K x M tables"
        stack = np.stack([tab for _, tab in built["tables"].values()])
        return variance_components(stack)["lam"], "episodes"
    return None, f"no luck-share file or diagnostic episodes at step {step}"


def spurious_counts(groups: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(all-correct groups, spurious ones among them, the largest group size) of training groups."""
    all_correct = spurious = 0
    size = 0
    for g in groups:
        f = group_flags(g["true_success"], g["observed_reward"])
        all_correct += f["all_correct"]
        spurious += f["spurious"]
        size = max(size, len(g["true_success"]))
    return all_correct, spurious, size


def _luck_shares(runs: list[RunEvidence], luck: Luck, rules: DecisionRules) -> dict[str, Any]:
    """Each run's base-step luck share with its task-bootstrap interval (None without one)."""
    rng = np.random.default_rng(rules.seed)
    step = rules.h1a_c2_step
    lo_pct, hi_pct = rules.interval("h1a_c2")
    out: dict[str, Any] = {}
    for ev in runs:
        lams, source = base_lams(ev.run, ev, luck, step)
        if lams is None:
            out[ev.run] = None
            continue
        defined = ~np.isnan(lams)
        out[ev.run] = {
            "lam": float(lams[defined].mean()) if defined.any() else None,
            "ci95": luck_share_interval(lams, rules.resamples, rng, lo_pct, hi_pct),
            "tasks": int(lams.size),
            "tasks_defined": int(defined.sum()),
            "step": step,
            "source": source,
        }
    return out


def _spurious_rates(
    runs: list[RunEvidence], groups: dict[str, list[dict[str, Any]]]
) -> tuple[dict[str, Any], dict[str, Any], set[int]]:
    """Per arm the spurious rate among all-correct training groups (None without groups), per run the
    counts, and the group sizes seen."""
    rates: dict[str, Any] = {}
    per_run: dict[str, Any] = {}
    sizes = set()
    for arm in ("paired", "independent"):
        ac = sp = 0
        for ev in runs:
            if ev.arm == arm and ev.run in groups:
                a, s, size = spurious_counts(groups[ev.run])
                ac, sp = ac + a, sp + s
                sizes.add(size)
                per_run[ev.run] = {"all_correct_groups": a, "spurious": s}
        have = any(ev.arm == arm and ev.run in groups for ev in runs)
        rates[arm] = (
            {"all_correct_groups": ac, "spurious": sp, "rate": sp / ac if ac else None} if have else None
        )
    return rates, per_run, sizes


def _luck_criterion(lam: dict[str, Any] | None, rules: DecisionRules) -> bool:
    return bool(
        lam is not None
        and lam["lam"] is not None
        and lam["ci95"][0] is not None
        and lam["lam"] >= rules.h1a_c2_lambda_at_least
        and lam["ci95"][0] > rules.h1a_c2_lower_bound_above
    )


def _h1a_transition(
    runs: list[RunEvidence],
    groups: dict[str, list[dict[str, Any]]],
    luck: Luck,
    luck_out: dict[str, Any],
    rules: DecisionRules,
) -> dict[str, Any]:
    """H1a under tool faults: every run's base luck share and seed sharing meet the frozen rule."""
    sharing: dict[str, Any] = {}
    run_rows: dict[str, Any] = {}
    for ev in runs:
        lam = luck_out[ev.run]
        sharing[ev.run] = (
            seed_sharing(
                groups[ev.run], ev.arm, rules.paired_max_seeds, rules.independent_min_seeds, report_rule=True
            )
            if ev.run in groups
            else None
        )
        share_ok = bool(sharing[ev.run] is not None and sharing[ev.run]["passes"])
        row = {"arm": ev.arm, "luck_criterion": _luck_criterion(lam, rules), "sharing_criterion": share_ok}
        reasons = []
        if lam is None:
            reasons.append(base_lams(ev.run, ev, luck, rules.h1a_c2_step)[1])
        if sharing[ev.run] is None:
            reasons.append("no training-group records given (--groups)")
        if reasons:
            row["reasons"] = reasons
        run_rows[ev.run] = row
    lams = [v["lam"] for v in luck_out.values() if v is not None and v["lam"] is not None]
    lows = [v["ci95"][0] for v in luck_out.values() if v is not None and v["ci95"][0] is not None]
    return {
        "seed_sharing": sharing,
        "runs": run_rows,
        # table 2's criterion rows: the smallest step-0 luck share and lower bound over the runs, and how
        # many runs meet each criterion
        "luck_share_step0_min": min(lams, default=None),
        "luck_share_step0_lower_min": min(lows, default=None),
        "runs_meeting_luck": sum(1 for r in run_rows.values() if r["luck_criterion"]),
        "runs_meeting_sharing": sum(1 for r in run_rows.values() if r["sharing_criterion"]),
        "rule": {
            "lambda_at_least": rules.h1a_c2_lambda_at_least,
            "lower_bound_above": rules.h1a_c2_lower_bound_above,
            "paired_max_seeds_per_group": rules.paired_max_seeds,
            "independent_min_seeds_per_group": rules.independent_min_seeds,
        },
        # a run without its luck share or its groups cannot meet or miss the rule: undecided
        "passes": None
        if any("reasons" in r for r in run_rows.values())
        else all(r["luck_criterion"] and r["sharing_criterion"] for r in run_rows.values()),
    }


def expected_independent_rate(
    q: float, size: int, frozen: float | None, rule_size: int | None
) -> tuple[float, str]:
    """H1a's expected spurious rate of the independent arm under grader flips (C4) and where it comes
    from: the frozen rate when the trained group size ``size`` is the rule's, else the closed form at the
    trained G (records.decisions recomputes a register's rate with this very function)."""
    if frozen is not None and rule_size is not None and size == int(rule_size):
        return float(frozen), "rules"
    # a scale that trains another G cannot apply the frozen rate: the closed form at the trained G
    return (
        spurious_rate_closed_form(q, size),
        f"closed form 1-(1-q)^G-q^G at the trained G={size} (the frozen rate is for G={rule_size})",
    )


def _h1a_outcome(
    rates: dict[str, Any], per_run: dict[str, Any], sizes: set[int], out: dict[str, Any], rules: DecisionRules
) -> dict[str, Any]:
    """H1a under grader flips: the independent arm's spurious rate near the expected one, the paired
    arm's at most the frozen bound."""
    q = rules.h1a_c4_q
    rule_size = rules.h1a_c4_group_size
    size = max(sizes) if sizes else int(rule_size or 8)
    frozen = rules.h1a_c4_expected_rate
    expected, expected_source = expected_independent_rate(q, size, frozen, rule_size)
    ind, par = out["spurious_rate_independent"], out["spurious_rate_paired"]
    ind_ok = bool(ind is not None and abs(ind - expected) <= rules.h1a_c4_independent_within)
    par_ok = bool(par is not None and par <= rules.h1a_c4_paired_at_most)
    block = {
        "expected_independent_rate": expected,
        "expected_independent_rate_rule": frozen,
        "expected_rate_source": expected_source,
        "q": q,
        "G": size,
        "G_rule": rule_size,
        "runs": per_run,
        "rule": {
            "independent_within": rules.h1a_c4_independent_within,
            "independent_criterion": ind_ok,
            "paired_at_most": rules.h1a_c4_paired_at_most,
            "paired_criterion": par_ok,
        },
        "passes": ind_ok and par_ok,
    }
    if not rates["paired"] or not rates["independent"]:
        block["reason"] = "training-group records missing for an arm (--groups)"
        block["passes"] = None
    return block


def h1a_missing(
    condition: str, runs: list[RunEvidence], groups: dict[str, Any], luck: Luck, step: int
) -> list[str]:
    """What H1a reads and was not given, per admitted run: its training groups (both kinds) and, under
    tool faults, its luck share at the rule's base step."""
    out = []
    for ev in runs:
        if ev.run not in groups:
            out.append(f"{ev.run}: no training-group records given (--groups); H1a reads them")
        lams, source = base_lams(ev.run, ev, luck, step) if condition == "C2" else (True, "")
        if lams is None:
            out.append(f"{ev.run}: {source} (--luck); H1a reads it")
    return out


def hypothesis_h1a(
    condition: str,
    runs: list[RunEvidence],
    groups: dict[str, list[dict[str, Any]]],
    luck: Luck,
    rules: DecisionRules,
) -> dict[str, Any]:
    """H1a: the luck-share rule under tool faults (C2), the spurious-rate rule under grader flips."""
    if not runs:
        return not_computed("H1a", "no admitted run")
    luck_out = _luck_shares(runs, luck, rules)
    rates, per_run, sizes = _spurious_rates(runs, groups)
    out: dict[str, Any] = {
        "hypothesis": "H1a",
        "computed": True,
        "luck_share_step0": luck_out,
        "spurious_rates": rates,
        "spurious_rate_paired": rates["paired"]["rate"] if rates["paired"] else None,
        "spurious_rate_independent": rates["independent"]["rate"] if rates["independent"] else None,
    }
    if condition == "C2":
        out.update(_h1a_transition(runs, groups, luck, luck_out, rules))
    else:
        out.update(_h1a_outcome(rates, per_run, sizes, out, rules))
    return round4(out)

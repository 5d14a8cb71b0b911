"""The pre-registered decisions H1a, H2a/H2b, H3 and H5 (docs/analysis.md#decisions), plus secondaries.

Inputs are episode records only (docs/CONTRACT.md#episode-record), optionally with the training-group records, the luck-share
files and the completeness files of each run. A run enters only if it is admitted: its completeness
file says complete, its pools equal the data manifest, and the episode files read here are the very
files that were checked (same sha256). Runs are paired by seed; a seed enters only with both arms.

Every hypothesis draws from a fresh ``numpy.random.default_rng(bootstrap.seed)``: first the seed-index
matrix, then the task-index matrix (see ``stats.bootstrap``). Register numbers are rounded to 4
decimals; the pass rules are evaluated on the unrounded numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError
from paired_rollouts.io import iter_jsonl, read_json, sha256_file
from paired_rollouts.stats.bootstrap import paired_bootstrap, percentile_interval
from paired_rollouts.stats.completeness import _pool_hashes
from paired_rollouts.stats.curves import auc_weights, parse_run_name, round4, steps_to_threshold
from paired_rollouts.stats.groups import group_flags, seed_sharing, spurious_rate_closed_form
from paired_rollouts.stats.luck_share import build_tables, lam_bootstrap, variance_components
from paired_rollouts.stats.rules import DecisionRules

H2_NAME = {"C2": "H2a", "C4": "H2b"}
THRESHOLD_CURVE = "at_training"


@dataclass
class RunEvidence:
    """One run's episode outcomes, indexed for the decisions."""

    run: str
    condition: str
    arm: str
    seed: int
    periodic: dict[str, dict[int, dict[str, list[float]]]] = field(default_factory=dict)
    final: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    final_exposed: dict[str, list[float]] = field(default_factory=dict)
    diagnostic: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    episodes: int = 0

    def add(self, rec: dict[str, Any]) -> bool:
        """File one record; False for phases the decisions do not use (e.g. train)."""
        phase = rec.get("phase")
        success = float(bool(rec["true_success"]))
        if phase == "periodic":
            by_step = self.periodic.setdefault(rec["regime"], {})
            by_step.setdefault(int(rec["step"]), {}).setdefault(rec["task_id"], []).append(success)
        elif phase == "final":
            self.final.setdefault(rec["regime"], {}).setdefault(rec["task_id"], []).append(success)
            if rec.get("exposed"):
                self.final_exposed.setdefault(rec["regime"], []).append(success)
        elif phase == "diagnostic":
            self.diagnostic.setdefault(int(rec["step"]), []).append(rec)
        else:
            return False
        self.episodes += 1
        return True

    def periodic_steps(self, regime: str) -> list[int]:
        return sorted(self.periodic.get(regime, {}))

    def curve(self, regime: str, steps: Sequence[int], tasks: Sequence[str]) -> np.ndarray:
        """steps x tasks matrix of task scores (mean over schedules)."""
        table = self.periodic[regime]
        return np.array([[_score(table[s][t]) for t in tasks] for s in steps])

    def final_scores(self, regime: str, tasks: Sequence[str]) -> np.ndarray:
        table = self.final[regime]
        return np.array([_score(table[t]) for t in tasks])


def _score(outcomes: list[float]) -> float:
    """A task's score: the mean of its schedules' true successes (plain Python: lists are tiny)."""
    return sum(outcomes) / len(outcomes)


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, directories searched recursively for ``*.jsonl``; sorted, de-duplicated."""
    out: set[Path] = set()
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.update(f for f in path.rglob("*.jsonl") if f.name != "groups.jsonl")
        elif path.is_file():
            out.add(path)
        else:
            raise UserError(f"{path}: no such file or directory (--episodes)")
    return sorted(out)


def load_episodes(paths: Iterable[str | Path]) -> dict[str, RunEvidence]:
    """Read episode files into one ``RunEvidence`` per run, recording each file's sha256 per run."""
    runs: dict[str, RunEvidence] = {}
    for path in expand_paths(paths):
        digest = sha256_file(path)
        for line, rec in enumerate(iter_jsonl(path), start=1):
            run = rec.get("run")
            if run is None or "phase" not in rec:
                raise UserError(f"{path}:{line}: not an episode record (no run/phase); see docs/CONTRACT.md#episode-record")
            ev = runs.get(run)
            if ev is None:
                ident = parse_run_name(run)
                ev = runs[run] = RunEvidence(run, ident["condition"], ident["arm"], ident["seed"])
            if rec.get("condition", ev.condition) != ev.condition or rec.get("seed", ev.seed) != ev.seed:
                raise UserError(f"{path}:{line}: record of run {run} says condition {rec.get('condition')} "
                                f"seed {rec.get('seed')}; the run name says {ev.condition} seed {ev.seed}")
            if ev.add(rec):
                folder = "diagnostics" if rec.get("phase") == "diagnostic" else "evals"
                ev.files[f"{folder}/{path.name}"] = digest
    return runs


def _by_run(paths: Iterable[str | Path] | None, what: str) -> dict[str, tuple[str, Any]]:
    out: dict[str, tuple[str, Any]] = {}
    for p in paths or []:
        data = read_json(p)
        run = data.get("run") if isinstance(data, dict) else None
        if run is None:
            raise UserError(f"{p}: not a {what} file (no 'run')")
        key = f"{run}@{data.get('step')}" if what == "luck" else run
        if key in out:
            raise UserError(f"{p}: a second {what} file for {key} (first: {out[key][0]})")
        out[key] = (str(p), data)
    return out


def load_groups(paths: Iterable[str | Path] | None) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in paths or []:
        for rec in iter_jsonl(p):
            out.setdefault(str(rec.get("run")), []).append(rec)
    return out


# ----------------------------------------------------------------------------------------------
# admission


def admit(ev: RunEvidence, complete: tuple[str, dict[str, Any]] | None,
          pools: dict[str, str]) -> dict[str, Any]:
    """Is this run's evidence whole and untouched? Returns the acceptance entry."""
    entry: dict[str, Any] = {"admitted": True, "checked": complete is not None, "episodes": ev.episodes,
                             "complete_source": None, "code_versions": [], "reasons": []}
    if complete is None:
        return entry
    source, data = complete
    entry["complete_source"] = source
    entry["code_versions"] = list(data.get("code_versions") or [])
    reasons = entry["reasons"]
    if not data.get("complete"):
        reasons.append(f"completeness check failed: {len(data.get('missing') or [])} missing, "
                       f"{len(data.get('defects') or [])} defects")
    recorded = {name: v.get("sha256") for name, v in (data.get("task_pools") or {}).items()}
    for name, want in sorted(pools.items()):
        if recorded.get(name) != want:
            reasons.append(f"task pool {name}: run used {recorded.get(name)}, manifest says {want}")
    checked_files = data.get("files") or {}
    for rel, digest in sorted(ev.files.items()):
        if rel not in checked_files:
            reasons.append(f"{rel}: not covered by the completeness check")
        elif checked_files[rel] != digest:
            reasons.append(f"{rel}: sha256 differs from complete.json (tampered)")
    for rel in sorted(checked_files):
        if rel.startswith("evals/") and rel not in ev.files:
            reasons.append(f"{rel}: checked for completeness but not given to decide")
    entry["admitted"] = not reasons
    return entry


# ----------------------------------------------------------------------------------------------
# hypotheses


def _not_computed(name: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {"hypothesis": name, "passes": False, "computed": False, "reason": reason, **extra}


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


def _periodic_frame(pairs: list[tuple[RunEvidence, RunEvidence]], regime: str) -> tuple[list[int], list[str], str]:
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


def _final_frame(pairs: list[tuple[RunEvidence, RunEvidence]], regime: str) -> tuple[list[str], str]:
    runs = [r for pair in pairs for r in pair]
    missing = [r.run for r in runs if regime not in r.final]
    if missing:
        return [], f"no final '{regime}' episodes for {', '.join(missing)}"
    tasks = common_tasks(r.final[regime] for r in runs)
    return tasks, "" if tasks else f"no final task common to all runs for '{regime}'"


def hypothesis_h2(pairs, condition: str, rules: DecisionRules) -> dict[str, Any]:
    names = rules.sets(condition)
    name = H2_NAME[condition]
    boot = {"resamples": rules.resamples, "seed": rules.seed}
    if not pairs:
        return _not_computed(name, "no admitted seed pair", bootstrap=boot)
    steps, tasks, why = _periodic_frame(pairs, names["validation"])
    final_tasks, why_final = _final_frame(pairs, names["final"])
    if why or why_final:
        return _not_computed(name, why or why_final, bootstrap=boot)
    w = auc_weights(steps)
    cp = [p.curve(names["validation"], steps, tasks) for p, _ in pairs]
    ci = [i.curve(names["validation"], steps, tasks) for _, i in pairs]
    auc_p = np.array([w @ c.mean(axis=1) for c in cp])
    auc_i = np.array([w @ c.mean(axis=1) for c in ci])
    diffs = auc_p - auc_i
    contrib = np.stack([w @ (a - b) for a, b in zip(cp, ci, strict=True)])
    reps = paired_bootstrap(contrib, rules.resamples, np.random.default_rng(rules.seed))
    fin_p = np.array([p.final_scores(names["final"], final_tasks).mean() for p, _ in pairs])
    fin_i = np.array([i.final_scores(names["final"], final_tasks).mean() for _, i in pairs])
    seeds = [p.seed for p, _ in pairs]
    mean_criterion = bool(diffs.mean() >= rules.h2_mean_at_least)
    every = bool(np.all(diffs > 0))
    direction = bool(fin_p.mean() >= fin_i.mean())
    passes = (mean_criterion and (every or not rules.h2_every_seed_positive)
              and (direction or not rules.h2_final_direction))
    return round4({
        "hypothesis": name, "computed": True, "condition": condition,
        "validation_set": names["validation"], "final_set": names["final"],
        "steps": steps, "auc_weights": w.tolist(), "tasks": len(tasks), "final_tasks": len(final_tasks),
        "seeds": seeds, "runs": [[p.run, i.run] for p, i in pairs],
        "curve_paired": {str(s): c.mean(axis=1).tolist() for s, c in zip(seeds, cp, strict=True)},
        "curve_independent": {str(s): c.mean(axis=1).tolist() for s, c in zip(seeds, ci, strict=True)},
        "auc_paired": auc_p.tolist(), "auc_independent": auc_i.tolist(),
        "auc_difference_by_seed": diffs.tolist(), "auc_difference_mean": float(diffs.mean()),
        "auc_difference_ci95": percentile_interval(reps, *rules.interval("h2", 95)),
        "final_paired_by_seed": fin_p.tolist(), "final_independent_by_seed": fin_i.tolist(),
        "final_difference_mean": float(fin_p.mean() - fin_i.mean()),
        "rule": {"mean_at_least": rules.h2_mean_at_least, "mean_criterion": mean_criterion,
                 "every_seed_positive": every, "final_direction": direction},
        "passes": passes, "bootstrap": boot,
    })


def hypothesis_h3(pairs, rules: DecisionRules) -> dict[str, Any]:
    boot = {"resamples": rules.resamples, "seed": rules.seed}
    if not pairs:
        return _not_computed("H3", "no admitted seed pair", bootstrap=boot)
    h3_set = rules.h3_set
    steps_all, tasks, why = _periodic_frame(pairs, h3_set)
    if why:
        return _not_computed("H3", why, bootstrap=boot)
    steps = h3_steps(rules.h3_steps, rules.rule_steps, steps_all)
    contrib = np.stack([(p.curve(h3_set, steps, tasks) - i.curve(h3_set, steps, tasks)).mean(axis=0)
                        for p, i in pairs])
    diffs = contrib.mean(axis=1)
    reps = paired_bootstrap(contrib, rules.resamples, np.random.default_rng(rules.seed))
    mean_criterion = bool(diffs.mean() >= rules.h3_mean_at_least)
    every = bool(np.all(diffs > 0))
    return round4({
        "hypothesis": "H3", "computed": True, "set": h3_set, "steps": steps, "steps_rule": rules.h3_steps,
        "tasks": len(tasks), "seeds": [p.seed for p, _ in pairs], "runs": [[p.run, i.run] for p, i in pairs],
        "difference_by_seed": diffs.tolist(), "difference_mean": float(diffs.mean()),
        "ci95": percentile_interval(reps, *rules.interval("h3", 95)),
        "rule": {"mean_at_least": rules.h3_mean_at_least, "mean_criterion": mean_criterion,
                 "every_seed_positive": every},
        "passes": mean_criterion and (every or not rules.h3_every_seed_positive), "bootstrap": boot,
    })


def hypothesis_h5(pairs, rules: DecisionRules) -> dict[str, Any]:
    boot = {"resamples": rules.resamples, "seed": rules.seed}
    if not pairs:
        return _not_computed("H5", "no admitted seed pair", bootstrap=boot)
    h5_set = rules.h5_set
    tasks, why = _final_frame(pairs, h5_set)
    if why:
        return _not_computed("H5", why, bootstrap=boot)
    contrib = np.stack([p.final_scores(h5_set, tasks) - i.final_scores(h5_set, tasks) for p, i in pairs])
    diffs = contrib.mean(axis=1)
    reps = paired_bootstrap(contrib, rules.resamples, np.random.default_rng(rules.seed))
    lo, hi = percentile_interval(reps, *rules.interval("h5", 90))
    return round4({
        "hypothesis": "H5", "computed": True, "set": h5_set, "tasks": len(tasks),
        "seeds": [p.seed for p, _ in pairs], "runs": [[p.run, i.run] for p, i in pairs],
        "difference_by_seed": diffs.tolist(), "difference_mean": float(diffs.mean()),
        "difference_ci90": [lo, hi], "ci90_lower": lo,
        "rule": {"lower_bound_above": rules.h5_lower_bound_above},
        "passes": bool(lo > rules.h5_lower_bound_above), "bootstrap": boot,
    })


def _base_lams(run: str, ev: RunEvidence | None, luck: dict[str, tuple[str, Any]],
               step: int = 0) -> tuple[np.ndarray | None, str]:
    """Per-task lam at the base checkpoint from the luck file, else from diagnostic episodes."""
    entry = luck.get(f"{run}@{step}")
    if entry is not None:
        source, data = entry
        if data.get("defects"):
            return None, f"{source}: luck-share tables have defects"
        lams = [np.nan if t.get("lam") is None else float(t["lam"]) for t in data.get("per_task") or []]
        return np.array(lams, dtype=float), source
    if ev is not None and step in ev.diagnostic:
        built = build_tables(ev.diagnostic[step])
        if built["defects"]:
            return None, f"diagnostic episodes at step {step} are not complete K x M tables"
        stack = np.stack([tab for _, tab in built["tables"].values()])
        return variance_components(stack)["lam"], "episodes"
    return None, f"no luck-share file or diagnostic episodes at step {step}"


def _spurious_counts(groups: list[dict[str, Any]]) -> tuple[int, int, int]:
    all_correct = spurious = 0
    size = 0
    for g in groups:
        f = group_flags(g["true_success"], g["observed_reward"])
        all_correct += f["all_correct"]
        spurious += f["spurious"]
        size = max(size, len(g["true_success"]))
    return all_correct, spurious, size


def hypothesis_h1a(condition: str, runs: list[RunEvidence], groups: dict[str, list[dict[str, Any]]],
                   luck: dict[str, tuple[str, Any]], rules: DecisionRules) -> dict[str, Any]:
    if not runs:
        return _not_computed("H1a", "no admitted run")
    rng = np.random.default_rng(rules.seed)
    step = rules.h1a_c2_step
    lo_pct, hi_pct = rules.interval("h1a_c2", 95)
    luck_out: dict[str, Any] = {}
    for ev in runs:
        lams, source = _base_lams(ev.run, ev, luck, step)
        if lams is None:
            luck_out[ev.run] = None
            continue
        defined = ~np.isnan(lams)
        luck_out[ev.run] = {
            "lam": float(lams[defined].mean()) if defined.any() else None,
            "ci95": lam_bootstrap(lams, rules.resamples, rng, lo_pct, hi_pct),
            "tasks": int(lams.size), "tasks_defined": int(defined.sum()), "step": step, "source": source,
        }
    rates: dict[str, Any] = {}
    per_run: dict[str, Any] = {}
    sizes = set()
    for arm in ("paired", "independent"):
        ac = sp = 0
        for ev in runs:
            if ev.arm == arm and ev.run in groups:
                a, s, size = _spurious_counts(groups[ev.run])
                ac, sp = ac + a, sp + s
                sizes.add(size)
                per_run[ev.run] = {"all_correct_groups": a, "spurious": s}
        have = any(ev.arm == arm and ev.run in groups for ev in runs)
        rates[arm] = {"all_correct_groups": ac, "spurious": sp, "rate": sp / ac if ac else None} if have else None
    out: dict[str, Any] = {
        "hypothesis": "H1a", "computed": True, "luck_share_step0": luck_out,
        "spurious_rates": rates,
        "spurious_rate_paired": rates["paired"]["rate"] if rates["paired"] else None,
        "spurious_rate_independent": rates["independent"]["rate"] if rates["independent"] else None,
    }
    if condition == "C2":
        sharing: dict[str, Any] = {}
        run_rows: dict[str, Any] = {}
        for ev in runs:
            lam = luck_out[ev.run]
            luck_ok = bool(lam is not None and lam["lam"] is not None and lam["ci95"][0] is not None
                           and lam["lam"] >= rules.h1a_c2_lambda_at_least
                           and lam["ci95"][0] > rules.h1a_c2_lower_bound_above)
            sharing[ev.run] = seed_sharing(groups[ev.run], ev.arm) if ev.run in groups else None
            share_ok = bool(sharing[ev.run] is not None and sharing[ev.run]["passes"])
            row = {"arm": ev.arm, "luck_criterion": luck_ok, "sharing_criterion": share_ok}
            reasons = []
            if lam is None:
                reasons.append(_base_lams(ev.run, ev, luck, step)[1])
            if sharing[ev.run] is None:
                reasons.append("no training-group records given (--groups)")
            if reasons:
                row["reasons"] = reasons
            run_rows[ev.run] = row
        out.update(seed_sharing=sharing, runs=run_rows,
                   rule={"lambda_at_least": rules.h1a_c2_lambda_at_least,
                         "lower_bound_above": rules.h1a_c2_lower_bound_above},
                   passes=all(r["luck_criterion"] and r["sharing_criterion"] for r in run_rows.values()))
    else:
        q = rules.h1a_c4_q
        rule_size = rules.h1a_c4_group_size
        size = max(sizes) if sizes else int(rule_size or 8)
        # the expected rate follows the group size actually trained (stand-in scale uses smaller G)
        expected = spurious_rate_closed_form(q, size)
        ind, par = out["spurious_rate_independent"], out["spurious_rate_paired"]
        ind_ok = bool(ind is not None and abs(ind - expected) <= rules.h1a_c4_independent_within)
        par_ok = bool(par is not None and par <= rules.h1a_c4_paired_at_most)
        out.update(expected_independent_rate=expected, q=q, G=size, G_rule=rule_size, runs=per_run,
                   rule={"independent_within": rules.h1a_c4_independent_within, "independent_criterion": ind_ok,
                         "paired_at_most": rules.h1a_c4_paired_at_most, "paired_criterion": par_ok},
                   passes=ind_ok and par_ok)
        if not rates["paired"] or not rates["independent"]:
            out["reason"] = "training-group records missing for an arm (--groups)"
    return round4(out)


# ----------------------------------------------------------------------------------------------
# secondary endpoints


def secondary(runs: list[RunEvidence], reference: list[RunEvidence], threshold: float) -> dict[str, Any]:
    """Descriptive endpoints: steps-to-threshold, AUC and final means per run, arm means, C0 contrast."""
    everyone = runs + reference
    auc_by, final_by, rec_by, stt = {}, {}, {}, {}
    steps_used: list[int] = []
    for ev in everyone:
        auc_by[ev.run] = {}
        for regime, table in sorted(ev.periodic.items()):
            steps = sorted(table)
            tasks = common_tasks(table[s] for s in steps)
            if not tasks:
                continue
            curve = ev.curve(regime, steps, tasks).mean(axis=1)
            auc_by[ev.run][regime] = float(auc_weights(steps) @ curve)
            if regime == THRESHOLD_CURVE:
                reached = steps_to_threshold(steps, curve, threshold)
                stt[ev.run] = {"step": reached, "censored": reached is None}
                steps_used = steps_used or steps
        final_by[ev.run] = {reg: float(np.mean([_score(v) for v in table.values()]))
                            for reg, table in sorted(ev.final.items())}
        rec_by[ev.run] = {reg: (float(np.mean(ev.final_exposed[reg])) if ev.final_exposed.get(reg) else None)
                          for reg in sorted(ev.final)}
    by_arm: dict[str, Any] = {}
    stt_arm: dict[str, Any] = {}
    for arm in ("paired", "independent", "clean"):
        members = [ev.run for ev in everyone if ev.arm == arm]
        if not members:
            continue
        by_arm[arm] = {"auc": _mean_dicts([auc_by[r] for r in members]),
                       "final": _mean_dicts([final_by[r] for r in members])}
        hits = [stt[r]["step"] for r in members if r in stt and stt[r]["step"] is not None]
        stt_arm[arm] = {"reached": len(hits), "runs": len(members),
                        "median_reached": float(np.median(hits)) if hits else None}
    clean_ref = None
    if reference and "clean" in by_arm:
        ref = by_arm["clean"]
        clean_ref = {"runs": [ev.run for ev in reference], "arm_minus_reference": {}}
        for arm in ("paired", "independent"):
            if arm in by_arm:
                clean_ref["arm_minus_reference"][arm] = {
                    part: {k: v - ref[part][k] for k, v in by_arm[arm][part].items()
                           if k in ref[part] and v is not None and ref[part][k] is not None}
                    for part in ("auc", "final")}
    return round4({"threshold": threshold, "threshold_curve": THRESHOLD_CURVE, "steps": steps_used,
                   "steps_to_threshold": stt, "steps_to_threshold_by_arm": stt_arm, "auc": auc_by,
                   "final": final_by, "recovery_success": rec_by, "arms": by_arm,
                   "clean_reference": clean_ref})


def _mean_dicts(dicts: list[dict[str, float]]) -> dict[str, float]:
    keys = set.intersection(*[set(d) for d in dicts]) if dicts else set()
    return {k: float(np.mean([d[k] for d in dicts])) for k in sorted(keys)}


# ----------------------------------------------------------------------------------------------
# driver


def decide(
    condition: str,
    episodes: dict[str, RunEvidence],
    rules: DecisionRules,
    manifest: dict[str, Any],
    *,
    groups: dict[str, list[dict[str, Any]]] | None = None,
    luck: dict[str, tuple[str, Any]] | None = None,
    complete: dict[str, tuple[str, Any]] | None = None,
    expected_seeds: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Build the decision register (docs/records.md section 4) from loaded evidence."""
    condition = condition.upper()
    if condition not in H2_NAME:
        raise UserError(f"--condition must be C2 or C4, got {condition}")
    groups, luck, complete = groups or {}, luck or {}, complete or {}
    pools = _pool_hashes(manifest)
    if not pools:
        raise UserError("data manifest has no 'pools' with sha256 values")
    candidates = {r: ev for r, ev in episodes.items() if ev.condition == condition}
    reference = {r: ev for r, ev in episodes.items() if ev.condition == "C0"}
    ignored = sorted(r for r in episodes if r not in candidates and r not in reference)
    if not candidates:
        raise UserError(f"no episode records of condition {condition} among --episodes")
    use_complete = bool(complete)
    acceptance = {}
    for run, ev in sorted({**candidates, **reference}.items()):
        entry = admit(ev, complete.get(run), pools)
        # the clean reference is descriptive only: without a completeness file it enters unchecked
        if use_complete and run not in complete and run in candidates:
            entry["admitted"] = False
            entry["reasons"].append("no completeness file given for this run (--complete)")
        acceptance[run] = entry
    missing = [f"{run}: {reason}" for run, entry in acceptance.items() for reason in entry["reasons"]]
    seeds = sorted({ev.seed for ev in candidates.values()} | set(expected_seeds or []))
    pairs = []
    for seed in seeds:
        p_name, i_name = f"{condition.lower()}-paired-s{seed}", f"{condition.lower()}-independent-s{seed}"
        have = [n for n in (p_name, i_name) if n in candidates]
        for n in (p_name, i_name):
            if n not in candidates:
                missing.append(f"{n}: no episode records given")
        if len(have) == 2 and acceptance[p_name]["admitted"] and acceptance[i_name]["admitted"]:
            pairs.append((candidates[p_name], candidates[i_name]))
        elif len(have) == 2:
            missing.append(f"seed {seed}: left out, a run of the pair was not admitted")
    admitted_runs = [ev for pair in pairs for ev in pair]
    register: dict[str, Any] = {
        "condition": condition,
        "runs": [ev.run for ev in admitted_runs],
        "seeds": [p.seed for p, _ in pairs],
        "seed_pairs": [[p.run, i.run] for p, i in pairs],
        "bootstrap": {"resamples": rules.resamples, "seed": rules.seed},
        "pool_sha256": dict(sorted(pools.items())),
        "rules_source": rules.source,
        "rules_sha256": rules.sha256,
        "acceptance": acceptance,
        "missing": missing,
        "ignored_runs": ignored,
        "complete": bool(pairs) and not missing and use_complete,
    }
    register["H1a"] = hypothesis_h1a(condition, admitted_runs, groups, luck, rules)
    register[H2_NAME[condition]] = hypothesis_h2(pairs, condition, rules)
    if condition == "C2":
        register["H3"] = hypothesis_h3(pairs, rules)
        register["H5"] = hypothesis_h5(pairs, rules)
    admitted_ref = [ev for r, ev in sorted(reference.items()) if acceptance[r]["admitted"]]
    register["secondary"] = secondary(admitted_runs, admitted_ref, rules.threshold)
    return register


def load_inputs(complete_paths, luck_paths):
    return _by_run(complete_paths, "complete"), _by_run(luck_paths, "luck")

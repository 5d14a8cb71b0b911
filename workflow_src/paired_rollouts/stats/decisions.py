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

from paired_rollouts.design import (
    DEFAULT_SCALING,
    PAPER_CONDITIONS,
    TIER1_HYPOTHESES,
    Comparison,
    learning_sets,
    parse_run,
)
from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file
from paired_rollouts.prereg.rules import DecisionRules
from paired_rollouts.records import PoolManifest, iter_episodes, iter_groups, read_completeness, read_luck
from paired_rollouts.stats.bootstrap import paired_bootstrap, percentile_interval
from paired_rollouts.stats.curves import auc_weights, round4, steps_to_threshold
from paired_rollouts.stats.groups import group_flags, seed_sharing, spurious_rate_closed_form
from paired_rollouts.stats.luck_share import build_tables, lam_bootstrap, variance_components

H2_NAME = {"C2": "H2a", "C4": "H2b"}
THRESHOLD_CURVE = "at_training"


@dataclass
class RunEvidence:
    """One run's episode outcomes, indexed for the decisions."""

    run: str
    condition: str
    arm: str
    seed: int
    scaling: str = "group"
    periodic: dict[str, dict[int, dict[str, list[float]]]] = field(default_factory=dict)
    final: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    final_exposed: dict[str, list[float]] = field(default_factory=dict)
    diagnostic: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    episodes: int = 0

    def add(self, rec: dict[str, Any]) -> bool:
        """File one record; False for phases the decisions do not use (e.g. train)."""
        phase = rec["phase"]
        success = 1.0 if rec["true_success"] is True else 0.0
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


def expand_paths(paths: Iterable[str | Path]) -> list[tuple[Path, Path | None]]:
    """(file, folder it was found in) for files as given and ``*.jsonl`` under directories; sorted,
    de-duplicated. The folder lets the digest key be the file's path relative to the run."""
    out: dict[Path, Path | None] = {}
    for p in paths:
        path = Path(p)
        if path.is_dir():
            for f in path.rglob("*.jsonl"):
                if f.name != "groups.jsonl":
                    out.setdefault(f, path)
        elif path.is_file():
            out.setdefault(path, None)
        else:
            raise UserError(f"{path}: no such file or directory (--episodes)")
    return sorted(out.items())


def _relative_key(path: Path, folder: Path | None, run: str, phase: str) -> str:
    """``evals/<path below the run's folder>`` (or ``diagnostics/...``), as complete.json lists files."""
    top = "diagnostics" if phase == "diagnostic" else "evals"
    if folder is None:
        return f"{top}/{path.name}"
    parts = path.relative_to(folder).parts
    if parts and parts[0] == run and len(parts) > 1:  # a folder above the runs' folders was given
        parts = parts[1:]
    return f"{top}/{'/'.join(parts)}"


def load_episodes(paths: Iterable[str | Path]) -> dict[str, RunEvidence]:
    """Read episode files (typed) into one ``RunEvidence`` per run, with each file's sha256 keyed by its
    path relative to the run; two files under one key are refused."""
    runs: dict[str, RunEvidence] = {}
    origin: dict[tuple[str, str], Path] = {}
    for path, folder in expand_paths(paths):
        digest = sha256_file(path)
        for line, rec in iter_episodes(path):
            run = rec["run"]
            ev = runs.get(run)
            if ev is None:
                ident = parse_run(run)
                ev = runs[run] = RunEvidence(run, ident.condition, ident.arm, ident.seed, ident.scaling)
            if rec["condition"] != ev.condition or rec["seed"] != ev.seed or rec["arm"] != ev.arm:
                raise UserError(
                    f"{path}:{line}: record of run {run} says condition {rec['condition']} arm "
                    f"{rec['arm']} seed {rec['seed']}; the run name says {ev.condition} {ev.arm} "
                    f"seed {ev.seed}"
                )
            if ev.add(rec):
                rel = _relative_key(path, folder, run, rec["phase"])
                first = origin.setdefault((run, rel), path)
                if first != path:
                    raise UserError(
                        f"{path}: a second file for {run} {rel} (first {first}); give each evidence file once"
                    )
                ev.files[rel] = digest
    return runs


def _by_run(paths: Iterable[str | Path] | None, what: str) -> dict[str, tuple[str, Any]]:
    out: dict[str, tuple[str, Any]] = {}
    for p in paths or []:
        data = read_luck(p) if what == "luck" else read_completeness(p)
        run = data["run"]
        key = f"{run}@{data['step']}" if what == "luck" else run
        if key in out:
            raise UserError(f"{p}: a second {what} file for {key} (first: {out[key][0]})")
        if what == "luck":
            data = {**data, "_sha256": sha256_file(p)}
        out[key] = (str(p), data)
    return out


class Groups(dict):
    """{run: [group records]} plus the sha256 of the file each run's records came from."""

    def __init__(self) -> None:
        super().__init__()
        self.digests: dict[str, tuple[str, str]] = {}


def load_groups(paths: Iterable[str | Path] | None) -> Groups:
    out = Groups()
    for p in paths or []:
        digest = sha256_file(p)
        runs_here = set()
        for _, rec in iter_groups(p):
            out.setdefault(rec["run"], []).append(rec)
            runs_here.add(rec["run"])
        for run in runs_here:
            if run in out.digests:
                raise UserError(
                    f"{p}: training groups of {run} also in {out.digests[run][0]}; give one file per run"
                )
            out.digests[run] = (str(p), digest)
    return out


# ----------------------------------------------------------------------------------------------
# admission


def admit(
    ev: RunEvidence,
    complete: tuple[str, dict[str, Any]] | None,
    pools: dict[str, str],
    inputs: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Is this run's evidence whole and untouched? Returns the acceptance entry.

    ``inputs`` are the run's other decision inputs (``groups.jsonl``, ``diagnostics/luck-stepN.json``:
    relative path -> sha256); like every episode file, each must be listed in complete.json with the
    same digest."""
    entry: dict[str, Any] = {
        "admitted": False,
        "checked": complete is not None,
        "episodes": ev.episodes,
        "complete_source": None,
        "code_versions": [],
        "reasons": [],
    }
    reasons = entry["reasons"]
    if complete is None:
        reasons.append("no completeness file given for this run (--complete)")
        return entry
    source, data = complete
    entry["complete_source"] = source
    entry["code_versions"] = list(data["code_versions"])
    if not data["complete"]:
        reasons.append(
            f"completeness check failed: {len(data['missing'])} missing, {len(data['defects'])} defects"
        )
    recorded = {name: v.get("sha256") for name, v in data["task_pools"].items() if isinstance(v, dict)}
    for name, want in sorted(pools.items()):
        if recorded.get(name) != want:
            reasons.append(f"task pool {name}: run used {recorded.get(name)}, manifest says {want}")
    checked_files = data["files"]
    given = {**ev.files, **(inputs or {})}
    for rel, digest in sorted(given.items()):
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


def _periodic_frame(
    pairs: list[tuple[RunEvidence, RunEvidence]], regime: str
) -> tuple[list[int], list[str], str]:
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


def hypothesis_h2(
    pairs,
    condition: str,
    rules: DecisionRules,
    *,
    sets: dict[str, str] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """H2a/H2b; with ``sets`` and ``name`` the same AUC-gap statistic for a registered tier's comparison."""
    names = sets or rules.sets(condition)
    name = name or H2_NAME[condition]
    boot = {"resamples": rules.resamples, "seed": rules.seed}
    if not pairs:
        return _not_computed(name, "no admitted seed pair", bootstrap=boot)
    steps, tasks, why = _periodic_frame(pairs, names["validation"])
    final_tasks, why_final = _final_frame(pairs, names["final"])
    if why or why_final:
        return _not_computed(name, why or why_final, bootstrap=boot)
    w, weights_applied = applied_auc_weights(steps, rules)
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


def hypothesis_h3(pairs, rules: DecisionRules) -> dict[str, Any]:
    boot = {"resamples": rules.resamples, "seed": rules.seed}
    if not pairs:
        return _not_computed("H3", "no admitted seed pair", bootstrap=boot)
    h3_set = rules.h3_set
    steps_all, tasks, why = _periodic_frame(pairs, h3_set)
    if why:
        return _not_computed("H3", why, bootstrap=boot)
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


def _base_lams(
    run: str, ev: RunEvidence | None, luck: dict[str, tuple[str, Any]], step: int = 0
) -> tuple[np.ndarray | None, str]:
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


def hypothesis_h1a(
    condition: str,
    runs: list[RunEvidence],
    groups: dict[str, list[dict[str, Any]]],
    luck: dict[str, tuple[str, Any]],
    rules: DecisionRules,
) -> dict[str, Any]:
    if not runs:
        return _not_computed("H1a", "no admitted run")
    rng = np.random.default_rng(rules.seed)
    step = rules.h1a_c2_step
    lo_pct, hi_pct = rules.interval("h1a_c2")
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
            "tasks": int(lams.size),
            "tasks_defined": int(defined.sum()),
            "step": step,
            "source": source,
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
        rates[arm] = (
            {"all_correct_groups": ac, "spurious": sp, "rate": sp / ac if ac else None} if have else None
        )
    out: dict[str, Any] = {
        "hypothesis": "H1a",
        "computed": True,
        "luck_share_step0": luck_out,
        "spurious_rates": rates,
        "spurious_rate_paired": rates["paired"]["rate"] if rates["paired"] else None,
        "spurious_rate_independent": rates["independent"]["rate"] if rates["independent"] else None,
    }
    if condition == "C2":
        sharing: dict[str, Any] = {}
        run_rows: dict[str, Any] = {}
        for ev in runs:
            lam = luck_out[ev.run]
            luck_ok = bool(
                lam is not None
                and lam["lam"] is not None
                and lam["ci95"][0] is not None
                and lam["lam"] >= rules.h1a_c2_lambda_at_least
                and lam["ci95"][0] > rules.h1a_c2_lower_bound_above
            )
            sharing[ev.run] = (
                seed_sharing(
                    groups[ev.run],
                    ev.arm,
                    rules.paired_max_seeds,
                    rules.independent_min_seeds,
                    report_rule=True,
                )
                if ev.run in groups
                else None
            )
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
        lams = [v["lam"] for v in luck_out.values() if v is not None and v["lam"] is not None]
        lows = [v["ci95"][0] for v in luck_out.values() if v is not None and v["ci95"][0] is not None]
        out.update(
            seed_sharing=sharing,
            runs=run_rows,
            # table 2's criterion rows: the smallest step-0 luck share and lower bound over the runs, and
            # how many runs meet each criterion
            luck_share_step0_min=min(lams, default=None),
            luck_share_step0_lower_min=min(lows, default=None),
            runs_meeting_luck=sum(1 for r in run_rows.values() if r["luck_criterion"]),
            runs_meeting_sharing=sum(1 for r in run_rows.values() if r["sharing_criterion"]),
            rule={
                "lambda_at_least": rules.h1a_c2_lambda_at_least,
                "lower_bound_above": rules.h1a_c2_lower_bound_above,
                "paired_max_seeds_per_group": rules.paired_max_seeds,
                "independent_min_seeds_per_group": rules.independent_min_seeds,
            },
            passes=all(r["luck_criterion"] and r["sharing_criterion"] for r in run_rows.values()),
        )
    else:
        q = rules.h1a_c4_q
        rule_size = rules.h1a_c4_group_size
        size = max(sizes) if sizes else int(rule_size or 8)
        frozen = rules.h1a_c4_expected_rate
        if frozen is not None and rule_size is not None and size == int(rule_size):
            expected, expected_source = float(frozen), "rules"
        else:
            # a scale that trains another G cannot apply the frozen rate: the closed form at the trained G
            expected = spurious_rate_closed_form(q, size)
            expected_source = (
                f"closed form 1-(1-q)^G-q^G at the trained G={size} (the frozen rate is for G={rule_size})"
            )
        ind, par = out["spurious_rate_independent"], out["spurious_rate_paired"]
        ind_ok = bool(ind is not None and abs(ind - expected) <= rules.h1a_c4_independent_within)
        par_ok = bool(par is not None and par <= rules.h1a_c4_paired_at_most)
        out.update(
            expected_independent_rate=expected,
            expected_independent_rate_rule=frozen,
            expected_rate_source=expected_source,
            q=q,
            G=size,
            G_rule=rule_size,
            runs=per_run,
            rule={
                "independent_within": rules.h1a_c4_independent_within,
                "independent_criterion": ind_ok,
                "paired_at_most": rules.h1a_c4_paired_at_most,
                "paired_criterion": par_ok,
            },
            passes=ind_ok and par_ok,
        )
        if not rates["paired"] or not rates["independent"]:
            out["reason"] = "training-group records missing for an arm (--groups)"
    return round4(out)


# ----------------------------------------------------------------------------------------------
# secondary endpoints


def secondary(
    runs: list[RunEvidence],
    reference: list[RunEvidence],
    threshold: float,
    rules: DecisionRules | None = None,
) -> dict[str, Any]:
    """Descriptive endpoints: steps-to-threshold, AUC and final means per run, arm means, C0 contrast."""
    everyone = runs + reference
    auc_by, final_by, rec_by, stt, curve_by, exp_by = {}, {}, {}, {}, {}, {}
    steps_used: list[int] = []
    for ev in everyone:
        auc_by[ev.run] = {}
        curve_by[ev.run] = {}
        for regime, table in sorted(ev.periodic.items()):
            steps = sorted(table)
            tasks = common_tasks(table[s] for s in steps)
            if not tasks:
                continue
            curve = ev.curve(regime, steps, tasks).mean(axis=1)
            weights = applied_auc_weights(steps, rules)[0] if rules is not None else auc_weights(steps)
            auc_by[ev.run][regime] = float(weights @ curve)
            curve_by[ev.run][regime] = {str(step): float(v) for step, v in zip(steps, curve, strict=True)}
            if regime == THRESHOLD_CURVE:
                reached = steps_to_threshold(steps, curve, threshold)
                stt[ev.run] = {"step": reached, "censored": reached is None}
                steps_used = steps_used or steps
        final_by[ev.run] = {
            reg: float(np.mean([_score(v) for v in table.values()]))
            for reg, table in sorted(ev.final.items())
        }
        rec_by[ev.run] = {
            reg: (float(np.mean(ev.final_exposed[reg])) if ev.final_exposed.get(reg) else None)
            for reg in sorted(ev.final)
        }
        exp_by[ev.run] = {
            reg: len(ev.final_exposed.get(reg, [])) / sum(len(v) for v in ev.final[reg].values())
            for reg in sorted(ev.final)
            if ev.final[reg]
        }
    by_arm: dict[str, Any] = {}
    stt_arm: dict[str, Any] = {}
    for arm in ("paired", "independent", "clean"):
        members = [ev.run for ev in everyone if ev.arm == arm]
        if not members:
            continue
        by_arm[arm] = {
            "auc": _mean_dicts([auc_by[r] for r in members]),
            "final": _mean_dicts([final_by[r] for r in members]),
            "curve": _mean_curves([curve_by[r] for r in members]),
        }
        hits = [stt[r]["step"] for r in members if r in stt and stt[r]["step"] is not None]
        stt_arm[arm] = {
            "reached": len(hits),
            "runs": len(members),
            "median_reached": float(np.median(hits)) if hits else None,
        }
    clean_ref = None
    if reference and "clean" in by_arm:
        ref = by_arm["clean"]
        clean_ref = {"runs": [ev.run for ev in reference], "arm_minus_reference": {}}
        for arm in ("paired", "independent"):
            if arm in by_arm:
                clean_ref["arm_minus_reference"][arm] = {
                    part: {
                        k: v - ref[part][k]
                        for k, v in by_arm[arm][part].items()
                        if k in ref[part] and v is not None and ref[part][k] is not None
                    }
                    for part in ("auc", "final")
                }
    return round4(
        {
            "threshold": threshold,
            "threshold_curve": THRESHOLD_CURVE,
            "steps": steps_used,
            "steps_to_threshold": stt,
            "steps_to_threshold_by_arm": stt_arm,
            "auc": auc_by,
            "final": final_by,
            "recovery_success": rec_by,
            "exposure": exp_by,
            "arms": by_arm,
            "curves": curve_by,
            "clean_reference": clean_ref,
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


# ----------------------------------------------------------------------------------------------
# driver


HYPOTHESES = ("H1a", "H2a", "H2b", "H3", "H5")


def _is_paper(manifest: PoolManifest) -> bool:
    from paired_rollouts.backoffice.tasks import paper_pools

    return paper_pools(manifest.raw)


def _run_inputs(run: str, groups: dict[str, Any], luck: dict[str, tuple[str, Any]]) -> dict[str, str]:
    """The non-episode inputs a decision reads for ``run``, keyed as complete.json lists them."""
    out: dict[str, str] = {}
    digests = getattr(groups, "digests", {})
    if run in digests:
        out["groups.jsonl"] = digests[run][1]
    for key, (_, data) in luck.items():
        if key.startswith(f"{run}@"):
            # luck data without a file digest (built in memory) cannot be matched and is not admitted
            out[f"diagnostics/luck-step{data['step']}.json"] = data.get("_sha256")
    return out


def decide(
    condition: str,
    episodes: dict[str, RunEvidence],
    rules: DecisionRules,
    manifest: PoolManifest,
    *,
    groups: dict[str, list[dict[str, Any]]] | None = None,
    luck: dict[str, tuple[str, Any]] | None = None,
    complete: dict[str, tuple[str, Any]] | None = None,
    conditions: dict[str, Any] | None = None,
    expected_seeds: Sequence[int] | None = None,
    comparison: Comparison | None = None,
) -> dict[str, Any]:
    """Build the decision register (docs/records.md section 4) from loaded evidence.

    A hypothesis is *decided* (``passes`` true or false) only when the design's seeds are given and
    every seed pair of the design is admitted; otherwise its numbers describe the admitted pairs and
    ``passes`` is null with the reason: the protocol reruns incomplete runs, it never analyses them."""
    if comparison is None:
        condition = condition.upper()
        if condition not in H2_NAME:
            raise UserError(f"--condition must be C2 or C4, got {condition}")
        comparison = Comparison(
            condition.lower(),
            condition,
            "paired",
            "independent",
            DEFAULT_SCALING,
            (),
            1,
            TIER1_HYPOTHESES["transition" if condition == "C2" else "outcome"],
        )
    condition = comparison.condition
    tier1 = comparison.tier == 1
    groups = groups if groups is not None else {}
    luck, complete = luck or {}, complete or {}
    pools = manifest.sha256
    if not pools:
        raise UserError(
            f"{manifest.path}: no pools in the data manifest; regenerate with 'paired-rollouts tasks'"
        )
    arms = (comparison.treatment, comparison.control)
    candidates = {
        r: ev
        for r, ev in episodes.items()
        if ev.condition == condition and ev.arm in arms and ev.scaling == comparison.scaling
    }
    reference = {r: ev for r, ev in episodes.items() if ev.condition == "C0"}
    ignored = sorted(r for r in episodes if r not in candidates and r not in reference)
    if not candidates:
        raise UserError(
            f"no episode records of comparison {comparison.name} ({condition} {' vs '.join(arms)}, "
            f"scaling {comparison.scaling}) among --episodes"
        )
    acceptance = {}
    for run, ev in sorted({**candidates, **reference}.items()):
        entry = admit(ev, complete.get(run), pools, _run_inputs(run, groups, luck))
        if run in reference and run not in complete:
            # the clean reference is descriptive only: without a completeness file it enters unchecked
            entry.update(admitted=True, reasons=[])
        acceptance[run] = entry
    missing = [
        f"{run}: {reason}"
        for run, entry in acceptance.items()
        if run in candidates
        for reason in entry["reasons"]
    ]
    for run in sorted(set(groups) | {k.split("@")[0] for k in luck}):
        ident = parse_run(run)
        if (
            run not in episodes
            and ident.condition == condition
            and ident.arm in arms
            and ident.scaling == comparison.scaling
        ):
            missing.append(f"{run}: training groups or luck share given without episode records")
    design = sorted(set(expected_seeds)) if expected_seeds is not None else None
    if design is None:
        missing.append(
            "the design's seeds were not given (--seeds); a partial seed matrix cannot be told apart"
        )
    seeds = sorted({ev.seed for ev in candidates.values()} | set(design or []))
    extra_seeds = sorted(set(seeds) - set(design)) if design is not None else []
    for seed in extra_seeds:
        missing.append(f"seed {seed}: runs outside the design's seeds {design}")
    pairs = []
    for seed in seeds:
        if seed in extra_seeds:
            continue
        p_name, i_name = (run.name for run in comparison.pair(seed))
        have = [n for n in (p_name, i_name) if n in candidates]
        for n in (p_name, i_name):
            if n not in candidates:
                missing.append(f"{n}: no episode records given")
        if len(have) == 2 and acceptance[p_name]["admitted"] and acceptance[i_name]["admitted"]:
            pairs.append((candidates[p_name], candidates[i_name]))
        elif len(have) == 2:
            missing.append(f"seed {seed}: left out, a run of the pair was not admitted")
        else:
            missing.append(f"seed {seed}: left out, the seed pair is not whole")
    admitted_runs = [ev for pair in pairs for ev in pair]
    decided = bool(pairs) and not missing and design is not None and len(pairs) == len(design)
    register: dict[str, Any] = {
        "condition": condition,
        **(
            {}
            if tier1
            else {
                "comparison": comparison.name,
                "tier": comparison.tier,
                "treatment": comparison.treatment,
                "control": comparison.control,
                "scaling": comparison.scaling,
            }
        ),
        "runs": [ev.run for ev in admitted_runs],
        "seeds": [p.seed for p, _ in pairs],
        "design_seeds": design,
        "seed_pairs": [[p.run, i.run] for p, i in pairs],
        "bootstrap": {"resamples": rules.resamples, "seed": rules.seed},
        "pool_sha256": dict(sorted(pools.items())),
        "paper_pools": _is_paper(manifest),
        "rules_source": rules.source,
        "rules_sha256": rules.sha256,
        "acceptance": acceptance,
        "missing": missing,
        "ignored_runs": ignored,
        "complete": decided,
        "decided": decided,
    }
    if not tier1:
        register.update(tier_statistics(pairs, comparison, conditions, groups, luck, rules))
        register["missing"] = missing
        register["decided"] = register["complete"] = decided
        admitted_ref = [ev for r, ev in sorted(reference.items()) if acceptance[r]["admitted"]]
        register["secondary"] = secondary(admitted_runs, admitted_ref, rules.threshold, rules)
        return register
    register["H1a"] = hypothesis_h1a(condition, admitted_runs, groups, luck, rules)
    register[H2_NAME[condition]] = hypothesis_h2(pairs, condition, rules)
    if condition == "C2":
        register["H3"] = hypothesis_h3(pairs, rules)
        register["H5"] = hypothesis_h5(pairs, rules)
    why = (
        f"not decided: {len(pairs)} of {len(design) if design is not None else '?'} seed pairs of the "
        f"design admitted ({len(missing)} problem(s) under 'missing')"
    )
    for name in HYPOTHESES:
        block = register.get(name)
        if block is None:
            continue
        if not decided:
            block["passes"] = None
            block["reason"] = f"{block['reason']}; {why}" if block.get("reason") else why
        block["decided"] = block["passes"] is not None
    admitted_ref = [ev for r, ev in sorted(reference.items()) if acceptance[r]["admitted"]]
    register["secondary"] = secondary(admitted_runs, admitted_ref, rules.threshold, rules)
    return register


def tier_statistics(
    pairs,
    comparison: Comparison,
    conditions: dict[str, Any] | None,
    groups: dict[str, list[dict[str, Any]]],
    luck: dict[str, tuple[str, Any]],
    rules: DecisionRules,
) -> dict[str, Any]:
    """A registered tier's comparison, measured with tier 1's estimators: the AUC gap on the condition's
    learning set (the H2 statistic), the challenge gap and held-out non-inferiority under transition
    noise (H3, H5), the spurious-variance rate of each arm and the step-0 luck share. No frozen rule
    decides a tier comparison: the registered predictions (amendment A2) are judged on these numbers."""
    condition = (conditions or PAPER_CONDITIONS)[comparison.condition]
    out: dict[str, Any] = {
        "auc_gap": _descriptive(
            hypothesis_h2(pairs, condition.name, rules, sets=learning_sets(condition), name="auc_gap")
        ),
    }
    if condition.kind == "transition":
        out["challenge_gap"] = _descriptive(hypothesis_h3(pairs, rules))
        out["heldout"] = _descriptive(hypothesis_h5(pairs, rules))
    rates: dict[str, Any] = {}
    for arm_index, arm in enumerate((comparison.treatment, comparison.control)):
        runs = [pair[arm_index].run for pair in pairs]
        gs = [g for run in runs for g in groups.get(run, [])]
        all_correct, spurious, size = _spurious_counts(gs)
        rates[arm] = {
            "groups": len(gs),
            "all_correct": all_correct,
            "spurious": spurious,
            "rate": (spurious / all_correct) if all_correct else None,
            "group_size": size,
        }
    out["spurious"] = round4({"by_arm": rates, "q": condition.q})
    lams: dict[str, Any] = {}
    for pair in pairs:
        for ev in pair:
            values, _ = _base_lams(ev.run, ev, luck, 0)
            defined = values[~np.isnan(values)] if values is not None else []
            lams[ev.run] = float(defined.mean()) if len(defined) else None
    # per run only: readers average the runs they show (render.sources.step0_luck_share)
    out["luck_share_step0"] = round4({"by_run": lams})
    return out


def _descriptive(block: dict[str, Any]) -> dict[str, Any]:
    """A tier-1 hypothesis block used as a measurement: its threshold verdict does not apply."""
    block = dict(block)
    block.pop("passes", None)
    block["rule_applies"] = False
    return block


def load_inputs(complete_paths, luck_paths):
    return _by_run(complete_paths, "complete"), _by_run(luck_paths, "luck")

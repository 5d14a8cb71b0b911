"""The regime map: when does pairing help? A sweep of the calibrated surrogate over the factors the theory
says matter (noise kind and rate, step size, group size G, prompts per step).

Each *cell* trains ``seed_pairs`` pairs of runs from the calibrated step-0 policy, a paired and an
independent run per seed that share everything but the noise coupling (training rows, task order, policy
sampling seeds), and evaluates both on the same clean validation rollouts (same sampling seeds) at the same
steps. Beside the paired-minus-independent AUC and final gaps (bootstrap over seed pairs) it measures the
quantities the paper's theory offers as predictors, at step 0 and at the cell's noise:

- the luck share lambda of the observed reward (K schedules x M samples per diagnostic task): pairing
  removes the share lambda of the reward-contrast variance (Section 4.2; predicted ratio 1 - lambda);
- the exact ratio of the trace of the gradient covariance, paired over independent, of the trainer's
  estimator (``surrogate.probe``: outcome noise enumerated exactly over flip masks on sampled clean
  groups, transition noise by resampled groups);
- Equation 5 (one-sided flips only): pairing lowers the mean-centred gradient variance iff
  E||g_c||^2 < (1/G^2) E sum_i r_i ||S_i - S_bar||^2.

A cell's id is a hash of its factor values alone, so its file (``R/map/cells/<id>.json``) stays valid when
a value is added to a factor; only the new cells run. ``summarize`` ranks each predictor against the AUC
gap across cells (Spearman). The record's reader (``records.regime_map``) recomputes every statistic.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.design import Condition
from paired_rollouts.errors import UserError
from paired_rollouts.pairing.bootstrap import BOOTSTRAP_SEED, percentile_interval
from paired_rollouts.pairing.numeric import dot
from paired_rollouts.settings import EXACT_OUTCOME_GROUP_MAX, RegimeMapSettings, Settings

NOISE_KINDS = ("transition", "outcome")
ARMS = ("paired", "independent")
VERDICTS = ("helps", "hurts", "no_difference")
# The theory's quantities ranked against the AUC gap, and what each predicts.
PREDICTORS = {
    "contrast_reduction": "the luck share lambda: the share of reward-contrast variance pairing removes",
    "variance_reduction": "1 - exact step-0 gradient-variance ratio (paired / independent)",
    "eq5_margin": "1 - lhs/rhs of Equation 5 (one-sided flips only): positive when pairing lowers variance",
}
CELL_SCHEMA = "regime_map_cell/1"
MAP_SCHEMA = "regime_map/1"


@dataclass(frozen=True, order=True)
class Cell:
    """One point of the grid: the noise (kind and rate), the step-size multiplier, G and prompts per step."""

    noise: str
    rate: float
    step_size: float
    group_size: int
    prompts_per_step: int

    def factors(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def id(self) -> str:
        """A stable hash of the factor values alone (never of the grid around it)."""
        text = json.dumps(self.factors(), sort_keys=True)
        return "cell-" + hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def condition_name(self) -> str:
        """The condition name the cell's rows carry (its training schedule seeds derive from it)."""
        return f"M{'p' if self.noise == 'transition' else 'q'}{self.rate:g}"

    def condition(self) -> Condition:
        p, q = (self.rate, 0.0) if self.noise == "transition" else (0.0, self.rate)
        return Condition(self.condition_name, p, q)

    @classmethod
    def parse(cls, raw: str | dict[str, Any], source: str = "--cell") -> Cell:
        """From its JSON factors; anything else refused in one line."""
        try:
            data = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except json.JSONDecodeError as exc:
            raise UserError(
                f"{source}: not JSON ({exc.msg}); give the cell's factors as a JSON object"
            ) from None
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(data, dict) or sorted(data) != sorted(names):
            raise UserError(f"{source}: a cell is a JSON object with exactly the keys {', '.join(names)}")
        if data["noise"] not in NOISE_KINDS:
            raise UserError(f"{source}: noise must be one of {', '.join(NOISE_KINDS)}, got {data['noise']!r}")
        for key in ("group_size", "prompts_per_step"):
            if isinstance(data[key], bool) or not isinstance(data[key], int) or data[key] < 1:
                raise UserError(f"{source}: {key} must be a positive integer, got {data[key]!r}")
        for key in ("rate", "step_size"):
            if isinstance(data[key], bool) or not isinstance(data[key], (int, float)) or data[key] <= 0:
                raise UserError(f"{source}: {key} must be a positive number, got {data[key]!r}")
        if not 2 <= data["group_size"] <= EXACT_OUTCOME_GROUP_MAX:
            raise UserError(
                f"{source}: group_size must be 2 to {EXACT_OUTCOME_GROUP_MAX} (the step-0 probe enumerates "
                f"2^G flip patterns), got {data['group_size']}"
            )
        return cls(
            data["noise"],
            float(data["rate"]),
            float(data["step_size"]),
            int(data["group_size"]),
            int(data["prompts_per_step"]),
        )


def map_cells(grid: RegimeMapSettings) -> list[Cell]:
    """Every cell of the grid, in factor order."""
    rates = [("transition", float(p)) for p in grid.fault_rates] + [
        ("outcome", float(q)) for q in grid.flip_rates
    ]
    return sorted(
        Cell(kind, rate, float(step), int(g), int(p))
        for kind, rate in rates
        for step in grid.step_sizes
        for g in grid.group_sizes
        for p in grid.prompts_per_step
    )


# ---------------------------------------------------------------- statistics (the reader redoes them) --


def curve_auc(steps: Sequence[int], values: Sequence[float]) -> float:
    from paired_rollouts.stats.curves import auc

    return auc(steps, values)


def bootstrap_mean_interval(values: Sequence[float], resamples: int) -> list[float]:
    """95 % percentile interval of the mean of ``values`` under resampling of its entries (the seed pairs),
    from ``numpy.random.default_rng(BOOTSTRAP_SEED)``: the same draws for every statistic of a cell."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, v.size, size=(resamples, v.size))
    return percentile_interval(v[idx].mean(axis=1), 2.5, 97.5)


def verdict(interval: Sequence[float]) -> str:
    """helps / hurts when the AUC gap's interval excludes 0 on that side, else no_difference."""
    lo, hi = interval
    return "helps" if lo > 0 else "hurts" if hi < 0 else "no_difference"


def cell_statistics(
    curves: dict[str, list[list[float]]], steps: Sequence[int], resamples: int
) -> dict[str, Any]:
    """AUC and final values per run, the paired-minus-independent gaps per seed pair with their means and
    bootstrap intervals, and the verdict."""
    auc = {arm: [curve_auc(steps, c) for c in curves[arm]] for arm in ARMS}
    final = {arm: [float(c[-1]) for c in curves[arm]] for arm in ARMS}
    out: dict[str, Any] = {"auc": auc, "final": final}
    for name, values in (("auc_gap", auc), ("final_gap", final)):
        gaps = [a - b for a, b in zip(values["paired"], values["independent"], strict=True)]
        out[name] = {
            "per_pair": gaps,
            "mean": float(np.mean(gaps)),
            "interval": bootstrap_mean_interval(gaps, resamples),
        }
    out["verdict"] = verdict(out["auc_gap"]["interval"])
    return out


def luck_share_of(tables: Sequence, resamples: int) -> dict[str, Any]:
    """The luck share of (tasks x K x M) observed rewards, with its task-bootstrap interval."""
    from paired_rollouts.pairing.diagnostics import luck_share

    share = luck_share(np.asarray(tables, dtype=float), resamples=resamples)
    return {"lam": share.lam, "lam_pooled": share.lam_pooled, "interval": share.interval}


def predictions(
    cell: Cell, lam: float | None, ratio: float | None, eq5: dict[str, Any] | None
) -> dict[str, Any]:
    """The theory's quantities of a cell (None where one does not apply or is undefined)."""
    margin = None
    if eq5 is not None and eq5["rhs"] > 0:
        margin = 1.0 - eq5["lhs"] / eq5["rhs"]
    return {
        "contrast_reduction": lam,
        "contrast_ratio": None if lam is None else 1.0 - lam,
        "variance_reduction": None if ratio is None else 1.0 - ratio,
        "eq5_margin": margin,
        "eq5_predicts_lower_variance": None if eq5 is None else bool(eq5["lhs"] < eq5["rhs"]),
    }


def ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks 1..n, ties given their average rank."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    r = np.empty(v.size)
    r[order] = np.arange(1, v.size + 1)
    for value in np.unique(v):
        tied = v == value
        r[tied] = r[tied].mean()
    return r


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson's on average ranks); None under 3 points or a constant side."""
    if len(x) < 3:
        return None
    rx, ry = ranks(x), ranks(y)
    sx, sy = rx - rx.mean(), ry - ry.mean()
    den = float(np.sqrt(dot(sx, sx) * dot(sy, sy)))
    return None if den == 0 else float(dot(sx, sy) / den)


def _correlation(cells: Sequence[dict[str, Any]], name: str) -> dict[str, Any]:
    """A predictor's Spearman correlation with the AUC gap over the cells where it is defined."""
    chosen = [c for c in cells if c["predictions"][name] is not None]
    return {
        "cells": len(chosen),
        "spearman": spearman(
            [c["predictions"][name] for c in chosen], [c["auc_gap"]["mean"] for c in chosen]
        ),
    }


FACTOR_NAMES = ("rate", "step_size", "group_size", "prompts_per_step")


def _factor_counts(cells: Sequence[dict[str, Any]], factor: str) -> list[dict[str, Any]]:
    """Cells and their helps/hurts verdicts per value of one factor (the rate per noise kind)."""
    out = []
    for value in sorted({c["factors"][factor] for c in cells}):
        kinds = NOISE_KINDS if factor == "rate" else (None,)
        for kind in kinds:
            chosen = [
                c for c in cells if c["factors"][factor] == value and kind in (None, c["factors"]["noise"])
            ]
            if chosen:
                out.append(
                    {
                        **({"noise": kind} if kind else {}),
                        "value": value,
                        "cells": len(chosen),
                        "helps": sum(c["verdict"] == "helps" for c in chosen),
                        "hurts": sum(c["verdict"] == "hurts" for c in chosen),
                    }
                )
    return sorted(out, key=lambda r: (NOISE_KINDS.index(r["noise"]) if "noise" in r else 0, r["value"]))


def summarize(cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts of verdicts (in all, per noise kind and per value of each factor), the largest gain, and each
    predictor's Spearman correlation with the AUC gap across cells: over all cells, per noise kind, and
    within each step size (the mean of the step sizes' correlations: a step-0 predictor is blind to the
    step size, which scales every gap). The best predictor has the largest correlation over all cells."""
    counts = {v: sum(c["verdict"] == v for c in cells) for v in VERDICTS}
    best = max(cells, key=lambda c: (c["auc_gap"]["mean"], c["cell_id"])) if cells else None
    steps = sorted({c["factors"]["step_size"] for c in cells})
    correlations: dict[str, dict[str, Any]] = {}
    for name in PREDICTORS:
        entry = {"all": _correlation(cells, name)}
        for kind in NOISE_KINDS:
            entry[kind] = _correlation([c for c in cells if c["factors"]["noise"] == kind], name)
        within = [_correlation([c for c in cells if c["factors"]["step_size"] == s], name) for s in steps]
        defined = [w["spearman"] for w in within if w["spearman"] is not None]
        entry["within_step_size"] = {
            "step_sizes": len(defined),
            "spearman": float(np.mean(defined)) if defined else None,
        }
        correlations[name] = entry
    overall = {k: v["all"]["spearman"] for k, v in correlations.items() if v["all"]["spearman"] is not None}
    return {
        "cells": len(cells),
        "verdicts": counts,
        "by_noise": {
            kind: {
                v: sum(c["verdict"] == v and c["factors"]["noise"] == kind for c in cells) for v in VERDICTS
            }
            for kind in NOISE_KINDS
        },
        "by_factor": {factor: _factor_counts(cells, factor) for factor in FACTOR_NAMES},
        "largest_gain": None
        if best is None
        else {
            "cell_id": best["cell_id"],
            "factors": best["factors"],
            "auc_gap": best["auc_gap"]["mean"],
            "interval": best["auc_gap"]["interval"],
        },
        "spearman_with_auc_gap": correlations,
        "best_predictor": max(overall, key=lambda k: (overall[k], k)) if overall else None,
    }


# ---------------------------------------------------------------- measuring a cell --------------------


def _eval_rows(tasks_dir: str, settings: Settings) -> list[dict[str, Any]]:
    """The clean validation rows of every evaluation: the first eval_tasks tasks, each eval_samples times."""
    from paired_rollouts.backoffice.tasks import budget_for, load_pool, select_tasks
    from paired_rollouts.noise.config import NoiseConfig
    from paired_rollouts.noise.seeds import eval_schedule_seed

    grid = settings.regime_map
    tasks = select_tasks(load_pool(Path(tasks_dir) / "validation.jsonl"), settings.task_filter)[
        : grid.eval_tasks
    ]
    noise = NoiseConfig.clean().to_json()
    return [
        {
            "task_id": t["task_id"],
            "schedule_seed": eval_schedule_seed(t["task_id"], 1),
            "noise": noise,
            "condition": "C0",
            "budget": budget_for(t),
            "row_index": j,
        }
        for j, t in enumerate(t for t in tasks for _ in range(grid.eval_samples))
    ]


def _luck_tables(
    cell: Cell, theta: list[float], tasks_dir: str, settings: Settings, tasks_by_id: dict, shape: Any
) -> list[list[list[float]]]:
    """Observed rewards (tasks x K x M) at step 0 under the cell's noise, K paired schedules per task."""
    from paired_rollouts.backoffice.tasks import budget_for
    from paired_rollouts.evaluation.evaluate import diagnostic_tasks
    from paired_rollouts.noise.seeds import derive_seed, diagnostic_seed
    from paired_rollouts.surrogate.rollout import SurrogateRunner, Trajectories

    diag = settings.diagnostics
    K, M = diag.schedules, diag.samples
    noise = cell.condition().noise("paired").to_json()
    runner = SurrogateRunner(theta, tasks_by_id, shape, Trajectories())
    tables = []
    for task in diagnostic_tasks(tasks_dir, settings, diag.tasks):
        rows = [
            {
                "task_id": task["task_id"],
                "schedule_seed": diagnostic_seed(0, task["task_id"], k),
                "noise": noise,
                "condition": cell.condition_name,
                "budget": budget_for(task),
                "row_index": k * M + m,
            }
            for k in range(K)
            for m in range(M)
        ]
        records, _ = runner.rollout(
            rows, "map:luck", derive_seed("regime-map-luck", task["task_id"]) % (2**31)
        )
        rewards = [float(r["observed_reward"]) for r in records]
        tables.append([rewards[k * M : (k + 1) * M] for k in range(K)])
    return tables


def _step0_probe(
    cell: Cell, theta: list[float], tasks_dir: str, settings: Settings, tasks_by_id: dict, shape: Any
) -> tuple[float | None, dict[str, Any], dict[str, Any] | None]:
    """The exact step-0 gradient-variance ratio of the trainer's estimator at the cell's noise and G, the
    probe's numbers behind it, and Equation 5's two sides (outcome noise only)."""
    from paired_rollouts.surrogate.probe import probe_checkpoint

    probe = settings.probe
    if cell.noise == "outcome":
        probe = dataclasses.replace(probe, q=cell.rate, clean_rollouts=cell.group_size)
    else:
        probe = dataclasses.replace(probe, p=cell.rate, samples=cell.group_size)
    local = dataclasses.replace(settings, probe=probe)
    entry = probe_checkpoint(
        theta,
        condition=cell.condition_name,
        seed=0,
        step=0,
        tasks_dir=tasks_dir,
        settings=local,
        tasks_by_id=tasks_by_id,
        shape=shape,
    )
    block = entry[cell.noise]["implemented"]
    if cell.noise == "outcome":
        outcome = entry["outcome"]
        eq5 = {
            "lhs": outcome["lhs_mean"],
            "rhs": outcome["rhs_mean"],
            "holds": bool(outcome["condition_holds"]),
        }
        trace = block["trace_var"]
        numbers = {
            "paired": trace["paired"],
            "independent": trace["independent"],
            "groups": outcome["groups"],
        }
        mc = outcome["mean_centered"]["ratio_paired_over_independent"]
    else:
        eq5 = None
        trace = block["trace_var"]
        numbers = {
            "paired": trace["paired"],
            "independent": trace["independent_resampled"],
            "groups": entry["transition"]["groups_per_design"],
        }
        mc = entry["transition"]["mean_centered"]["ratio_paired_over_independent"]
    ratio = block["ratio_paired_over_independent"]
    return ratio, {**numbers, "mean_centered_ratio": mc}, eq5


def measure_cell(
    cell: Cell, *, theta0: list[float], tasks_dir: str, settings: Settings, progress: bool = False
) -> dict[str, Any]:
    """Train the cell's seed pairs and measure its predictors; the cell's record (docs/records.md 8.5)."""
    from paired_rollouts.backoffice.tasks import select_tasks
    from paired_rollouts.noise.seeds import derive_seed
    from paired_rollouts.surrogate.policy import Shape
    from paired_rollouts.surrogate.rollout import SurrogateRunner, Trajectories, full_vector
    from paired_rollouts.surrogate.run import _inputs, _load_pools, cycle_collector_paused
    from paired_rollouts.surrogate.trainer import Trainer
    from paired_rollouts.training.rows import build_rows

    began = time.process_time()
    grid = settings.regime_map
    theta = full_vector(theta0)
    shape = Shape.of(settings.surrogate)
    inputs = _inputs(tasks_dir)
    pools = inputs.once("pools", _load_pools, tasks_dir)
    tasks_by_id = inputs.once(
        "tasks_by_id", lambda: {t["task_id"]: t for pool in pools.values() for t in pool}
    )
    train_tasks = select_tasks(pools["train"], settings.task_filter)
    conditions = {cell.condition_name: cell.condition()}
    eval_rows = _eval_rows(tasks_dir, settings)
    steps = grid.eval_steps
    lr = settings.training.learning_rate * cell.step_size
    curves: dict[str, list[list[float]]] = {arm: [] for arm in ARMS}
    with cycle_collector_paused():
        for seed in range(grid.seed_pairs):
            evaluated = Trajectories()  # both runs of a pair meet the same clean schedules
            for arm in ARMS:
                rows = build_rows(
                    train_tasks, cell.condition_name, arm, seed, grid.steps, cell.prompts_per_step, conditions
                )
                trainer = Trainer(np.asarray(theta), tasks_by_id, shape, lr)
                curve = []
                for step in range(grid.steps + 1):
                    if step in steps:
                        runner = SurrogateRunner(trainer.theta.tolist(), tasks_by_id, shape, evaluated)
                        records, _ = runner.rollout(
                            eval_rows, "map:eval", derive_seed("regime-map-eval", seed, step) % (2**31)
                        )
                        curve.append(float(np.mean([bool(r["true_success"]) for r in records])))
                    if step < grid.steps:
                        batch = rows[step * cell.prompts_per_step : (step + 1) * cell.prompts_per_step]
                        trainer.step(batch, step=step, G=cell.group_size, arm=arm, seed=seed, lean=True)
                curves[arm].append(curve)
            if progress:
                print(
                    f"{cell.id} pair {seed}: {curves['paired'][-1][-1]:.3f} vs {curves['independent'][-1][-1]:.3f}"
                )
        tables = _luck_tables(cell, theta, tasks_dir, settings, tasks_by_id, shape)
        ratio, numbers, eq5 = _step0_probe(cell, theta, tasks_dir, settings, tasks_by_id, shape)
    stats = cell_statistics(curves, steps, grid.resamples)
    luck = luck_share_of(tables, grid.resamples)
    return {
        "schema": CELL_SCHEMA,
        "cell_id": cell.id,
        "factors": cell.factors(),
        "seed_pairs": grid.seed_pairs,
        "steps": grid.steps,
        "learning_rate": lr,
        "eval_steps": steps,
        "eval_rollouts": len(eval_rows),
        "resamples": grid.resamples,
        "curves": curves,
        **stats,
        "luck_share": {**luck, "tables": tables},
        "gradient_variance": {"ratio": ratio, "estimator": "implemented (TRL's group-normalised)", **numbers},
        "eq5": eq5,
        "predictions": predictions(cell, luck["lam"], ratio, eq5),
        "cpu_seconds": round(time.process_time() - began, 3),
    }


def cell_summary(cell: dict[str, Any]) -> dict[str, Any]:
    """What the map keeps of a cell record (the per-run curves stay in the cell's file)."""
    keep = (
        "cell_id",
        "factors",
        "seed_pairs",
        "auc_gap",
        "final_gap",
        "verdict",
        "gradient_variance",
        "eq5",
        "predictions",
        "cpu_seconds",
    )
    out = {k: cell[k] for k in keep}
    out["luck_share"] = {k: v for k, v in cell["luck_share"].items() if k != "tables"}
    return out


def assemble(cell_paths: Sequence[str | Path], grid: RegimeMapSettings, scale: str) -> dict[str, Any]:
    """The map of the grid's cells from their files (read through their reader): exactly one file per
    cell of the grid, each recomputed; the summary across them."""
    from paired_rollouts.io import sha256_file
    from paired_rollouts.records.regime_map import read_regime_map_cell

    wanted = {cell.id: cell for cell in map_cells(grid)}
    read = {}
    for path in cell_paths:
        cell = read_regime_map_cell(path)
        if cell.cell_id not in wanted:
            raise UserError(f"{path}: cell {cell.cell_id} ({cell.factors}) is not in the configured grid")
        if Path(path).name != f"{cell.cell_id}.json":
            raise UserError(f"{path}: a cell file is named after its cell ({cell.cell_id}.json)")
        if cell.body["seed_pairs"] != grid.seed_pairs or cell.body["steps"] != grid.steps:
            raise UserError(
                f"{path}: made with other seed_pairs/steps than the grid's; rerun its map-cell job"
            )
        read[cell.cell_id] = (cell, sha256_file(path))
    missing = sorted(set(wanted) - set(read))
    if missing:
        raise UserError(f"regime map: no file for cell(s) {', '.join(missing)}; run their map-cell jobs")
    cells = [cell_summary(read[c.id][0].body) for c in sorted(wanted.values())]
    return {
        "schema": MAP_SCHEMA,
        "scale": scale,
        "grid": {
            **{
                name: getattr(grid, name)
                for name in ("fault_rates", "flip_rates", "step_sizes", "group_sizes")
            },
            "prompts_per_step": grid.prompts_per_step,
            "seed_pairs": grid.seed_pairs,
            "steps": grid.steps,
            "eval_steps": grid.eval_steps,
            "eval_tasks": grid.eval_tasks,
            "eval_samples": grid.eval_samples,
            "resamples": grid.resamples,
        },
        "predictors": PREDICTORS,
        "cells": cells,
        "summary": summarize(cells),
        "files": {cell_id: digest for cell_id, (_, digest) in sorted(read.items())},
        "cpu_seconds": round(sum(c["cpu_seconds"] for c in cells), 1),
    }

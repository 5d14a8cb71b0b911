"""The offline fit of the surrogate (``paired-rollouts surrogate fit``): what the calibration stage re-checks.

Two searches, each a small deterministic grid, never reading a paired curve:

1. **shape** (step 0, no training): for each task-difficulty spread the four behaviour knobs are fitted as
   the stage fits them; for each phrasing size the probe's step-0 trace reductions are measured over
   ``captures`` run seeds. The chosen point minimises the squared gaps to the paper's spread of clean
   success over tasks and to its two reductions, each in units of its tolerance.
2. **learning rate**: at the chosen shape, the unpaired arms (C0, C2 independent, C4 independent) train
   ``seeds`` runs per rate with the scale's batch; their mean periodic curves (the very sets and sampling
   seeds of the study's evaluations) are compared with the published unpaired curves. The chosen rate
   minimises the largest RMS gap over the six curves.

The report lists every grid point; the chosen values go into the config's ``surrogate:`` and
``training.learning_rate`` (docs/training.md "Calibrating the surrogate").
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.settings import Settings
from paired_rollouts.surrogate.calibration import (
    CURVES,
    MECHANISM,
    MECHANISM_MIN_TOLERANCE,
    SPREAD_TOLERANCE,
    Estimator,
    calibrate,
    curve_runs,
    paper_spread,
    published_curves,
    published_reductions,
)
from paired_rollouts.surrogate.policy import Shape


def shape_point(
    tasks_dir: str, estimator_keywords: dict[str, Any], shape: Shape, captures: int
) -> dict[str, Any]:
    """Knobs fitted at this shape, then the spread, the reductions and the luck share it gives."""
    from paired_rollouts.surrogate.rollout import full_vector

    estimator = Estimator(tasks_dir, **estimator_keywords, shape=shape)
    fit = calibrate(estimator)
    theta = full_vector(fit["theta"])
    mechanism = estimator.mechanism(theta, captures)
    return {
        "task_difficulty": shape.difficulty,
        "phrasing_tokens": shape.tokens,
        "error_phrasing_tokens": shape.error_tokens,
        "knobs": fit["knobs"],
        "fitted": estimator.fitted(theta),
        "clean_task_spread": estimator.clean_spread(theta),
        "luck_share": estimator.luck_share(theta, captures)["lam"],
        "mechanism": {"mean": mechanism["mean"], "sd": mechanism["sd"]},
        "theta": theta,
    }


def shape_loss(point: dict[str, Any], reductions: dict[str, float]) -> float:
    """Squared gaps in units of tolerance: the spread (its tolerance), each reduction (two SD of a capture)."""
    loss = ((point["clean_task_spread"] - paper_spread()) / SPREAD_TOLERANCE) ** 2
    for name, target in reductions.items():
        key = MECHANISM[name][1]
        tolerance = max(MECHANISM_MIN_TOLERANCE, 2 * point["mechanism"]["sd"][key])
        loss += ((point["mechanism"]["mean"][key] - target) / tolerance) ** 2
    return float(loss)


def run_curves(
    theta0: list[float],
    shape: Shape,
    learning_rate: float,
    run: str,
    tasks_dir: str,
    settings: Settings,
) -> dict[str, dict[int, float]]:
    """Train one unpaired run as the arm job does and evaluate its periodic checkpoints on the regimes its
    curves need, with the study's evaluation rows and sampling seeds: {regime: {step: mean success}}."""
    from paired_rollouts import layout
    from paired_rollouts.backoffice.tasks import load_pool, select_tasks
    from paired_rollouts.design import POOLS, parse_run
    from paired_rollouts.evaluation.evaluate import evaluation_rows, roll_rows
    from paired_rollouts.surrogate.rollout import SurrogateRunner, Trajectories
    from paired_rollouts.surrogate.trainer import Trainer
    from paired_rollouts.training.rows import build_rows

    ident = parse_run(run)
    pools = {name: load_pool(Path(tasks_dir) / f"{name}.jsonl") for name in POOLS}
    tasks = {t["task_id"]: t for pool in pools.values() for t in pool}
    training = settings.training
    steps, prompts, G = training.steps, training.prompts_per_step, training.num_generations
    rows = build_rows(
        select_tasks(pools["train"], settings.task_filter),
        ident.condition,
        ident.arm,
        ident.seed,
        steps,
        prompts,
    )
    regimes = sorted(
        {
            regime
            for condition, arm, regime, *_ in CURVES.values()
            if (condition, arm) == (ident.condition, ident.arm)
        }
    )
    saves = set(layout.periodic_steps(steps, training.checkpoint_every))
    trainer = Trainer(np.asarray(theta0), tasks, shape, learning_rate)
    out: dict[str, dict[int, float]] = {regime: {} for regime in regimes}
    evaluated = Trajectories()  # the evaluation schedules are met at every checkpoint

    def evaluate(step: int) -> None:
        runner = SurrogateRunner(trainer.theta.tolist(), tasks, shape, evaluated)
        for regime in regimes:
            records = roll_rows(
                runner,
                evaluation_rows(tasks_dir, "periodic", regime, ident.condition, settings),
                run=run,
                condition=ident.condition,
                arm=ident.arm,
                seed=ident.seed,
                phase="periodic",
                step=step,
                regime=regime,
                batch=settings.evaluation.eval_batch,
                progress=False,
            )
            out[regime][step] = float(np.mean([r["true_success"] for r in records]))

    if 0 in saves:
        evaluate(0)
    for step in range(steps):
        trainer.step(
            rows[step * prompts : (step + 1) * prompts],
            step=step,
            G=G,
            arm=ident.arm,
            seed=ident.seed,
            lean=True,
        )
        if step + 1 in saves:
            evaluate(step + 1)
    return out


def curve_gaps(
    curves_by_run: dict[str, dict[str, dict[int, float]]], targets: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Mean curve over runs per unpaired curve, its gaps to the published points and the RMS gap."""
    from paired_rollouts.design import parse_run

    out = {}
    for name, (condition, arm, regime, *_) in CURVES.items():
        runs = [r for r in curves_by_run if (parse_run(r).condition, parse_run(r).arm) == (condition, arm)]
        points = []
        for step, target in zip(targets[name]["steps"], targets[name]["values"], strict=True):
            values = [curves_by_run[r][regime][step] for r in runs if step in curves_by_run[r][regime]]
            if values:
                points.append({"step": step, "target": target, "achieved": float(np.mean(values))})
        gaps = [p["achieved"] - p["target"] for p in points]
        out[name] = {
            "points": points,
            "rms_gap": math.sqrt(float(np.mean(np.square(gaps)))) if gaps else None,
        }
    return out


def _run_curves(job: tuple) -> tuple[str, float, dict]:
    theta0, shape, lr, run, tasks_dir, settings = job
    return run, lr, run_curves(theta0, shape, lr, run, tasks_dir, settings)


def fit(
    tasks_dir: str,
    *,
    estimator_keywords: dict[str, Any],
    settings: Settings,
    published: str | Path,
    published_curves_path: str | Path,
    difficulties: list[float],
    tokens: int,
    error_tokens: list[int],
    captures: int,
    learning_rates: list[float],
    seeds: int,
    jobs: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """Both searches; returns the report (every grid point, the chosen shape and learning rate)."""
    reductions = published_reductions(published)
    grid = []
    for difficulty in difficulties:
        for error in error_tokens:
            point = shape_point(tasks_dir, estimator_keywords, Shape(difficulty, tokens, error), captures)
            point["loss"] = shape_loss(point, reductions)
            grid.append(point)
            if progress:
                m = point["mechanism"]["mean"]
                print(
                    f"shape difficulty {difficulty} error tokens {error}: spread {point['clean_task_spread']:.3f} "
                    f"transition {m['transition']:.3f} outcome {m['outcome']:.3f} luck {point['luck_share']:.3f} "
                    f"loss {point['loss']:.2f}",
                    flush=True,
                )
    best = min(grid, key=lambda p: p["loss"])
    shape = Shape(best["task_difficulty"], best["phrasing_tokens"], best["error_phrasing_tokens"])
    targets = published_curves(published_curves_path)
    runs = [f"c0-clean-s{s}" for s in range(seeds)]
    runs += [f"{c}-independent-s{s}" for c in ("c2", "c4") for s in range(seeds)]
    curve_runs(runs)  # by construction only the unpaired arms; refuses anything else
    work = [(best["theta"], shape, lr, run, tasks_dir, settings) for lr in learning_rates for run in runs]
    curves: dict[float, dict[str, Any]] = {lr: {} for lr in learning_rates}
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            done = list(pool.map(_run_curves, work))
    else:
        done = [_run_curves(job) for job in work]
    for run, lr, curve in done:
        curves[lr][run] = curve
    rates = []
    for lr in learning_rates:
        gaps = curve_gaps(curves[lr], targets)
        worst = max(g["rms_gap"] for g in gaps.values())
        rates.append({"learning_rate": lr, "curves": gaps, "max_rms_gap": worst})
        if progress:
            text = ", ".join(f"{name} {g['rms_gap']:.3f}" for name, g in gaps.items())
            print(f"learning rate {lr}: RMS gaps {text}; largest {worst:.3f}", flush=True)
    for point in grid:
        point.pop("theta")
    return {
        "shape_grid": grid,
        "chosen_shape": {
            "task_difficulty": shape.difficulty,
            "phrasing_tokens": shape.tokens,
            "error_phrasing_tokens": shape.error_tokens,
        },
        "learning_rates": rates,
        "chosen_learning_rate": min(rates, key=lambda r: r["max_rms_gap"])["learning_rate"]
        if rates
        else None,
        "seeds": seeds,
        "runs": runs if learning_rates else [],
        "captures": captures,
        "targets": {"reductions": reductions, "clean_task_spread": paper_spread(), "curves": targets},
    }

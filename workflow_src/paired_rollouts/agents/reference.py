"""The scripted-reference register (docs/simulator.md#reference-agent): naive and recovering policies on the validation and
test pools, every task x evaluation schedules 1-4, under the five reference conditions (all paired)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from paired_rollouts.agents.scripted import POLICIES, run_scripted
from paired_rollouts.backoffice.tasks import load_pool
from paired_rollouts.noise.config import NO_OUTAGE_WEIGHTS, NoiseConfig
from paired_rollouts.noise.seeds import FINAL_EVAL_INDICES, eval_schedule_seed

REFERENCE_POOLS: tuple[str, ...] = ("validation", "test")


def reference_conditions() -> dict[str, NoiseConfig]:
    return {
        "clean": NoiseConfig.clean(),
        "c1_p0.10": NoiseConfig.transition(0.10),
        "c2_p0.25": NoiseConfig.transition(0.25),
        "c2r_p0.25_no_outage": NoiseConfig.transition(0.25, weights=NO_OUTAGE_WEIGHTS),
        "heldout_types_p0.25": NoiseConfig.heldout_types(0.25),
    }


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Register metrics of one cell (pool x condition x policy)."""
    n = len(results)
    if n == 0:
        return {"episodes": 0}
    return {
        "episodes": n,
        "success": sum(r["success"] for r in results) / n,
        "exposed_frac": sum(r["exposed"] for r in results) / n,
        "outage_hit_frac": sum(r["outage_hit"] for r in results) / n,
        "budget_exceeded_frac": sum(r["budget_exceeded"] for r in results) / n,
        "mean_calls": sum(r["calls"] for r in results) / n,
    }


def run_cell(
    tasks: list[dict[str, Any]], config: NoiseConfig, policy: str, indices: Iterable[int] = FINAL_EVAL_INDICES
) -> list[dict[str, Any]]:
    """Task-major, then schedule index; schedules from ``eval_schedule_seed(task_id, k)``."""
    indices = tuple(indices)
    return [
        run_scripted(task, config, eval_schedule_seed(task["task_id"], k), policy)
        for task in tasks
        for k in indices
    ]


def build_register(
    tasks_dir: str | os.PathLike = "data/tasks",
    pools: Iterable[str] = REFERENCE_POOLS,
    indices: Iterable[int] = FINAL_EVAL_INDICES,
    limit: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run every cell and return the register object (``results[pool][condition][policy]``)."""
    pools = tuple(pools)
    indices = tuple(indices)
    conditions = reference_conditions()
    loaded = {}
    for pool in pools:
        tasks = load_pool(Path(tasks_dir) / f"{pool}.jsonl")
        loaded[pool] = tasks[:limit] if limit is not None else tasks
    cells = [(pool, cond, policy) for pool in pools for cond in conditions for policy in POLICIES]
    bar = None
    if progress:
        from tqdm import tqdm

        total = sum(len(loaded[pool]) * len(indices) for pool, _, _ in cells)
        bar = tqdm(total=total, desc="scripted reference", unit="ep", disable=None)
    results: dict[str, Any] = {}
    for pool, cond, policy in cells:
        episodes = run_cell(loaded[pool], conditions[cond], policy, indices)
        results.setdefault(pool, {}).setdefault(cond, {})[policy] = summarise(episodes)
        if bar is not None:
            bar.update(len(episodes))
    if bar is not None:
        bar.close()
    return {
        "description": "scripted reference agent (spec 6): naive and recovering policies, budget_for(task), "
        "lookups on, paired evaluation schedules",
        "pools": {pool: {"tasks": len(loaded[pool])} for pool in pools},
        "schedule_indices": list(indices),
        "schedule_seed": "eval_schedule_seed(task_id, k) = derive_seed('eval', task_id, k) mod 2**31",
        "conditions": {name: cfg.to_dict() for name, cfg in conditions.items()},
        "policies": list(POLICIES),
        "results": results,
    }

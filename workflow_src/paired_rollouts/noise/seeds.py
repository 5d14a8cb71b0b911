"""Every seed of the study, derived by hashing (docs/simulator.md#seeds).

``derive_seed`` hashes its parts, so a seed depends only on *what* it is for (task, index, slot, ...) and
never on the order in which things were computed; that is what keeps paired arms, checkpoints and
re-runs comparable. The derivations are ``paired_rollouts.pairing.seeds`` (the public API); this module
adds the study's evaluation indices and its training rows.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

# The derivations are the public pairing API's (one implementation), importable from here too.
from paired_rollouts.pairing.seeds import (
    MOD31,
    derive_seed,
    diagnostic_seed,
    eval_schedule_seed,
    independent_seed,
    resolve_seed,
    seed_family,
    training_schedule_seed,
)

__all__ = [
    "CHALLENGE_EVAL_INDICES",
    "DIAGNOSTIC_INDICES",
    "FINAL_EVAL_INDICES",
    "MOD31",
    "PERIODIC_EVAL_INDICES",
    "build_blocking_rows",
    "build_training_rows",
    "derive_seed",
    "diagnostic_seed",
    "eval_schedule_seed",
    "independent_seed",
    "resolve_seed",
    "row_order",
    "seed_family",
    "training_schedule_seed",
]

FINAL_EVAL_INDICES: tuple[int, ...] = (1, 2, 3, 4)
PERIODIC_EVAL_INDICES: tuple[int, ...] = (1, 2)
CHALLENGE_EVAL_INDICES: tuple[int, ...] = (1,)
DIAGNOSTIC_INDICES: tuple[int, ...] = tuple(range(8))


def row_order(n_tasks: int, run_seed: int) -> list[int]:
    """Task order of the training rows: ``range(n)`` shuffled by ``Random(f"rows-{run_seed}")``."""
    order = list(range(n_tasks))
    random.Random(f"rows-{run_seed}").shuffle(order)
    return order


def _budget(task: dict) -> int:
    from paired_rollouts.backoffice.tasks import budget_for

    return budget_for(task)


def build_training_rows(
    tasks: Sequence[dict], config: Any, condition: str, n_rows: int, run_seed: int
) -> list[dict[str, Any]]:
    """Training rows (one per GRPO group): task, schedule seed, noise JSON, condition and budget.

    Row i uses ``tasks[order[i % len(tasks)]]``; ``config`` is a NoiseConfig (or its JSON).
    """
    if not tasks:
        raise ValueError("build_training_rows needs at least one task")
    noise = config if isinstance(config, str) else config.to_json()
    order = row_order(len(tasks), run_seed)
    rows = []
    for i in range(n_rows):
        task = tasks[order[i % len(tasks)]]
        rows.append(
            {
                "row_index": i,
                "task_id": task["task_id"],
                "schedule_seed": training_schedule_seed(run_seed, condition, i),
                "noise": noise,
                "condition": condition,
                "budget": _budget(task),
            }
        )
    return rows


def build_blocking_rows(
    tasks: Sequence[dict], config: Any, condition: str, n_rows: int, run_seed: int
) -> list[dict[str, Any]]:
    """Optional blocking baseline: n_rows/2 rows, each as a clean copy then the noisy row (same seed)."""
    from paired_rollouts.noise.config import NoiseConfig

    clean = NoiseConfig.clean().to_json()
    rows = []
    for row in build_training_rows(tasks, config, condition, n_rows // 2, run_seed):
        rows.append({**row, "noise": clean, "condition": f"{condition}:clean"})
        rows.append({**row, "condition": f"{condition}:noisy"})
    return rows

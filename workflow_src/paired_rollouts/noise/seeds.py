"""Every seed of the study, derived by hashing (docs/simulator.md#seeds).

``derive_seed`` hashes its parts, so a seed depends only on *what* it is for (task, index, slot, ...) and
never on the order in which things were computed; that is what keeps paired arms, checkpoints and
re-runs comparable.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

MOD31 = 2**31
FINAL_EVAL_INDICES: tuple[int, ...] = (1, 2, 3, 4)
PERIODIC_EVAL_INDICES: tuple[int, ...] = (1, 2)
CHALLENGE_EVAL_INDICES: tuple[int, ...] = (1,)
DIAGNOSTIC_INDICES: tuple[int, ...] = tuple(range(8))


def derive_seed(*parts: Any) -> int:
    """First 8 bytes (big-endian, unsigned) of SHA-256 over ``"|".join(str(p) for p in parts)``."""
    text = "|".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def eval_schedule_seed(task_id: str, index: int) -> int:
    """The evaluation schedule ``index`` (1-based) of a task; identical across arms and checkpoints."""
    return derive_seed("eval", task_id, index) % MOD31


def diagnostic_seed(run_seed: int, task_id: str, index: int) -> int:
    """The ``index``-th (0..7) diagnostic schedule of a task for one run seed."""
    return derive_seed("diag", run_seed, task_id, index) % MOD31


def training_schedule_seed(run_seed: int, condition: str, row_index: int) -> int:
    """The schedule seed of training row ``row_index``; ``condition`` is the condition name, e.g. "C2"."""
    return derive_seed("schedule", run_seed, condition, row_index) % MOD31


def independent_seed(schedule_seed: int, slot: int, draw_index: int, family: str) -> int:
    """A rollout's own seed in the independent arm: full 64 bits, family "train" or "eval"."""
    if family not in ("train", "eval"):
        raise ValueError(f"family must be 'train' or 'eval', not {family!r}")
    return derive_seed("independent", schedule_seed, slot, draw_index, family)


def seed_family(phase: str) -> str:
    """ "train" for training phases ("train", "train:step20"), else "eval"."""
    return "train" if phase.startswith("train") else "eval"


def resolve_seed(
    mode: str, schedule_seed: int, slot: int = 0, draw_index: int = 0, phase: str = "train"
) -> int:
    """The seed one rollout uses: the row's seed when paired/clean, its own seed when independent."""
    if mode == "independent":
        return independent_seed(schedule_seed, slot, draw_index, seed_family(phase))
    return schedule_seed


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

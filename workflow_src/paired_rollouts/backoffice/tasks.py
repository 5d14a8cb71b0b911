"""Tasks: what one task allows (``budget_for``) and the names the stages import, from the modules that
define them: ``generation`` (task generation), ``pools`` (pool files, manifest, hashes, ``load_pool``) and
``selection`` (task selections, the first N selected tasks).
"""

from __future__ import annotations

from typing import Any

from paired_rollouts.backoffice.generation import (
    GENERATOR_SEED,
    GENERATOR_VERSION,
    REQUEST_COUNTS,
    REQUEST_WEIGHTS,
    SEED_RANGES,
    TEMPLATE_ORDER,
    TEMPLATE_WEIGHTS,
    TICKET_TEMPLATES,
    build_pools,
    generate_task,
    generate_tasks,
)
from paired_rollouts.backoffice.pools import (
    PAPER_POOL_SHA256,
    POOL_COUNTS,
    POOL_FILES,
    POOL_ORDER,
    TASK_FIELDS,
    load_pool,
    paper_pools,
    pool_summary,
    render_pools,
    task_line,
    verify_pools,
    write_pools,
)
from paired_rollouts.backoffice.selection import (
    DIAG_POOLS,
    SIMPLE_TEMPLATES,
    TASK_FILTERS,
    first_selected,
    select_tasks,
)

__all__ = [
    "DIAG_POOLS",
    "GENERATOR_SEED",
    "GENERATOR_VERSION",
    "PAPER_POOL_SHA256",
    "POOL_COUNTS",
    "POOL_FILES",
    "POOL_ORDER",
    "REQUEST_COUNTS",
    "REQUEST_WEIGHTS",
    "SEED_RANGES",
    "SIMPLE_TEMPLATES",
    "TASK_FIELDS",
    "TASK_FILTERS",
    "TEMPLATE_ORDER",
    "TEMPLATE_WEIGHTS",
    "TICKET_TEMPLATES",
    "budget_for",
    "build_pools",
    "first_selected",
    "generate_task",
    "generate_tasks",
    "load_pool",
    "paper_pools",
    "pool_summary",
    "render_pools",
    "select_tasks",
    "task_line",
    "verify_pools",
    "write_pools",
]


def budget_for(task: dict[str, Any]) -> int:
    """Tool-call budget of a task: min(21, 7 + 2 * n_subgoals); ``finish`` is free (docs/simulator.md#call-budget)."""
    return min(21, 7 + 2 * int(task["n_subgoals"]))

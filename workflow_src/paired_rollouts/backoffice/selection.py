"""Which tasks a run uses: the task selections (the paper's ``all``; the stand-in's narrower ones) and the
first N selected tasks of a pool.
"""

from __future__ import annotations

import os
from typing import Any

from paired_rollouts.errors import UserError

# Task selections. `all` is the paper's. `single_request_id` keeps one-request tasks that name their
# order by id: the only tasks a tiny CPU stand-in can hope to learn (the others need item arithmetic or
# resolving an order from its description). `simple_id` narrows that to templates whose every argument
# is copied from the instruction or a tool response (no street address to spell). Pool order is kept,
# so "the first N tasks" stays well defined; the diagnostic pool is never filtered by the callers.
TASK_FILTERS: tuple[str, ...] = ("all", "single_request_id", "simple_id")
SIMPLE_TEMPLATES = frozenset(
    {"cancel_pending", "ship_reserved", "open_ticket", "open_ticket_no_order", "cancel_paid_refund"}
)


def select_tasks(tasks: list[dict[str, Any]], task_filter: str) -> list[dict[str, Any]]:
    """The tasks of a pool that a selection keeps, in pool order."""
    if task_filter not in TASK_FILTERS:
        raise UserError(f"task_filter {task_filter!r} is unknown; use one of {', '.join(TASK_FILTERS)}")
    if task_filter == "all":
        return list(tasks)
    kept = [t for t in tasks if len(t["templates"]) == 1 and t["reference"] == "id"]
    if task_filter == "simple_id":
        kept = [t for t in kept if t["templates"][0] in SIMPLE_TEMPLATES]
    return kept


# Pools the luck-share diagnostic may draw from: the paper's fixed diagnostic pool, or (stand-in) the
# run's selection of a held-out pool.
DIAG_POOLS: tuple[str, ...] = ("diagnostic", "validation", "test")


def first_selected(
    tasks: list[dict[str, Any]], pool: str, count: int, task_filter: str, source: str | os.PathLike
) -> list[dict[str, Any]]:
    """The first ``count`` tasks of ``pool`` after ``task_filter``; the diagnostic pool is taken as it is.

    One definition for the stages that roll the tasks out and for the completeness check that expects
    their episodes; ``source`` names the pool file in the error.
    """
    try:
        kept = list(tasks) if pool == "diagnostic" else select_tasks(tasks, task_filter)
    except (KeyError, TypeError) as exc:
        raise UserError(
            f"{source}: a task lacks what task_filter {task_filter!r} reads ({exc}); regenerate the pools"
        ) from None
    if len(kept) < count:
        raise UserError(
            f"{source}: has {len(kept)} tasks after task_filter {task_filter!r}, the settings need {count}"
        )
    return kept[:count]

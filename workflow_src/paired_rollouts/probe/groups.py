"""What the probe rolls out at a checkpoint: the same groups for the LLM (``probe.scores``) and the
surrogate (``surrogate.probe``), so both scales probe one design.

Clean groups: the first ``probe_clean_tasks`` validation tasks after ``task_filter``, each ``probe_clean_rollouts``
rollouts on its first evaluation schedule, without noise. Diagnostic groups: the first ``probe_diag_tasks``
tasks of the diagnostic pool, ``probe_schedules`` (K) diagnostic schedules x ``probe_samples`` (M) rollouts
each, under transition noise ``probe_p``; rows are schedule-major."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ProbeGroup:
    task: dict[str, Any]
    tag: str  # "clean-TASK" or "diag-TASK": the group's part of its sampling seed
    rows: list[dict[str, Any]]


def probe_groups(
    tasks_dir: str | Path,
    settings: dict[str, Any],
    condition: str,
    seed: int,
    prompt: Callable[[dict[str, Any]], Any] | None = None,
) -> tuple[list[ProbeGroup], list[ProbeGroup]]:
    """The clean groups and the diagnostic groups of a run's checkpoint (``seed``: the run's seed). With
    ``prompt`` each row starts with ``prompt(task)`` (the LLM's chat messages)."""
    from paired_rollouts.backoffice.tasks import budget_for, load_pool, select_tasks
    from paired_rollouts.evaluation.evaluate import diagnostic_tasks
    from paired_rollouts.noise.config import NoiseConfig
    from paired_rollouts.noise.seeds import diagnostic_seed, eval_schedule_seed

    G, K, M = settings["probe_clean_rollouts"], settings["probe_schedules"], settings["probe_samples"]
    clean_tasks = select_tasks(load_pool(Path(tasks_dir) / "validation.jsonl"), settings["task_filter"])[
        : settings["probe_clean_tasks"]
    ]
    diag_tasks = diagnostic_tasks(tasks_dir, settings, settings["probe_diag_tasks"])
    clean_noise = NoiseConfig.clean().to_json()
    diag_noise = NoiseConfig.transition(settings["probe_p"]).to_json()

    def group(kind: str, task: dict[str, Any], noise: str, seeds: list[int]) -> ProbeGroup:
        rows = [
            {
                **({"prompt": prompt(task)} if prompt is not None else {}),  # a fresh message list per row
                "task_id": task["task_id"],
                "schedule_seed": s,
                "noise": noise,
                "condition": condition,
                "budget": budget_for(task),
                "row_index": j,
            }
            for j, s in enumerate(seeds)
        ]
        return ProbeGroup(task, f"{kind}-{task['task_id']}", rows)

    clean = [group("clean", t, clean_noise, [eval_schedule_seed(t["task_id"], 1)] * G) for t in clean_tasks]
    diag = [
        group(
            "diag",
            t,
            diag_noise,
            [diagnostic_seed(seed, t["task_id"], k) for k in range(K) for _ in range(M)],
        )
        for t in diag_tasks
    ]
    return clean, diag

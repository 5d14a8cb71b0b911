"""What the probe rolls out at a checkpoint: the same groups for the LLM (``probe.scores``) and the
surrogate (``surrogate.probe``), so both scales probe one design.

Clean groups: the first ``probe.clean_tasks`` validation tasks after ``task_filter``, each
``probe.clean_rollouts`` rollouts on its first evaluation schedule, without noise. Diagnostic groups: the
first ``probe.diagnostic_tasks`` tasks of the diagnostic pool (``diagnostics.pool``), ``probe.schedules`` (K)
diagnostic schedules x ``probe.samples`` (M) rollouts each, under transition noise ``probe.p``; rows are
schedule-major."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts.settings import Settings


@dataclass(frozen=True)
class ProbeGroup:
    task: dict[str, Any]
    tag: str  # "clean-TASK" or "diag-TASK": the group's part of its sampling seed
    rows: list[dict[str, Any]]


def probe_groups(
    tasks_dir: str | Path,
    settings: Settings,
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

    probe = settings.probe
    G, K, M = probe.clean_rollouts, probe.schedules, probe.samples
    validation = select_tasks(load_pool(Path(tasks_dir) / "validation.jsonl"), settings.task_filter)
    clean_tasks = validation[: probe.clean_tasks]
    diag_tasks = diagnostic_tasks(tasks_dir, settings, probe.diagnostic_tasks)
    clean_noise = NoiseConfig.clean().to_json()
    diag_noise = NoiseConfig.transition(probe.p).to_json()

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

"""Training rows (docs/simulator.md#training-rows): one row per GRPO group, in the order the trainer consumes them.

Row i belongs to step i // prompts_per_step. Task order and schedule seeds depend on the run seed and the
condition only, never on the arm, so seed s of the paired and the independent arm see the same tasks
with the same schedule seeds in the same order; they differ only in how each rollout resolves its seed.
"""

from __future__ import annotations

from typing import Any

from paired_rollouts import design
from paired_rollouts.training import chat


def training_noise(condition: str, arm: str, conditions: dict[str, design.Condition] | None = None) -> Any:
    """The run's training noise: the condition's config in the arm's coupling mode."""
    known = conditions if conditions is not None else design.PAPER_CONDITIONS
    return known[condition].noise(design.ARMS[arm].coupling)


def build_rows(
    tasks: list[dict[str, Any]],
    condition: str,
    arm: str,
    run_seed: int,
    steps: int,
    prompts_per_step: int,
    conditions: dict[str, design.Condition] | None = None,
) -> list[dict[str, Any]]:
    """All training rows of a run, with the chat prompt and step/group stamps.

    A blocking arm spends the same rollout budget on half as many tasks: each appears as a clean copy
    and then as the noisy group with the same schedule seed (noise.seeds.build_blocking_rows)."""
    from paired_rollouts.noise.seeds import build_blocking_rows, build_training_rows

    by_id = {t["task_id"]: t for t in tasks}
    build = build_blocking_rows if design.ARMS[arm].blocking else build_training_rows
    rows = build(
        tasks, training_noise(condition, arm, conditions), condition, steps * prompts_per_step, run_seed
    )
    out = []
    for index, row in enumerate(rows):
        # blocking rows come in (clean, noisy) twins of one source row: number them by position
        extra = {"row_index": index, "source_row": row["row_index"]} if index != row["row_index"] else {}
        out.append(
            {
                **row,
                **extra,
                "prompt": chat.prompt_messages(by_id[row["task_id"]]),
                "step": index // prompts_per_step,
                "group": index % prompts_per_step,
                "arm": arm,
            }
        )
    return out

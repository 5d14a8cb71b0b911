"""Training rows (docs/simulator.md#training-rows): one row per GRPO group, in the order the trainer consumes them.

Row i belongs to step i // prompts_per_step. Task order and schedule seeds depend on the run seed and the
condition only, never on the arm, so seed s of the paired and the independent arm see the same tasks
with the same schedule seeds in the same order; they differ only in how each rollout resolves its seed.
"""

from __future__ import annotations

import re
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.training import chat

RUN_NAME = re.compile(r"^(c[0-9]r?)-(paired|independent|clean)-s([0-9]+)$")
# The study's conditions (docs/simulator.md#noise-configurations): C2 transition p=0.25 default mixture, C4 grader flips q=0.10, C0 clean.
CONDITIONS = ("C0", "C2", "C4")


def parse_run(name: str) -> tuple[str, str, int]:
    """``c2-paired-s0`` -> ("C2", "paired", 0); refuses unknown conditions and inconsistent arms."""
    match = RUN_NAME.match(name)
    if not match:
        raise UserError(
            f"--run {name!r}: expected {{condition}}-{{arm}}-s{{seed}}, e.g. c2-paired-s0 or c0-clean-s0"
        )
    condition, arm, seed = match.group(1).upper(), match.group(2), int(match.group(3))
    if condition not in CONDITIONS:
        raise UserError(f"--run {name!r}: unknown condition {condition}; use one of {', '.join(CONDITIONS)}")
    if (condition == "C0") != (arm == "clean"):
        raise UserError(f"--run {name!r}: condition C0 goes with arm 'clean' and C2/C4 with paired/independent")
    return condition, arm, seed


def training_noise(condition: str, arm: str) -> Any:
    """The run's training noise: the condition's config in the arm's coupling mode."""
    from paired_rollouts.noise.config import NoiseConfig

    if condition == "C0":
        return NoiseConfig.clean()
    return NoiseConfig.for_condition(condition, mode=arm)


def build_rows(tasks: list[dict[str, Any]], condition: str, arm: str, run_seed: int, steps: int,
               prompts_per_step: int) -> list[dict[str, Any]]:
    """All training rows of a run, with the chat prompt and step/group stamps."""
    from paired_rollouts.noise.seeds import build_training_rows

    by_id = {t["task_id"]: t for t in tasks}
    rows = build_training_rows(tasks, training_noise(condition, arm), condition, steps * prompts_per_step, run_seed)
    out = []
    for row in rows:
        index = row["row_index"]
        out.append({
            **row,
            "prompt": chat.prompt_messages(by_id[row["task_id"]]),
            "step": index // prompts_per_step,
            "group": index % prompts_per_step,
            "arm": arm,
        })
    return out

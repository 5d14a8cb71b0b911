"""A run's training-group register: every (step, group) once, on its own training row (the row's task,
index and schedule seed as the design builds the rows)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from paired_rollouts.design import ARMS
from paired_rollouts.io import sha256_file
from paired_rollouts.layout import RunFiles
from paired_rollouts.noise.seeds import row_order, training_schedule_seed
from paired_rollouts.records import iter_groups
from paired_rollouts.stats.completeness.expected import TrainingGroups
from paired_rollouts.stats.completeness.findings import MAX_LISTED, Findings


class GroupRows:
    """The rows a run trains on: row index, source row, task and schedule seed of each (step, group)."""

    def __init__(self, f: Findings, training: TrainingGroups, train_ids: list[str] | None) -> None:
        self.f, self.training, self.train_ids = f, training, train_ids
        self.order = row_order(len(train_ids), f.ident["seed"]) if train_ids else None
        self.arm = ARMS[f.ident["arm"]]

    def problems(self, rec: dict[str, Any]) -> list[str]:
        """What differs between a group record (step and group in range) and its row."""
        seed, condition = self.f.ident["seed"], self.f.ident["condition"]
        row = rec["step"] * self.training.prompts + rec["group"]
        out = []
        if rec.get("row_index", row) != row:
            out.append(f"row_index {rec['row_index']}, expected {row}")
        # a blocking arm trains each source row twice in a row (its clean copy, then the noisy group)
        source = row // 2 if self.arm.blocking else row
        if self.order is not None and self.train_ids is not None:
            want = self.train_ids[self.order[source % len(self.train_ids)]]
            if rec["task_id"] != want:
                out.append(f"task_id {rec['task_id']} is not training row {row}'s task {want}")
        row_seed = training_schedule_seed(seed, condition, source)
        if rec.get("schedule_seed", row_seed) != row_seed:
            out.append(f"schedule_seed {rec['schedule_seed']} is not training row {row}'s seed")
        if (
            self.arm.coupling != "independent"
            and "schedule_seed" in rec
            and set(rec["schedule_seeds"]) != {row_seed}
        ):
            out.append(f"{self.f.ident['arm']} rollouts must all use the row's seed {row_seed}")
        return out


def check_groups(
    f: Findings, path: Path, training: TrainingGroups, train_ids: list[str] | None
) -> tuple[int, int]:
    """Every (step, group) once on its own row, G rollouts each; returns (groups, rollouts) found."""
    key = RunFiles.GROUPS
    steps, prompts, generations = training.steps, training.prompts, training.generations
    if not path.is_file():
        f.missing.append({"kind": "file", "path": key, "expected": steps * prompts})
        return 0, 0
    f.files[key] = sha256_file(path)
    rows = GroupRows(f, training, train_ids)
    by_step: dict[int, Counter] = {}
    groups = rollouts = 0
    for line, rec in iter_groups(path):
        groups += 1
        if rec["run"] != f.run:
            f.defect(
                kind="identity", path=key, line=line, problem=f"run is {rec['run']!r}, expected {f.run!r}"
            )
        step, group = rec["step"], rec["group"]
        size = len(rec["true_success"])
        rollouts += size
        problems = [] if size == generations else [f"list lengths {size}, expected {generations}"]
        if not 0 <= step < steps or not 0 <= group < prompts:
            problems.append("step or group out of range")
        else:
            by_step.setdefault(step, Counter())[group] += 1
            problems += rows.problems(rec)
        for problem in problems:
            f.defect(kind="group", path=key, line=line, step=step, group=group, problem=problem)
    for step in range(steps):
        _step_groups(f, key, step, by_step.get(step, Counter()), prompts)
    return groups, rollouts


def _step_groups(f: Findings, key: str, step: int, got: Counter, prompts: int) -> None:
    """One step's groups: each of 0..prompts-1 exactly once."""
    expected = Counter(range(prompts))
    absent = sorted((expected - got).elements())
    if absent:
        f.missing.append(
            {
                "kind": "groups",
                "step": step,
                "expected": prompts,
                "found": sum(got.values()),
                "absent": absent[:MAX_LISTED],
            }
        )
    for g in sorted((got - expected).elements())[:MAX_LISTED]:
        f.defects.append(
            {"kind": "duplicate" if g in expected else "unexpected", "path": key, "item": [step, g]}
        )

"""Episode records (``results/evals/RUN/*.jsonl``, ``results/diagnostics/RUN/diag-stepN.jsonl``) and
training-group records (``results/runs/RUN/groups.jsonl``): JSON Lines read by the million, so each
line is type-checked against the contract (docs/CONTRACT.md#record-schemas) and stays a plain object."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.io import iter_jsonl_numbered
from paired_rollouts.records.schema import (
    is_bool,
    is_condition,
    is_dict,
    is_int,
    is_int_or_none,
    is_num,
    is_str,
    list_of,
    one_of,
    validate,
)

PHASES = ("periodic", "final", "diagnostic", "train")

# CONTRACT: the episode record's required keys and their types.
EPISODE = {
    "run": is_str,
    "condition": is_condition,
    "arm": one_of(*design.ARMS),
    "seed": is_int,
    "phase": one_of(*PHASES),
    "step": is_int,
    "regime": one_of(*design.REGIMES),
    "task_id": is_str,
    "schedule_index": is_int_or_none,
    "schedule_seed": is_int,
    "true_success": is_bool,
    "observed_reward": is_num,
    "flipped": is_bool,
    "exposed": is_bool,
    "calls": is_int,
    "budget": is_int,
    "finished": is_bool,
    "faults": is_dict,
}
# CONTRACT: the training-group record (``zero_variance``/``spurious`` are derived; checked when present).
GROUP = {
    "run": is_str,
    "step": is_int,
    "group": is_int,
    "task_id": is_str,
    "schedule_seeds": list_of(is_int),
    "true_success": list_of(is_bool),
    "observed_reward": list_of(is_num),
    "advantages": list_of(is_num),
}
GROUP_OPTIONAL = {
    "zero_variance": is_bool,
    "spurious": is_bool,
    "row_index": is_int,
    "schedule_seed": is_int,
}


def iter_episodes(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) of an episode file, each record type-checked against the contract."""
    for line, rec in iter_jsonl_numbered(path):
        yield line, validate(rec, EPISODE, f"{path}:{line}", "episode record")


def read_episodes(path: str | Path) -> list[dict[str, Any]]:
    return [rec for _, rec in iter_episodes(path)]


def iter_groups(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) of a groups.jsonl, each type-checked; the lists must have one length, and a group
    (run, step, group) appears once (a duplicate would be counted twice in every rate)."""
    seen: dict[tuple[str, int, int], int] = {}
    for line, rec in iter_jsonl_numbered(path):
        where = f"{path}:{line}"
        validate(rec, GROUP, where, "training-group record", GROUP_OPTIONAL)
        lengths = {len(rec[k]) for k in ("schedule_seeds", "true_success", "observed_reward", "advantages")}
        if len(lengths) != 1 or 0 in lengths:
            raise UserError(
                f"{where}: training-group lists have lengths {sorted(lengths)}; each needs G entries"
            )
        at = (rec["run"], rec["step"], rec["group"])
        if at in seen:
            raise UserError(
                f"{where}: a second record of {at[0]} step {at[1]} group {at[2]} (first at line {seen[at]}); "
                "regenerate the training register"
            )
        seen[at] = line
        yield line, rec


def read_groups(path: str | Path) -> list[dict[str, Any]]:
    return [rec for _, rec in iter_groups(path)]

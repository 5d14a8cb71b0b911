"""Replay determinism of a checkpoint (docs/records.md section 9): the first K episodes of its final
evaluation set, rolled twice with every seed fixed, token for token.

The evaluate stage promises that the same seeds give the same bytes. This check measures it on the
backend that ran: the evaluation batches holding the first K rows of the final ``clean`` set (the rows,
schedule seeds and per-batch sampling seeds of ``evaluate``, the engine seed of the run) go twice through
one :class:`PolicyRunner`, with its episode counters (and vLLM's prefix cache) restarted before each
roll. Every model turn's token ids are kept; an episode is exact when both rolls have the same turns,
and the first roll's record is compared byte for byte with the evaluation file's. A model turn is a
maximal run of model tokens in TRL's completion (``tool_mask`` 1); tool results between turns are the
environment's, not sampled. Turns and tokens are numbered from 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.records.replay import first_divergence, summarize

REGIME = design.REPLAY_REGIME
OUTCOME_KEYS = ("true_success", "observed_reward", "finished", "calls")

Turns = list[list[int]]


def model_turns(output: dict[str, Any], index: int) -> Turns:
    """Rollout ``index``'s model turns from TRL's batch output: its completion ids (``completion_mask``
    gives the length) cut at the tool results (``tool_mask`` 0)."""
    length = int(output["completion_mask"][index].sum())
    ids = [int(t) for t in output["completion_ids"][index][:length].tolist()]
    tool_mask = output.get("tool_mask")
    mask = [1] * length if tool_mask is None else [int(m) for m in tool_mask[index][:length].tolist()]
    turns: Turns = []
    previous = 0
    for token, model in zip(ids, mask, strict=True):
        if model and not previous:
            turns.append([])
        if model:
            turns[-1].append(token)
        previous = model
    return turns


def outcome(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in OUTCOME_KEYS}


def episode_entry(
    index: int, records: Sequence[dict[str, Any]], turns: Sequence[Turns], evaluation: dict[str, Any]
) -> dict[str, Any]:
    """One replayed episode: both rolls' turns and outcomes, the first divergence, and the sha256 of the
    first roll's record line and of the evaluation file's (equal: byte for byte the same record)."""
    from paired_rollouts.io import jsonl_line, sha256_bytes

    divergence = first_divergence(turns[0], turns[1])
    outcomes = [outcome(r) for r in records]
    record_sha, evaluation_sha = (sha256_bytes(jsonl_line(r).encode()) for r in (records[0], evaluation))
    return {
        "index": index,
        "task_id": records[0]["task_id"],
        "schedule_index": records[0]["schedule_index"],
        "schedule_seed": records[0]["schedule_seed"],
        "turns": [list(t) for t in turns],
        "outcomes": outcomes,
        "first_divergence": divergence,
        "exact": divergence is None,
        "outcome_changed": outcomes[0] != outcomes[1],
        "record_sha256": record_sha,
        "evaluation_sha256": evaluation_sha,
        "matches_evaluation": record_sha == evaluation_sha,
    }


def rolled_rows(rows: list[dict], episodes: int, batch: int, where: str) -> list[dict]:
    """The evaluation batches that hold the first ``episodes`` rows (a batch is rolled whole: its
    sampling seed and its padding are the evaluation's)."""
    if episodes > len(rows):
        raise UserError(
            f"{where}: the final {REGIME} set has {len(rows)} episodes; give --episodes <= {len(rows)}"
        )
    return rows[: min(len(rows), math.ceil(episodes / batch) * batch)]


def evaluation_records(path: Path, rows: list[dict], episodes: int) -> list[dict[str, Any]]:
    """The evaluation file's first records, read strictly, checked to be the rows replayed."""
    from paired_rollouts.records import read_episodes

    found = read_episodes(path)
    if len(found) < episodes:
        raise UserError(f"{path}: {len(found)} episode records, the replay needs {episodes}; rerun evaluate")
    for line, (record, row) in enumerate(zip(found[:episodes], rows, strict=False), start=1):
        if (record["task_id"], record["schedule_seed"]) != (row["task_id"], row["schedule_seed"]):
            raise UserError(
                f"{path}:{line}: record of {record['task_id']} (schedule seed {record['schedule_seed']}), the "
                f"set's row {line} is {row['task_id']} ({row['schedule_seed']}); rerun evaluate with these settings"
            )
    return found[:episodes]


def _read_files(paths: Sequence[Path]) -> dict[str, str]:
    from paired_rollouts.io import sha256_file

    return {str(p): sha256_file(p) for p in paths}


def replay_check(
    *,
    make_runner: Callable[[], Any],
    rows: list[dict],
    evaluation_file: str | Path,
    episodes: int,
    identity: tuple[str, str, int],
    run: str,
    step: int,
    settings: Any,
    read: Sequence[Path] = (),
    engine_seed: int | None = None,
) -> dict[str, Any]:
    """The replay register of one checkpoint (not written: the caller writes it atomically). The inputs
    are checked before ``make_runner`` loads the checkpoint; the runner is closed at the end."""
    evaluation_file = Path(evaluation_file)
    chunk = rolled_rows(rows, episodes, settings.evaluation.eval_batch, str(evaluation_file))
    expected = evaluation_records(evaluation_file, chunk, episodes)
    files = _read_files([evaluation_file, *read])
    runner = make_runner()
    try:
        rolls, turns, batches = _roll_twice(runner, chunk, episodes, identity, run, step, settings)
    finally:
        runner.close()
    batch = settings.evaluation.eval_batch
    entries = [
        episode_entry(i, [rolls[0][i], rolls[1][i]], [turns[0][i], turns[1][i]], expected[i])
        for i in range(episodes)
    ]
    return {
        "run": run,
        "step": step,
        "phase": "final",
        "regime": REGIME,
        "backend": settings.stack.backend,
        "device": settings.stack.device,
        "dtype": settings.stack.dtype,
        "engine_seed": engine_seed,
        "batches": [dict(b, rows=len(chunk[b["start"] : b["start"] + batch])) for b in batches],
        "files": files,
        "episodes": entries,
        "summary": summarize(entries),
    }


def _roll_twice(
    runner: Any,
    chunk: list[dict],
    episodes: int,
    identity: tuple[str, str, int],
    run: str,
    step: int,
    settings: Any,
) -> tuple[list[list[dict]], list[list[Turns]], list[dict[str, int]]]:
    """The chunk rolled twice as the evaluation rolls it: each roll's first records and model turns,
    and the batches' sampling seeds (the same in both rolls)."""
    from paired_rollouts.evaluation.evaluate import roll_rows

    if getattr(runner.trainer, "mask_truncated_completions", False):
        raise RuntimeError(
            "TRL's mask_truncated_completions hides truncated completions' ids; the replay needs them"
        )
    condition, arm, seed = identity
    batch = settings.evaluation.eval_batch
    rolls, turns, batches = [], [], []
    for _ in range(2):
        kept: list[Turns] = []
        seeds: list[dict[str, int]] = []

        def keep(start: int, sampling_seed: int, output: dict[str, Any], kept=kept, seeds=seeds) -> None:
            """The batch's model turns of the replayed episodes (the output itself is not held)."""
            kept.extend(model_turns(output, i) for i in range(min(batch, episodes - start)))
            seeds.append({"start": start, "sampling_seed": sampling_seed})

        runner.restart_episodes()
        records = roll_rows(
            runner,
            chunk,
            run=run,
            condition=condition,
            arm=arm,
            seed=seed,
            phase="final",
            step=step,
            regime=REGIME,
            batch=batch,
            progress=False,
            on_batch=keep,
        )
        turns.append(kept)
        rolls.append(records[:episodes])
        batches.append(seeds)
    if batches[0] != batches[1]:
        raise RuntimeError("the two rolls used different sampling seeds")
    return rolls, turns, batches[0]

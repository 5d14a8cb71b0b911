"""Evaluation sets and the luck-share diagnostic (docs/simulator.md#evaluation-sets) as episode records.

Every evaluation schedule is paired and fixed: schedule index k of task t uses eval_schedule_seed(t, k) in
every arm and at every checkpoint; diagnostic schedules use diagnostic_seed(run_seed, t, k). Records follow
docs/CONTRACT.md#episode-record (run, condition, arm, seed, phase, step, regime, task_id, schedule_index, schedule_seed,
true_success, observed_reward, flipped, exposed, calls, budget, finished, faults) plus the session's extras.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.settings import Settings


def as_condition(condition: str | design.Condition) -> design.Condition:
    """A condition object; a bare name means the paper's registered condition of that name."""
    if isinstance(condition, design.Condition):
        return condition
    if condition not in design.PAPER_CONDITIONS:
        raise UserError(
            f"condition {condition!r} is not a registered condition; pass the design's --conditions"
        )
    return design.PAPER_CONDITIONS[condition]


def regime_noise(regime: str, condition: str | design.Condition) -> Any:
    """The (paired) noise config of an evaluation regime for a run of ``condition`` (design.regime_noise)."""
    return design.regime_noise(regime, as_condition(condition))


def final_regimes(condition: str | design.Condition) -> tuple[str, ...]:
    """Final sets of a run: at_training only when the training noise is none of the standard ones."""
    return tuple(design.final_regimes(as_condition(condition)))


def _rows(
    tasks: list[dict],
    noise: Any,
    condition: design.Condition,
    indices: tuple[int, ...],
    seed_of: Any,
    samples: int = 1,
) -> list[dict[str, Any]]:
    from paired_rollouts.backoffice.tasks import budget_for
    from paired_rollouts.training import chat

    noise_json = noise.to_json()
    rows = []
    for task in tasks:
        for k in indices:
            for m in range(samples):
                rows.append(
                    {
                        "prompt": chat.prompt_messages(task),
                        "task_id": task["task_id"],
                        "schedule_seed": seed_of(task["task_id"], k),
                        "schedule_index": k,
                        "sample": m,
                        "noise": noise_json,
                        "condition": condition.name,
                        "budget": budget_for(task),
                        "row_index": len(rows),
                    }
                )
    return rows


def evaluation_rows(
    tasks_dir: str, phase: str, regime: str, condition: str | design.Condition, settings: Settings
) -> list[dict]:
    from paired_rollouts.backoffice.tasks import load_pool, select_tasks
    from paired_rollouts.noise.seeds import eval_schedule_seed

    if phase not in design.PHASE_REGIMES:
        raise UserError(f"--phase {phase!r}: use periodic or final")
    table = design.PHASE_REGIMES[phase]
    if regime not in table:
        raise UserError(f"--regime {regime!r} is not a {phase} set; {phase} sets are {', '.join(table)}")
    evaluation = settings.evaluation
    n = evaluation.eval_tasks if phase == "periodic" else evaluation.final_tasks
    pool = load_pool(Path(tasks_dir) / f"{design.PHASE_POOL[phase]}.jsonl")
    tasks = select_tasks(pool, settings.task_filter)[:n]
    spec = as_condition(condition)
    return _rows(tasks, regime_noise(regime, spec), spec, table[regime], eval_schedule_seed)


def diagnostic_tasks(tasks_dir: str, settings: Settings, count: int) -> list[dict]:
    """The first ``count`` tasks of the luck-share pool: the paper's fixed diagnostic pool (never filtered),
    or, at stand-in scale, the run's task selection of another pool (``diagnostics.pool``), because the 16
    diagnostic tasks all carry several requests and a tiny stand-in solves none of them."""
    from paired_rollouts.backoffice.tasks import first_selected, load_pool

    pool = settings.diagnostics.pool
    path = Path(tasks_dir) / f"{pool}.jsonl"
    return first_selected(load_pool(path), pool, count, settings.task_filter, path)


def diagnostic_rows(
    tasks_dir: str, condition: str | design.Condition, run_seed: int, settings: Settings
) -> list[dict]:
    """K schedules x M samples of the first diagnostic tasks, under the diagnostic's noise at
    ``diagnostics.p`` (the run's own fault mixture)."""
    from paired_rollouts.noise.seeds import diagnostic_seed

    diagnostics = settings.diagnostics
    spec = as_condition(condition)
    return _rows(
        diagnostic_tasks(tasks_dir, settings, diagnostics.tasks),
        spec.diagnostic_noise(diagnostics.p),
        spec,
        tuple(range(diagnostics.schedules)),
        lambda t, k: diagnostic_seed(run_seed, t, k),
        samples=diagnostics.samples,
    )


def roll_rows(
    runner: Any,
    rows: list[dict],
    *,
    run: str,
    condition: str,
    arm: str,
    seed: int,
    phase: str,
    step: int,
    regime: str,
    batch: int,
    progress: bool = True,
    on_batch: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Roll out rows in fixed batches; each batch's sampling seed depends only on what it contains.
    ``on_batch(start, sampling_seed, output)`` sees TRL's output of each batch (the replay check keeps
    its token ids)."""
    from tqdm import tqdm

    from paired_rollouts.noise.seeds import derive_seed
    from paired_rollouts.training.register import episode_record

    records = []
    bar = tqdm(total=len(rows), desc=f"{run} {phase} step {step} {regime}", unit="ep", disable=not progress)
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        sampling_seed = derive_seed("sampling", seed, phase, step, regime, start) % (2**31)
        raw, output = runner.rollout(chunk, f"{phase}:step{step}", sampling_seed)
        if on_batch is not None:
            on_batch(start, sampling_seed, output)
        for row, r in zip(chunk, raw, strict=True):
            rec = episode_record(
                r,
                run=run,
                condition=condition,
                arm=arm,
                seed=seed,
                phase=phase,
                step=step,
                regime=regime,
                schedule_index=row["schedule_index"],
            )
            rec["schedule_seed"] = row["schedule_seed"]
            rec["sample"] = row["sample"]
            records.append(rec)
        bar.update(len(chunk))
    bar.close()
    return records

"""Evaluation sets and the luck-share diagnostic (docs/simulator.md#evaluation-sets) as episode records.

Every evaluation schedule is paired and fixed: schedule index k of task t uses eval_schedule_seed(t, k) in
every arm and at every checkpoint; diagnostic schedules use diagnostic_seed(run_seed, t, k). Records follow
docs/CONTRACT.md#episode-record (run, condition, arm, seed, phase, step, regime, task_id, schedule_index, schedule_seed,
true_success, observed_reward, flipped, exposed, calls, budget, finished, faults) plus the session's extras.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError

REGIMES = ("clean", "at_training", "challenge", "noisy_p010", "noisy_p025", "heldout_types")
PHASES = ("periodic", "final")
PERIODIC = {"clean": (1, 2), "at_training": (1, 2), "challenge": (1,)}
FINAL = {"clean": (1, 2, 3, 4), "noisy_p010": (1, 2, 3, 4), "noisy_p025": (1, 2, 3, 4),
         "heldout_types": (1, 2, 3, 4), "challenge": (1,), "at_training": (1, 2, 3, 4)}
POOL = {"periodic": "validation", "final": "test"}
DIAG_P = 0.25


def regime_noise(regime: str, condition: str) -> Any:
    """The (paired) noise config of an evaluation regime for a run of ``condition``."""
    from paired_rollouts.noise.config import NoiseConfig

    if regime == "clean":
        return NoiseConfig.clean()
    if regime == "at_training":
        # The run's own training noise; the clean arm is evaluated under C2 defaults (docs/simulator.md#evaluation-sets).
        return NoiseConfig.for_condition("C2" if condition == "C0" else condition, mode="paired")
    if regime == "challenge":
        return NoiseConfig.challenge_writes()
    if regime == "noisy_p010":
        return NoiseConfig.transition(0.10)
    if regime == "noisy_p025":
        return NoiseConfig.transition(0.25)
    if regime == "heldout_types":
        return NoiseConfig.heldout_types(0.25)
    if regime == "diag":
        return NoiseConfig.transition(DIAG_P)
    raise UserError(f"--regime {regime!r}: unknown; use one of {', '.join(REGIMES)}")


def final_regimes(condition: str) -> tuple[str, ...]:
    """Final sets of a run: at_training only when the training noise is none of the standard ones (C4)."""
    base = ("clean", "noisy_p010", "noisy_p025", "heldout_types", "challenge")
    return base + (("at_training",) if condition == "C4" else ())


def _rows(tasks: list[dict], regime: str, condition: str, indices: tuple[int, ...], seed_of: Any,
          samples: int = 1) -> list[dict[str, Any]]:
    from paired_rollouts.backoffice.tasks import budget_for
    from paired_rollouts.training import chat

    noise = regime_noise(regime, condition).to_json()
    rows = []
    for task in tasks:
        for k in indices:
            for m in range(samples):
                rows.append({
                    "prompt": chat.prompt_messages(task),
                    "task_id": task["task_id"],
                    "schedule_seed": seed_of(task["task_id"], k),
                    "schedule_index": k,
                    "sample": m,
                    "noise": noise,
                    "condition": condition,
                    "budget": budget_for(task),
                    "row_index": len(rows),
                })
    return rows


def evaluation_rows(tasks_dir: str, phase: str, regime: str, condition: str, settings: dict[str, Any]) -> list[dict]:
    from paired_rollouts.backoffice.tasks import load_pool
    from paired_rollouts.noise.seeds import eval_schedule_seed

    if phase not in PHASES:
        raise UserError(f"--phase {phase!r}: use periodic or final")
    table = PERIODIC if phase == "periodic" else FINAL
    if regime not in table:
        raise UserError(f"--regime {regime!r} is not a {phase} set; {phase} sets are {', '.join(table)}")
    n = settings["eval_tasks"] if phase == "periodic" else settings["final_tasks"]
    from paired_rollouts.training.settings import filter_tasks

    tasks = filter_tasks(load_pool(Path(tasks_dir) / f"{POOL[phase]}.jsonl"), settings["task_filter"])[:n]
    return _rows(tasks, regime, condition, table[regime], eval_schedule_seed)


def diagnostic_tasks(tasks_dir: str, settings: dict[str, Any], count: int) -> list[dict]:
    """The first ``count`` tasks of the luck-share pool: the paper's fixed diagnostic pool (never filtered),
    or, at stand-in scale, the run's task selection of another pool (``diag_pool``), because the 16
    diagnostic tasks all carry several requests and a tiny stand-in solves none of them."""
    from paired_rollouts.backoffice.tasks import first_selected, load_pool

    path = Path(tasks_dir) / f"{settings['diag_pool']}.jsonl"
    return first_selected(load_pool(path), settings["diag_pool"], count, settings["task_filter"], path)


def diagnostic_rows(tasks_dir: str, condition: str, run_seed: int, settings: dict[str, Any]) -> list[dict]:
    from paired_rollouts.noise.seeds import diagnostic_seed

    tasks = diagnostic_tasks(tasks_dir, settings, settings["diag_tasks"])
    indices = tuple(range(settings["diag_schedules"]))
    return _rows(tasks, "diag", condition, indices, lambda t, k: diagnostic_seed(run_seed, t, k),
                 samples=settings["diag_samples"])


def roll_rows(runner: Any, rows: list[dict], *, run: str, condition: str, arm: str, seed: int, phase: str,
              step: int, regime: str, batch: int, progress: bool = True) -> list[dict[str, Any]]:
    """Roll out rows in fixed batches; each batch's sampling seed depends only on what it contains."""
    from tqdm import tqdm

    from paired_rollouts.noise.seeds import derive_seed
    from paired_rollouts.training.register import episode_record

    records = []
    bar = tqdm(total=len(rows), desc=f"{run} {phase} step {step} {regime}", unit="ep", disable=not progress)
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        sampling_seed = derive_seed("sampling", seed, phase, step, regime, start) % (2**31)
        raw, _ = runner.rollout(chunk, f"{phase}:step{step}", sampling_seed)
        for row, r in zip(chunk, raw, strict=True):
            rec = episode_record(r, run=run, condition=condition, arm=arm, seed=seed, phase=phase, step=step,
                                 regime=regime, schedule_index=row["schedule_index"])
            rec["schedule_seed"] = row["schedule_seed"]
            rec["sample"] = row["sample"]
            records.append(rec)
        bar.update(len(chunk))
    bar.close()
    return records

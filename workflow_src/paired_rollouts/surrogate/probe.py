"""The gradient-covariance probe at surrogate scale: exact over every parameter, no sampled scores.

Same captures and statistics as ``probe/scores.py`` (one clean group per validation task, K x M diagnostic
rollouts per diagnostic task, ``paired_rollouts.probe``'s outcome enumeration and transition resampling);
the score vectors are the policy's analytic scores and rho = 1 (every rollout is on-policy). Decision
counts stand in for token counts in t_ref.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def probe_checkpoint(
    theta: list[float],
    *,
    condition: str,
    seed: int,
    step: int,
    tasks_dir: str,
    settings: dict[str, Any],
    tasks_by_id: dict[str, dict],
) -> dict[str, Any]:
    from paired_rollouts.backoffice.tasks import budget_for, load_pool
    from paired_rollouts.evaluation.evaluate import diagnostic_tasks
    from paired_rollouts.noise.config import NoiseConfig
    from paired_rollouts.noise.seeds import derive_seed, diagnostic_seed, eval_schedule_seed
    from paired_rollouts.probe import (
        OUTCOME_VECTOR_KEYS,
        TRANSITION_VECTOR_KEYS,
        OutcomeProbe,
        TransitionProbe,
        probe_rng_seed,
        schedule_major_order,
        t_ref_from_tokens,
    )
    from paired_rollouts.surrogate.policy import P
    from paired_rollouts.surrogate.rollout import SurrogateRunner
    from paired_rollouts.training.settings import filter_tasks

    runner = SurrogateRunner(theta, tasks_by_id)
    G, K, M = settings["probe_clean_rollouts"], settings["probe_schedules"], settings["probe_samples"]
    clean_tasks = filter_tasks(load_pool(Path(tasks_dir) / "validation.jsonl"), settings["task_filter"])[
        : settings["probe_clean_tasks"]
    ]
    diag_tasks = diagnostic_tasks(tasks_dir, settings, settings["probe_diag_tasks"])
    clean_noise = NoiseConfig.clean().to_json()
    diag_noise = NoiseConfig.transition(settings["probe_p"]).to_json()

    def capture(
        task: dict, noise: str, seeds: list[int], tag: str
    ) -> tuple[list[dict], np.ndarray, np.ndarray]:
        rows = [
            {
                "task_id": task["task_id"],
                "schedule_seed": s,
                "noise": noise,
                "condition": condition,
                "budget": budget_for(task),
                "row_index": j,
            }
            for j, s in enumerate(seeds)
        ]
        records, _ = runner.rollout(
            rows, f"probe:step{step}", derive_seed("probe", seed, step, tag) % (2**31)
        )
        return records, runner.scores(), np.asarray([r["decisions"] for r in records], dtype=float)

    clean = [
        capture(t, clean_noise, [eval_schedule_seed(t["task_id"], 1)] * G, f"clean-{t['task_id']}")
        for t in clean_tasks
    ]
    diag = [
        capture(
            t,
            diag_noise,
            [diagnostic_seed(seed, t["task_id"], k) for k in range(K) for _ in range(M)],
            f"diag-{t['task_id']}",
        )
        for t in diag_tasks
    ]
    counts = np.concatenate([c for *_, c in clean + diag])
    t_ref = t_ref_from_tokens(counts, settings["prompts_per_step"], settings["num_generations"])

    outcome = OutcomeProbe(settings["probe_q"], t_ref)
    vectors = {k: np.zeros(P) for k in OUTCOME_VECTOR_KEYS}
    for (records, s, _), task in zip(clean, clean_tasks, strict=True):
        coeffs = outcome.add_group(
            s @ s.T, [bool(r["true_success"]) for r in records], [1.0] * len(records), task_id=task["task_id"]
        )
        for key, c in coeffs.items():
            vectors[key] += np.asarray(c, dtype=np.float64) @ s
    outcome_summary = outcome.summary(_gram(vectors, OUTCOME_VECTOR_KEYS))

    transition = TransitionProbe(
        K, M, settings["probe_resamples"], t_ref, probe_rng_seed(settings["probe_seed"], step)
    )
    vectors = {k: np.zeros(P) for k in TRANSITION_VECTOR_KEYS}
    for (records, s, _), task in zip(diag, diag_tasks, strict=True):
        seeds = [r["schedule_seed"] for r in records]
        order = schedule_major_order(seeds, K, M)
        s = s[order]
        coeffs = transition.add_task(
            s @ s.T,
            [float(records[i]["true_success"]) for i in order],
            [1.0] * len(order),
            task_id=task["task_id"],
            schedule_seeds=[seeds[i] for i in order],
        )
        for key, c in coeffs.items():
            vectors[key] += np.asarray(c, dtype=np.float64) @ s
    transition_summary = transition.summary(_gram(vectors, TRANSITION_VECTOR_KEYS))
    return {
        "t_ref": t_ref,
        "P": P,
        "scores": "analytic (exact, every parameter)",
        "counts": {
            "clean_groups": len(clean),
            "clean_rollouts": sum(len(r) for r, *_ in clean),
            "diagnostic_tasks": len(diag),
            "diagnostic_rollouts": sum(len(r) for r, *_ in diag),
            "groups_per_design": transition_summary.get("groups_per_design"),
            "rho_zero_fraction": 0.0,
        },
        "outcome": outcome_summary,
        "transition": transition_summary,
    }


def _gram(vectors: dict[str, np.ndarray], keys: tuple[str, ...]) -> np.ndarray:
    stack = np.stack([vectors[k] for k in keys])
    return stack @ stack.T

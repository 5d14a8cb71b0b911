"""The gradient-covariance probe at surrogate scale: exact over every parameter, no sampled scores.

Same captures and statistics as ``probe/scores.py`` (one clean group per validation task, K x M diagnostic
rollouts per diagnostic task, ``paired_rollouts.probe``'s outcome enumeration and transition resampling);
the score vectors are the policy's analytic scores over every parameter (the actions and the phrasing
tokens, drawn per group from ``phrasing_rng("probe", seed, step, tag)``) and rho = 1 (every rollout is
on-policy). Decision counts stand in for token counts in t_ref.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from paired_rollouts.pairing.numeric import dot, gram_matrix
from paired_rollouts.settings import Settings
from paired_rollouts.surrogate.policy import Shape


def probe_checkpoint(
    theta: list[float],
    *,
    condition: str,
    seed: int,
    step: int,
    tasks_dir: str,
    settings: Settings,
    tasks_by_id: dict[str, dict],
    shape: Shape,
    blocks: dict[str, slice] | None = None,
) -> dict[str, Any]:
    """The probe register's checkpoint entry; with ``blocks`` ({name: columns of the score}) also the
    outcome and transition summaries of each block of coordinates alone, on the same rollouts and
    resampled groups (which part of the score decides the reductions)."""
    from paired_rollouts.noise.seeds import derive_seed
    from paired_rollouts.probe import t_ref_from_tokens
    from paired_rollouts.probe.groups import ProbeGroup, probe_groups
    from paired_rollouts.surrogate.phrasing import DIMENSION, phrasing_rng
    from paired_rollouts.surrogate.rollout import SurrogateRunner, Trajectories

    runner = SurrogateRunner(theta, tasks_by_id, shape, Trajectories())  # a group's samples share schedules
    clean_groups, diag_groups = probe_groups(tasks_dir, settings, condition, seed)

    def capture(group: ProbeGroup) -> tuple[list[dict], np.ndarray, np.ndarray]:
        records, _ = runner.rollout(
            group.rows, f"probe:step{step}", derive_seed("probe", seed, step, group.tag) % (2**31)
        )
        scores = runner.scores(phrasing_rng("probe", seed, step, group.tag))
        return records, scores, np.asarray([r["decisions"] for r in records], dtype=float)

    clean = [(g, *capture(g)) for g in clean_groups]
    diag = [(g, *capture(g)) for g in diag_groups]
    counts = np.concatenate([c for *_, c in clean + diag])
    training = settings.training
    t_ref = t_ref_from_tokens(counts, training.prompts_per_step, training.num_generations)
    outcome, transition = _summaries(clean, diag, t_ref, settings, step, slice(None))
    out = {
        "t_ref": t_ref,
        "P": DIMENSION,
        "scores": "analytic (exact, every parameter)",
        "counts": {
            "clean_groups": len(clean),
            "clean_rollouts": sum(len(r) for _, r, *_ in clean),
            "diagnostic_tasks": len(diag),
            "diagnostic_rollouts": sum(len(r) for _, r, *_ in diag),
            "groups_per_design": transition.get("groups_per_design"),
            "rho_zero_fraction": 0.0,
        },
        "outcome": outcome,
        "transition": transition,
    }
    if blocks:
        out["blocks"] = {
            name: dict(
                zip(
                    ("outcome", "transition"),
                    _summaries(clean, diag, t_ref, settings, step, columns),
                    strict=True,
                )
            )
            for name, columns in blocks.items()
        }
    return out


def _summaries(
    clean: list[tuple], diag: list[tuple], t_ref: float, settings: Settings, step: int, columns: slice
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Outcome and transition summaries of captured (group, records, scores, counts), scores restricted to
    ``columns``."""
    from paired_rollouts.probe import (
        OUTCOME_VECTOR_KEYS,
        TRANSITION_VECTOR_KEYS,
        OutcomeProbe,
        TransitionProbe,
        probe_rng_seed,
        schedule_major_order,
    )
    from paired_rollouts.probe.evidence import vector_gram

    probe = settings.probe
    K, M = probe.schedules, probe.samples
    outcome = OutcomeProbe(probe.q, t_ref)
    vectors: dict[str, np.ndarray] = {}
    for group, records, scores, _ in clean:
        s = scores[:, columns]
        coeffs = outcome.add_group(
            gram_matrix(s),
            [bool(r["true_success"]) for r in records],
            [1.0] * len(records),
            task_id=group.task["task_id"],
        )
        for key, c in coeffs.items():
            vectors[key] = vectors.get(key, 0.0) + dot(c, s)
    outcome_summary = outcome.summary(vector_gram(vectors, OUTCOME_VECTOR_KEYS))

    transition = TransitionProbe(K, M, probe.resamples, t_ref, probe_rng_seed(probe.seed, step))
    vectors = {}
    for group, records, scores, _ in diag:
        seeds = [r["schedule_seed"] for r in records]
        order = schedule_major_order(seeds, K, M)
        s = scores[order][:, columns]
        coeffs = transition.add_task(
            gram_matrix(s),
            [float(records[i]["true_success"]) for i in order],
            [1.0] * len(order),
            task_id=group.task["task_id"],
            schedule_seeds=[seeds[i] for i in order],
        )
        for key, c in coeffs.items():
            vectors[key] = vectors.get(key, 0.0) + dot(c, s)
    return outcome_summary, transition.summary(vector_gram(vectors, TRANSITION_VECTOR_KEYS))

"""Gradient-covariance probe (H1b): pure-numpy math here, torch score vectors in ``probe.scores``.

Public interface for ``probe.scores`` (and tests):

- ``OutcomeProbe(q, t_ref)`` / ``outcome_probe(...)``: outcome-noise summary of one checkpoint.
- ``TransitionProbe(K, M, R, t_ref, rng_seed)`` / ``transition_probe(...)``: transition-noise summary.
- ``probe_rng_seed(seed, step)``, ``schedule_major_order(seeds, K, M)``.
- ``probe_verdict(checkpoints)``: the H1b verdict over a trajectory's checkpoints.
"""

from __future__ import annotations

from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.probe.enumeration import (
    OUTCOME_VECTOR_KEYS,
    OutcomeProbe,
    outcome_probe,
)
from paired_rollouts.probe.transition import (
    TRANSITION_VECTOR_KEYS,
    TransitionProbe,
    probe_rng_seed,
    schedule_major_order,
    transition_probe,
)

__all__ = [
    "build_probe_register",
    "t_ref_from_tokens",
    "OUTCOME_VECTOR_KEYS",
    "TRANSITION_VECTOR_KEYS",
    "OutcomeProbe",
    "TransitionProbe",
    "outcome_probe",
    "probe_rng_seed",
    "probe_verdict",
    "schedule_major_order",
    "transition_probe",
]


def _rule(wins: int, n: int, kind: str) -> bool:
    if kind == "every":
        return n > 0 and wins == n
    if kind == "strict_majority":
        return wins > n / 2
    raise ValueError(f"unknown H1b rule {kind!r} (every | strict_majority)")


def probe_verdict(
    checkpoints: dict[Any, dict[str, Any]],
    estimator: str = "mean_centered",
    outcome: str = "every",
    transition: str = "strict_majority",
) -> dict[str, Any]:
    """H1b over one trajectory: ``checkpoints`` maps step -> {"outcome": ..., "transition": ...}.

    Defaults are the pre-registered rules (``h1b`` in the rules file): outcome passes if the MC trace
    of the paired design is below the independent one at every checkpoint; transition passes at a
    strict majority of checkpoints (against independent_resampled). The other estimator's ratios are
    reported alongside and do not enter.
    """
    other = "implemented" if estimator == "mean_centered" else "mean_centered"
    steps = sorted(checkpoints, key=int)
    if not steps:
        return {
            "outcome_noise_every_checkpoint": False,
            "transition_noise_majority": False,
            "passes": False,
            "checkpoints": 0,
            "outcome_wins": 0,
            "transition_wins": 0,
            "p13": {},
            "ratios_by_step": {},
            "implemented_ratios_by_step": {},
        }
    out_wins = tr_wins = 0
    ratios: dict[str, dict[str, Any]] = {"outcome": {}, "transition_resampled": {}}
    sw: dict[str, dict[str, Any]] = {"outcome": {}, "transition_resampled": {}}
    for step in steps:
        oc, tr = checkpoints[step]["outcome"], checkpoints[step]["transition"]
        omc, tmc = oc[estimator]["trace_var"], tr[estimator]["trace_var"]
        out_wins += omc["paired"] < omc["independent"]
        tr_wins += tmc["paired"] < tmc["independent_resampled"]
        ratios["outcome"][str(step)] = oc[estimator]["ratio_paired_over_independent"]
        ratios["transition_resampled"][str(step)] = tr[estimator]["ratio_paired_over_independent"]
        sw["outcome"][str(step)] = oc[other]["ratio_paired_over_independent"]
        sw["transition_resampled"][str(step)] = tr[other]["ratio_paired_over_independent"]
    n = len(steps)
    first = checkpoints[steps[0]]["outcome"]
    r_first, r_last = ratios["outcome"][str(steps[0])], ratios["outcome"][str(steps[-1])]
    tr_below = sum(1 for v in ratios["transition_resampled"].values() if v is not None and v < 1)
    outcome_ok, transition_ok = _rule(out_wins, n, outcome), _rule(tr_wins, n, transition)
    return {
        "rule": {"estimator": estimator, "outcome": outcome, "transition": transition},
        "outcome_noise_every_checkpoint": outcome_ok,
        "transition_noise_majority": transition_ok,
        "passes": outcome_ok and transition_ok,
        "checkpoints": n,
        "outcome_wins": int(out_wins),
        "transition_wins": int(tr_wins),
        "p13": {
            "base_lhs_at_most_half_rhs": bool(first["lhs_mean"] <= first["rhs_mean"] / 2),
            "outcome_ratio_falls": bool(
                r_first is not None and r_last is not None and n > 1 and r_last < r_first
            ),
            "transition_ratio_below_one_majority": tr_below > n / 2,
        },
        "ratios_by_step": ratios,
        f"{other}_ratios_by_step": sw,
    }


def apply_h1b_rules(
    register: dict[str, Any], h1b: dict[str, str], source: str, sha256: str | None
) -> dict[str, Any]:
    """The probe register with its H1b verdict recomputed under the frozen ``h1b`` block of the rules
    file (estimator, outcome, transition); the verdict names the rules file it applied."""
    checkpoints = register.get("checkpoints")
    if not isinstance(checkpoints, dict) or not checkpoints:
        raise UserError("probe register has no 'checkpoints'; rerun 'paired-rollouts probe assemble'")
    by_step = {int(s): v for s, v in checkpoints.items()}
    verdict = probe_verdict(
        by_step, estimator=h1b["estimator"], outcome=h1b["outcome"], transition=h1b["transition"]
    )
    verdict["rule_source"] = source
    verdict["rules_sha256"] = sha256
    return {**register, "verdict": verdict}


def t_ref_from_tokens(token_counts, prompts_per_step: int, num_generations: int) -> float:
    """T_ref = prompts_per_step x G x mean masked tokens per rollout (all captured rollouts of a checkpoint).

    One constant per checkpoint: it scales the implemented (SW) weights like the trainer's batch-level
    token normaliser and cancels in paired/independent ratios.
    """
    import numpy as np

    counts = np.asarray(token_counts, dtype=float)
    if counts.size == 0:
        raise ValueError("t_ref needs at least one rollout's token count")
    return float(prompts_per_step * num_generations * counts.mean())


def batch_equivalent(payload: dict[str, Any]) -> dict[str, float | None]:
    """Independent-design batches that match one paired batch's MC trace at this checkpoint: 1/ratio.

    At a fixed policy a trace ratio r means 1/r times as many independent group replicates for the same
    covariance trace (same target mean assumed); it says nothing about steps, tokens or final success.
    """
    out: dict[str, float | None] = {}
    for noise in ("outcome", "transition"):
        ratio = (payload.get(noise) or {}).get("mean_centered", {}).get("ratio_paired_over_independent")
        out[noise] = 1.0 / ratio if isinstance(ratio, (int, float)) and ratio > 0 else None
    return out


def build_probe_register(
    trajectory: str,
    run: str,
    checkpoints: dict[Any, dict[str, Any]],
    h1b_rules: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The probe register of docs/records.md section 6: checkpoints keyed by step (as strings) + verdict.

    ``checkpoints`` maps step -> payload with at least "outcome" and "transition" (the dicts returned
    by ``OutcomeProbe.summary``/``outcome_probe`` and ``TransitionProbe.summary``/``transition_probe``);
    ``h1b_rules`` is the rules file's ``h1b`` block (estimator, outcome, transition).
    """
    steps = sorted(int(s) for s in checkpoints)
    by_step = {int(s): dict(v, step=int(s)) for s, v in checkpoints.items()}
    for payload in by_step.values():
        payload["batch_equivalent"] = batch_equivalent(payload)
    verdict = probe_verdict(by_step, **(h1b_rules or {}))
    return {
        "trajectory": trajectory,
        "run": run,
        "steps": steps,
        "checkpoints": {str(s): by_step[s] for s in steps},
        "verdict": verdict,
        **extra,
    }

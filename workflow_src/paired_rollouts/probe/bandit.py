"""The aligned-scalar bandit: a closed example where pairing *raises* MC gradient variance.

a ~ Bernoulli(1/2), true reward r = a, scalar score S = a - 1/2, G = 8, q = 0.1. Every one of the 2^G
action tuples is one "group" weighted by its probability and pushed through the very same outcome
enumeration as the real probe (Gram K = S S^T, rho = 1, t_ref = G), so the numbers below test that code.
Expected (docs/analysis.md#aligned-scalar-bandit): contrast variance 0.4950/0.4500, MC trace 0.002615/0.005845, SW trace
0.007053/0.019724, SW update 0.3918/0.3905, lhs 0.04956, rhs 0.01367 (independent/paired).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from paired_rollouts.pairing.numeric import binomial_weights
from paired_rollouts.probe.enumeration import lhs_rhs, outcome_probe


def bandit_enumeration(p: float = 0.5, group_size: int = 8, q: float = 0.1) -> dict[str, Any]:
    g = group_size
    tuples = ((np.arange(2**g)[:, None] >> np.arange(g)[None, :]) & 1).astype(float)
    ones = tuples.sum(axis=1)
    probs = binomial_weights(p, ones, g)
    scores = [a - 0.5 for a in tuples]
    grams = [np.outer(s, s) for s in scores]
    summary = outcome_probe(
        grams,
        [a.astype(bool) for a in tuples],
        [np.ones(g)] * len(tuples),
        float(g),
        q,
        scores_by_group=scores,
        group_weights=probs,
    )
    mc, sw = summary["mean_centered"], summary["implemented"]
    return {
        "setup": {"p": p, "G": g, "q": q, "score": "a - 1/2", "t_ref": float(g), "rho": 1.0},
        "contrast_variance": {d: mc["reward_variance"][d] for d in ("independent", "paired")},
        "trace_var_mean_centered": {d: mc["trace_var"][d] for d in ("independent", "paired")},
        "trace_var_implemented": {d: sw["trace_var"][d] for d in ("independent", "paired")},
        "expected_update_implemented": {d: sw["expected_update_norm"][d] for d in ("independent", "paired")},
        "expected_update_mean_centered": {
            d: mc["expected_update_norm"][d] for d in ("independent", "paired")
        },
        "lhs": summary["lhs_mean"],
        "rhs": summary["rhs_mean"],
        "identity_residual": mc["identity_residual"],
        "orthogonal": orthogonal_case(g),
    }


def orthogonal_case(group_size: int = 8, s2: float = 1.0) -> list[dict[str, Any]]:
    """Mutually orthogonal scores with ||S_i||^2 = s2: lhs = s2 k(G-k)/G^3, rhs = s2 k(G-1)/G^3.

    Pairing lowers MC variance (lhs < rhs) exactly when k >= 2.
    """
    g = group_size
    gram = s2 * np.eye(g)
    rows = []
    for k in range(g + 1):
        success = np.arange(g) < k
        lhs, rhs = lhs_rhs(gram, success)
        rows.append(
            {
                "k": k,
                "lhs": lhs,
                "rhs": rhs,
                "lhs_closed_form": s2 * k * (g - k) / g**3,
                "rhs_closed_form": s2 * k * (g - 1) / g**3,
                "pairing_helps": bool(lhs < rhs - 1e-15),
            }
        )
    return rows


def format_bandit(result: dict[str, Any]) -> str:
    lines = [
        "aligned-scalar bandit (p=0.5, G=8, q=0.1)",
        f"{'quantity':42s} {'independent':>12s} {'paired':>12s}",
    ]
    for label, key, digits in (
        ("contrast variance Var(R_i - R_j)", "contrast_variance", 4),
        ("Tr Var(g), mean-centered (MC)", "trace_var_mean_centered", 6),
        ("Tr Var(g), implemented (SW)", "trace_var_implemented", 6),
        ("expected update |E g|, implemented", "expected_update_implemented", 4),
        ("expected update |E g|, mean-centered", "expected_update_mean_centered", 6),
    ):
        row = result[key]
        lines.append(f"{label:42s} {row['independent']:12.{digits}f} {row['paired']:12.{digits}f}")
    lines.append(
        f"lhs = E||g_c||^2 = {result['lhs']:.6f}; rhs = {result['rhs']:.6f}; "
        f"identity residual {result['identity_residual']:.2e}"
    )
    helps = [r["k"] for r in result["orthogonal"] if r["pairing_helps"]]
    lines.append(f"orthogonal scores: pairing helps for k in {helps}")
    return "\n".join(lines)

"""Outcome-noise probe: exact expectations over grader flips for paired and independent groups.

Observation model (one-sided outcome noise): R_i = Z_i r_i with Z_i ~ Bernoulli(1 - q); the Z_i are
independent in the independent design and one shared Z in the paired design. Everything is computed
from the within-group Gram matrix K_ij = S_i . S_j of the rollouts' score vectors, so that no
P-dimensional vector is needed here; the cross-group terms (||sum of expected group gradients||^2)
need the score vectors and come in as the Gram of a few running vectors (``vector_gram``).

Estimators: ``mean_centered`` (MC) a_i = (R_i - mean R)/G, with closed forms
E||g_paired||^2 = (1-q) lhs, E||g_indep||^2 = (1-q)^2 lhs + q(1-q) rhs, E a = (1-q) a_c; and
``implemented`` (SW) a_i = A_i rho_i / t_ref with A the group-normalised advantage, by exact
enumeration of the flip masks (independent: all 2^k keep/flip masks of the k successes; paired: all
kept or all flipped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError
from paired_rollouts.pairing.numeric import binomial_weights, dot, gram_matrix, quadratic, row_quadratics
from paired_rollouts.settings import EXACT_OUTCOME_GROUP_MAX

ESTIMATORS = ("mean_centered", "implemented")
OUTCOME_DESIGNS = ("paired", "independent")
OUTCOME_VECTOR_KEYS = tuple(f"{e}/{d}" for e in ESTIMATORS for d in OUTCOME_DESIGNS)
ADV_EPS = 1e-4
ZERO_VAR_TOL = 1e-12


def group_advantages(obs: np.ndarray) -> np.ndarray:
    """TRL-style group advantage (R - mean)/(std_ddof1 + 1e-4) along the last axis; 0 for a flat group."""
    obs = np.asarray(obs, dtype=float)
    g = obs.shape[-1]
    centred = obs - obs.mean(axis=-1, keepdims=True)
    if g < 2:
        return np.zeros_like(obs)
    std = obs.std(axis=-1, ddof=1, keepdims=True)
    adv = centred / (std + ADV_EPS)
    return np.where(std <= ZERO_VAR_TOL, 0.0, adv)


def mean_centered_weights(obs: np.ndarray) -> np.ndarray:
    """MC weights (R - mean R)/G along the last axis."""
    obs = np.asarray(obs, dtype=float)
    return (obs - obs.mean(axis=-1, keepdims=True)) / obs.shape[-1]


def implemented_weights(obs: np.ndarray, rho: np.ndarray, t_ref: float) -> np.ndarray:
    """SW weights A(R) * rho / t_ref (the DAPO token-level sum with one batch normaliser)."""
    return group_advantages(obs) * np.asarray(rho, dtype=float) / float(t_ref)


def flip_masks(success: np.ndarray, q: float, design: str) -> tuple[np.ndarray, np.ndarray]:
    """All observation outcomes of a group with their probabilities: (probs (n,), obs (n x G))."""
    r = np.asarray(success, dtype=float)
    idx = np.flatnonzero(r > 0)
    k = idx.size
    if k == 0:
        return np.ones(1), r[None, :].copy()
    if design == "paired":
        return np.array([1.0 - q, q]), np.stack([r, np.zeros_like(r)])
    if design != "independent":
        raise ValueError(f"unknown outcome design {design!r}")
    if k > EXACT_OUTCOME_GROUP_MAX:  # the settings refuse such groups; never allocate 2^k rows here
        raise ValueError(f"{k} successes in a group: exact enumeration stops at {EXACT_OUTCOME_GROUP_MAX}")
    bits = ((np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1).astype(float)  # 1 = kept
    kept = bits.sum(axis=1)
    probs = binomial_weights(1.0 - q, kept, k)  # (1-q)^kept q^(k-kept)
    obs = np.zeros((2**k, r.size))
    obs[:, idx] = bits
    return probs, obs


def lhs_rhs(gram: np.ndarray, success: np.ndarray) -> tuple[float, float]:
    """lhs = ||g_c||^2 (clean MC gradient), rhs = (1/G^2) sum_i r_i ||S_i - S_bar||^2."""
    k = np.asarray(gram, dtype=float)
    r = np.asarray(success, dtype=float)
    g = r.size
    a_c = (r - r.mean()) / g
    lhs = quadratic(a_c, k)
    dev_sq = np.diag(k) - 2.0 / g * k.sum(axis=1) + k.sum() / g**2
    rhs = float(dot(r, dev_sq)) / g**2
    return lhs, rhs


def _contrast_variance(probs: np.ndarray, obs: np.ndarray) -> float:
    """Var(R_i - R_j) = 2 E[within-group sample variance]."""
    if obs.shape[1] < 2:
        return 0.0
    return float(dot(probs, 2.0 * obs.var(axis=1, ddof=1)))


def enumerate_estimator(
    gram: np.ndarray, probs: np.ndarray, obs: np.ndarray, weights_fn
) -> tuple[float, np.ndarray]:
    """E||g||^2 = sum_masks prob a^T K a and E a = sum_masks prob a, for a = weights_fn(obs)."""
    a = weights_fn(obs)
    esq = float(dot(probs, row_quadratics(a, gram)))
    return esq, dot(probs, a)


@dataclass
class OutcomeGroup:
    """The exact expectations of one group (see module docstring)."""

    task_id: Any
    k: int
    lhs: float
    rhs: float
    weight: float
    esq: dict[str, float] = field(default_factory=dict)  # "estimator/design" -> E||g||^2
    ea: dict[str, np.ndarray] = field(default_factory=dict)  # "estimator/design" -> E a (G,)
    within: dict[str, float] = field(default_factory=dict)  # E||g||^2 - ||E g||^2
    contrast: dict[str, float] = field(default_factory=dict)  # design -> Var(R_i - R_j)
    masks: dict[str, int] = field(default_factory=dict)


def outcome_group(
    gram: np.ndarray,
    success: Sequence[Any],
    rho: Sequence[float] | None,
    t_ref: float,
    q: float,
    weight: float = 1.0,
    task_id: Any = None,
    enumerate_mean_centered: bool = False,
) -> OutcomeGroup:
    """Exact per-group terms; MC by closed form (or by enumeration, to check the closed form)."""
    k_mat = np.asarray(gram, dtype=float)
    r = np.asarray([float(bool(s)) for s in success])
    g = r.size
    if k_mat.shape != (g, g):
        raise UserError(f"outcome probe: Gram of shape {k_mat.shape} for a group of {g} rollouts")
    rho_v = np.ones(g) if rho is None else np.asarray(rho, dtype=float)
    lhs, rhs = lhs_rhs(k_mat, r)
    out = OutcomeGroup(task_id=task_id, k=int(r.sum()), lhs=lhs, rhs=rhs, weight=float(weight))
    a_c = (r - r.mean()) / g
    for design in OUTCOME_DESIGNS:
        probs, obs = flip_masks(r, q, design)
        out.masks[design] = int(probs.size)
        out.contrast[design] = _contrast_variance(probs, obs)
        if enumerate_mean_centered:
            esq, ea = enumerate_estimator(k_mat, probs, obs, mean_centered_weights)
        else:
            ea = (1.0 - q) * a_c
            esq = (1.0 - q) * lhs if design == "paired" else (1.0 - q) ** 2 * lhs + q * (1.0 - q) * rhs
        out.esq[f"mean_centered/{design}"], out.ea[f"mean_centered/{design}"] = esq, ea
        esq, ea = enumerate_estimator(k_mat, probs, obs, lambda o: implemented_weights(o, rho_v, t_ref))
        out.esq[f"implemented/{design}"], out.ea[f"implemented/{design}"] = esq, ea
    for key, ea in out.ea.items():
        out.within[key] = out.esq[key] - quadratic(ea, k_mat)
    return out


class OutcomeProbe:
    """Streaming form: add groups one by one, accumulate the running vectors yourself, then summarise.

    ``add_group`` returns, per key of ``OUTCOME_VECTOR_KEYS``, the coefficients c (length G) that the
    caller folds into a running vector V_key += sum_i c_i S_i. ``summary(vector_gram)`` then takes the
    4 x 4 matrix of dot products V_a . V_b in ``OUTCOME_VECTOR_KEYS`` order.
    """

    def __init__(self, q: float, t_ref: float) -> None:
        self.q, self.t_ref = float(q), float(t_ref)
        self.groups: list[OutcomeGroup] = []

    def add_group(
        self, gram, success, rho=None, weight: float = 1.0, task_id: Any = None
    ) -> dict[str, np.ndarray]:
        grp = outcome_group(gram, success, rho, self.t_ref, self.q, weight, task_id)
        self.groups.append(grp)
        return {key: grp.weight * grp.ea[key] for key in OUTCOME_VECTOR_KEYS}

    def summary(self, vector_gram: np.ndarray) -> dict[str, Any]:
        return summarize_outcome(self.groups, vector_gram, self.q)


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den != 0 else None


def success_shares(counts: list[int], group_size: int) -> dict[str, float]:
    """The clean rollouts' mean true success and the share of clean groups with mixed outcomes
    (0 < k < G, the groups whose MC weights are non-zero), from the groups' success counts k."""
    return {
        "clean_success": sum(counts) / (group_size * len(counts)),
        "nonzero_share": sum(1 for k in counts if 0 < k < group_size) / len(counts),
    }


def summarize_outcome(groups: list[OutcomeGroup], vector_gram: np.ndarray, q: float) -> dict[str, Any]:
    """The checkpoint summary of docs/records.md 6.1 (group weights normalised to sum 1)."""
    if not groups:
        raise UserError("outcome probe: no groups")
    vg = np.asarray(vector_gram, dtype=float)
    if vg.shape != (len(OUTCOME_VECTOR_KEYS),) * 2:
        raise UserError(
            f"outcome probe: vector_gram must be {len(OUTCOME_VECTOR_KEYS)} x {len(OUTCOME_VECTOR_KEYS)}"
        )
    w = np.array([g.weight for g in groups])
    total = w.sum()
    wn = w / total
    lhs = np.array([g.lhs for g in groups])
    rhs = np.array([g.rhs for g in groups])
    lhs_mean, rhs_mean = float(dot(wn, lhs)), float(dot(wn, rhs))
    by_k: dict[str, Any] = {}
    for k in sorted({g.k for g in groups}):
        sel = np.array([g.k == k for g in groups])
        ws = wn[sel] / wn[sel].sum()
        ratios = np.array([gl / gr if gr > 0 else 0.0 for gl, gr in zip(lhs[sel], rhs[sel], strict=True)])
        by_k[str(k)] = {
            "count": int(sel.sum()),
            "lhs_mean": float(dot(ws, lhs[sel])),
            "rhs_mean": float(dot(ws, rhs[sel])),
            "lhs_over_rhs": float(dot(ws, ratios)),
        }
    size = len(groups[0].ea[OUTCOME_VECTOR_KEYS[0]])
    out: dict[str, Any] = {
        "q": q,
        "G": size,
        "groups": len(groups),
        **success_shares([g.k for g in groups], size),
        "lhs_mean": lhs_mean,
        "rhs_mean": rhs_mean,
        "lhs_over_rhs": _ratio(lhs_mean, rhs_mean),
        "condition_holds": lhs_mean < rhs_mean,
        "by_k": by_k,
        "success_counts": [g.k for g in groups],
        "task_ids": [g.task_id for g in groups],
        "masking": {
            "independent": "all 2^k keep/flip masks over the k successes, prob (1-q)^kept q^flipped",
            "paired": "two masks: all kept (1-q), all flipped (q)",
            "masks_enumerated": {d: int(sum(g.masks[d] for g in groups)) for d in OUTCOME_DESIGNS},
        },
        "table": [{"task_id": g.task_id, "k_success": g.k, "lhs": g.lhs, "rhs": g.rhs} for g in groups],
    }
    for est in ESTIMATORS:
        block: dict[str, Any] = {
            key: {}
            for key in (
                "trace_var",
                "trace_var_within",
                "trace_var_between",
                "expected_sq_norm",
                "expected_update_norm",
                "reward_variance",
            )
        }
        for design in OUTCOME_DESIGNS:
            key = f"{est}/{design}"
            i = OUTCOME_VECTOR_KEYS.index(key)
            esq = float(dot(wn, np.array([g.esq[key] for g in groups])))
            update_sq = float(vg[i, i]) / total**2
            trace = esq - update_sq
            within = float(dot(wn, np.array([g.within[key] for g in groups])))
            block["trace_var"][design] = trace
            block["trace_var_within"][design] = within
            block["trace_var_between"][design] = trace - within
            block["expected_sq_norm"][design] = esq
            block["expected_update_norm"][design] = float(np.sqrt(max(update_sq, 0.0)))
            block["reward_variance"][design] = float(dot(wn, np.array([g.contrast[design] for g in groups])))
        ip, ii = OUTCOME_VECTOR_KEYS.index(f"{est}/paired"), OUTCOME_VECTOR_KEYS.index(f"{est}/independent")
        norm = np.sqrt(max(vg[ip, ip], 0.0) * max(vg[ii, ii], 0.0))
        block["cosine_paired_independent"] = float(vg[ip, ii] / norm) if norm > 0 else None
        block["ratio_paired_over_independent"] = _ratio(
            block["trace_var"]["paired"], block["trace_var"]["independent"]
        )
        block["ratio_within_paired_over_independent"] = _ratio(
            block["trace_var_within"]["paired"], block["trace_var_within"]["independent"]
        )
        if est == "mean_centered":
            block["identity_residual"] = (
                block["trace_var"]["paired"]
                - block["trace_var"]["independent"]
                - q * (1 - q) * (lhs_mean - rhs_mean)
            )
        out[est] = block
    return out


def vector_gram_from_scores(
    coeffs_by_group: list[dict[str, np.ndarray]], scores_by_group: Sequence[Any], keys: Sequence[str]
) -> np.ndarray:
    """Running vectors V_key = sum_groups c^T S from explicit score matrices (G x P each), and their Gram."""
    vecs = {key: None for key in keys}
    for coeffs, scores in zip(coeffs_by_group, scores_by_group, strict=True):
        s = np.asarray(scores, dtype=float)
        if s.ndim == 1:
            s = s[:, None]
        for key in keys:
            contrib = dot(coeffs[key], s)
            vecs[key] = contrib if vecs[key] is None else vecs[key] + contrib
    mat = np.stack([vecs[k] for k in keys])
    return gram_matrix(mat)


def vector_gram_from_full_gram(
    coeffs_by_group: list[dict[str, np.ndarray]], full_gram: np.ndarray, keys: Sequence[str]
) -> np.ndarray:
    """Same, from the Gram of all rollouts (groups concatenated in order)."""
    c = np.stack([np.concatenate([coeffs[k] for coeffs in coeffs_by_group]) for k in keys])
    full = np.asarray(full_gram, dtype=float)
    if full.shape != (c.shape[1], c.shape[1]):
        raise UserError(f"full_gram must be {c.shape[1]} x {c.shape[1]} (all rollouts in group order)")
    return dot(dot(c, full), c.T)


def outcome_probe(
    gram_by_group: Sequence[np.ndarray],
    success_by_group: Sequence[Sequence[Any]],
    rho_by_group: Sequence[Sequence[float]] | None,
    t_ref: float,
    q: float,
    *,
    scores_by_group: Sequence[Any] | None = None,
    full_gram: np.ndarray | None = None,
    vector_gram: np.ndarray | None = None,
    group_weights: Sequence[float] | None = None,
    task_ids: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """One checkpoint's outcome summary (docs/records.md 6.1) in one call.

    The cross-group terms come from exactly one of: ``scores_by_group`` (G x P arrays), ``full_gram``
    (the (nG x nG) Gram of all rollouts, groups concatenated), or a precomputed ``vector_gram``
    (use ``OutcomeProbe`` to get the coefficients for it).
    """
    n = len(gram_by_group)
    if len(success_by_group) != n:
        raise UserError("outcome probe: one success list per Gram matrix is required")
    if sum(x is not None for x in (scores_by_group, full_gram, vector_gram)) != 1:
        raise UserError("outcome probe: give exactly one of scores_by_group, full_gram, vector_gram")
    probe = OutcomeProbe(q, t_ref)
    coeffs = [
        probe.add_group(
            gram_by_group[i],
            success_by_group[i],
            None if rho_by_group is None else rho_by_group[i],
            1.0 if group_weights is None else float(group_weights[i]),
            None if task_ids is None else task_ids[i],
        )
        for i in range(n)
    ]
    if scores_by_group is not None:
        vector_gram = vector_gram_from_scores(coeffs, scores_by_group, OUTCOME_VECTOR_KEYS)
    elif full_gram is not None:
        vector_gram = vector_gram_from_full_gram(coeffs, full_gram, OUTCOME_VECTOR_KEYS)
    return probe.summary(vector_gram)

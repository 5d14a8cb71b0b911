"""A log-linear softmax policy over a finite action menu, with an exact analytic score.

The policy sees a discrete *context* (what the last observation was, what the plan asks next) and a set
of available actions; each (context, action) pair except the context's reference action owns one
parameter, the reference action's feature is zero. So pi(a | c, avail) = exp(theta[c,a]) / sum over the
available actions, and the score of one decision is e[chosen] - sum_a pi(a) e[a]: tool results never
enter it (they only decide which context comes next), as in the paper's masked token loss.

A task's difficulty shifts every mistake logit (wrong argument, skipped step, finishing early) by d_t =
``difficulty`` x a standard normal fixed by the task id. It is not a parameter (the same theta acts on
every task), so the score keeps its form with the task's own probabilities; it gives the tasks the spread
of step-0 success the paper's agent had (docs/training.md, "What the surrogate lacked").
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist

import numpy as np

from paired_rollouts.settings import SurrogateSettings

# Actions. NEXT = make the next planned call / move on past a failed call (the reference in most contexts).
NEXT, RETRY, WAIT, PAGE, REREAD, CHECK, WRONG, SKIP, FINISH, PROCEED = (
    "next",
    "retry",
    "wait",
    "page",
    "reread",
    "check",
    "wrong_argument",
    "skip_step",
    "finish_early",
    "proceed",
)

# Context -> its actions; the first is the reference (no parameter).
CONTEXTS: dict[str, tuple[str, ...]] = {
    "next_read": (NEXT, SKIP, FINISH),
    "next_write": (NEXT, WRONG, SKIP, FINISH),
    "next_write_unread": (NEXT, WRONG, SKIP, FINISH),
    "after_write": (PROCEED, REREAD, FINISH),
    "after_last_write": (FINISH, REREAD),
    "unavailable_read": (NEXT, RETRY, FINISH),
    "unavailable_write": (NEXT, RETRY, FINISH),
    "rate_read": (NEXT, WAIT, RETRY, FINISH),
    "rate_write": (NEXT, WAIT, RETRY, FINISH),
    "timeout": (NEXT, CHECK, RETRY, FINISH),
    "error": (NEXT, RETRY, FINISH),
    "truncated": (NEXT, PAGE, FINISH),
    "waited": (NEXT, RETRY, FINISH),
    "unverified": (NEXT, RETRY, FINISH),
}
CONTEXT_NAMES: tuple[str, ...] = tuple(CONTEXTS)


def _parameter_table() -> tuple[list[tuple[str, str]], dict[str, list[int]]]:
    names: list[tuple[str, str]] = []
    index: dict[str, list[int]] = {}
    for ctx, actions in CONTEXTS.items():
        row = [-1]
        for action in actions[1:]:
            row.append(len(names))
            names.append((ctx, action))
        index[ctx] = row
    return names, index


PARAMETERS, PARAM_INDEX = _parameter_table()
P = len(PARAMETERS)


def parameter_names() -> list[str]:
    return [f"{ctx}/{action}" for ctx, action in PARAMETERS]


MISTAKES = frozenset({WRONG, SKIP, FINISH})
# 1 on the mistakes, 0 elsewhere: the direction a task's difficulty shifts the logits.
DIFFICULTY_DIRECTION: tuple[float, ...] = tuple(
    1.0 if action in MISTAKES else 0.0 for _, action in PARAMETERS
)


@dataclass(frozen=True)
class Shape:
    """What the 32 action parameters leave out (config `surrogate:`, fitted offline: docs/training.md):
    the spread of task difficulty and the phrasing tokens written per decision and after an error."""

    difficulty: float = 0.0
    tokens: int = 0
    error_tokens: int = 0

    @classmethod
    def of(cls, surrogate: SurrogateSettings) -> Shape:
        """From the scale's ``surrogate:`` section."""
        return cls(surrogate.task_difficulty, surrogate.phrasing_tokens, surrogate.error_phrasing_tokens)


PLAIN = Shape()  # the 32 action parameters alone: no difficulty spread, no phrasing


@cache
def task_effect(task_id: str) -> float:
    """The task's standard-normal difficulty draw, fixed by its id (a SHA-256-derived uniform)."""
    from paired_rollouts.noise.seeds import derive_seed

    return NormalDist().inv_cdf((derive_seed("surrogate-difficulty", task_id) + 0.5) / 2.0**64)


def task_logits(theta: Sequence[float], task_id: str, difficulty: float) -> list[float]:
    """The action parameters as the policy applies them to one task (theta + d_t * direction)."""
    if difficulty == 0.0:
        return [float(x) for x in theta[:P]]
    shift = difficulty * task_effect(task_id)
    return [float(x) + shift * d for x, d in zip(theta[:P], DIFFICULTY_DIRECTION, strict=True)]


class Policy:
    """theta (P floats) plus fast per-context logits; one instance per parameter vector."""

    def __init__(self, theta: Sequence[float]) -> None:
        theta = [float(x) for x in theta]
        if len(theta) != P:
            raise ValueError(f"theta has {len(theta)} entries, the surrogate policy has {P}")
        self.theta = theta
        self._logits = {c: [0.0 if i < 0 else theta[i] for i in PARAM_INDEX[c]] for c in CONTEXTS}
        self._probs: dict[tuple[str, tuple[int, ...]], list[float]] = {}
        self._cdf: dict[tuple[str, tuple[int, ...]], list[float]] = {}
        self._score_terms: dict[tuple[str, tuple[int, ...]], tuple[tuple[int, float], ...]] = {}

    def probabilities(self, ctx: str, avail: Sequence[int]) -> list[float]:
        """pi over the available action positions ``avail`` (indices into CONTEXTS[ctx]); cached per menu."""
        key = (ctx, tuple(avail))
        probs = self._probs.get(key)
        if probs is None:
            logits = self._logits[ctx]
            top = max(logits[j] for j in avail)
            weights = [math.exp(logits[j] - top) for j in avail]
            total = sum(weights)
            probs = self._probs[key] = [w / total for w in weights]
        return probs

    def cdf(self, ctx: str, avail: tuple[int, ...]) -> list[float]:
        """The cumulative probabilities over the menu that ``choose`` bisects; cached per menu."""
        key = (ctx, avail)
        cdf = self._cdf.get(key)
        if cdf is None:
            acc, cdf = 0.0, []
            for p in self.probabilities(ctx, avail):
                acc += p
                cdf.append(acc)
            self._cdf[key] = cdf
        return cdf

    def choose(self, ctx: str, avail: tuple[int, ...], rng: random.Random) -> int:
        """Sample one available position (inverse CDF on one uniform draw)."""
        if len(avail) == 1:
            return avail[0]
        cdf = self._cdf.get((ctx, avail)) or self.cdf(ctx, avail)
        # the first position whose cumulative probability exceeds u (the cdf never decreases: a sum of
        # non-negative floats), the last one if rounding left u above them all
        k = bisect_right(cdf, rng.random())
        return avail[k] if k < len(avail) else avail[-1]

    def score_terms(self, ctx: str, avail: tuple[int, ...]) -> tuple[tuple[int, float], ...]:
        """(parameter index, pi) of the menu's actions that own a parameter, in menu order; cached per menu."""
        key = (ctx, avail)
        terms = self._score_terms.get(key)
        if terms is None:
            index = PARAM_INDEX[ctx]
            pairs = zip(avail, self.probabilities(ctx, avail), strict=True)
            terms = self._score_terms[key] = tuple((index[j], p) for j, p in pairs if index[j] >= 0)
        return terms


Decision = tuple[str, tuple[int, ...], int]  # (context, available positions, chosen position)


def log_probability(theta: Sequence[float], decisions: Sequence[Decision]) -> float:
    """log pi_theta of an episode's own choices (the quantity whose gradient is the score)."""
    policy = Policy(theta)
    total = 0.0
    for ctx, avail, chosen in decisions:
        probs = policy.probabilities(ctx, avail)
        total += math.log(probs[avail.index(chosen)])
    return total


def score(theta: Sequence[float], decisions: Sequence[Decision], policy: Policy | None = None) -> np.ndarray:
    """The exact score d/dtheta log pi_theta(decisions): sum over decisions of e[chosen] - E_pi[e].

    Accumulated in Python floats (IEEE doubles, the same operations in the same order as on a float64
    array: per decision, minus each available action's pi, then plus one for the chosen action)."""
    policy = policy or Policy(theta)
    out = [0.0] * P
    for ctx, avail, chosen in decisions:
        if len(avail) == 1:
            continue
        for i, p in policy.score_terms(ctx, avail):
            out[i] -= p
        i = PARAM_INDEX[ctx][chosen]
        if i >= 0:
            out[i] += 1.0
    return np.array(out, dtype=np.float64)


def counted_decisions(decisions: Sequence[Decision]) -> int:
    """Decisions with a real choice (more than one action available): the surrogate's 'tokens'."""
    return sum(1 for _, avail, _ in decisions if len(avail) > 1)

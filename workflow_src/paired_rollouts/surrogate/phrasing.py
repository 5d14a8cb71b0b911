"""The policy's reward-irrelevant choices: the words it writes around each decision.

An LLM's score vector is mostly the sampling noise of its own tokens: thousands of choices per episode
that the environment never reads, each pulling the gradient in its own direction. The 32 action
parameters alone have none of that, so the surrogate's gradient was nearly all signal and pairing could
not lower its noise (docs/training.md, "What the surrogate lacked"). Here every decision also writes
``tokens`` phrasing tokens (``error_tokens`` after an error observation: an LLM says more after a failed
call), each drawn from one softmax over a vocabulary of ``VOCABULARY`` tokens with one parameter per
token. The tokens never reach the environment; their score is exact: per episode, the token counts minus
their expectation, counts - n * pi. The draws are made after the episode, from their own generator, so
behaviour and records do not depend on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import accumulate

import numpy as np

from paired_rollouts.surrogate.policy import Decision, P

# The trained vector is the 32 action parameters plus the vocabulary: 1024 = 4^5 coordinates, so the
# optimizer's Walsh-Hadamard basis (surrogate/basis.py) is exact.
DIMENSION = 1024
VOCABULARY = DIMENSION - P
BUCKETS = 1 << 14  # Phrasing.inverse_cdf's table: 16 buckets per vocabulary entry, a few hold a cdf value
# Contexts entered right after a failed call (the agent has just read an error).
ERROR_CONTEXTS = frozenset(
    {"unavailable_read", "unavailable_write", "rate_read", "rate_write", "timeout", "error", "unverified"}
)


def phrase_names() -> list[str]:
    return [f"phrase/{v:04d}" for v in range(VOCABULARY)]


class Phrasing:
    """The phrasing softmax of one parameter vector (the VOCABULARY entries after the action parameters)."""

    def __init__(self, theta_phrase: Sequence[float], tokens: int, error_tokens: int) -> None:
        values = [float(x) for x in theta_phrase]
        if len(values) != VOCABULARY:
            raise ValueError(f"{len(values)} phrasing parameters, the vocabulary has {VOCABULARY}")
        top = max(values)
        weights = [math.exp(v - top) for v in values]
        total = math.fsum(weights)
        self.pi = np.asarray([w / total for w in weights])
        self.cdf = np.asarray(list(accumulate(self.pi.tolist())))
        self.tokens, self.error_tokens = int(tokens), int(error_tokens)
        self._buckets: tuple[np.ndarray, np.ndarray] | None = None

    def inverse_cdf(self, u: np.ndarray) -> np.ndarray:
        """``np.searchsorted(self.cdf, u, side="right")`` (how many cdf values are <= u) for uniforms in
        [0, 1), through a table of BUCKETS equal buckets: for u in bucket b = floor(u * BUCKETS) (exact:
        BUCKETS is a power of two) the answer lies between the counts at the bucket's two ends, so where
        they agree (all but the few buckets holding a cdf value) it is read off; the rest are searched.
        The same integers, several times faster on a step's thousands of unsorted draws."""
        if self._buckets is None:
            edges = np.arange(BUCKETS + 1, dtype=np.float64) / BUCKETS
            self._buckets = (
                np.searchsorted(self.cdf, edges[:-1], side="right"),  # cdf values <= the bucket's start
                np.searchsorted(self.cdf, edges[1:], side="left"),  # cdf values < the bucket's end
            )
        low, high = self._buckets
        bucket = (u * BUCKETS).astype(np.int64)
        found = low[bucket]
        open_ = np.flatnonzero(high[bucket] != found)
        if open_.size:
            found[open_] = np.searchsorted(self.cdf, u[open_], side="right")
        return found

    def count(self, decisions: Sequence[Decision]) -> int:
        """Phrasing tokens an episode writes: ``tokens`` per decision, ``error_tokens`` after an error."""
        return sum(self.error_tokens if ctx in ERROR_CONTEXTS else self.tokens for ctx, _, _ in decisions)

    def draw(self, episodes: Sequence[Sequence[Decision]], rng: np.random.Generator) -> list[np.ndarray]:
        """Every episode's tokens, in episode order (one uniform each, inverse CDF)."""
        n = [self.count(d) for d in episodes]
        tokens = np.minimum(self.inverse_cdf(rng.random(sum(n))), VOCABULARY - 1)
        return np.split(tokens, np.cumsum(n)[:-1]) if n else []

    def score(self, tokens: Sequence[np.ndarray]) -> np.ndarray:
        """Exact scores of the episodes' tokens (len(tokens) x VOCABULARY): counts - n * pi."""
        n = np.asarray([len(t) for t in tokens], dtype=np.int64)
        owner = np.repeat(np.arange(len(tokens)), n)
        drawn = np.concatenate(tokens) if len(tokens) else np.zeros(0, dtype=np.int64)
        counts = np.bincount(owner * VOCABULARY + drawn, minlength=len(tokens) * VOCABULARY)
        return counts.reshape(len(tokens), VOCABULARY) - n[:, None] * self.pi[None, :]

    def log_probability(self, tokens: np.ndarray) -> float:
        """log pi of one episode's tokens (the quantity whose gradient is ``score``)."""
        return math.fsum(math.log(p) for p in self.pi[tokens].tolist())

    def scores(self, episodes: Sequence[Sequence[Decision]], rng: np.random.Generator) -> np.ndarray:
        """Draw the episodes' tokens and return their exact scores."""
        return self.score(self.draw(episodes, rng))


def phrasing_rng(*key: object) -> np.random.Generator:
    """The phrasing tokens' own generator (PCG64 from a derived seed: the same stream on any machine)."""
    from paired_rollouts.noise.seeds import derive_seed

    return np.random.Generator(np.random.PCG64(derive_seed("surrogate-phrasing", *key)))

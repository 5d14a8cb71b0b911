"""The optimizer's coordinates: a fixed random orthonormal basis of the parameter space.

A LoRA coordinate is not a behaviour: every coordinate of an LLM's adapter moves many token probabilities,
and Adam normalises each coordinate by its own gradient noise. With one coordinate per (context, action)
Adam instead steps every behaviour at full speed on its own clean signal. So Adam updates w = B theta,
where B = H diag(s) / sqrt(D) is a randomised Walsh-Hadamard transform (H the Sylvester matrix, s fixed
random signs): every trained coordinate mixes every parameter with weight 1/sqrt(D). B is orthonormal,
so traces, Gram matrices and the probe are unchanged; only the optimizer sees the mixing. The transform is
adds and subtracts of float64 (D = 4^5, sqrt(D) = 32 exactly): the same bits on any machine.
"""

from __future__ import annotations

import random

import numpy as np

from paired_rollouts.surrogate.phrasing import DIMENSION

SIGN_SEED = 20261201


def _signs() -> np.ndarray:
    rng = random.Random(SIGN_SEED)
    return np.asarray([1.0 if rng.random() < 0.5 else -1.0 for _ in range(DIMENSION)])


SIGNS = _signs()
SCALE = 32.0  # sqrt(DIMENSION)


def _hadamard(x: np.ndarray) -> np.ndarray:
    """Unnormalised fast Walsh-Hadamard transform of a vector of length DIMENSION."""
    out = np.array(x, dtype=np.float64)
    h = 1
    while h < DIMENSION:
        pairs = out.reshape(-1, 2, h)
        out = np.concatenate([pairs[:, 0] + pairs[:, 1], pairs[:, 0] - pairs[:, 1]], axis=1).reshape(-1)
        h *= 2
    return out


def to_trained(theta: np.ndarray) -> np.ndarray:
    """w = H (s * theta) / sqrt(D): the coordinates Adam updates (also how a gradient maps)."""
    return _hadamard(SIGNS * np.asarray(theta, dtype=np.float64)) / SCALE


def to_parameters(w: np.ndarray) -> np.ndarray:
    """theta = s * (H w) / sqrt(D): the inverse of ``to_trained``."""
    return SIGNS * _hadamard(w) / SCALE

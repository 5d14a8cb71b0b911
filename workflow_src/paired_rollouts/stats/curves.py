"""Learning curves: AUC, steps-to-threshold and episode summaries.

The AUC is a normalised trapezoid so that runs evaluated at different step grids (paper: 0..100 by
20; stand-in: 0..8 by 4) give numbers on the same 0-1 scale as the curve itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError


def auc_weights(steps: Sequence[float]) -> np.ndarray:
    """Trapezoid weights that turn a curve at ``steps`` into its mean over [first, last].

    For 0, 20, ..., 100 these are .1 .2 .2 .2 .2 .1. A single step has weight 1 (the curve value).
    """
    x = np.asarray(steps, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise UserError("AUC needs at least one evaluated step")
    if np.any(np.diff(x) <= 0):
        raise UserError(f"AUC steps must be strictly increasing, got {list(steps)}")
    if x.size == 1:
        return np.ones(1)
    span = x[-1] - x[0]
    gaps = np.diff(x)
    weights = np.zeros_like(x)
    weights[:-1] += gaps / 2
    weights[1:] += gaps / 2
    return weights / span


def auc(steps: Sequence[float], values: Sequence[float]) -> float:
    """Normalised trapezoidal area under ``values`` evaluated at ``steps``."""
    v = np.asarray(values, dtype=float)
    w = auc_weights(steps)
    if v.shape[-1] != w.size:
        raise UserError(f"AUC: {v.shape[-1]} values for {w.size} steps")
    return float(v @ w)


def steps_to_threshold(steps: Sequence[float], values: Sequence[float], threshold: float) -> float | None:
    """First step where the curve reaches ``threshold``, interpolated linearly; None if censored.

    If the first evaluated point already reaches it, that point's step is returned (no extrapolation
    to earlier steps).
    """
    x = [float(s) for s in steps]
    y = [float(v) for v in values]
    if len(x) != len(y):
        raise UserError(f"steps_to_threshold: {len(y)} values for {len(x)} steps")
    for i, value in enumerate(y):
        if value >= threshold:
            if i == 0:
                return x[0]
            x0, y0 = x[i - 1], y[i - 1]
            return x0 + (threshold - y0) * (x[i] - x0) / (value - y0)
    return None


def round4(value: Any) -> Any:
    """Round floats (also inside lists/dicts) to 4 decimals for the registers; None stays None."""
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float | np.floating):
        if not np.isfinite(value):
            return None
        out = round(float(value), 4)
        return 0.0 if out == 0 else out
    if isinstance(value, dict):
        return {k: round4(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round4(v) for v in value]
    if isinstance(value, np.ndarray):
        return [round4(v) for v in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    return value

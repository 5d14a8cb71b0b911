"""Learning curves: AUC, steps-to-threshold and episode summaries.

The AUC is a normalised trapezoid so that runs evaluated at different step grids (paper: 0..100 by
20; stand-in: 0..8 by 4) give numbers on the same 0-1 scale as the curve itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError
from paired_rollouts.pairing.bootstrap import auc_weights  # the one implementation (public API)
from paired_rollouts.pairing.numeric import dot


def auc(steps: Sequence[float], values: Sequence[float]) -> float:
    """Normalised trapezoidal area under ``values`` evaluated at ``steps``."""
    v = np.asarray(values, dtype=float)
    w = auc_weights(steps)
    if v.shape[-1] != w.size:
        raise UserError(f"AUC: {v.shape[-1]} values for {w.size} steps")
    return float(dot(v, w))


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

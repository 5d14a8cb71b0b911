"""The study's bootstrap: the public pairing API's implementation (``paired_rollouts.pairing.bootstrap``).

Seeds are resampled as pairs and tasks once for everything (docs/analysis.md#paired-bootstrap); the
module is kept so the study's stages import their statistics from ``stats``.
"""

from paired_rollouts.pairing.bootstrap import (
    draw_seed_task_indices,
    paired_bootstrap,
    percentile_interval,
    resample_counts,
    task_bootstrap_nanmean,
)

__all__ = [
    "draw_seed_task_indices",
    "paired_bootstrap",
    "percentile_interval",
    "resample_counts",
    "task_bootstrap_nanmean",
]

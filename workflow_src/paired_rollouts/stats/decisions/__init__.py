"""The pre-registered decisions H1a, H2a/H2b, H3 and H5 (docs/analysis.md#decisions), a registered tier's
measurements, and the secondary endpoints, from episode records only (docs/CONTRACT.md#episode-record),
optionally with the training-group records, the luck-share files and the completeness records of each run.

- ``evidence``: loading and indexing what a decision reads, and the admission of each run;
- ``hypotheses``: the hypotheses on admitted seed pairs;
- ``secondary``: the descriptive endpoints;
- ``register``: the decision register (``decide``) and a tier's measurements.
"""

from paired_rollouts.stats.decisions.evidence import (
    Groups,
    LuckFile,
    RunEvidence,
    admit,
    expand_paths,
    load_episodes,
    load_groups,
    load_inputs,
)
from paired_rollouts.stats.decisions.hypotheses import (
    H2_NAME,
    applied_auc_weights,
    h3_steps,
    hypothesis_h1a,
    hypothesis_h2,
    hypothesis_h3,
    hypothesis_h5,
)
from paired_rollouts.stats.decisions.register import HYPOTHESES, decide, tier_statistics
from paired_rollouts.stats.decisions.secondary import THRESHOLD_CURVE, secondary

__all__ = [
    "H2_NAME",
    "HYPOTHESES",
    "THRESHOLD_CURVE",
    "Groups",
    "LuckFile",
    "RunEvidence",
    "admit",
    "applied_auc_weights",
    "decide",
    "expand_paths",
    "h3_steps",
    "hypothesis_h1a",
    "hypothesis_h2",
    "hypothesis_h3",
    "hypothesis_h5",
    "load_episodes",
    "load_groups",
    "load_inputs",
    "secondary",
    "tier_statistics",
]

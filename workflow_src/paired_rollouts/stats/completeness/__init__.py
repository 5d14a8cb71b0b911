"""Completeness of a run's evidence: exactly the episodes, groups and pools the design calls for.

The decision rules may only see a run whose evidence is whole: a run that lost an evaluation file, or
was evaluated on a different task pool, or whose attempts ran different code, is refused. The check
derives what a run must contain from the scale's settings, the design and the run's name
(``expected``), then compares it item by item with the files, by subject: evaluation and diagnostic
episodes (``episodes``), training groups (``groups``), pools and code (``provenance``), listing what is
missing and what is wrong (``findings``). It also records the sha256 of every file it read, under the
run-relative keys of :class:`paired_rollouts.layout.RunFiles`, so that ``decide`` can refuse evidence
edited later.
"""

from paired_rollouts.stats.completeness.check import check_run
from paired_rollouts.stats.completeness.expected import EXPECTED_HELP, ExpectedEvidence, pool_task_ids

__all__ = ["EXPECTED_HELP", "ExpectedEvidence", "check_run", "pool_task_ids"]

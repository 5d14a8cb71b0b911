"""Paired rollouts for any environment: event-keyed dice, group schedules, adapters and diagnostics.

Give the G rollouts of a group one shared noise schedule (common random numbers) and their rewards differ
only by what the policy did. This package is all an environment needs for that; the study's own back
office draws its noise through it. Tutorial and reference: docs/pairing.md.

- dice: :class:`Dice` (stateless draws of one seed), :class:`Schedule` (one rollout's episode: counted
  repeats, fates, grader flip), :class:`FaultMixture`, :class:`Fate`;
- group schedules: :class:`GroupSchedules` (paired, independent, clean) and the seed derivations;
- adapters: :class:`PairedEnvironmentFactory` (TRL's ``environment_factory``), :class:`GroupEnvs`
  (``reset(seed=...)``/``step`` environments);
- diagnostics on numpy arrays: :func:`luck_share`, :func:`group_diagnostics`,
  :func:`spurious_rate_closed_form`, :func:`zero_variance_fraction`, :func:`arm_gap`.
"""

from paired_rollouts.pairing.adapters import GroupEnvs, PairedEnvironmentFactory
from paired_rollouts.pairing.bootstrap import (
    BOOTSTRAP_SEED,
    ArmGap,
    arm_gap,
    auc_weights,
    paired_bootstrap,
    percentile_interval,
)
from paired_rollouts.pairing.diagnostics import (
    GroupDiagnostics,
    GroupFlags,
    LuckShare,
    group_diagnostics,
    group_flags,
    luck_share,
    luck_share_interval,
    spurious_rate_closed_form,
    variance_components,
    zero_variance_fraction,
)
from paired_rollouts.pairing.dice import FATE_DRAWS, Dice, Fate, FaultMixture, FaultTable, Schedule
from paired_rollouts.pairing.errors import PairingError
from paired_rollouts.pairing.schedules import MODES, GroupSchedules, RolloutCounter
from paired_rollouts.pairing.seeds import (
    derive_seed,
    diagnostic_seed,
    eval_schedule_seed,
    independent_seed,
    resolve_seed,
    training_schedule_seed,
)

__all__ = [
    "BOOTSTRAP_SEED",
    "FATE_DRAWS",
    "MODES",
    "ArmGap",
    "Dice",
    "Fate",
    "FaultMixture",
    "FaultTable",
    "GroupDiagnostics",
    "GroupEnvs",
    "GroupFlags",
    "GroupSchedules",
    "LuckShare",
    "PairedEnvironmentFactory",
    "PairingError",
    "RolloutCounter",
    "Schedule",
    "arm_gap",
    "auc_weights",
    "derive_seed",
    "diagnostic_seed",
    "eval_schedule_seed",
    "group_diagnostics",
    "group_flags",
    "independent_seed",
    "luck_share",
    "luck_share_interval",
    "paired_bootstrap",
    "percentile_interval",
    "resolve_seed",
    "spurious_rate_closed_form",
    "training_schedule_seed",
    "variance_components",
    "zero_variance_fraction",
]

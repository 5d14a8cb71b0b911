"""One strict, typed reader for the records that stages hand each other (docs/records.md section 0).

Every consumer reads them through here: the episode and training-group records (JSON Lines, each
line type-checked) and every register, each into a frozen dataclass that is its schema (``schema.key``
names the JSON key and its check per field). A record with a missing key, a wrong type
(``true_success: "false"``, which ``bool()`` would count as a success) or a NaN is refused with one line
naming the file, the key and the command that rewrites it, instead of silently changing a decision or
ending in a traceback. One module per subject:

- ``episodes``: episode and training-group records;
- ``runs``: one run's manifest, completeness record, luck-share files, group statistics, run register;
- ``curves``: a condition's curves register and the cross-stack replication register;
- ``decisions``: decision registers, the predictions register, the power table and curves, the A3 prediction
  register;
- ``probe``: probe checkpoints and registers, the bandit;
- ``calibration``: the surrogate's calibration and checkpoints, the zero-shot gate, the scripted reference;
- ``prereg``: the pool manifest, the verification report and what it covers;
- ``compare``: the comparison with the published numbers and the cost ledger;
- ``regime_map``: the regime map's cells and the map (surrogate scales).
- ``replay``: the replay register of a checkpoint (its divergences recomputed from the token ids).
"""

from paired_rollouts.records.calibration import (
    Calibration,
    CalibrationTarget,
    ReferenceCell,
    ScriptedReference,
    SurrogateCheckpoint,
    ZeroShot,
    ZeroShotBand,
    read_calibration,
    read_scripted_reference,
    read_surrogate_checkpoint,
    read_zero_shot,
)
from paired_rollouts.records.compare import Comparison, Cost, Ledger, read_comparison, read_ledger
from paired_rollouts.records.curves import (
    ArmMeans,
    CrossStack,
    CurvesRegister,
    FinalDifferences,
    PooledGroups,
    Replication,
    SeedPair,
    read_cross_stack,
    read_curves_register,
)
from paired_rollouts.records.decisions import (
    H4,
    HYPOTHESES,
    AucGap,
    ChallengeGap,
    DecisionRegister,
    H1a,
    H1aOutcome,
    H1aTransition,
    HeldoutGap,
    Hypothesis,
    PowerCurves,
    PowerTable,
    Prediction,
    PredictionA3,
    Predictions,
    Secondary,
    read_decision_register,
    read_power_curves,
    read_power_table,
    read_prediction_a3,
    read_predictions,
)
from paired_rollouts.records.episodes import (
    EPISODE,
    GROUP,
    iter_episodes,
    iter_groups,
    read_episodes,
    read_groups,
)
from paired_rollouts.records.prereg import (
    Covered,
    PoolManifest,
    Token,
    Verification,
    read_covered,
    read_pool_manifest,
    read_verification,
)
from paired_rollouts.records.probe import (
    Bandit,
    ProbeCheckpoint,
    ProbeCheckpointSummary,
    ProbeRegister,
    ProbeVerdict,
    read_bandit,
    read_probe_checkpoint,
    read_probe_register,
)
from paired_rollouts.records.regime_map import (
    RegimeMap,
    RegimeMapCell,
    read_regime_map,
    read_regime_map_cell,
)
from paired_rollouts.records.replay import ReplayEpisode, ReplayRegister, read_replay
from paired_rollouts.records.runs import (
    Completeness,
    GroupStats,
    LuckShare,
    RunManifest,
    RunRegister,
    read_completeness,
    read_group_stats,
    read_luck,
    read_run_manifest,
    read_run_register,
)

__all__ = [
    "RegimeMap",
    "RegimeMapCell",
    "read_regime_map",
    "read_regime_map_cell",
    "EPISODE",
    "GROUP",
    "HYPOTHESES",
    "ArmMeans",
    "AucGap",
    "Bandit",
    "Calibration",
    "CalibrationTarget",
    "ChallengeGap",
    "Comparison",
    "Completeness",
    "Cost",
    "Covered",
    "CrossStack",
    "CurvesRegister",
    "DecisionRegister",
    "FinalDifferences",
    "GroupStats",
    "H1a",
    "H4",
    "H1aOutcome",
    "H1aTransition",
    "HeldoutGap",
    "Hypothesis",
    "Ledger",
    "LuckShare",
    "PoolManifest",
    "PooledGroups",
    "PowerCurves",
    "PowerTable",
    "Prediction",
    "PredictionA3",
    "Predictions",
    "ProbeCheckpoint",
    "ProbeCheckpointSummary",
    "ProbeRegister",
    "ProbeVerdict",
    "ReferenceCell",
    "ReplayEpisode",
    "ReplayRegister",
    "Replication",
    "RunManifest",
    "RunRegister",
    "ScriptedReference",
    "Secondary",
    "SeedPair",
    "SurrogateCheckpoint",
    "Token",
    "Verification",
    "ZeroShot",
    "ZeroShotBand",
    "iter_episodes",
    "iter_groups",
    "read_bandit",
    "read_calibration",
    "read_comparison",
    "read_completeness",
    "read_covered",
    "read_cross_stack",
    "read_curves_register",
    "read_decision_register",
    "read_episodes",
    "read_group_stats",
    "read_groups",
    "read_ledger",
    "read_luck",
    "read_pool_manifest",
    "read_power_curves",
    "read_power_table",
    "read_prediction_a3",
    "read_predictions",
    "read_probe_checkpoint",
    "read_probe_register",
    "read_replay",
    "read_run_manifest",
    "read_run_register",
    "read_scripted_reference",
    "read_surrogate_checkpoint",
    "read_verification",
    "read_zero_shot",
]

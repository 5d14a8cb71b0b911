"""The study's design as data: conditions, arms, reward scalings, evaluation regimes, run names, the run
matrix of a scale and the comparisons it supports (docs/design.md).

Every stage imports its vocabulary from here: the rules (rules/common.smk), training, evaluation,
completeness, decisions and rendering. A user changes the design in `config/config.yaml` only (its
`conditions:` block and each scale's `seeds:` and `tiers:`); `Design.from_config` reads both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.noise.config import NO_OUTAGE_WEIGHTS, NoiseConfig

# ---------------------------------------------------------------- arms and scalings -----------------


@dataclass(frozen=True)
class Arm:
    """How a run's G rollouts of a group meet the noise, and whether its rows are blocked.

    coupling: "paired" (one shared schedule seed), "independent" (one seed per rollout) or "clean";
    blocking: each task appears twice per step, a clean copy and a noisy group (same seed), each
    normalised within its own group, at the same rollout budget."""

    name: str
    coupling: str
    blocking: bool = False
    help: str = ""


ARMS: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm("paired", "paired", help="all G rollouts share the group's schedule seed"),
        Arm("independent", "independent", help="every rollout resolves its own seed"),
        Arm("clean", "clean", help="no noise (the clean reference)"),
        Arm("blocking", "independent", True, help="a clean copy and an independent noisy group per task"),
        Arm("blocking_paired", "paired", True, help="a clean copy and a paired noisy group per task"),
    )
}
ARM_ORDER = {name: index for index, name in enumerate(ARMS)}
# Group-relative reward scaling of the trainer (TRL `scale_rewards`): "group" divides by the group's std.
SCALINGS = ("group", "none")
DEFAULT_SCALING = "group"

# ---------------------------------------------------------------- conditions ------------------------

MIXTURES = ("default", "outage_free")


@dataclass(frozen=True)
class Condition:
    """A noise condition of the study: per-call fault rate p, per-episode grader flip rate q and the fault
    mixture of the transition noise (docs/simulator.md#noise-configurations)."""

    name: str
    p: float
    q: float
    mixture: str = "default"

    @property
    def kind(self) -> str:
        """transition, outcome or clean (the study never crosses both noises in one condition)."""
        if self.p > 0:
            return "transition"
        return "outcome" if self.q > 0 else "clean"

    @property
    def key(self) -> str:
        """The lower-case name used in run names and file names (C2r -> c2r)."""
        return self.name.lower()

    def weights(self) -> dict[str, float] | None:
        return dict(NO_OUTAGE_WEIGHTS) if self.mixture == "outage_free" else None

    def noise(self, coupling: str = "paired") -> NoiseConfig:
        """The NoiseConfig of training under this condition in the given coupling mode."""
        if self.kind == "clean" or coupling == "clean":
            return NoiseConfig.clean()
        if self.kind == "transition":
            return NoiseConfig.transition(self.p, coupling, self.weights())
        return NoiseConfig.outcome(self.q, coupling)

    def default_arms(self) -> tuple[str, ...]:
        return ("clean",) if self.kind == "clean" else ("paired", "independent")

    def at_training_noise(self) -> NoiseConfig:
        """The (paired) noise of the at-training evaluation set; the clean arm uses the default C2 noise."""
        if self.kind == "clean":
            return NoiseConfig.transition(DIAGNOSTIC_P)
        return self.noise("paired")

    def diagnostic_noise(self, p: float) -> NoiseConfig:
        """The luck-share diagnostic: p (the config's diagnostics.p) under the run's own transition mixture
        (the default mixture for outcome-noise and clean runs, labelled as a transition probe)."""
        weights = self.weights() if self.kind == "transition" else None
        return NoiseConfig.transition(p, "paired", weights)

    def needs_at_training_final(self) -> bool:
        """True when the training noise is none of the standard final regimes (C3, C4, C2r): the final
        evaluation then adds the at-training set, so every policy meets its own noise at the end."""
        own = self.at_training_noise()
        return all(regime_noise(regime, self) != own for regime in FINAL_REGIMES)

    def to_dict(self) -> dict[str, Any]:
        return {"p": self.p, "q": self.q, "mixture": self.mixture}


# The paper's registered conditions (config/config.yaml's `conditions:` must agree with these where it
# uses their names; config_check refuses a redefinition).
PAPER_CONDITIONS: dict[str, Condition] = {
    c.name: c
    for c in (
        Condition("C0", 0.0, 0.0),
        Condition("C1", 0.10, 0.0),
        Condition("C2", 0.25, 0.0),
        Condition("C2r", 0.25, 0.0, "outage_free"),
        Condition("C3", 0.0, 0.05),
        Condition("C4", 0.0, 0.10),
    )
}
CONDITION_NAME = re.compile(r"^C[0-9]+[a-z]*$")

# ---------------------------------------------------------------- evaluation regimes ----------------

DIAGNOSTIC_P = 0.25
# Periodic sets on the validation pool and final sets on the test pool, with their schedule indices k
# (eval_schedule_seed(task, k)); the at-training final set exists only when needs_at_training_final().
PERIODIC_REGIMES: dict[str, tuple[int, ...]] = {"clean": (1, 2), "at_training": (1, 2), "challenge": (1,)}
FINAL_REGIMES: dict[str, tuple[int, ...]] = {
    "clean": (1, 2, 3, 4),
    "noisy_p010": (1, 2, 3, 4),
    "noisy_p025": (1, 2, 3, 4),
    "heldout_types": (1, 2, 3, 4),
    "challenge": (1,),
}
AT_TRAINING_FINAL_INDICES = (1, 2, 3, 4)
# The final set the replay check rolls again (its first episodes, at the last checkpoint): noise-free.
REPLAY_REGIME = "clean"
EVALUATION_REGIMES = ("clean", "at_training", "challenge", "noisy_p010", "noisy_p025", "heldout_types")
REGIMES = (*EVALUATION_REGIMES, "diag")
POOLS = ("train", "validation", "test", "diagnostic")
PHASE_POOL = {"periodic": "validation", "final": "test"}
# Every set a phase may hold, with its schedule indices (a run's own final sets: final_regimes()).
PHASE_REGIMES: dict[str, dict[str, tuple[int, ...]]] = {
    "periodic": PERIODIC_REGIMES,
    "final": {**FINAL_REGIMES, "at_training": AT_TRAINING_FINAL_INDICES},
}


def regime_noise(regime: str, condition: Condition) -> NoiseConfig:
    """The (paired) noise config of an evaluation regime for a run of ``condition``."""
    if regime == "clean":
        return NoiseConfig.clean()
    if regime == "at_training":
        return condition.at_training_noise()
    if regime == "challenge":
        return NoiseConfig.challenge_writes()
    if regime == "noisy_p010":
        return NoiseConfig.transition(0.10)
    if regime == "noisy_p025":
        return NoiseConfig.transition(0.25)
    if regime == "heldout_types":
        return NoiseConfig.heldout_types(0.25)
    if regime == "diag":
        return condition.diagnostic_noise(DIAGNOSTIC_P)
    raise UserError(f"--regime {regime!r}: unknown; use one of {', '.join(REGIMES)}")


def final_regimes(condition: Condition) -> dict[str, tuple[int, ...]]:
    out = dict(FINAL_REGIMES)
    if condition.needs_at_training_final():
        out["at_training"] = AT_TRAINING_FINAL_INDICES
    return out


def learning_sets(condition: Condition) -> dict[str, str]:
    """The validation set of a condition's learning curve and its matching final set: true success under
    the training noise for transition noise, the clean sets under grader flips (the frozen H2b rule)."""
    if condition.kind == "transition":
        own = condition.at_training_noise()
        final = next((r for r in FINAL_REGIMES if regime_noise(r, condition) == own), "at_training")
        return {"validation": "at_training", "final": final}
    return {"validation": "clean", "final": "clean"}


# ---------------------------------------------------------------- run names -------------------------

RUN_FORMAT = "{condition}-{arm}[-scale_{scaling}]-s{seed}"


@dataclass(frozen=True, order=True)
class RunId:
    """One training run: c2-paired-s0, c4-independent-scale_none-s1, c2-blocking_paired-s0."""

    condition: str
    arm: str
    seed: int
    scaling: str = DEFAULT_SCALING

    @property
    def name(self) -> str:
        middle = "" if self.scaling == DEFAULT_SCALING else f"-scale_{self.scaling}"
        return f"{self.condition.lower()}-{self.arm}{middle}-s{self.seed}"

    def __str__(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        """The identity fields records carry: condition, arm, seed, scaling."""
        return {"condition": self.condition, "arm": self.arm, "seed": self.seed, "scaling": self.scaling}


RUN_NAME = re.compile(r"^(c[0-9]+[a-z]*)-([a-z_]+?)(?:-scale_([a-z]+))?-s([0-9]+)$")


def parse_run(name: str, conditions: Mapping[str, Condition] | None = None) -> RunId:
    """``c2r-paired-s1`` -> RunId("C2r", "paired", 1), the one run-name parser: refuses names outside the grammar,
    unknown arms, scalings and (given the design's ``conditions``) conditions, and an arm unfit for its condition."""
    match = RUN_NAME.match(name)
    if not match:
        raise UserError(
            f"run name {name!r} is not of the form {RUN_FORMAT}, e.g. c2-paired-s0 or c0-clean-s0"
        )
    key, arm, scaling, seed = match.groups()
    scaling = scaling or DEFAULT_SCALING
    condition = "C" + key[1:]  # c2r -> C2r: the grammar maps names one to one
    if conditions is not None and condition not in conditions:
        raise UserError(
            f"run name {name!r}: unknown condition {condition}; the design has {', '.join(conditions)}"
        )
    if arm not in ARMS:
        raise UserError(f"run name {name!r}: unknown arm {arm!r}; use one of {', '.join(ARMS)}")
    if scaling not in SCALINGS:
        raise UserError(
            f"run name {name!r}: unknown reward scaling {scaling!r}; use one of {', '.join(SCALINGS)}"
        )
    known = (conditions if conditions is not None else PAPER_CONDITIONS).get(condition)
    if known is not None and (known.kind == "clean") != (arm == "clean"):
        raise UserError(
            f"run name {name!r}: a clean condition goes with arm 'clean', a noisy one with the others"
        )
    return RunId(condition, arm, int(seed), scaling)


# ---------------------------------------------------------------- the matrix and its comparisons ----


@dataclass(frozen=True)
class Cell:
    """Runs of one condition x arms x scaling over a list of seeds (one line of the run matrix)."""

    condition: str
    arms: tuple[str, ...]
    scaling: str
    seeds: tuple[int, ...]
    tier: int

    def runs(self) -> list[RunId]:
        return [RunId(self.condition, arm, seed, self.scaling) for seed in self.seeds for arm in self.arms]


@dataclass(frozen=True)
class Comparison:
    """A treatment arm against its matched control, seed by seed, in one condition and scaling.

    Tier 1's comparisons keep the paper's names (c2, c4) and hypotheses; the registered tiers add
    c1, c2r, c3, c4-scale_none, c2-blocking, c4-blocking (docs/design.md#comparisons)."""

    name: str
    condition: str
    treatment: str
    control: str
    scaling: str
    seeds: tuple[int, ...]
    tier: int
    hypotheses: tuple[str, ...] = ()

    @property
    def arms(self) -> tuple[str, str]:
        return (self.treatment, self.control)

    def pair(self, seed: int) -> tuple[RunId, RunId]:
        return (
            RunId(self.condition, self.treatment, seed, self.scaling),
            RunId(self.condition, self.control, seed, self.scaling),
        )

    def runs(self) -> list[RunId]:
        return [run for seed in self.seeds for run in self.pair(seed)]


# Tier 1's hypotheses by condition kind (prereg/decision_rules.yaml).
TIER1_HYPOTHESES = {"transition": ("H1a", "H2a", "H3", "H5"), "outcome": ("H1a", "H2b")}
TIER1 = ("C0", "C2", "C4")


def decided_comparisons() -> tuple[str, ...]:
    """The conditions whose paired-versus-independent comparison (named by the condition's key: c2, c4)
    tier 1 decides with the frozen rules: C2 (H1a, H2a, H3, H5) and C4 (H1a, H2b)."""
    return tuple(c for c in TIER1 if PAPER_CONDITIONS[c].kind in TIER1_HYPOTHESES)


# The treatment/control pairs a comparison is made of, and the suffix of its name.
COMPARED_ARMS = (("paired", "independent"), ("blocking_paired", "blocking"))
_ARMS_SUFFIX = {("paired", "independent"): "", ("blocking_paired", "blocking"): "-blocking"}


def comparison_name(condition: str, treatment: str, control: str, scaling: str) -> str:
    """The name of a comparison (c2, c4-scale_none, c2-blocking): condition, scaling, arms."""
    if (treatment, control) not in _ARMS_SUFFIX:
        pairs = ", ".join(" vs ".join(arms) for arms in COMPARED_ARMS)
        raise UserError(f"arms {treatment} vs {control}: not a compared pair (the design's: {pairs})")
    scale_part = "" if scaling == DEFAULT_SCALING else f"-scale_{scaling}"
    return f"{condition.lower()}{scale_part}{_ARMS_SUFFIX[(treatment, control)]}"


@dataclass(frozen=True)
class Design:
    conditions: Mapping[str, Condition]
    cells: tuple[Cell, ...]
    scale: str = ""
    source: str = "config/config.yaml"
    _index: dict[str, RunId] = field(default_factory=dict, compare=False, repr=False)

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: Mapping[str, Any], scale: str, source: str = "config/config.yaml") -> Design:
        """The conditions block plus one scale's tier-1 `seeds:` and registered `tiers:` cells."""
        conditions = parse_conditions(config.get("conditions") or {}, source)
        block = config["scales"][scale]
        where = f"{source}: scales.{scale}"
        cells = []
        for name, seeds in block["seeds"].items():
            condition = _condition(conditions, name, f"{where}.seeds")
            if not seeds:
                raise UserError(f"{where}.seeds.{name}: no seeds; list at least one (e.g. [0, 1, 2])")
            cells.append(Cell(name, condition.default_arms(), DEFAULT_SCALING, tuple(seeds), 1))
        for index, raw in enumerate(block.get("tiers") or []):
            at = f"{where}.tiers[{index}]"
            condition = _condition(conditions, raw["condition"], at)
            arms = tuple(raw.get("arms") or condition.default_arms())
            for arm in arms:
                if arm not in ARMS:
                    raise UserError(f"{at}: unknown arm {arm!r}; use one of {', '.join(ARMS)}")
                if (arm == "clean") != (condition.kind == "clean"):
                    raise UserError(
                        f"{at}: arm {arm!r} does not fit condition {condition.name} ({condition.kind})"
                    )
            scaling = raw.get("scaling", DEFAULT_SCALING)
            if scaling not in SCALINGS:
                raise UserError(f"{at}: unknown scaling {scaling!r}; use one of {', '.join(SCALINGS)}")
            cells.append(Cell(condition.name, arms, scaling, tuple(raw["seeds"]), int(raw.get("tier", 2))))
        design = cls(conditions, tuple(cells), scale, source)
        design._check()
        return design

    def _check(self) -> None:
        seen: dict[str, Cell] = {}
        for cell in self.cells:
            for run in cell.runs():
                if run.name in seen:
                    raise UserError(
                        f"{self.source}: scales.{self.scale}: run {run.name} is listed twice "
                        f"(tier {seen[run.name].tier} and tier {cell.tier}); list each run once"
                    )
                seen[run.name] = cell
                self._index[run.name] = run

    # -- look-ups ----------------------------------------------------------------------------------
    def condition(self, name: str) -> Condition:
        return _condition(self.conditions, name, self.source)

    def runs(self, tier: str = "all") -> list[RunId]:
        """Runs in matrix order: tier 1 (`study`), the registered tiers (`tiers`) or all."""
        return [run for cell in self.cells_of(tier) for run in cell.runs()]

    def run_names(self, tier: str = "all") -> list[str]:
        return [run.name for run in self.runs(tier)]

    def run(self, name: str) -> RunId:
        if name not in self._index:
            raise UserError(f"run {name!r} is not in the design of scale {self.scale!r} ({self.source})")
        return self._index[name]

    def runs_of(self, condition: str, tier: str = "all") -> list[RunId]:
        return [run for run in self.runs(tier) if run.condition == condition]

    def seeds(self, condition: str, tier: str = "study") -> list[int]:
        return sorted({run.seed for run in self.runs_of(condition, tier)})

    def cells_of(self, tier: str = "all") -> list[Cell]:
        if tier == "study":
            return [c for c in self.cells if c.tier == 1]
        if tier == "tiers":
            return [c for c in self.cells if c.tier != 1]
        return list(self.cells)

    def comparisons(self, tier: str = "all") -> list[Comparison]:
        """Every treatment/control pair the matrix can decide, seed by seed on the seeds both arms share."""
        arms: dict[tuple[str, str], dict[str, set[int]]] = {}
        tiers: dict[tuple[str, str], int] = {}
        for cell in self.cells:
            key = (cell.condition, cell.scaling)
            for arm in cell.arms:
                arms.setdefault(key, {}).setdefault(arm, set()).update(cell.seeds)
            tiers[key] = min(tiers.get(key, cell.tier), cell.tier)
        out = []
        for (condition, scaling), by_arm in arms.items():
            for treatment, control in COMPARED_ARMS:
                if treatment not in by_arm or control not in by_arm:
                    continue
                seeds = tuple(sorted(by_arm[treatment] & by_arm[control]))
                name = comparison_name(condition, treatment, control, scaling)
                decided = name.upper() in decided_comparisons()
                tier_of = 1 if decided and tiers[(condition, scaling)] == 1 else 2
                hypotheses = TIER1_HYPOTHESES.get(self.condition(condition).kind, ()) if tier_of == 1 else ()
                out.append(
                    Comparison(name, condition, treatment, control, scaling, seeds, tier_of, hypotheses)
                )
        out.sort(key=lambda c: (c.tier, c.name))
        if tier == "study":
            return [c for c in out if c.tier == 1]
        if tier == "tiers":
            return [c for c in out if c.tier != 1]
        return out

    def comparison(self, name: str) -> Comparison:
        for comparison in self.comparisons():
            if comparison.name == name:
                return comparison
        known = ", ".join(c.name for c in self.comparisons())
        raise UserError(f"comparison {name!r} is not in the design of scale {self.scale!r} (it has: {known})")

    def to_json(self) -> str:
        """The conditions as the CLI's --conditions argument (a JSON object)."""
        return json.dumps(
            {name: c.to_dict() for name, c in self.conditions.items()}, sort_keys=True, separators=(",", ":")
        )


def _condition(conditions: Mapping[str, Condition], name: str, where: str) -> Condition:
    if name not in conditions:
        raise UserError(
            f"{where}: unknown condition {name!r}; define it under `conditions:` in "
            f"config/config.yaml (defined: {', '.join(conditions)})"
        )
    return conditions[name]


def parse_conditions(
    raw: Mapping[str, Any] | str | None, source: str = "--conditions"
) -> dict[str, Condition]:
    """The config's `conditions:` block (or its JSON) as Conditions; None gives the paper's conditions.

    A condition that reuses a paper name must have the paper's values: a redefined C2 would silently
    change what the paper's rules decide."""
    if raw is None:
        return dict(PAPER_CONDITIONS)
    if isinstance(raw, str):  # inline JSON, or @FILE (JSON or YAML), as --settings takes them
        from paired_rollouts.io import load_settings

        raw = load_settings(raw, source)
    if not isinstance(raw, Mapping):
        raise UserError(f"{source}: conditions must be a mapping NAME -> {{p, q[, mixture]}}")
    out = {}
    for name, spec in raw.items():
        condition = _parse_condition(str(name), spec, f"{source}: conditions.{name}")
        out[condition.name] = condition
    return out


def _parse_condition(name: str, spec: Any, where: str) -> Condition:
    if not CONDITION_NAME.match(name):
        raise UserError(f"{where}: a condition name is C, digits and lower-case letters (e.g. C2r)")
    if not isinstance(spec, Mapping) or not {"p", "q"} <= set(spec) or set(spec) - {"p", "q", "mixture"}:
        raise UserError(f"{where}: give exactly p, q and optionally mixture ({', '.join(MIXTURES)})")
    p, q, mixture = float(spec["p"]), float(spec["q"]), spec.get("mixture", "default")
    if not (0 <= p <= 1 and 0 <= q <= 1):
        raise UserError(f"{where}: p and q are rates in [0, 1]")
    if p > 0 and q > 0:
        raise UserError(f"{where}: a condition has transition noise (p) or grader flips (q), not both")
    if mixture not in MIXTURES:
        raise UserError(f"{where}: unknown mixture {mixture!r}; use one of {', '.join(MIXTURES)}")
    if mixture != "default" and p == 0:
        raise UserError(f"{where}: a fault mixture needs transition noise (p > 0)")
    condition = Condition(name, p, q, mixture)
    paper = PAPER_CONDITIONS.get(condition.name)
    if paper is not None and paper != condition:
        raise UserError(
            f"{where}: {name} is a registered condition ({paper.to_dict()}); "
            "give a changed condition a new name"
        )
    return condition


def sort_runs(names: Sequence[str]) -> list[str]:
    """Runs ordered by condition, arm (design order), scaling and seed."""

    def key(name: str) -> tuple:
        run = parse_run(name)
        return (run.condition, ARM_ORDER.get(run.arm, 99), SCALINGS.index(run.scaling), run.seed)

    return sorted(names, key=key)

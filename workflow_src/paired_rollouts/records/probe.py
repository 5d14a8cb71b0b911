"""The gradient probe's records: one checkpoint's file, a trajectory's register with its H1b verdict, and
the aligned-scalar bandit (docs/records.md section 6).

The probe writer records more per checkpoint than any table shows (task tables, drawn groups, masks); the
dataclasses type what the tables, figures and predictions read, and ``raw`` keeps the register as written
for the probe's own commands (``probe verdict``, ``probe recompute``), which rewrite it whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.records.schema import (
    At,
    by_step,
    is_bool,
    is_dict,
    is_int,
    is_num,
    is_str,
    key,
    list_of,
    map_of,
    nullable,
    one,
    parse,
    read_register,
    steps_of,
)

BY_DESIGN = map_of(nullable(is_num))
RATIO = nullable(is_num)


RULE_KEYS = ("estimator", "outcome", "transition")
VERDICT_FIX = "rerun 'paired-rollouts probe verdict' (the surrogate scale: 'paired-rollouts surrogate probe')"

# Each ratio a checkpoint states, per noise: (its traces, the denominator's design); the numerator is paired.
_RATIO_DESIGNS = {
    "outcome": {
        "ratio_paired_over_independent": ("trace_var", "independent"),
        "ratio_within_paired_over_independent": ("trace_var_within", "independent"),
    },
    "transition": {
        "ratio_paired_over_independent": ("trace_var", "independent_resampled"),
        "ratio_paired_over_stratified": ("trace_var", "stratified"),
        "ratio_within_paired_over_independent": ("trace_var_within", "independent_resampled"),
    },
}
_RATIO_REL = 1e-9  # the writers store the quotient unrounded (JSON keeps a float exactly)


def _ratio_mismatch(noise: str, block: dict[str, Any], ratio: str, traces: str, den: str) -> str | None:
    """What is wrong with ``block[ratio]`` against the traces it is the quotient of (None: nothing), by the
    writer's own ``_ratio`` (probe/enumeration.py, probe/transition.py). A stated ratio needs its traces (the
    writer writes both); one not stated needs nothing."""
    if ratio not in block:
        return None
    stated = block[ratio]
    values = block.get(traces) or {}
    if not all(isinstance(values.get(d), (int, float)) for d in ("paired", den)):
        return f"{stated} without the {traces} of paired and {den} it is the ratio of"
    num, div = values["paired"], values[den]
    if noise == "outcome":
        from paired_rollouts.probe.enumeration import _ratio

        again = _ratio(num, div)
    else:
        from paired_rollouts.probe.transition import _ratio

        # a transition trace is a difference of sums, trace + 2 * (its expected update norm)^2 (the writer
        # gives no ratio where the denominator is lost to rounding of those sums)
        update = (block.get("expected_update_norm") or {}).get(den)
        scale = abs(div) + 2 * update**2 if isinstance(update, (int, float)) else 0.0
        again = _ratio(num, div, scale)
    if stated is None and again is None:
        return None
    if stated is None or again is None or not math.isclose(stated, again, rel_tol=_RATIO_REL):
        return f"{stated}, its {traces} give {again} (paired {num} over {den} {div})"
    return None


def _frozen_h1b(stated: dict[str, Any], at: At) -> dict[str, Any]:
    """The rule a verdict must state: the ``h1b`` block of the rules file it names when that file is here
    (with the recorded sha256; another sha256 is refused), the rule it states when the file is not here
    (checked against itself), and the code's defaults where it names none (``probe assemble``'s traces;
    ``probe verdict`` and ``surrogate probe`` always name theirs)."""
    import inspect

    from paired_rollouts.probe import probe_verdict

    source = stated.get("rule_source")
    if source is None:
        if "rules_sha256" in stated:
            raise UserError(
                f"{at.path}: key 'verdict.rule_source' is missing beside its rules_sha256 (the rules file "
                f"its verdict applied); {VERDICT_FIX}"
            )
        defaults = inspect.signature(probe_verdict).parameters
        return {k: defaults[k].default for k in RULE_KEYS}
    digest = stated.get("rules_sha256")
    if not isinstance(source, str) or not isinstance(digest, str):
        raise UserError(
            f"{at.path}: keys 'verdict.rule_source' and 'verdict.rules_sha256' should name the rules file "
            f"and its sha256; {VERDICT_FIX}"
        )
    if not Path(source).is_file():
        return stated["rule"]  # not here: the verdict is checked against the rule it states
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import load_rules

    now = sha256_file(source)
    if now != digest:
        raise UserError(
            f"{at.path}: verdict.rules_sha256 is {digest}, {source} now has {now} (the rules "
            f"changed since the verdict); {VERDICT_FIX}"
        )
    h1b = load_rules(source).raw["h1b"]
    return {k: h1b[k] for k in RULE_KEYS}


@dataclass(frozen=True, kw_only=True)
class Estimator:
    """One estimator's summary of a noise (``mean_centered``: the paper's MC; ``implemented``: its SW):
    the paired over the independent trace, and the traces per design (whole, within, between groups)."""

    ratio_paired_over_independent: float | None = key(RATIO)
    ratio_within_paired_over_independent: float | None = key(RATIO, default=None)
    trace_var: dict[str, float | None] = key(BY_DESIGN, factory=dict)
    trace_var_within: dict[str, float | None] = key(BY_DESIGN, factory=dict)
    trace_var_between: dict[str, float | None] = key(BY_DESIGN, factory=dict)


@dataclass(frozen=True, kw_only=True)
class OutcomeMeanCentered(Estimator):
    """The outcome probe's MC summary: its traces (table 12) and the identity's residual."""

    trace_var: dict[str, float | None] = key(BY_DESIGN)
    identity_residual: float | None = key(RATIO, default=None)

    def _check(self, at: At) -> None:
        for design in ("paired", "independent"):
            if design not in self.trace_var:
                raise at.at("trace_var").missing(design)


@dataclass(frozen=True, kw_only=True)
class TransitionEstimator(Estimator):
    """A transition-probe summary: the independent design resampled, and stratified by schedule."""

    ratio_paired_over_stratified: float | None = key(RATIO)


@dataclass(frozen=True, kw_only=True)
class GroupsOfK:
    """The clean groups with k successes: how many, and their mean L/R."""

    count: int = key(is_int)
    lhs_over_rhs: float | None = key(RATIO, default=None)


def _by_k(value: dict[str, Any], at: At) -> dict[int, GroupsOfK]:
    return {int(k): parse(GroupsOfK, block, at.at(k)) for k, block in value.items()}


@dataclass(frozen=True, kw_only=True)
class OutcomeSummary:
    """The outcome probe at one checkpoint (q = 0.10, one clean group per validation task)."""

    q: float = key(is_num)
    lhs_mean: float | None = key(RATIO)
    rhs_mean: float | None = key(RATIO)
    lhs_over_rhs: float | None = key(RATIO)
    clean_success: float = key(is_num)
    nonzero_share: float = key(is_num)
    by_k: dict[int, GroupsOfK] = key(map_of(is_dict), read=_by_k, factory=dict)
    mean_centered: OutcomeMeanCentered = key(is_dict, read=one(OutcomeMeanCentered))
    implemented: Estimator = key(is_dict, read=one(Estimator))


@dataclass(frozen=True, kw_only=True)
class TransitionSummary:
    """The transition probe at one checkpoint (p = 0.25, resampled at the frozen checkpoint)."""

    mean_centered: TransitionEstimator = key(is_dict, read=one(TransitionEstimator))
    implemented: TransitionEstimator = key(is_dict, read=one(TransitionEstimator))


@dataclass(frozen=True, kw_only=True)
class ProbeCounts:
    rho_zero_fraction: float | None = key(RATIO, default=None)


@dataclass(frozen=True, kw_only=True)
class BatchEquivalent:
    outcome: float | None = key(RATIO, default=None)
    transition: float | None = key(RATIO, default=None)


@dataclass(frozen=True, kw_only=True)
class ProbeCheckpointSummary:
    """``checkpoints.STEP`` of a probe register."""

    outcome: OutcomeSummary = key(is_dict, read=one(OutcomeSummary))
    transition: TransitionSummary = key(is_dict, read=one(TransitionSummary))
    counts: ProbeCounts = key(is_dict, read=one(ProbeCounts), default=ProbeCounts())
    batch_equivalent: BatchEquivalent = key(is_dict, read=one(BatchEquivalent), default=BatchEquivalent())

    def estimator(self, noise: str, name: str) -> Estimator:
        """The ``name`` estimator (mean_centered, implemented) of the ``noise`` probe (outcome, transition)."""
        return getattr(getattr(self, noise), name)


@dataclass(frozen=True, kw_only=True)
class P13:
    """Registered prediction P13's three flags (empty when the trajectory has no checkpoint)."""

    base_lhs_at_most_half_rhs: bool | None = key(is_bool, default=None)
    outcome_ratio_falls: bool | None = key(is_bool, default=None)
    transition_ratio_below_one_majority: bool | None = key(is_bool, default=None)

    def flags(self) -> dict[str, bool]:
        """The flags the verdict recorded, by name."""
        names = ("base_lhs_at_most_half_rhs", "outcome_ratio_falls", "transition_ratio_below_one_majority")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


STEP_RATIOS = steps_of(RATIO)


@dataclass(frozen=True, kw_only=True)
class RatiosByStep:
    """The decision estimator's paired/independent ratio per checkpoint step, per noise."""

    outcome: dict[int, float | None] = key(STEP_RATIOS, read=by_step, factory=dict)
    transition_resampled: dict[int, float | None] = key(STEP_RATIOS, read=by_step, factory=dict)


@dataclass(frozen=True, kw_only=True)
class ProbeVerdict:
    """H1b: paired below independent at every checkpoint (outcome noise) and at a majority (transition)."""

    passes: bool | None = key(nullable(is_bool))
    checkpoints: int = key(is_int)
    outcome_wins: int = key(is_int)
    transition_wins: int = key(is_int)
    outcome_noise_every_checkpoint: bool | None = key(nullable(is_bool))
    transition_noise_majority: bool | None = key(nullable(is_bool))
    reason: str | None = key(is_str, default=None)
    p13: P13 | None = key(is_dict, read=one(P13), default=None)
    ratios_by_step: RatiosByStep = key(is_dict, read=one(RatiosByStep))


def _checkpoints(value: dict[str, Any], at: At) -> dict[int, ProbeCheckpointSummary]:
    if not value:
        raise UserError(f"{at.path}: key 'checkpoints' should be a non-empty object keyed by step")
    out = {}
    for step, summary in value.items():
        if not step.isdigit():
            raise UserError(f"{at.path}: key 'checkpoints' should be keyed by integer steps")
        out[int(step)] = parse(ProbeCheckpointSummary, summary, at.at(step))
    return dict(sorted(out.items()))


@dataclass(frozen=True, kw_only=True)
class ProbeRegister:
    """results/probe/TRAJECTORY.json (probe assemble, probe verdict): per checkpoint step, in step order."""

    path: str
    raw: dict[str, Any]
    trajectory: str = key(is_str)
    run: str = key(is_str)
    checkpoints: dict[int, ProbeCheckpointSummary] = key(is_dict, read=_checkpoints)
    verdict: ProbeVerdict | None = key(nullable(is_dict), read=one(ProbeVerdict))

    def _check(self, at: At) -> None:
        """The register covers what its writer wrote (``steps``: the checkpoints' steps, in order), and
        every ratio a table shows is its traces' ratio (the writers' own ``_ratio``)."""
        steps = self.raw.get("steps")
        if steps is None:
            raise at.missing("steps")
        if steps != list(self.checkpoints):
            raise at.error(
                f"steps {steps} are not the steps of its checkpoints {list(self.checkpoints)} "
                "(a register covers every checkpoint it was assembled from)"
            )
        for step, summary in self.raw["checkpoints"].items():
            for noise, designs in _RATIO_DESIGNS.items():
                for name in ("mean_centered", "implemented"):
                    block = summary[noise][name]
                    for ratio, (traces, den) in designs.items():
                        wrong = _ratio_mismatch(noise, block, ratio, traces, den)
                        if wrong:
                            raise at.error(f"checkpoints.{step}.{noise}.{name}.{ratio} is {wrong}")

    def check_verdict(self, at: At) -> None:
        """The H1b verdict is its checkpoints' (never trusted as written): recomputed under the rule it
        states (``probe.probe_verdict``), its verdict, counts, P13 flags and ratios must be the same; the
        rule it states is the frozen ``h1b`` block of the rules file it names (``rule_source``) where that
        file is here, and the code's defaults in a traces register (``probe assemble``: no rules file)."""
        stated = self.raw.get("verdict")
        if not isinstance(stated, dict):
            return
        from paired_rollouts.probe import probe_verdict

        rule = stated.get("rule")
        if not isinstance(rule, dict) or set(rule) != set(RULE_KEYS):
            raise UserError(
                f"{at.path}: key 'verdict.rule' should name estimator, outcome and transition; {at.fix}"
            )
        frozen = _frozen_h1b(stated, at)
        if rule != frozen:
            source = stated.get("rule_source") or "the code's defaults (a traces register: no rules file)"
            raise UserError(
                f"{at.path}: verdict.rule is {rule}, not the h1b rule of {source} ({frozen}); a verdict is "
                f"judged under the frozen rules, {VERDICT_FIX}"
            )
        try:
            again = probe_verdict({int(s): c for s, c in self.raw["checkpoints"].items()}, **rule)
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(
                f"{at.path}: its checkpoints do not give an H1b verdict ({exc}); {at.fix}"
            ) from exc
        keys = ("passes", "checkpoints", "outcome_wins", "transition_wins", "outcome_noise_every_checkpoint")
        keys += ("transition_noise_majority", *(("p13",) if "p13" in stated else ()))  # no P13: none claimed
        other = next(k for k in again if k.endswith("_ratios_by_step") and k != "ratios_by_step")
        keys += ("ratios_by_step", *((other,) if other in stated else ()))  # from the checkpoints' ratios
        differ = [k for k in keys if stated.get(k) != again[k]]
        if differ:
            raise UserError(
                f"{at.path}: verdict.{differ[0]} is {stated.get(differ[0])}, its checkpoints give {again[differ[0]]} "
                f"(differs in {', '.join(differ)}); a verdict must follow from its numbers, {at.fix}"
            )

    @property
    def steps(self) -> list[int]:
        return list(self.checkpoints)

    def need_verdict(self) -> ProbeVerdict:
        """The H1b verdict under the frozen rules; a register without one, or with the traces' verdict
        under the code's defaults (no ``rule_source``), is refused."""
        if self.verdict is None:
            raise UserError(
                f"{self.path}: key 'verdict' is null (a traces register); pass the register "
                "'paired-rollouts probe verdict' writes"
            )
        if "rule_source" not in self.raw["verdict"]:
            raise UserError(
                f"{self.path}: its verdict names no rules file (a traces register: the code's default rule, "
                "not the frozen h1b block); pass the register 'paired-rollouts probe verdict' writes"
            )
        return self.verdict


def read_probe_register(path: str | Path, verdict: bool = True) -> ProbeRegister:
    """results/probe/TRAJECTORY.json, typed at the keys tables, figures and predictions read; its H1b
    verdict recomputed from its checkpoints (``verdict=False``: only for ``probe verdict``, which
    replaces it)."""
    register = read_register(ProbeRegister, path, "probe register", PROBE_COMMAND, dotted=True)
    if verdict:
        register.check_verdict(At.of(path, "probe register", PROBE_COMMAND, dotted=True))
    return register


PROBE_COMMAND = "paired-rollouts probe assemble"


@dataclass(frozen=True, kw_only=True)
class ProbeCheckpoint:
    """results/probe/TRAJECTORY/stepN.json (``probe checkpoint``): one entry of the register's
    ``checkpoints`` plus its run and step; ``raw`` is what ``probe assemble`` copies into the register."""

    path: str
    raw: dict[str, Any]
    run: str = key(is_str)
    step: int = key(is_int)
    outcome: dict[str, Any] = key(is_dict)
    transition: dict[str, Any] = key(is_dict)

    @property
    def summary(self) -> dict[str, Any]:
        """The checkpoint's entry of the register: everything but its run and step."""
        return {k: v for k, v in self.raw.items() if k not in ("run", "step")}


def read_probe_checkpoint(path: str | Path) -> ProbeCheckpoint:
    """results/probe/TRAJECTORY/stepN.json (probe/scores.py ``probe checkpoint``), typed at the keys the
    trajectory's register is assembled from."""
    return read_register(ProbeCheckpoint, path, "probe checkpoint", "paired-rollouts probe checkpoint")


# ---------------------------------------------------------------- the aligned-scalar bandit

PER_DESIGN = map_of(is_num)


@dataclass(frozen=True, kw_only=True)
class Bandit:
    """results/probe/bandit.json (probe/bandit.py, docs/records.md section 6.4): each quantity for the
    independent and the paired design."""

    path: str
    raw: dict[str, Any]
    setup: dict[str, Any] = key(is_dict)
    contrast_variance: dict[str, float] = key(PER_DESIGN)
    trace_var_mean_centered: dict[str, float] = key(PER_DESIGN)
    trace_var_implemented: dict[str, float] = key(PER_DESIGN)
    expected_update_implemented: dict[str, float] = key(PER_DESIGN)
    expected_update_mean_centered: dict[str, float] = key(PER_DESIGN)
    lhs: float = key(is_num)
    rhs: float = key(is_num)
    identity_residual: float = key(is_num)
    orthogonal: list[dict[str, Any]] = key(list_of(is_dict))

    def _check(self, at: At) -> None:
        for name in (
            "contrast_variance",
            "trace_var_mean_centered",
            "trace_var_implemented",
            "expected_update_implemented",
            "expected_update_mean_centered",
        ):
            designs = getattr(self, name)
            if set(designs) != {"independent", "paired"}:
                raise at.error(f"{name} has designs {sorted(designs)}, expected independent and paired")


def read_bandit(path: str | Path) -> Bandit:
    """results/probe/bandit.json (probe/bandit.py, docs/records.md section 6.4), typed."""
    return read_register(Bandit, path, "bandit register", "paired-rollouts probe bandit")

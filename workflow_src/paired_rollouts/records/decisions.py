"""The decision registers (tier 1's and each registered tier's comparison), the predictions register
and the surrogate scales' power table and power curves (docs/records.md sections 4, 4.1, 5, 8.3, 8.6).

A hypothesis block that could not be computed holds only its verdict and reason (``computed: false``);
a computed one holds every number the tables show, so each of them is required here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.records.schema import (
    At,
    by_name,
    by_name_or_null,
    differing_keys,
    each,
    is_bool,
    is_condition,
    is_dict,
    is_int,
    is_num,
    is_sha256,
    is_str,
    key,
    list_of,
    map_of,
    nullable,
    one,
    one_of,
    pair_of,
    parse,
    read_register,
)

DECIDE = "paired-rollouts decide"
HYPOTHESES = ("H1a", "H2a", "H2b", "H3", "H5")
BY_SET = map_of(nullable(is_num))
INTERVAL = pair_of(nullable(is_num))


def is_text(v: Any) -> bool:
    return isinstance(v, str)


# ---------------------------------------------------------------- hypothesis blocks


def decided(cls: type):
    """Read a tier-1 hypothesis block: ``passes`` (true, false, or null when not decided) is required."""

    def read(value: dict[str, Any], at: At) -> Any:
        if "passes" not in value:
            raise at.missing("passes")
        return parse(cls, value, at)

    return read


@dataclass(frozen=True, kw_only=True)
class Bootstrap:
    resamples: int = key(is_int)
    seed: int = key(is_int)


@dataclass(frozen=True, kw_only=True)
class Step0Luck:
    """One run's step-0 luck share in H1a (its mean over tasks and the bootstrap interval)."""

    lam: float | None = key(nullable(is_num))
    ci95: list[float | None] = key(INTERVAL)


@dataclass(frozen=True, kw_only=True)
class LuckRule:
    lambda_at_least: float = key(is_num)
    lower_bound_above: float = key(is_num)


@dataclass(frozen=True, kw_only=True)
class SpuriousRule:
    independent_within: float = key(is_num)
    independent_criterion: bool = key(is_bool)
    paired_at_most: float = key(is_num)
    paired_criterion: bool = key(is_bool)


_LUCK_BY_RUN = map_of(nullable(is_dict))


@dataclass(frozen=True, kw_only=True)
class Hypothesis:
    """What every hypothesis block holds: whether it could be computed, its verdict (true or false when
    decided, null on partial evidence; a tier's measurements have none) and why it is not decided."""

    computed: bool = key(is_bool)
    passes: bool | None = key(nullable(is_bool), default=None)
    reason: str | None = key(is_text, default=None)


@dataclass(frozen=True, kw_only=True)
class H1a(Hypothesis):
    """H1a: each run's step-0 luck share and each arm's spurious rate among all-correct training groups."""

    luck_share_step0: dict[str, Step0Luck | None] = key(
        _LUCK_BY_RUN, read=by_name_or_null(Step0Luck), when="computed"
    )
    spurious_rate_paired: float | None = key(nullable(is_num), when="computed")
    spurious_rate_independent: float | None = key(nullable(is_num), when="computed")
    runs: dict[str, Any] = key(map_of(is_dict), when="computed")


@dataclass(frozen=True, kw_only=True)
class TransitionRun:
    """One run's row in C2's H1a: its luck and sharing criteria (and why it cannot meet them)."""

    arm: str = key(is_str)
    luck_criterion: bool = key(is_bool)
    sharing_criterion: bool = key(is_bool)
    reasons: list[str] | None = key(list_of(is_str), default=None)


@dataclass(frozen=True, kw_only=True)
class SeedSharing:
    """One run's seed sharing in C2's H1a (stats/groups.py seed_sharing with its rule reported)."""

    arm: str = key(is_str)
    groups: int = key(is_int)
    groups_sharing_one_seed: int = key(is_int)
    groups_with_several_seeds: int = key(is_int)
    passes: bool = key(is_bool)
    groups_breaking_the_rule: int | None = key(is_int, default=None)
    paired_max_seeds_per_group: float | None = key(is_num, default=None)
    independent_min_seeds_per_group: float | None = key(is_num, default=None)


@dataclass(frozen=True, kw_only=True)
class SpuriousCounts:
    """One run's (C4's H1a ``runs``) all-correct training groups and the spurious ones among them."""

    all_correct_groups: int = key(is_int)
    spurious: int = key(is_int)


@dataclass(frozen=True, kw_only=True)
class ArmSpurious(SpuriousCounts):
    """One arm's sums of its runs' counts and its spurious rate (null without all-correct groups)."""

    rate: float | None = key(nullable(is_num))


@dataclass(frozen=True, kw_only=True)
class H1aTransition(H1a):
    """H1a under tool faults (C2): every run's step-0 luck share and seed sharing meet the rule (the
    coverage check names a missing ``seed_sharing``)."""

    runs: dict[str, TransitionRun] = key(map_of(is_dict), read=by_name(TransitionRun), when="computed")
    seed_sharing: dict[str, SeedSharing | None] | None = key(
        map_of(nullable(is_dict)), read=by_name_or_null(SeedSharing), default=None
    )
    runs_meeting_luck: int = key(is_int, when="computed")
    runs_meeting_sharing: int = key(is_int, when="computed")
    luck_share_step0_min: float | None = key(nullable(is_num), when="computed")
    luck_share_step0_lower_min: float | None = key(nullable(is_num), when="computed")
    rule: LuckRule = key(is_dict, read=one(LuckRule), when="computed")


@dataclass(frozen=True, kw_only=True)
class H1aOutcome(H1a):
    """H1a under grader flips (C4): the independent arm's spurious rate meets the closed form, the
    paired arm's stays near zero (the coverage check names a missing ``spurious_rates``)."""

    runs: dict[str, SpuriousCounts] = key(map_of(is_dict), read=by_name(SpuriousCounts), when="computed")
    spurious_rates: dict[str, ArmSpurious | None] | None = key(
        map_of(nullable(is_dict)), read=by_name_or_null(ArmSpurious), default=None
    )
    expected_independent_rate_rule: float | None = key(nullable(is_num), default=None)
    group_size_rule: int | None = key(nullable(is_int), name="G_rule", default=None)
    expected_independent_rate: float = key(is_num, when="computed")
    q: float = key(is_num, when="computed")
    group_size: int = key(is_int, name="G", when="computed")
    rule: SpuriousRule = key(is_dict, read=one(SpuriousRule), when="computed")


@dataclass(frozen=True, kw_only=True)
class H2Rule:
    mean_at_least: float = key(is_num)
    mean_criterion: bool = key(is_bool)
    every_seed_positive: bool = key(is_bool)
    final_direction: bool = key(is_bool)


SEEDWISE = list_of(is_num)


@dataclass(frozen=True, kw_only=True)
class AucGap(Hypothesis):
    """The H2 statistic: paired minus independent validation AUC and final success, seed by seed, with
    means over seeds (H2a, H2b; a tier comparison's ``auc_gap``, measured without a verdict)."""

    validation_set: str = key(is_str, when="computed")
    final_set: str = key(is_str, when="computed")
    tasks: int = key(is_int, when="computed")
    final_tasks: int = key(is_int, when="computed")
    seeds: list[int] = key(list_of(is_int), when="computed")
    auc_paired: list[float] = key(SEEDWISE, when="computed")
    auc_independent: list[float] = key(SEEDWISE, when="computed")
    auc_difference_by_seed: list[float] = key(SEEDWISE, when="computed")
    auc_difference_positive_seeds: int = key(is_int, when="computed")
    auc_paired_mean: float = key(is_num, when="computed")
    auc_independent_mean: float = key(is_num, when="computed")
    auc_difference_mean: float = key(is_num, when="computed")
    auc_difference_ci95: list[float | None] = key(INTERVAL, when="computed")
    final_paired_by_seed: list[float] = key(SEEDWISE, when="computed")
    final_independent_by_seed: list[float] = key(SEEDWISE, when="computed")
    final_difference_by_seed: list[float] = key(SEEDWISE, when="computed")
    final_paired_mean: float = key(is_num, when="computed")
    final_independent_mean: float = key(is_num, when="computed")
    final_difference_mean: float = key(is_num, when="computed")
    rule: H2Rule = key(is_dict, read=one(H2Rule), when="computed")

    def _check(self, at: At) -> None:
        if not self.computed:
            return
        for name in (
            "auc_paired",
            "auc_independent",
            "auc_difference_by_seed",
            "final_paired_by_seed",
            "final_independent_by_seed",
            "final_difference_by_seed",
        ):
            values = getattr(self, name)
            if len(values) != len(self.seeds):
                raise UserError(
                    f"{at.path}: key '{at.prefix}.{name}' has {len(values)} values for {len(self.seeds)} "
                    f"seeds; {at.fix}"
                )


@dataclass(frozen=True, kw_only=True)
class H3Rule:
    mean_at_least: float = key(is_num)
    mean_criterion: bool = key(is_bool)
    every_seed_positive: bool = key(is_bool)


@dataclass(frozen=True, kw_only=True)
class ChallengeGap(Hypothesis):
    """H3: paired minus independent challenge success at the rule's steps (a tier's ``challenge_gap``)."""

    steps: list[int] = key(list_of(is_int), when="computed")
    seeds: list[int] = key(list_of(is_int), when="computed")
    difference_by_seed: list[float] = key(SEEDWISE, when="computed")
    difference_positive_seeds: int = key(is_int, when="computed")
    difference_mean: float = key(is_num, when="computed")
    ci95: list[float | None] = key(INTERVAL, when="computed")
    rule: H3Rule = key(is_dict, read=one(H3Rule), when="computed")


@dataclass(frozen=True, kw_only=True)
class H5Rule:
    lower_bound_above: float = key(is_num)


@dataclass(frozen=True, kw_only=True)
class HeldoutGap(Hypothesis):
    """H5: paired minus independent final success on held-out fault types, with its 90 % interval (a
    tier's ``heldout``)."""

    difference_by_seed: list[float] = key(SEEDWISE, when="computed")
    difference_mean: float = key(is_num, when="computed")
    difference_ci90: list[float | None] = key(INTERVAL, when="computed")
    ci90_lower: float | None = key(nullable(is_num), when="computed")
    rule: H5Rule = key(is_dict, read=one(H5Rule), when="computed")


@dataclass(frozen=True, kw_only=True)
class TierLuck:
    """A tier comparison's step-0 luck share per run (null for a run without a luck file)."""

    by_run: dict[str, float | None] = key(BY_SET)


# ---------------------------------------------------------------- secondary endpoints


@dataclass(frozen=True, kw_only=True)
class ThresholdStep:
    """Steps to the threshold: the first step reaching it (interpolated), or censored."""

    step: float | None = key(nullable(is_num))
    censored: bool = key(is_bool)


@dataclass(frozen=True, kw_only=True)
class ThresholdByArm:
    reached: int = key(is_int)
    runs: int = key(is_int)
    median_reached: float | None = key(nullable(is_num))


@dataclass(frozen=True, kw_only=True)
class SecondaryArm:
    """An arm's means over its runs (the clean reference's under ``clean``)."""

    auc: dict[str, float | None] = key(BY_SET)
    final: dict[str, float | None] = key(BY_SET)


@dataclass(frozen=True, kw_only=True)
class CleanReference:
    runs: list[str] = key(list_of(is_str))


BY_RUN = map_of(BY_SET)


@dataclass(frozen=True, kw_only=True)
class Secondary:
    """Descriptive endpoints per run and per arm (docs/records.md section 5): {run: {set: value}}."""

    threshold: float = key(is_num)
    threshold_curve: str = key(is_str)
    steps: list[int] = key(list_of(is_int))
    steps_to_threshold: dict[str, ThresholdStep] = key(map_of(is_dict), read=by_name(ThresholdStep))
    steps_to_threshold_by_arm: dict[str, ThresholdByArm] = key(map_of(is_dict), read=by_name(ThresholdByArm))
    auc: dict[str, dict[str, float | None]] = key(BY_RUN)
    final: dict[str, dict[str, float | None]] = key(BY_RUN)
    recovery_success: dict[str, dict[str, float | None]] = key(BY_RUN)
    exposure: dict[str, dict[str, float | None]] = key(BY_RUN)
    arms: dict[str, SecondaryArm] = key(map_of(is_dict), read=by_name(SecondaryArm))
    clean_reference: CleanReference | None = key(nullable(is_dict), read=one(CleanReference))


# ---------------------------------------------------------------- the decision register


def _hypothesis(cls: type, name: str, tier1: bool = True) -> Any:
    read = decided(cls) if tier1 else one(cls)
    return key(is_dict, name=name, read=read, default=None)


@dataclass(frozen=True, kw_only=True)
class Acceptance:
    """One run's admission (``acceptance.RUN``): admitted or not, and why not."""

    admitted: bool = key(is_bool)
    reasons: list[str] = key(list_of(is_str))


@dataclass(frozen=True, kw_only=True)
class DecisionRegister:
    """results/decisions/{c2,c4}.json (tier 1) or decisions/tiers/NAME.json (a registered tier's
    comparison, measured, not decided), written by ``paired-rollouts decide``."""

    path: str
    raw: dict[str, Any]
    condition: str = key(is_condition)
    decided: bool = key(is_bool)
    complete: bool = key(is_bool)
    seeds: list[int] = key(list_of(is_int))
    missing: list[str] = key(list_of(is_str))
    runs: list[str] = key(list_of(is_str))
    design_seeds: list[int] | None = key(nullable(list_of(is_int)))
    seed_pairs: list[list[str]] = key(list_of(pair_of(is_str)))
    bootstrap: Bootstrap = key(is_dict, read=one(Bootstrap))
    paper_pools: bool = key(is_bool)
    rules_source: str = key(is_str)
    rules_sha256: str = key(is_str)
    comparison: str | None = key(is_str, default=None)
    treatment: str | None = key(one_of(*design.ARMS), default=None)
    control: str | None = key(one_of(*design.ARMS), default=None)
    h1a: H1a | None = key(is_dict, name="H1a", default=None)
    h2a: AucGap | None = _hypothesis(AucGap, "H2a")
    h2b: AucGap | None = _hypothesis(AucGap, "H2b")
    h3: ChallengeGap | None = _hypothesis(ChallengeGap, "H3")
    h5: HeldoutGap | None = _hypothesis(HeldoutGap, "H5")
    auc_gap: AucGap | None = _hypothesis(AucGap, "auc_gap", tier1=False)
    challenge_gap: ChallengeGap | None = _hypothesis(ChallengeGap, "challenge_gap", tier1=False)
    heldout: HeldoutGap | None = _hypothesis(HeldoutGap, "heldout", tier1=False)
    tier_luck: TierLuck | None = key(is_dict, name="luck_share_step0", read=one(TierLuck), default=None)
    secondary: Secondary = key(is_dict, read=one(Secondary))
    acceptance: dict[str, Acceptance] | None = key(map_of(is_dict), read=by_name(Acceptance), default=None)

    @classmethod
    def _resolve(cls, values: dict[str, Any], at: At) -> dict[str, Any]:
        """H1a has the shape of its condition's noise: the luck-share rule under tool faults (C2), the
        spurious-rate rule under grader flips."""
        if values["h1a"] is not None:
            flavour = H1aTransition if values["condition"] == "C2" else H1aOutcome
            values["h1a"] = decided(flavour)(values["h1a"], at.at("H1a"))
        return values

    def _check(self, at: At) -> None:
        if self.comparison is None and self.condition not in design.decided_comparisons():
            raise UserError(
                f"{at.path}: key 'condition' is {self.condition!r}; tier 1's decision registers are for the "
                "conditions it decides (C2, C4); a tier's register names its 'comparison'"
            )
        if self.comparison is None:
            kind = design.PAPER_CONDITIONS[self.condition].kind
            absent = [name for name in design.TIER1_HYPOTHESES[kind] if self.hypothesis(name) is None]
            if absent:
                raise UserError(
                    f"{at.path}: no {', '.join(absent)} block, which '{DECIDE}' always writes for "
                    f"{self.condition} (computed or not); {at.fix}"
                )
        mismatch = verdict_mismatch(self.raw) if self.comparison is None else None
        if mismatch is not None:
            raise UserError(f"{at.path}: {mismatch}; a verdict must follow from its numbers, {at.fix}")

    @property
    def name(self) -> str:
        """c2, c4 for tier 1's registers; the tier's comparison (c2r, c4-scale_none, ...) otherwise."""
        return (self.comparison or self.condition).lower()

    def hypothesis(self, name: str) -> Hypothesis | None:
        """The block of a tier-1 hypothesis (H1a, H2a, H2b, H3, H5), None when the register has none."""
        return {"H1a": self.h1a, "H2a": self.h2a, "H2b": self.h2b, "H3": self.h3, "H5": self.h5}[name]

    @property
    def h2(self) -> AucGap | None:
        """Tier 1's H2 block: H2a under tool faults, H2b under grader flips."""
        return self.h2a if self.h2a is not None else self.h2b

    @property
    def gap(self) -> AucGap | None:
        """The AUC gap of the comparison: a tier's ``auc_gap``, tier 1's H2a or H2b."""
        return self.auc_gap if self.auc_gap is not None else self.h2

    @property
    def step0_luck_share(self) -> float | None:
        """Mean step-0 luck share over the register's runs (a tier's per-run values, tier 1's H1a), or
        None when no run has one."""
        if self.tier_luck is not None:
            by_run = self.tier_luck.by_run
        elif self.h1a is not None and self.h1a.luck_share_step0 is not None:
            by_run = {run: v.lam if v is not None else None for run, v in self.h1a.luck_share_step0.items()}
        else:
            by_run = {}
        values = [v for v in by_run.values() if v is not None]
        return sum(values) / len(values) if values else None


# ---------------------------------------------------------------- verdicts recomputed from the numbers

# A register's numbers are rounded to 4 decimals after its verdicts were taken. Rounding is monotone: a
# criterion that held (x >= t, or x > t) still reads x >= t, one that failed (x < t, or x <= t) x <= t.
_SLACK = 2e-4  # a sum or difference of up to three rounded numbers (each off by at most 5e-5)


def _side(held: Any, value: float | None, threshold: float) -> bool:
    """Whether a stated "value at least (or above) threshold" can be true of the rounded value."""
    if held:
        return value is not None and value >= threshold
    return value is None or value <= threshold


def _rules_at_hand(raw: dict[str, Any]) -> tuple[Any, str | None]:
    """The frozen rules the register names (``rules_source``, which ``decide`` always writes) and why the
    register cannot stand on them: (rules, None) when that file is here with the recorded ``rules_sha256``;
    (None, why) when it is here with another sha256 (decided under other rules); (None, None) only when it
    is genuinely not at hand (then what the register holds is checked against itself)."""
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import load_rules

    source = raw["rules_source"]
    if not Path(source).is_file():
        return None, None
    digest = sha256_file(source)
    if digest != raw["rules_sha256"]:
        return None, (
            f"decided under other rules than {source} (rules_sha256 {raw['rules_sha256']}, the file has "
            f"{digest}); read it beside the rules that decided it"
        )
    return load_rules(source), None


def _conjunction(passes: bool, criteria: list[tuple[bool, bool | None]]) -> bool:
    """``passes`` against its criteria, each (holds, required by the rules; None: not known here, the mean
    criterion always is): with every requirement known passes is exactly their conjunction; otherwise a
    pass needs every known-required criterion, a miss at least one criterion that failed."""
    if all(required is not None for _, required in criteria):
        return passes == all(held or not required for held, required in criteria)
    if passes:
        return all(held for held, required in criteria if required)
    return not all(held for held, _ in criteria)


def _mean_of(values: list[float], mean: float) -> bool:
    return not values or abs(sum(values) / len(values) - mean) <= _SLACK


def _gap_mismatch(name: str, block: dict[str, Any], rules: Any, h2: bool) -> str | None:
    """H2a/H2b (``h2``) or H3: the mean and every-seed criteria, H2's final direction, and the verdict."""
    rule = block["rule"]
    diffs = block["auc_difference_by_seed" if h2 else "difference_by_seed"]
    mean = block["auc_difference_mean" if h2 else "difference_mean"]
    if h2 and any(
        abs(p - i - d) > _SLACK
        for p, i, d in zip(block["auc_paired"], block["auc_independent"], diffs, strict=True)
    ):
        return f"{name}.auc_difference_by_seed is not auc_paired - auc_independent"
    if not _mean_of(diffs, mean):
        return f"{name}: the mean difference {mean} is not the mean of its per-seed values {diffs}"
    threshold = rule["mean_at_least"]
    wrong = (
        None
        if rules is None
        else _frozen(
            f"{name}.rule", rule, {"mean_at_least": rules.h2_mean_at_least if h2 else rules.h3_mean_at_least}
        )
    )
    if wrong is not None:
        return wrong
    if not _side(rule["mean_criterion"], mean, threshold):
        return (
            f"{name}.rule.mean_criterion is {rule['mean_criterion']} with the mean {mean} against {threshold}"
        )
    every = rule["every_seed_positive"]
    if not (all(d >= 0 for d in diffs) if every else any(d <= 0 for d in diffs)):
        return f"{name}.rule.every_seed_positive is {every} with the per-seed differences {diffs}"
    criteria = [
        (rule["mean_criterion"], True),
        (
            every,
            None if rules is None else (rules.h2_every_seed_positive if h2 else rules.h3_every_seed_positive),
        ),
    ]
    if h2:
        direction = rule["final_direction"]
        if not _side(direction, block["final_paired_mean"] - block["final_independent_mean"], 0.0):
            return f"{name}.rule.final_direction is {direction} with the final means of the two arms"
        criteria.append((direction, None if rules is None else rules.h2_final_direction))
    if not _conjunction(block["passes"], criteria):
        words = ("mean_criterion", "every_seed_positive", "final_direction")
        held = ", ".join(f"{w} {str(h).lower()}" for w, (h, _) in zip(words, criteria, strict=False))
        return f"{name}.passes is {block['passes']}, but its rule's criteria say otherwise ({held})"
    return None


def _h5_mismatch(block: dict[str, Any], rules: Any) -> str | None:
    lower, threshold = block["ci90_lower"], block["rule"]["lower_bound_above"]
    if block["difference_ci90"][0] != lower:
        return "H5.ci90_lower is not the lower end of H5.difference_ci90"
    if not _mean_of(block["difference_by_seed"], block["difference_mean"]):
        return "H5.difference_mean is not the mean of H5.difference_by_seed"
    wrong = (
        None
        if rules is None
        else _frozen("H5.rule", block["rule"], {"lower_bound_above": rules.h5_lower_bound_above})
    )
    if wrong is not None:
        return wrong
    if not _side(block["passes"], lower, threshold):
        return f"H5.passes is {block['passes']} with the interval's lower end {lower} against {threshold}"
    return None


def _h1a_mismatch(condition: str, block: dict[str, Any], rules: Any) -> str | None:
    if condition == "C2":
        return _h1a_transition_mismatch(block, rules)
    return _h1a_outcome_mismatch(block, rules)


def _frozen(name: str, written: dict[str, Any], frozen: dict[str, Any]) -> str | None:
    """The first threshold of ``written`` that is not the frozen rules' (rounded as the register is)."""
    for k, value in frozen.items():
        if k in written and written[k] != round(value, 4):
            return f"{name}.{k} is {written[k]}, not the frozen rules' {round(value, 4)}"
    return None


def _h1a_transition_rules(block: dict[str, Any], rules: Any) -> str | None:
    """C2's H1a thresholds (the rule's and each run's seed-sharing ones) are the frozen rules'."""
    if rules is None:
        return None
    sharing = {
        "paired_max_seeds_per_group": rules.paired_max_seeds,
        "independent_min_seeds_per_group": rules.independent_min_seeds,
    }
    frozen = {
        "lambda_at_least": rules.h1a_c2_lambda_at_least,
        "lower_bound_above": rules.h1a_c2_lower_bound_above,
        **sharing,
    }
    for where, written, want in [
        ("H1a.rule", block["rule"], frozen),
        *(
            (f"H1a.seed_sharing.{run}", v, sharing)
            for run, v in block["seed_sharing"].items()
            if v is not None
        ),
    ]:
        wrong = _frozen(where, written, want)
        if wrong is not None:
            return wrong
    return None


def _h1a_transition_mismatch(block: dict[str, Any], rules: Any) -> str | None:
    """C2's H1a: each run's luck and sharing criteria from its numbers, the counts and the verdict."""
    rule, runs = block["rule"], block["runs"]
    wrong = _h1a_transition_rules(block, rules)
    if wrong is not None:
        return wrong
    for run, row in runs.items():
        luck = block["luck_share_step0"].get(run)
        lam, low = (luck["lam"], luck["ci95"][0]) if luck is not None else (None, None)
        held = row["luck_criterion"]
        possible = (
            _side(True, lam, rule["lambda_at_least"]) and _side(True, low, rule["lower_bound_above"])
            if held
            else _side(False, lam, rule["lambda_at_least"]) or _side(False, low, rule["lower_bound_above"])
        )
        if not possible:
            return f"H1a.runs.{run}.luck_criterion is {held} with the luck share {lam} (lower end {low})"
        sharing = block["seed_sharing"].get(run)
        if row["sharing_criterion"] != bool(sharing and sharing["passes"]):
            return f"H1a.runs.{run}.sharing_criterion is not its seed_sharing verdict"
        wrong = _sharing_mismatch(sharing) if sharing is not None else None
        if wrong is not None:
            return f"H1a.seed_sharing.{run}: {wrong}"
    for what in ("luck", "sharing"):
        if block[f"runs_meeting_{what}"] != sum(bool(r[f"{what}_criterion"]) for r in runs.values()):
            return f"H1a.runs_meeting_{what} is not the count of its runs meeting the criterion"
    if block["passes"] is not None and block["passes"] != all(
        r["luck_criterion"] and r["sharing_criterion"] for r in runs.values()
    ):
        return f"H1a.passes is {block['passes']}, but its runs' criteria say otherwise"
    return None


def _sharing_mismatch(sharing: dict[str, Any]) -> str | None:
    """One run's seed-sharing verdict from its counts (stats/groups.py seed_sharing, report_rule): the
    groups split into one seed and several, the groups breaking the arm's frozen threshold (with the
    thresholds 1 and 2, exactly the groups of several seeds, resp. of one), and passes = some group and
    none breaking."""
    counts = ("groups", "groups_sharing_one_seed", "groups_with_several_seeds")
    if not isinstance(sharing, dict) or not all(is_int(sharing.get(k)) for k in counts):
        return f"its counts {', '.join(counts)} are not all given as integers"
    n, one, several = (sharing[k] for k in counts)
    if one + several != n:
        return f"{one} groups with one seed and {several} with several are not its {n} groups"
    if sharing.get("arm") not in ("paired", "independent"):
        return None
    paired = sharing["arm"] == "paired"
    default = several if paired else one  # breaking the thresholds 1 (paired) and 2 (independent)
    breaking = sharing.get("groups_breaking_the_rule", default)
    limit = sharing.get("paired_max_seeds_per_group" if paired else "independent_min_seeds_per_group")
    if limit in (None, 1 if paired else 2) and breaking != default:
        return f"{breaking} groups break the rule, but {default} have {'several seeds' if paired else 'one seed'}"
    from paired_rollouts.stats.groups import sharing_passes

    if sharing.get("passes") != sharing_passes(sharing["arm"], n, breaking):
        return f"passes is {sharing.get('passes')} with {breaking} of {n} groups breaking the rule"
    return None


def _h1a_outcome_mismatch(block: dict[str, Any], rules: Any) -> str | None:
    """C4's H1a: the thresholds and q the frozen rules', the expected rate recomputed from q and G as
    ``decide`` computes it, the two spurious-rate criteria from the rates, and the verdict."""
    from paired_rollouts.stats.decisions.hypotheses import expected_independent_rate

    rule = block["rule"]
    if rules is not None:
        wrong = _frozen(
            "H1a.rule",
            rule,
            {
                "independent_within": rules.h1a_c4_independent_within,
                "paired_at_most": rules.h1a_c4_paired_at_most,
            },
        ) or _frozen(
            "H1a",
            block,
            {
                "q": rules.h1a_c4_q,
                "G_rule": rules.h1a_c4_group_size,
                "expected_independent_rate_rule": rules.h1a_c4_expected_rate,
            },
        )
        if wrong is not None:
            return wrong
        frozen, rule_size = rules.h1a_c4_expected_rate, rules.h1a_c4_group_size
    else:
        frozen, rule_size = block.get("expected_independent_rate_rule"), block.get("G_rule")
    expected_again, _ = expected_independent_rate(block["q"], block["G"], frozen, rule_size)
    if block["expected_independent_rate"] != round(expected_again, 4):
        return (
            f"H1a.expected_independent_rate is {block['expected_independent_rate']}, but q {block['q']} and "
            f"G {block['G']} give {round(expected_again, 4)}"
        )
    ind, par = block["spurious_rate_independent"], block["spurious_rate_paired"]
    expected, within = block["expected_independent_rate"], rule["independent_within"]
    ind_ok, par_ok = rule["independent_criterion"], rule["paired_criterion"]
    if not (
        ind is not None and abs(ind - expected) <= within + _SLACK
        if ind_ok
        else ind is None or abs(ind - expected) >= within - _SLACK
    ):
        return (
            f"H1a.rule.independent_criterion is {ind_ok} with the rate {ind} against {expected} +- {within}"
        )
    if not (
        par is not None and par <= rule["paired_at_most"]
        if par_ok
        else par is None or par >= rule["paired_at_most"]
    ):
        return f"H1a.rule.paired_criterion is {par_ok} with the rate {par} against {rule['paired_at_most']}"
    if block["passes"] is not None and block["passes"] != (ind_ok and par_ok):
        return f"H1a.passes is {block['passes']}, but its criteria say otherwise"
    return None


def verdict_mismatch(raw: dict[str, Any]) -> str | None:
    """Why a tier-1 decision register's verdicts do not follow from its own numbers and the evidence it
    names (None when they do): the rules it names, when here, are the ones it records (``_rules_at_hand``);
    its seed pairs, runs, admission and blocks cover one another and its summaries are their values'
    (``evidence_mismatch``); ``decided`` from its seed pairs, design seeds and ``missing``; no verdict when
    not decided; each decided hypothesis's criteria from its numbers and its ``passes`` from its criteria
    (with the frozen rules the register names where that file is here, as ``paired-rollouts decide``
    applied them)."""
    rules, other_rules = _rules_at_hand(raw)
    if other_rules is not None:
        return other_rules
    pairs, design_seeds = raw["seed_pairs"], raw["design_seeds"]
    decided = (
        bool(pairs) and not raw["missing"] and design_seeds is not None and len(pairs) == len(design_seeds)
    )
    for flag in ("decided", "complete"):
        if raw[flag] != decided:
            return (
                f"{flag} is {str(raw[flag]).lower()}, but {len(pairs)} seed pairs of the design's "
                f"{design_seeds} are admitted with {len(raw['missing'])} problem(s) under 'missing'"
            )
    wrong = evidence_mismatch(raw, rules)
    if wrong is not None:
        return wrong
    for name in HYPOTHESES:
        block = raw.get(name)
        if not isinstance(block, dict) or block.get("passes") is None:
            continue
        if not decided or not block.get("computed"):
            return f"{name}.passes is {block['passes']} on evidence that decides nothing (not decided or computed)"
        mismatch = (
            _h1a_mismatch(raw["condition"], block, rules)
            if name == "H1a"
            else _h5_mismatch(block, rules)
            if name == "H5"
            else _gap_mismatch(name, block, rules, h2=name != "H3")
        )
        if mismatch is not None:
            return mismatch
    return None


# ---------------------------------------------------------------- evidence a tier-1 register rests on


def evidence_mismatch(raw: dict[str, Any], rules: Any) -> str | None:
    """Why a tier-1 register's evidence does not hold together (None when it does): the runs and seeds
    are its seed pairs'; a decided register's seed pairs and ``missing`` are what its ``acceptance`` gives
    (``decide``'s own pairing); every computed block covers exactly the register's seed pairs (H1a: its
    runs) and its summaries (means, counts, minima, intervals) are its per-seed and per-run values'; and
    each run's step-0 luck share is the luck file it names wherever that file is here."""
    for check in (_pairs_mismatch, _acceptance_mismatch):
        wrong = check(raw)
        if wrong is not None:
            return wrong
    for name in HYPOTHESES:
        block = raw.get(name)
        if not isinstance(block, dict) or not block.get("computed"):
            continue
        if name == "H1a":
            wrong = _h1a_coverage(raw, block) or _luck_mismatch(raw, block, rules)
        else:
            wrong = _block_coverage(name, raw, block) or _summary_mismatch(name, block)
        if wrong is not None:
            return wrong
    return None


def _pairs_mismatch(raw: dict[str, Any]) -> str | None:
    """``runs`` and ``seeds`` are the seed pairs' runs and seeds; each pair is the condition's paired and
    independent run of one seed (``design.Comparison.pair``), every seed one of the design's."""
    from paired_rollouts.stats.decisions.register import tier1_comparison

    comparison = tier1_comparison(raw["condition"])
    pairs, seeds = raw["seed_pairs"], raw["seeds"]
    if len(pairs) != len(seeds) or any(
        list(pair) != [run.name for run in comparison.pair(seed)]
        for pair, seed in zip(pairs, seeds, strict=False)
    ):
        return f"seeds {seeds} are not the seeds of its seed_pairs {pairs}"
    if raw["runs"] != [run for pair in pairs for run in pair]:
        return f"runs {raw['runs']} are not the runs of its seed_pairs"
    if raw["design_seeds"] is not None and not set(seeds) <= set(raw["design_seeds"]):
        return f"seeds {seeds} are not all of the design's seeds {raw['design_seeds']}"
    return None


def _candidates(comparison: Any, acceptance: dict[str, Any]) -> dict[str, Any]:
    """The runs of ``acceptance`` that ``decide`` pairs (the comparison's arms; not the clean reference),
    as the run name and seed its pairing reads."""
    from types import SimpleNamespace

    out = {}
    for run in acceptance:
        try:
            ident = design.parse_run(run)
        except UserError:
            continue
        if (
            ident.condition == comparison.condition
            and ident.arm in (comparison.treatment, comparison.control)
            and ident.scaling == comparison.scaling
        ):
            out[run] = SimpleNamespace(run=run, seed=ident.seed)
    return out


def _acceptance_mismatch(raw: dict[str, Any]) -> str | None:
    """A decided register (or any that lists its admission) pairs exactly the runs its ``acceptance``
    admits, as ``decide`` pairs them, and lists each admission problem and left-out seed under
    ``missing``."""
    from paired_rollouts.stats.decisions.register import _seed_pairs, tier1_comparison

    acceptance = raw.get("acceptance")
    if not raw["decided"] and not acceptance:
        return None
    if not isinstance(acceptance, dict):  # each entry's shape is read as Acceptance before this
        return "acceptance must give each run's admitted (true or false) and reasons (a list of strings)"
    comparison = tier1_comparison(raw["condition"])
    candidates = _candidates(comparison, acceptance)
    expected: list[str] = []
    for run in candidates:
        entry = acceptance[run]
        if entry["admitted"] == bool(entry["reasons"]):
            return f"acceptance.{run}.admitted is {str(entry['admitted']).lower()} with reasons {entry['reasons']}"
        expected += [f"{run}: {reason}" for reason in entry["reasons"]]
    pairs = _seed_pairs(comparison, candidates, acceptance, raw["design_seeds"], expected)
    again = [[p.run, i.run] for p, i in pairs]
    if again != raw["seed_pairs"]:
        return f"seed_pairs {raw['seed_pairs']} are not the pairs its acceptance admits {again}"
    left = list(raw["missing"])
    for problem in expected:
        if problem not in left:
            return f"missing does not list '{problem}', which its acceptance gives"
        left.remove(problem)
    return None


def _block_coverage(name: str, raw: dict[str, Any], block: dict[str, Any]) -> str | None:
    """H2a/H2b, H3, H5 are computed on the register's seed pairs: their seeds and runs, one value a seed."""
    if block.get("seeds") != raw["seeds"]:
        return f"{name}.seeds {block.get('seeds')} are not the register's seeds {raw['seeds']}"
    if "runs" in block and block["runs"] != raw["seed_pairs"]:
        return f"{name}.runs are not the register's seed_pairs"
    by_seed = "auc_difference_by_seed" if name in ("H2a", "H2b") else "difference_by_seed"
    if len(block[by_seed]) != len(raw["seeds"]):
        return f"{name}.{by_seed} has {len(block[by_seed])} values for the {len(raw['seeds'])} seeds"
    return None


def _between(low: int | float, value: Any, high: int | float) -> bool:
    return is_num(value) and low <= value <= high


def _summary_mismatch(name: str, block: dict[str, Any]) -> str | None:
    """The means, counts and interval of a gap block are its per-seed values'."""
    if name == "H5":
        diffs, interval = block["difference_by_seed"], block["difference_ci90"]
        mean_key, interval_key, means = "difference_mean", "difference_ci90", {}
    elif name == "H3":
        diffs, interval = block["difference_by_seed"], block["ci95"]
        mean_key, interval_key, means = "difference_mean", "ci95", {}
    else:
        diffs, interval = block["auc_difference_by_seed"], block["auc_difference_ci95"]
        mean_key, interval_key = "auc_difference_mean", "auc_difference_ci95"
        means = {
            "auc_paired_mean": block["auc_paired"],
            "auc_independent_mean": block["auc_independent"],
            "final_paired_mean": block["final_paired_by_seed"],
            "final_independent_mean": block["final_independent_by_seed"],
            "final_difference_mean": block["final_difference_by_seed"],
        }
        paired, independent = block["final_paired_by_seed"], block["final_independent_by_seed"]
        if any(
            abs(p - i - d) > _SLACK
            for p, i, d in zip(paired, independent, block["final_difference_by_seed"], strict=True)
        ):
            return f"{name}.final_difference_by_seed is not final_paired_by_seed - final_independent_by_seed"
    for key_, values in {mean_key: diffs, **means}.items():
        if not _mean_of(values, block[key_]):
            return f"{name}.{key_} {block[key_]} is not the mean of its per-seed values {values}"
    count = "difference_positive_seeds" if name == "H3" else "auc_difference_positive_seeds"
    if name != "H5" and not _between(sum(d > 0 for d in diffs), block[count], sum(d >= 0 for d in diffs)):
        return f"{name}.{count} is {block[count]}, but {sum(d > 0 for d in diffs)} of {diffs} are positive"
    low, high = interval
    if low is not None and high is not None and low > high:
        return f"{name}.{interval_key} {interval} has its lower end above its upper end"
    return None


def _h1a_coverage(raw: dict[str, Any], block: dict[str, Any]) -> str | None:
    """H1a judges every run of the register's seed pairs: under tool faults each one's luck share, run
    row and seed sharing; under grader flips each one's spurious counts (a run without training groups
    has none, and then the register is not decided), which sum to each arm's rate."""
    runs = sorted(raw["runs"])
    if raw["condition"] == "C2":
        for part in ("runs", "luck_share_step0", "seed_sharing"):
            if not isinstance(block.get(part), dict):
                return f"H1a.{part} is missing; H1a under tool faults judges each run's"
            if sorted(block[part]) != runs:
                return f"H1a.{part} covers {sorted(block[part])}, not the register's runs {runs}"
        return None
    counted = sorted(block["runs"])
    if not set(counted) <= set(runs) or (raw["decided"] and counted != runs):
        return f"H1a.runs covers {counted}, not the register's runs {runs}"
    rates = block.get("spurious_rates")
    if not isinstance(rates, dict):
        return "H1a.spurious_rates is missing; H1a under grader flips judges each arm's"
    for arm in ("paired", "independent"):
        wrong = _arm_rate_mismatch(block, rates.get(arm), arm)
        if wrong is not None:
            return wrong
    return None


def _arm_rate_mismatch(block: dict[str, Any], stated: Any, arm: str) -> str | None:
    """C4's H1a: an arm's spurious counts and rate are its runs' sums (none without a run with groups)."""
    rows = [row for run, row in block["runs"].items() if design.parse_run(run).arm == arm]
    if not rows:
        if stated is not None or block[f"spurious_rate_{arm}"] is not None:
            return f"H1a.spurious_rates.{arm}: no run of the arm has training groups"
        return None
    sums = {k: sum(row.get(k, 0) for row in rows) for k in ("all_correct_groups", "spurious")}
    rate = round(sums["spurious"] / sums["all_correct_groups"], 4) if sums["all_correct_groups"] else None
    again = {**sums, "rate": rate}
    if not isinstance(stated, dict) or differing_keys(stated, again) or block[f"spurious_rate_{arm}"] != rate:
        return f"H1a.spurious_rates.{arm} is not its runs' counts {again}"
    return None


def _luck_mismatch(raw: dict[str, Any], block: dict[str, Any], rules: Any) -> str | None:
    """C2's step-0 luck shares: the minima are the runs' values, and each run's share is the luck file it
    names (``source``) wherever that file is here; with the frozen rules and every file here, the whole
    block is recomputed as ``decide`` computes it (the interval draws on one generator across the runs)."""
    if raw["condition"] != "C2":
        return None
    shares = block["luck_share_step0"]
    wrong = _luck_summary_mismatch(block, shares)
    if wrong is not None:
        return wrong
    luck, here = _luck_files(shares)
    if isinstance(luck, str):
        return luck
    for run, record in here.items():
        again = {"lam": round(record.lam, 4) if record.lam is not None else None}
        again |= {"tasks": record.tasks, "tasks_defined": record.tasks_defined, "step": record.step}
        differ = differing_keys({k: shares[run].get(k) for k in again}, again)
        if differ:
            return (
                f"H1a.luck_share_step0.{run} is not its luck file {shares[run]['source']} "
                f"(differs in {', '.join(differ)})"
            )
    if rules is None or len(here) != len(shares):
        return None
    from types import SimpleNamespace

    from paired_rollouts.stats.curves import round4
    from paired_rollouts.stats.decisions.hypotheses import _luck_shares

    again = round4(_luck_shares([SimpleNamespace(run=r, diagnostic={}) for r in raw["runs"]], luck, rules))
    for run in raw["runs"]:
        differ = differing_keys(shares[run], again[run])
        if differ:
            return (
                f"H1a.luck_share_step0.{run} is not its recomputation from {shares[run]['source']} "
                f"(differs in {', '.join(differ)})"
            )
    return None


def _luck_summary_mismatch(block: dict[str, Any], shares: dict[str, Any]) -> str | None:
    """C2's H1a minima are its runs' luck shares and lower ends; each interval is ordered."""
    lams = [v["lam"] for v in shares.values() if v is not None and v["lam"] is not None]
    lows = [v["ci95"][0] for v in shares.values() if v is not None and v["ci95"][0] is not None]
    for key_, values in (("luck_share_step0_min", lams), ("luck_share_step0_lower_min", lows)):
        if block[key_] != min(values, default=None):
            return f"H1a.{key_} is {block[key_]}, but the runs' values give {min(values, default=None)}"
    for run, share in shares.items():
        low, high = share["ci95"] if share is not None else (None, None)
        if low is not None and high is not None and low > high:
            return f"H1a.luck_share_step0.{run}.ci95 has its lower end above its upper end"
    return None


def _luck_files(shares: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The luck files the runs' shares name that are here, read (records.read_luck), as ``decide`` keys
    them, with each run's record; or why one is not the run's own."""
    from paired_rollouts.io import sha256_file
    from paired_rollouts.records.runs import read_luck
    from paired_rollouts.stats.decisions.evidence import LuckFile

    luck, here = {}, {}
    for run, share in shares.items():
        source = share.get("source") if share is not None else None
        if not isinstance(source, str) or not Path(source).is_file():
            continue
        record = read_luck(source)
        if record.run != run or record.step != share.get("step"):
            return (
                f"H1a.luck_share_step0.{run}.source {source} is the luck file of {record.run} at step {record.step}",
                {},
            )
        luck[(record.run, record.step)] = LuckFile(record, sha256_file(source))
        here[run] = record
    return luck, here


def read_decision_register(path: str | Path) -> DecisionRegister:
    """A decision register, typed: every block the tables, the predictions and the power table read."""
    return read_register(DecisionRegister, path, "decision register", DECIDE, dotted=True)


# ---------------------------------------------------------------- predictions register

PREDICTION_VERDICTS = ("met", "missed", "not run", "not decided")


@dataclass(frozen=True, kw_only=True)
class Prediction:
    """One registered prediction: its statement and confidence, the numbers judged, the verdict."""

    id: str = key(is_str)
    statement: str = key(is_str)
    confidence: float = key(is_num)
    check: str = key(is_str)
    verdict: str = key(one_of(*PREDICTION_VERDICTS))
    observed: dict[str, Any] = key(is_dict)  # the check's own numbers, free-form per check

    @property
    def reason(self) -> Any:
        """Why the check could not judge, when it says (``observed.reason``)."""
        return self.observed.get("reason")


@dataclass(frozen=True, kw_only=True)
class H4:
    decided: bool = key(is_bool)
    passes: bool | None = key(nullable(is_bool))
    reason: str | None = key(is_text, default=None)
    gap_group: float | None = key(nullable(is_num), when="decided")
    gap_none: float | None = key(nullable(is_num), when="decided")


@dataclass(frozen=True, kw_only=True)
class Predictions:
    """results/decisions/predictions.json or decisions/tiers/predictions.json (stats/predictions.py)."""

    path: str
    raw: dict[str, Any]
    predictions: list[Prediction] = key(list_of(is_dict), read=each(Prediction))
    counts: dict[str, int] = key(map_of(is_int))
    h4: H4 = key(is_dict, name="H4", read=one(H4))
    registers: list[str] = key(list_of(is_str))
    probes: list[str] = key(list_of(is_str))

    def _check(self, at: At) -> None:
        """``counts`` is its rows' tally by verdict (never trusted as written)."""
        tally = {v: sum(p.verdict == v for p in self.predictions) for v in PREDICTION_VERDICTS}
        stated = {v: self.counts.get(v, 0) for v in PREDICTION_VERDICTS}
        if stated != tally or not set(self.counts) <= set(PREDICTION_VERDICTS):
            raise at.error(f"counts {self.counts} is not the tally of its predictions' verdicts {tally}")


PREDICTIONS = "paired-rollouts predictions"


def read_predictions(path: str | Path) -> Predictions:
    """results/decisions/predictions.json or decisions/tiers/predictions.json (stats/predictions.py),
    typed: every row and the H4 block (docs/records.md section 4.1). It must name its ``inputs`` (the
    decision and probe registers and the tier rules, with their sha256, and the group size), as the writer
    always does; each must be at hand with its sha256 (else it cannot be judged again: refused, as
    read_power_curves refuses), and every verdict, the counts, H4 and the registers named are judged again
    from them and must be the ones written."""
    from paired_rollouts.io import sha256_file

    register = read_register(Predictions, path, "predictions register", PREDICTIONS)
    inputs, rules = register.raw.get("inputs"), register.raw.get("tier_rules")
    if not (
        isinstance(inputs, dict)
        and map_of(is_sha256)(inputs.get("decisions"))
        and map_of(is_sha256)(inputs.get("probes"))
        and is_sha256(inputs.get("tier_rules_sha256"))
        and is_int(inputs.get("group_size"))
        and is_str(rules)
    ):
        raise UserError(
            f"{path}: no 'tier_rules' and 'inputs' (decisions, probes, tier_rules_sha256, group_size) to "
            f"judge its verdicts again from; regenerate it with '{PREDICTIONS}'"
        )
    files = {**inputs["decisions"], **inputs["probes"], rules: inputs["tier_rules_sha256"]}
    for file, digest in files.items():
        if not Path(file).is_file():
            raise UserError(f"{path}: input {file} not found; run it from the checkout that wrote it")
        if sha256_file(file) != digest:
            raise UserError(f"{path}: {file} changed since the predictions were judged; {PREDICTIONS}")
    from paired_rollouts.prereg.rules import load_tier_rules
    from paired_rollouts.records.probe import read_probe_register
    from paired_rollouts.stats.curves import round4
    from paired_rollouts.stats.predictions import judge

    decisions = {Path(f).stem: read_decision_register(f) for f in inputs["decisions"]}
    probes = {Path(f).stem: read_probe_register(f) for f in inputs["probes"]}
    again = round4(judge(load_tier_rules(rules), decisions, probes, inputs["group_size"], source=rules))
    differ = differing_keys(again, {k: register.raw.get(k) for k in again})
    if differ:
        part = next(p for p in ("predictions", "counts", "H4", "registers", "probes") if p in differ)
        rows = [
            f"{a['id']} {b.get('verdict')} (judged again: {a['verdict']})"
            for a, b in zip(again["predictions"], register.raw["predictions"], strict=False)
            if a != b
        ]
        raise UserError(
            f"{path}: {part} is not what its inputs give ({'; '.join(rows) or part}); "
            f"a verdict must follow from its numbers, regenerate it with '{PREDICTIONS}'"
        )
    return register


# ---------------------------------------------------------------- power table


@dataclass(frozen=True, kw_only=True)
class HypothesisPower:
    """How often one registered rule passes with n seed pairs drawn from the admitted ones."""

    condition: str = key(is_condition)
    passes_full: bool = key(is_bool)
    passes_full_recomputed: bool = key(is_bool)
    seed_pairs: int = key(is_int)
    power: dict[str, float] = key(map_of(is_num))
    passes_counted: dict[str, int] = key(map_of(is_int))
    draws: int = key(is_int)

    def _check(self, at: At) -> None:
        if not all(n.isdigit() for n in self.power):
            raise UserError(f"{at.where}.power must be keyed by seed-pair counts; {at.fix}")


@dataclass(frozen=True, kw_only=True)
class PowerTable:
    """results/<scale>/decisions/power.json (surrogate/power.py, docs/records.md section 8.3)."""

    path: str
    raw: dict[str, Any]
    hypotheses: dict[str, HypothesisPower] = key(is_dict, read=by_name(HypothesisPower))
    full_pairs: int = key(is_int)
    pairs: list[int] = key(list_of(is_int))
    draws: int = key(is_int)
    seed: int = key(is_int)
    bootstrap_resamples: int = key(is_int)
    decisions: dict[str, str] = key(map_of(is_sha256))
    rules_sha256: str = key(is_str)


def read_power_table(path: str | Path) -> PowerTable:
    """results/<scale>/decisions/power.json (surrogate/power.py, docs/records.md section 8.3), typed: each
    power is its count over the draws, and each ``passes_full`` the verdict of the decision register it
    names wherever that file is at hand (with the recorded sha256; it is then read, verdicts checked)."""
    from paired_rollouts.io import sha256_file

    table = read_register(PowerTable, path, "power table", POWER)
    for name, h in table.hypotheses.items():
        if set(h.power) != set(h.passes_counted) or any(
            h.power[n] != h.passes_counted[n] / h.draws for n in h.power
        ):
            raise UserError(
                f"{path}: hypotheses.{name}.power is not passes_counted / draws at each n; "
                f"a power must follow from its counts, regenerate it with '{POWER}'"
            )
        wrong = _power_cells_mismatch(table, name, h)
        if wrong is not None:
            raise UserError(f"{path}: {wrong}; regenerate it with '{POWER}'")
    if table.hypotheses and table.full_pairs != min(h.seed_pairs for h in table.hypotheses.values()):
        raise UserError(
            f"{path}: full_pairs {table.full_pairs} is not the fewest seed pairs of its hypotheses; "
            f"regenerate it with '{POWER}'"
        )
    for file, digest in table.decisions.items():
        if not Path(file).is_file():
            continue
        if sha256_file(file) != digest:
            raise UserError(
                f"{path}: decision register {file} changed since the power was estimated; {POWER}"
            )
        wrong = _power_register_mismatch(table, file, read_decision_register(file))
        if wrong is not None:
            raise UserError(f"{path}: {wrong}; regenerate it with '{POWER}'")
    return table


# the hypotheses surrogate/power.py estimates per decided condition; all but H5 read no bootstrap interval,
# so their verdict on all the register's pairs (passes_full_recomputed) is the register's own
POWER_HYPOTHESES = {"C2": ("H2a", "H3", "H5"), "C4": ("H2b",)}


def _power_cells_mismatch(table: PowerTable, name: str, h: HypothesisPower) -> str | None:
    """One hypothesis's cells: the table's draws, a count within them at each of the table's sizes and
    at the hypothesis's full number of seed pairs (and at no other)."""
    sizes = {str(n) for n in table.pairs} | {str(h.seed_pairs)}
    if set(h.power) != sizes:
        return f"hypotheses.{name} has cells at {sorted(h.power)}, not at the sizes {sorted(sizes)}"
    if h.draws != table.draws or not all(0 <= c <= h.draws for c in h.passes_counted.values()):
        return f"hypotheses.{name}: counts {h.passes_counted} are not within its table's {table.draws} draws"
    return None


def _power_register_mismatch(table: PowerTable, file: str, register: DecisionRegister) -> str | None:
    """What a power table says of a decision register it names (read, verdicts checked): its rules, the
    hypotheses of its condition, its number of seed pairs and its verdicts."""
    if register.rules_sha256 != table.rules_sha256:
        return f"rules_sha256 is not {file}'s ({register.rules_sha256}); power is estimated with the rules that decided"
    names = sorted(n for n, h in table.hypotheses.items() if h.condition == register.condition)
    if names != sorted(POWER_HYPOTHESES.get(register.condition, ())):
        return f"hypotheses {names} of {register.condition} are not those {file} decides"
    for name in names:
        h, block = table.hypotheses[name], register.hypothesis(name)
        if block is None or h.passes_full != bool(block.passes):
            return (
                f"hypotheses.{name}.passes_full is {str(h.passes_full).lower()}, but {file} says "
                f"passes: {None if block is None else block.passes}"
            )
        if h.seed_pairs != len(register.seed_pairs):
            return (
                f"hypotheses.{name}.seed_pairs is {h.seed_pairs}, but {file} has {len(register.seed_pairs)}"
            )
        if name != "H5" and h.passes_full_recomputed != h.passes_full:
            return (
                f"hypotheses.{name}.passes_full_recomputed is {str(h.passes_full_recomputed).lower()} on the "
                f"same seed pairs as {file}'s verdict (its rule reads no bootstrap interval)"
            )
    return None


POWER = "paired-rollouts surrogate power"


# ---------------------------------------------------------------- power curves

POWER_CURVES = "paired-rollouts surrogate power-curves"


@dataclass(frozen=True, kw_only=True)
class HypothesisPowerCurve:
    """One learning rule's pass probability by spread, seed pairs, clause variant and effect multiplier."""

    condition: str = key(is_condition)
    rule: dict[str, Any] = key(is_dict)
    published: dict[str, Any] = key(is_dict)
    surrogate: dict[str, Any] = key(is_dict)
    spreads: dict[str, dict[str, Any]] = key(map_of(is_dict))
    passes_counted: dict[str, dict[str, dict[str, list[int]]]] = key(map_of(map_of(map_of(list_of(is_int)))))
    power: dict[str, dict[str, dict[str, list[float]]]] = key(map_of(map_of(map_of(list_of(is_num)))))

    @property
    def effect(self) -> float:
        """The paper's published effect (mean of its three seeds) the multipliers scale."""
        return float(self.published["effect"])

    def curve(self, spread: str, n: int, variant: str = "rule") -> list[float]:
        """Pass probability at each multiplier with ``n`` seed pairs."""
        return self.power[spread][str(n)][variant]


@dataclass(frozen=True, kw_only=True)
class PowerCurves:
    """results/<scale>/decisions/power_curves.json (surrogate/power_curves.py, docs/records.md 8.6)."""

    path: str
    raw: dict[str, Any]
    format: str = key(one_of("paired-rollouts-power-curves/1"))
    hypotheses: dict[str, HypothesisPowerCurve] = key(is_dict, read=by_name(HypothesisPowerCurve))
    multipliers: list[float] = key(list_of(is_num))
    pairs: list[int] = key(list_of(is_int))
    spreads: list[str] = key(list_of(is_str))
    variants: list[str] = key(list_of(is_str))
    draws: int = key(is_int)
    seed: int = key(is_int)
    decisions: dict[str, str] = key(map_of(is_sha256))
    rules: dict[str, str] = key(map_of(is_sha256))
    published_file: dict[str, str] = key(map_of(is_sha256))

    def _check(self, at: At) -> None:
        """Every cell present, with one value per multiplier, and each power its count over the draws."""
        for name, h in self.hypotheses.items():
            for spread in self.spreads:
                for n in self.pairs:
                    for variant in self.variants:
                        try:
                            counts = h.passes_counted[spread][str(n)][variant]
                            power = h.power[spread][str(n)][variant]
                        except KeyError:
                            raise at.error(f"hypotheses.{name} has no cell {spread}/{n}/{variant}") from None
                        if len(counts) != len(self.multipliers) or power != [c / self.draws for c in counts]:
                            raise at.error(
                                f"hypotheses.{name}.power.{spread}.{n}.{variant} is not passes_counted / "
                                f"draws at each of the {len(self.multipliers)} multipliers"
                            )

    @property
    def at_paper(self) -> int:
        """Index of the multiplier 1 (the paper's own effect)."""
        if 1.0 not in self.multipliers:
            raise UserError(f"{self.path}: no multiplier 1 (the paper's effect); {POWER_CURVES} with it")
        return self.multipliers.index(1.0)


def read_power_curves(path: str | Path, recompute: bool = True) -> PowerCurves:
    """results/<scale>/decisions/power_curves.json, typed; with ``recompute`` (the default) the inputs it
    names must have their recorded sha256 and the whole register must equal its recomputation from them
    (the simulation is seeded: a few seconds at 20,000 draws)."""
    from paired_rollouts.io import sha256_file

    curves = read_register(PowerCurves, path, "power curves", POWER_CURVES)
    if not recompute:
        return curves
    named = {**curves.decisions, **curves.rules, **curves.published_file}
    for file, digest in named.items():
        if not Path(file).is_file():
            raise UserError(f"{path}: input {file} not found; run it from the checkout that wrote it")
        if sha256_file(file) != digest:
            raise UserError(
                f"{path}: input {file} changed since the power curves were computed; {POWER_CURVES}"
            )
    from paired_rollouts.surrogate.power_curves import power_curves

    again = power_curves(
        [Path(p) for p in curves.decisions],
        Path(next(iter(curves.rules))),
        Path(next(iter(curves.published_file))),
        draws=curves.draws,
        seed=curves.seed,
        pairs=curves.pairs,
        multipliers=curves.multipliers,
    )
    if again != curves.raw:
        differ = sorted(k for k in again if again[k] != curves.raw.get(k))
        raise UserError(
            f"{path}: not its recomputation from the files it names (differs in {', '.join(differ)}); "
            f"{POWER_CURVES}"
        )
    return curves


# ---------------------------------------------------------------- A3 prediction register

PREDICT = "paired-rollouts surrogate prediction"


@dataclass(frozen=True, kw_only=True)
class A3Stamp:
    """Amendment A3's verified time stamp: its record and the latest genTime of its tokens."""

    record: str = key(is_str)
    gen_time: str = key(is_str)
    gen_time_epoch: float = key(is_num)


@dataclass(frozen=True, kw_only=True)
class CheckpointTime:
    """The first checkpoint marker of the paired runs and its modification time."""

    path: str = key(is_str)
    time: str = key(is_str)
    time_epoch: float = key(is_num)


@dataclass(frozen=True, kw_only=True)
class PredictedGap:
    """One registered gap: the per-pair values, the predicted mean and interval, the published value and
    the verdict (``surrogate/prediction.py: VERDICTS``)."""

    name: str = key(is_str)
    label: str = key(is_str)
    condition: str = key(is_condition)
    by_seed_key: str = key(is_str, name="by_seed_key")
    by_seed: list[float] | None = key(nullable(list_of(is_num)))
    published_id: str = key(is_str)
    published: float = key(is_num)
    decision: str = key(is_str)
    seed_pairs: int = key(is_int)
    mean: float | None = key(nullable(is_num))
    interval: list[float] | None = key(nullable(pair_of(is_num)))
    verdict: str = key(is_str)


@dataclass(frozen=True, kw_only=True)
class PredictionA3:
    """results/<scale>/decisions/prediction_a3.json (surrogate/prediction.py, docs/records.md section 8.4):
    every summary and verdict must follow from its own per-pair values and times (``summary_mismatch``)."""

    path: str
    raw: dict[str, Any]
    format: str = key(is_str)
    amendment: A3Stamp = key(is_dict, read=one(A3Stamp))
    first_paired_checkpoint: CheckpointTime = key(is_dict, read=one(CheckpointTime))
    registered_before_paired_runs: bool = key(is_bool)
    paired_runs: list[str] = key(list_of(is_str))
    min_seed_pairs: int = key(is_int)
    interval: dict[str, float] = key(map_of(is_num))
    gaps: list[PredictedGap] = key(list_of(is_dict), read=each(PredictedGap))
    counts: dict[str, int] = key(map_of(is_int))
    files: dict[str, str] = key(map_of(is_sha256))
    rules: str = key(is_str)
    calibration: str = key(is_str)
    verification: str = key(is_str)

    def _check(self, at: At) -> None:
        from paired_rollouts.surrogate.prediction import FORMAT, VERDICTS, summary_mismatch

        if self.format != FORMAT:
            raise at.error(f"format {self.format!r} is not {FORMAT!r}")
        for gap in self.gaps:
            if gap.verdict not in VERDICTS:
                raise at.error(f"gaps.{gap.name}.verdict {gap.verdict!r} is not one of {', '.join(VERDICTS)}")
        if set(self.interval) != {"level", "resamples", "seed"}:
            raise at.error("interval must hold exactly level, resamples and seed")
        mismatch = summary_mismatch(self.raw)
        if mismatch is not None:
            raise at.error(f"{mismatch}; its summaries must follow from its detail")


def read_prediction_a3(path: str | Path) -> PredictionA3:
    """results/<scale>/decisions/prediction_a3.json, typed and recomputed (docs/records.md section 8.4)."""
    return read_register(PredictionA3, path, "A3 prediction register", PREDICT)

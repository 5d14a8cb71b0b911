"""The public pairing API refuses bad input with one line that names the argument (docs/pairing.md), and
accepts what is merely unusual (numpy scalars, an int bootstrap seed, rates that add up to 1)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from paired_rollouts import pairing

NAN, INF = float("nan"), float("inf")
MIXTURE = pairing.FaultMixture(0.3, {"timeout": 0.7, "stale": 0.3})
SCORES = np.random.default_rng(0).random((4, 3, 10))
OUTCOMES = (np.random.default_rng(0).random((4, 8, 8)) < 0.5).astype(float)


def _with(array: np.ndarray, index: tuple, value: float) -> np.ndarray:
    out = array.copy()
    out[index] = value
    return out


class Env:
    """A TRL-shaped environment that records the seed its reset saw."""

    def reset(self, task_id: str = "t", schedule_seed: int | None = None, **row) -> int | None:
        self.seed = schedule_seed
        return schedule_seed

    def step(self, action):
        return action


def _refused(call, names: str) -> str:
    with pytest.raises(pairing.PairingError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    assert names in message, message
    return message


BAD = {
    # 1. group diagnostics: NaN rewards, truths other than 0/1, lengths that differ
    "nan reward": (lambda: pairing.group_diagnostics(np.ones((1, 4)), [[1, 1, 1, NAN]]), "observed reward"),
    "inf reward": (lambda: pairing.group_diagnostics(np.ones((2, 4)), [[1] * 4, [1, INF, 1, 1]]), "group 1"),
    "truth -1": (
        lambda: pairing.group_diagnostics([[-1, -1, -1, -1]], [[0.0, 0.0, 1.0, 0.0]]),
        "true outcome",
    ),
    "truth 0.5": (lambda: pairing.group_diagnostics([[1, 0.5]], [[1.0, 0.0]]), "true outcome"),
    "truth nan": (lambda: pairing.group_diagnostics([[1, NAN]], [[1.0, 0.0]]), "true outcome"),
    "truth str": (lambda: pairing.group_diagnostics([["False", "True"]], [[1.0, 0.0]]), "true outcome"),
    "flags lengths": (lambda: pairing.group_flags([1, 1, 1, 0], [1.0, 0.0]), "observed rewards"),
    "flags nan": (lambda: pairing.group_flags([1, 1], [1.0, NAN]), "observed reward 1"),
    "flags truth 2": (lambda: pairing.group_flags([2, 1], [1.0, 1.0]), "true outcome 0"),
    "flags str reward": (lambda: pairing.group_flags([1, 1], ["x", 1.0]), "observed rewards"),
    # 2. arm_gap: non-finite scores, steps that do not fit
    "gap nan": (lambda: pairing.arm_gap(_with(SCORES, (0, 1, 2), NAN), SCORES, steps=[0, 10, 20]), "step 1"),
    "gap inf": (lambda: pairing.arm_gap(SCORES[:, 0], _with(SCORES[:, 0], (3, 9), INF)), "control score"),
    "gap steps": (lambda: pairing.arm_gap(SCORES, SCORES, steps=[0, 10]), "steps"),
    "gap nan step": (lambda: pairing.arm_gap(SCORES, SCORES, steps=[0, NAN, 20]), "steps"),
    # 3. luck share: non-finite outcomes, no task
    "luck nan": (lambda: pairing.luck_share(_with(OUTCOMES, (0, 0, 0), NAN), resamples=0), "outcome"),
    "luck inf": (lambda: pairing.variance_components(_with(OUTCOMES[0], (1, 1), INF)), "outcome"),
    "luck no task": (lambda: pairing.luck_share(np.zeros((0, 8, 8)), resamples=0), "no tasks"),
    "luck empty": (lambda: pairing.luck_share([], resamples=0), "shape"),
    # 4. rates, weights and probabilities stay numbers
    "rate bool": (lambda: pairing.FaultMixture(True, {"a": 1}), "fault rate"),
    "rate str": (lambda: pairing.FaultMixture("0.3", {"a": 1}), "fault rate"),
    "rate None": (lambda: pairing.FaultMixture(None, {"a": 1}), "fault rate"),
    "weight inf": (lambda: pairing.FaultMixture(0.3, {"a": INF}), "weight of a"),
    "weight huge int": (lambda: pairing.FaultMixture(0.3, {"a": 10**400}), "weight of a"),
    "flip rate nan": (lambda: pairing.Schedule(1, None, np.float32(NAN)), "flip rate"),
    # 6. faults
    "schedule float faults": (lambda: pairing.Schedule(42, 0.3), "faults"),
    "schedule dict faults": (lambda: pairing.Schedule(42, {"timeout": 0.3}), "faults"),
    "dice None faults": (lambda: pairing.Dice(1).fate(None, "a", repeat=0), "faults"),
    "dice str faults": (lambda: pairing.Dice(1).fate("timeout", "a", repeat=0), "faults"),
    # 7. types
    "types str": (lambda: pairing.Schedule(1, MIXTURE).fate("a", types="timeout"), "types"),
    "table str": (lambda: MIXTURE.table("stale"), "types"),
    # 8. q and G
    "q 1.5": (lambda: pairing.spurious_rate_closed_form(1.5, 8), "q"),
    "q nan": (lambda: pairing.spurious_rate_closed_form(NAN, 8), "q"),
    "q str": (lambda: pairing.spurious_rate_closed_form("0.1", 8), "q"),
    "G 2.5": (lambda: pairing.spurious_rate_closed_form(0.1, 2.5), "group_size"),
    "G -1": (lambda: pairing.spurious_rate_closed_form(0.1, -1), "group_size"),
    "G bool": (lambda: pairing.spurious_rate_closed_form(0.1, True), "group_size"),
    "diagnostics q 10": (lambda: pairing.group_diagnostics(np.ones((2, 4)), np.ones((2, 4)), q=10), "q"),
    "diagnostics q nan": (lambda: pairing.group_diagnostics(np.ones((2, 4)), np.ones((2, 4)), q=NAN), "q"),
    # 9. probabilities of chance and flip
    "chance nan": (lambda: pairing.Dice(1).chance(NAN, "e", repeat=0), "probability"),
    "chance 1.5": (lambda: pairing.Dice(1).chance(1.5, "e", repeat=0), "probability"),
    "chance -0.5": (lambda: pairing.Dice(1).chance(-0.5, "e", repeat=0), "probability"),
    "chance str": (lambda: pairing.Dice(1).chance("0.5", "e", repeat=0), "probability"),
    "chance None": (lambda: pairing.Dice(1).chance(None, "e", repeat=0), "probability"),
    "flip percent": (lambda: pairing.Dice(1).flip(10), "probability"),
    "flip nan": (lambda: pairing.Dice(1).flip(NAN), "probability"),
    "flip bool": (lambda: pairing.Dice(1).flip(True), "probability"),
    # 10. group seeds
    "seed float": (lambda: pairing.GroupSchedules.paired().rollout_seed(42.9, 0), "group_seed"),
    "seed nan": (lambda: pairing.GroupSchedules.independent().rollout_seed(NAN, 0), "group_seed"),
    "seed None": (lambda: pairing.GroupSchedules.paired().group_seeds(None, 4), "group_seed"),
    "seed str": (lambda: pairing.GroupSchedules.independent().rollout_seed("42", 0), "group_seed"),
    "seed negative": (lambda: pairing.GroupSchedules.paired().rollout_seed(-1, 0), "group_seed"),
    "factory seed None": (
        lambda: pairing.PairedEnvironmentFactory(Env, pairing.GroupSchedules.paired())().reset(
            schedule_seed=None
        ),
        "'schedule_seed' column",
    ),
    "factory seed float": (
        lambda: pairing.PairedEnvironmentFactory(Env, pairing.GroupSchedules.independent())().reset(
            schedule_seed=42.9
        ),
        "'schedule_seed' column",
    ),
    "group envs seed None": (
        lambda: pairing.GroupEnvs(Env, 2, pairing.GroupSchedules.paired()).reset(group_seed=None),
        "group_seed",
    ),
    # 11. schedules and phase of the adapters
    "factory schedules str": (lambda: pairing.PairedEnvironmentFactory(Env, "paired"), "schedules"),
    "factory schedules class": (
        lambda: pairing.PairedEnvironmentFactory(Env, pairing.GroupSchedules),
        "schedules",
    ),
    "group envs schedules": (lambda: pairing.GroupEnvs(Env, 2, "independent"), "schedules"),
    "factory phase None": (
        lambda: pairing.PairedEnvironmentFactory(Env, pairing.GroupSchedules.paired(), phase=None),
        "phase",
    ),
    "group envs phase": (
        lambda: pairing.GroupEnvs(Env, 2, pairing.GroupSchedules.paired(), phase=1),
        "phase",
    ),
    "counter phase": (
        lambda: pairing.RolloutCounter(0).next_seed(pairing.GroupSchedules.paired(), 1, None),
        "phase",
    ),
    # 12. bootstrap arguments
    "rng str": (lambda: pairing.luck_share(OUTCOMES, resamples=10, rng="42"), "rng"),
    "rng RandomState": (
        lambda: pairing.arm_gap(SCORES[:, 0], SCORES[:, 0], rng=np.random.RandomState(0)),
        "rng",
    ),
    "rng negative": (lambda: pairing.arm_gap(SCORES[:, 0], SCORES[:, 0], rng=-1), "rng"),
    "rng bool": (lambda: pairing.luck_share(OUTCOMES, resamples=10, rng=True), "rng"),
    "resamples negative": (lambda: pairing.arm_gap(SCORES[:, 0], SCORES[:, 0], resamples=-1), "resamples"),
    "luck resamples negative": (lambda: pairing.luck_share(OUTCOMES, resamples=-5), "resamples"),
    "resamples float": (lambda: pairing.luck_share(OUTCOMES, resamples=10.0), "resamples"),
    "resamples str": (lambda: pairing.paired_bootstrap(np.ones((2, 3)), "10", None), "resamples"),
    # 14. empty and degenerate arrays
    "no groups": (lambda: pairing.zero_variance_fraction(np.zeros((0, 8))), "no groups"),
    "1-D groups": (lambda: pairing.zero_variance_fraction(np.ones(8)), "2-D"),
    "shapes differ": (lambda: pairing.group_diagnostics(np.ones((3, 4)), np.ones((3, 5))), "differ in shape"),
    "G 0": (lambda: pairing.group_diagnostics(np.zeros((5, 0)), np.zeros((5, 0))), "G >= 1"),
    "ragged": (lambda: pairing.group_diagnostics([[1, 1], [1]], [[1.0, 1.0], [1.0]]), "(groups, G)"),
    # 15. resolve_seed
    "mode Independent": (lambda: pairing.resolve_seed("Independent", 5), "mode"),
    "mode indep": (lambda: pairing.resolve_seed("indep", 5), "mode"),
    # 19. repeat indices
    "repeat negative": (lambda: pairing.Dice(1).fate(MIXTURE, "a", repeat=-1), "repeat"),
    "repeat float": (lambda: pairing.Dice(1).fate(MIXTURE, "a", repeat=1.0), "repeat"),
    "repeat None": (lambda: pairing.Dice(1).uniform("a", repeat=None), "repeat"),
    "repeat str": (lambda: pairing.Dice(1).event_seed("a", repeat="x"), "repeat"),
    "repeat bool": (lambda: pairing.Dice(1).chance(0.5, "a", repeat=True), "repeat"),
    # 20. percentiles
    "reversed percentiles": (lambda: pairing.percentile_interval(np.arange(10.0), 90, 10), "percentiles"),
    "percentile above 100": (
        lambda: pairing.percentile_interval(np.arange(10.0), 50, 101),
        "upper percentile",
    ),
    "luck percentiles": (
        lambda: pairing.luck_share(OUTCOMES, resamples=10, percentiles=(97.5, 2.5)),
        "percentiles",
    ),
    "gap percentiles": (
        lambda: pairing.arm_gap(SCORES[:, 0], SCORES[:, 0], percentiles=(95,)),
        "percentiles",
    ),
    "interval percentiles": (
        lambda: pairing.luck_share_interval(np.ones(3), 10, 0, lower=-1.0),
        "lower percentile",
    ),
}


@pytest.mark.parametrize("call, names", list(BAD.values()), ids=list(BAD))
def test_bad_input_is_refused_in_one_line_naming_it(call, names) -> None:
    _refused(call, names)


def test_real_numbers_of_any_type_are_rates_weights_and_probabilities() -> None:
    """numpy scalars and Fractions are numbers: the same mixture, schedule and draws as their floats."""
    mixture = pairing.FaultMixture(np.float32(0.25), dict(zip(["a", "b"], np.array([1, 3]), strict=True)))
    assert mixture.rate == float(np.float32(0.25)) and mixture.weights == {"a": 1.0, "b": 3.0}
    plain = pairing.FaultMixture(float(np.float32(0.25)), {"a": 1.0, "b": 3.0})
    dice = pairing.Dice(7)
    assert [dice.fate(mixture, "e", i, repeat=0) for i in range(200)] == [
        dice.fate(plain, "e", i, repeat=0) for i in range(200)
    ]
    assert pairing.Schedule(1, None, np.float32(0.5)).flip_rate == 0.5
    assert pairing.FaultMixture(Fraction(1, 4), {"a": Fraction(1, 2)}).rate == 0.25
    assert dice.chance(np.float64(0.3), "e", repeat=np.int64(2)) == dice.chance(0.3, "e", repeat=2)
    assert dice.flip(Fraction(1, 3)) == dice.flip(1 / 3)
    assert pairing.spurious_rate_closed_form(
        np.float64(0.1), np.int64(8)
    ) == pairing.spurious_rate_closed_form(0.1, 8)


def test_rates_that_add_up_to_one_make_a_mixture() -> None:
    rates = {"timeout": 0.33, "stale": 0.56, "drop": 0.11}
    assert sum(rates.values()) > 1.0  # plain float addition overshoots by one ulp
    assert pairing.FaultMixture.from_rates(rates).rate == 1.0
    _refused(lambda: pairing.FaultMixture.from_rates({"a": 0.7, "b": 0.6}), "fault rate")


def test_a_mixtures_rate_is_read_only() -> None:
    mixture = pairing.FaultMixture(0.3, {"a": 1.0})
    pairing.Dice(0).fate(mixture, "x", repeat=0)  # caches a table at 0.3
    with pytest.raises(AttributeError):
        mixture.rate = 0.9
    assert mixture.rate == 0.3 and mixture.table().rate == 0.3


def test_clean_rollouts_need_no_group_seed() -> None:
    """Clean schedules draw nothing, so a missing or None seed column is fine (the env gets None)."""
    factory = pairing.PairedEnvironmentFactory(Env, pairing.GroupSchedules.clean())
    env = factory()
    assert env.reset(task_id="t", schedule_seed=None) is None and env.reset(task_id="t") is None
    assert factory.counter(env).episode_index == 1
    assert pairing.GroupEnvs(Env, 3, pairing.GroupSchedules.clean()).reset(group_seed=None) == [None] * 3
    assert pairing.GroupSchedules.clean().rollout_seed(None, 0) is None


def test_a_refused_seed_counts_no_episode() -> None:
    factory = pairing.PairedEnvironmentFactory(Env, pairing.GroupSchedules.independent())
    env = factory()
    _refused(lambda: env.reset(schedule_seed=1.5), "schedule_seed")
    env.reset(schedule_seed=np.int64(7))
    assert env.seed == pairing.independent_seed(7, 0, 0, "train")


def test_the_bootstrap_takes_an_int_seed_and_zero_resamples() -> None:
    by_int = pairing.luck_share(OUTCOMES, resamples=200, rng=42).interval
    assert by_int == pairing.luck_share(OUTCOMES, resamples=200, rng=np.random.default_rng(42)).interval
    zero = pairing.arm_gap(SCORES[:, 0], SCORES[:, 1], resamples=200, rng=0).interval
    assert (
        zero
        == pairing.arm_gap(SCORES[:, 0], SCORES[:, 1], resamples=200, rng=np.random.default_rng(0)).interval
    )
    assert zero != pairing.arm_gap(SCORES[:, 0], SCORES[:, 1], resamples=200).interval  # 0 is a seed
    gap = pairing.arm_gap(SCORES, SCORES - 0.01, steps=[0, 10, 20], resamples=0)
    assert gap.interval == [None, None] and gap.resamples == 0 and gap.gap == pytest.approx(0.01)
    assert pairing.luck_share(OUTCOMES, resamples=0).interval == [None, None]
    assert pairing.luck_share_interval(np.array([0.1, 0.2]), 0, None) == [None, None]
    assert pairing.percentile_interval([], 2.5, 97.5) == [None, None]

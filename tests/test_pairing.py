"""The public pairing API (docs/pairing.md): its draws are CPython's and the study's, its group schedules
and adapters hand each rollout the seed the study's environments use, its diagnostics are the study's,
and it stands alone (no back-office import)."""

from __future__ import annotations

import ast
import inspect
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from paired_rollouts import pairing
from paired_rollouts.pairing import dice as dice_module

PACKAGE = Path(pairing.__file__).parent
DEFAULT = {"transient": 0.45, "rate_limit": 0.15, "outage": 0.10, "stale": 0.15, "truncate": 0.15}
GET_ORDER_TYPES = ("transient", "rate_limit", "outage", "stale", "field_dropout")
O11 = '{"order_id":"O0011"}'


def reference_fate(seed: int, key: tuple, k: int, p: float, types: tuple, weights: dict):
    """The fate as docs/simulator.md#event-keys-and-fates spells it, with random.Random's own methods."""
    rng = random.Random(pairing.derive_seed(seed, "event", *key, k))
    u = rng.random()
    retry_after = rng.choice((15, 30, 45, 60))
    detail = rng.randrange(0, 1000000)
    if u >= p:
        return None
    return pairing.Fate(rng.choices(types, [weights.get(t, 0.0) for t in types])[0], retry_after, detail)


# -- dice -------------------------------------------------------------------------------------------------
def test_worked_example_and_check_numbers() -> None:
    assert pairing.derive_seed("a") == 14598278634844962250
    assert [pairing.eval_schedule_seed("test-00000", k) for k in (1, 2, 3, 4)] == [
        659565755,
        791815179,
        652831718,
        1281760880,
    ]
    dice = pairing.Dice(659565755)
    faults = pairing.FaultMixture(0.25, DEFAULT)
    assert dice.fate(faults, "get_order", O11, repeat=2, types=GET_ORDER_TYPES) == pairing.Fate(
        "rate_limit", 30, 816133
    )
    assert dice.uniform("get_order", O11, repeat=2) == pytest.approx(0.0744354, abs=1e-7)
    assert dice.event_seed("get_order", O11, repeat=2) == pairing.derive_seed(
        659565755, "event", "get_order", O11, 2
    )


def test_fates_equal_the_textbook_draws() -> None:
    """Over many seeds, keys (str and int parts) and repeats, Dice.fate is the spec's draw sequence."""
    rng = random.Random(7)
    weights = {"unavailable": 0.4, "empty": 0.15, "stale": 0.45}
    faults = pairing.FaultMixture(0.35, weights)
    types = ("unavailable", "empty", "stale")
    for _ in range(3000):
        seed = rng.getrandbits(rng.choice((31, 64)))
        key = ("search", f"q{rng.randrange(50)}", rng.randrange(3))
        k = rng.randrange(4)
        expected = reference_fate(seed, key, k, 0.35, types, weights)
        assert pairing.Dice(seed).fate(faults, *key, repeat=k) == expected
    # restricted types renormalise: given a fault, get_order is transient 0.529, rate_limit 0.176, ...
    table = pairing.FaultMixture(0.25, DEFAULT).table(GET_ORDER_TYPES)
    total = table.cum_weights[-1]
    shares = np.diff([0.0, *table.cum_weights]) / total
    assert np.round(shares, 3).tolist() == [0.529, 0.176, 0.118, 0.176, 0.0]


def test_study_schedules_draw_through_the_dice() -> None:
    """NoiseSchedule's fates and flips are Dice's (one implementation), under every study config."""
    from paired_rollouts.noise.config import NoiseConfig
    from paired_rollouts.noise.schedule import APPLICABLE_TYPES, NoiseSchedule

    configs = [NoiseConfig.transition(0.25), NoiseConfig.heldout_types(0.25), NoiseConfig.outcome(0.1)]
    for seed in range(0, 4000, 37):
        for config in configs:
            schedule, dice = NoiseSchedule(seed, config), pairing.Dice(seed)
            faults = pairing.FaultMixture(config.p, config.weights) if config.p else None
            for tool, types in APPLICABLE_TYPES.items():
                for k in range(2):
                    expected = dice.fate(faults, tool, O11, repeat=k, types=types) if faults else None
                    assert schedule.fate(tool, O11, k) == expected
            assert schedule.outcome_flip() == (config.q > 0 and dice.flip(config.q))
            assert dice.flip(0.3) == (random.Random(pairing.derive_seed(seed, "outcome")).random() < 0.3)


def test_compiled_fate_draws_equal_random_random() -> None:
    """The C helper (pairing/_fate_draws.c) is built by the install and draws exactly what
    ``random.Random(n)`` draws: u, and after u < p the retry index, the detail and the type draw."""
    try:
        from paired_rollouts.pairing._fate_draws import fault_draws
    except ImportError:
        pytest.fail("pairing/_fate_draws.c is not built: run bash scripts/setup.sh (pip install -e .)")
    assert pairing.FATE_DRAWS.startswith("compiled")
    rng = random.Random(20261201)
    seeds = [0, 1, 2**31, 2**32 - 1, 2**32, 2**64 - 1] + [rng.getrandbits(64) for _ in range(100_000)]
    seeds += [rng.getrandbits(32) for _ in range(2000)]  # one-word keys
    for p in (0.25, 1.0):
        compiled = [fault_draws(n, p) for n in seeds]
        assert compiled == [dice_module._pure_draws(n, p) for n in seeds]
    faulted = [d for d in compiled if d is not None]
    assert {d[0] for d in faulted} == {0, 1, 2, 3} and len(faulted) == len(seeds)
    with pytest.raises(OverflowError):
        fault_draws(2**64, 0.5)
    with pytest.raises(TypeError):
        fault_draws(1, "0.5")


def test_fate_by_random_methods_equals_the_inlined_draws() -> None:
    """The fallback for a Python whose ``random`` methods draw otherwise gives, here, the same fates."""
    table = pairing.FaultMixture(0.25, DEFAULT).table(GET_ORDER_TYPES)
    for n in [pairing.derive_seed("methods", i) for i in range(2000)]:
        draws = dice_module._pure_draws(n, 0.25)
        expected = None if draws is None else dice_module._fault(draws, table)
        assert dice_module._fate_by_methods(n, table) == expected


def test_fault_types_at_their_own_rates() -> None:
    faults = pairing.FaultMixture.from_rates({"timeout": 0.1, "stale": 0.05})
    assert faults.rate == pytest.approx(0.15) and faults.weights == {"timeout": 0.1, "stale": 0.05}
    kinds = [pairing.Dice(seed).fate(faults, "tool", "r", repeat=0) for seed in range(20000)]
    counts = {
        kind: sum(1 for f in kinds if f is not None and f.kind == kind) for kind in ("timeout", "stale")
    }
    assert abs(counts["timeout"] / 20000 - 0.1) < 0.008 and abs(counts["stale"] / 20000 - 0.05) < 0.006
    with pytest.raises(pairing.PairingError):
        pairing.FaultMixture.from_rates({"a": 0.7, "b": 0.6})


def test_schedule_counts_repeats_and_clean_never_draws() -> None:
    faults = pairing.FaultMixture(1.0, {"unavailable": 1.0})
    schedule = pairing.Schedule(12345, faults, flip_rate=1.0)
    dice = pairing.Dice(12345)
    fates = [schedule.fate("search", "q1") for _ in range(3)]
    assert fates == [dice.fate(faults, "search", "q1", repeat=k) for k in range(3)]
    assert schedule.repeats("search", "q1") == 3 and schedule.repeats("search", "q2") == 0
    assert schedule.flipped() and schedule.seed == 12345
    clean = pairing.Schedule(None, faults, flip_rate=1.0)
    assert clean.fate("search", "q1") is None and not clean.flipped() and clean.seed is None
    assert clean.repeats("search", "q1") == 1  # counted all the same


def test_chance_rng_and_flip_are_the_events_generator() -> None:
    dice = pairing.Dice(99)
    for k in range(200):
        u = random.Random(dice.event_seed("tool", k, repeat=k)).random()
        assert dice.uniform("tool", k, repeat=k) == u
        assert dice.chance(0.4, "tool", k, repeat=k) == (u < 0.4)
        assert dice.rng("tool", k, repeat=k).random() == u


@pytest.mark.parametrize(
    "make",
    [
        lambda: pairing.FaultMixture(1.5, {"a": 1.0}),
        lambda: pairing.FaultMixture(0.2, {"a": -1.0}),
        lambda: pairing.FaultMixture(0.2, {"a": 0.0}),
        lambda: pairing.FaultMixture(float("nan"), {"a": 1.0}),
        lambda: pairing.Dice(-1),
        lambda: pairing.Dice(2**64),
        lambda: pairing.Dice(True),
        lambda: pairing.Dice("7"),
        lambda: pairing.Schedule(1, None, flip_rate=2.0),
        lambda: pairing.GroupSchedules("shared"),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_raise_one_value_error(make) -> None:
    with pytest.raises(ValueError) as info:
        make()
    assert isinstance(info.value, pairing.PairingError) and "\n" not in str(info.value)


# -- group schedules and adapters -------------------------------------------------------------------------
def test_group_schedules() -> None:
    paired = pairing.GroupSchedules.paired().group_seeds(777, 4)
    independent = pairing.GroupSchedules.independent().group_seeds(777, 4, first_slot=8, draw_index=3)
    assert paired == [777] * 4 and pairing.GroupSchedules.clean().group_seeds(777, 3) == [None] * 3
    assert independent == [pairing.independent_seed(777, 8 + i, 3, "train") for i in range(4)]
    assert len(set(independent)) == 4
    # docs/simulator.md#check-numbers
    assert pairing.independent_seed(777, 0, 0, "train") == 5457687404510714343
    assert pairing.GroupSchedules.independent().rollout_seed(777, 0, 0, "eval") == 4967901123802250397


class ToyTool:
    """A TRL-shaped environment: one tool, reset(**row), get_reward()."""

    def __init__(self, rate: float = 0.5) -> None:
        self.faults = pairing.FaultMixture(rate, {"unavailable": 1.0})
        self.seen: list[int | None] = []

    def reset(self, task_id: str, schedule_seed: int | None = None, **row) -> str:
        self.seen.append(schedule_seed)
        self.schedule = pairing.Schedule(schedule_seed, self.faults)
        return f"task {task_id}"

    def lookup(self, key: str) -> str:
        """Look a key up.

        Args:
            key: What to look up.
        """
        return "error" if self.schedule.fate("lookup", key) else "ok"

    def get_reward(self) -> float:
        return 1.0


def _tool_names(cls) -> set[str]:
    """What TRL exposes as tools (its own listing: public functions of the class but its hooks)."""
    return {
        n
        for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    }


def test_trl_factory_gives_each_rollout_its_seed_and_keeps_the_tools() -> None:
    factory = pairing.PairedEnvironmentFactory(ToyTool, pairing.GroupSchedules.paired(), kwargs={"rate": 0.3})
    pool = [factory() for _ in range(4)]  # TRL: one instance per rollout of a batch, reused
    assert _tool_names(type(pool[0])) == {"lookup"} and type(pool[0]).__name__ == "ToyTool"
    assert isinstance(pool[0], ToyTool) and pool[0].faults.rate == 0.3
    rows = [{"task_id": "a", "schedule_seed": 11}] * 2 + [{"task_id": "b", "schedule_seed": 22}] * 2
    for env, row in zip(pool, rows, strict=True):
        assert env.reset(**row) == f"task {row['task_id']}"
    assert [env.seen[-1] for env in pool] == [11, 11, 22, 22]
    assert [factory.counter(env).slot for env in pool] == [0, 1, 2, 3]
    with pytest.raises(pairing.PairingError, match="schedule_seed"):
        pool[0].reset(task_id="a")
    with pytest.raises(pairing.PairingError):
        factory.counter(ToyTool())


def test_trl_factory_seeds_equal_the_study_environments(sim_tasks_dir) -> None:
    """Independent seeds by slot and episode count, training and evaluation phases mixed, on resume:
    the factory hands out exactly the seeds the back office's TRL environment resolves."""
    from paired_rollouts.noise.config import NoiseConfig
    from paired_rollouts.training.environment import EpisodeContext

    context = EpisodeContext.from_pools(sim_tasks_dir, initial_train_episodes=3)
    study_pool = [context.new_environment() for _ in range(4)]
    factory = pairing.PairedEnvironmentFactory(
        ToyTool, pairing.GroupSchedules.independent(), initial_train_episodes=3
    )
    pool = [factory() for _ in range(4)]
    task_ids = sorted(context.tasks)[:2]
    noise = NoiseConfig.transition(0.25, mode="independent").to_json()
    for step, phase in enumerate(["train", "train:step4", "periodic:step4", "train", "final:step8"]):
        context.phase = factory.phase = phase
        for i, (study_env, env) in enumerate(zip(study_pool, pool, strict=True)):
            row = {"task_id": task_ids[i // 2], "schedule_seed": 1000 + 10 * step + i // 2}
            study_env.reset(**row, noise=noise, budget=9, condition="C2")
            env.reset(**row)
            assert env.seen[-1] == study_env.resolved_seed
            assert factory.counter(env).episode_index == study_env.episode_index


class GymShaped:
    """The reset(seed=...)/step(action) shape: one flaky coin per step, event-keyed by the step number."""

    def __init__(self) -> None:
        self.faults = pairing.FaultMixture(0.5, {"tails": 1.0})

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.schedule, self.t = pairing.Schedule(seed, self.faults), 0
        return 0, {"seed": seed}

    def step(self, action: int):
        self.t += 1
        luck = self.schedule.fate("coin", self.t) is None
        return self.t, float(luck and action == 1), self.t >= 3, False, {}


def test_group_envs_paired_and_independent() -> None:
    paired = pairing.GroupEnvs(GymShaped, 4, pairing.GroupSchedules.paired())
    assert [info["seed"] for _, info in paired.reset(5)] == [5] * 4 and paired.seeds == [5] * 4
    rewards = [r for _, r, *_ in paired.step([1, 1, 1, 1])]
    assert len(set(rewards)) == 1  # the same luck for the same action
    independent = pairing.GroupEnvs(GymShaped, 4, pairing.GroupSchedules.independent(), first_slot=4)
    independent.reset(5)
    independent.reset(5)  # the second episode of each instance: draw index 1
    assert independent.seeds == [pairing.independent_seed(5, 4 + i, 1, "train") for i in range(4)]
    with pytest.raises(pairing.PairingError):
        paired.step([1])


# -- diagnostics ----------------------------------------------------------------------------------------
def test_luck_share_equals_the_study_register_numbers() -> None:
    """pairing.luck_share is what luck-step{N}.json states (the study's stats call it)."""
    from paired_rollouts.stats.luck_share import luck_share_file

    rng = np.random.default_rng(3)
    p = rng.beta(2, 2, size=(12, 8, 1))
    tables = (rng.random((12, 8, 8)) < p).astype(int)
    records = [
        {"task_id": f"t{t:02d}", "schedule_seed": k, "true_success": bool(tables[t, k, m])}
        for t in range(12)
        for k in range(8)
        for m in range(8)
    ]
    register = luck_share_file(
        records, run=None, step=0, source="x", source_sha256="y", resamples=500, seed=20260911
    )
    share = pairing.luck_share(tables, resamples=500)
    assert (share.lam, share.lam_pooled, share.interval) == (
        register["lam"],
        register["lam_pooled"],
        register["ci95"],
    )
    assert [t["lam"] for t in register["per_task"]] == [
        None if np.isnan(v) else float(v) for v in share.per_task
    ]
    lo, hi = share.interval
    assert lo < share.lam < hi


def test_spurious_rate_matches_its_closed_form_and_pairing_removes_it() -> None:
    """Simulated one-sided flips at q = 0.1 on all-correct groups of 8: independent ~ 1-(1-q)^G-q^G."""
    q, size, n = 0.1, 8, 20000
    rng = np.random.default_rng(11)
    truth = np.ones((n, size), dtype=int)
    independent = (rng.random((n, size)) >= q).astype(float)
    paired = np.repeat((rng.random((n, 1)) >= q).astype(float), size, axis=1)
    ind = pairing.group_diagnostics(truth, independent, q=q)
    par = pairing.group_diagnostics(truth, paired, q=q)
    assert ind.expected_spurious_rate == pytest.approx(1 - 0.9**8 - 0.1**8)
    assert abs(ind.spurious_rate - ind.expected_spurious_rate) < 0.015
    assert par.spurious_rate == 0.0 and par.spurious_groups == 0
    assert pairing.zero_variance_fraction(paired) == 1.0
    assert pairing.zero_variance_fraction(independent) == pytest.approx(1 - ind.spurious_rate)
    assert pairing.spurious_rate_closed_form(0.05, 8) == pytest.approx(0.3366, abs=1e-4)
    assert pairing.spurious_rate_closed_form(0.1, 1) == 0.0
    with pytest.raises(pairing.PairingError):
        pairing.group_diagnostics(truth[:, :4], independent)


def test_group_flags_are_the_study_flags() -> None:
    from paired_rollouts.stats.groups import group_flags

    for truth, observed in [([1, 1, 1], [1.0, 1.0, 0.0]), ([1, 0], [1.0, 0.0]), ([1, 1], [1.0, 1.0])]:
        assert group_flags(truth, observed) == pairing.group_flags(truth, observed)._asdict()
    assert pairing.group_flags([1, 1], [1.0, 0.0]).spurious


def test_arm_gap_is_the_paired_bootstrap_of_auc_differences() -> None:
    rng = np.random.default_rng(5)
    steps = [0, 10, 20, 40]
    treatment, control = rng.random((6, 4, 9)), rng.random((6, 4, 9))
    gap = pairing.arm_gap(treatment, control, steps=steps, resamples=400)
    w = pairing.auc_weights(steps)
    by_seed = [(w @ treatment[s].mean(axis=1)) - (w @ control[s].mean(axis=1)) for s in range(6)]
    assert gap.by_seed == pytest.approx(by_seed) and gap.gap == pytest.approx(np.mean(by_seed))
    contrib = np.einsum("j,sjt->st", w, treatment - control)
    reps = pairing.paired_bootstrap(contrib, 400, np.random.default_rng(pairing.BOOTSTRAP_SEED))
    assert gap.interval == pairing.percentile_interval(reps, 2.5, 97.5)
    with pytest.raises(pairing.PairingError):
        pairing.arm_gap(treatment, control[:5], steps=steps)


# -- standing alone ----------------------------------------------------------------------------------------
STUDY_MODULES = ("backoffice", "episode", "design", "records", "noise", "stats", "training", "layout")


def test_pairing_imports_nothing_of_the_study() -> None:
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                if name.startswith("paired_rollouts."):
                    assert name.split(".")[1] in ("pairing", "errors"), f"{path.name} imports {name}"
    code = (
        "import sys\nfrom paired_rollouts.pairing import Dice, GroupSchedules, PairedEnvironmentFactory, "
        "luck_share\nbad = [m for m in sys.modules if m.split('.')[:2] in "
        f"[['paired_rollouts', s] for s in {STUDY_MODULES!r}]]\nassert not bad, bad\nprint('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_every_public_name_has_a_docstring() -> None:
    for name in pairing.__all__:
        obj = getattr(pairing, name)
        if callable(obj):
            assert inspect.getdoc(obj), name

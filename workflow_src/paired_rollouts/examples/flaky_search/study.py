"""The flaky-search study: does pairing help a group-relative learner here? Paired versus independent
schedules over many seeds, with the luck share, spurious-variance rate and zero-variance groups.

Per run seed s and arm (paired, independent) one run trains the tabular policy with the group-relative
update (advantages standardised within each group of G on the *observed* reward, the score summed over a
rollout's decisions, averaged over the batch's decisions, plain SGD). Both arms of a seed see the same
rows, group seeds and policy random numbers; only how the G rollouts of a group draw their luck differs.
Every ``eval_every`` steps the policy is evaluated on fixed, shared schedules (true success on held-out
questions), so both arms are measured on the same luck. The luck share is measured at step 0 (the common
starting policy) and after training, on diagnostic questions x K schedules x M samples.

Everything is a pure function of the settings: the same settings give the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from paired_rollouts import pairing
from paired_rollouts.examples.flaky_search.env import FlakySearch, Task, make_tasks, options_of
from paired_rollouts.examples.flaky_search.policy import PARAMETERS, Rollout, initial_theta, play

ARMS: tuple[str, ...] = ("paired", "independent")
SETTING = "flaky_search"  # names the noise setting in the group seeds
ADV_EPS = 1e-4


@dataclass(frozen=True)
class StudySettings:
    """What one study runs (``PRESETS`` names the two the command offers).

    Fixed before the comparison ran (docs/pairing.md#a-second-environment-flaky-search): G = 8 as in the
    paper; the learning rate is the best of 4, 8, 16, 32, 64 for the *independent* arm alone on pilot
    seeds 100-105 (disjoint from the study's), where gradient noise limits learning.
    """

    seeds: int = 32
    steps: int = 60
    prompts_per_step: int = 4
    group_size: int = 8
    learning_rate: float = 16.0
    eval_every: int = 10
    eval_tasks: int = 48
    eval_schedules: int = 4
    train_tasks: int = 200
    diagnostic_tasks: int = 16
    diagnostic_schedules: int = 8
    diagnostic_samples: int = 8
    fault_rate: float = 0.35
    weights: dict[str, float] = field(
        default_factory=lambda: {"unavailable": 0.4, "empty": 0.15, "stale": 0.45}
    )
    flip_rate: float = 0.1
    budget: int = 6
    resamples: int = 10_000

    def eval_steps(self) -> list[int]:
        steps = list(range(0, self.steps, self.eval_every))
        return steps + [self.steps] if steps[-1] != self.steps else steps


PRESETS: dict[str, StudySettings] = {
    "study": StudySettings(),
    "tiny": StudySettings(
        seeds=2,
        steps=4,
        prompts_per_step=2,
        group_size=4,
        eval_every=2,
        eval_tasks=6,
        eval_schedules=2,
        train_tasks=12,
        diagnostic_tasks=4,
        diagnostic_schedules=3,
        diagnostic_samples=3,
        resamples=200,
    ),
}


@dataclass
class World:
    """The task splits and the environment settings of a study."""

    settings: StudySettings
    train: list[Task]
    validation: list[Task]
    diagnostic: list[Task]
    tasks: dict[str, Task]
    faults: pairing.FaultMixture

    @classmethod
    def build(cls, settings: StudySettings) -> World:
        train = make_tasks("train", settings.train_tasks)
        validation = make_tasks("validation", settings.eval_tasks)
        diagnostic = make_tasks("diagnostic", settings.diagnostic_tasks)
        return cls(
            settings,
            train,
            validation,
            diagnostic,
            options_of(train + validation + diagnostic),
            pairing.FaultMixture(settings.fault_rate, settings.weights),
        )

    def environment(self) -> FlakySearch:
        s = self.settings
        return FlakySearch(self.tasks, self.faults, s.flip_rate, s.budget)


def group_advantages(rewards: list[float]) -> list[float]:
    """(R_i - mean R) / (std_ddof1 R + 1e-4): zero for a group whose rewards are all equal."""
    n = len(rewards)
    mean = sum(rewards) / n
    std = (sum((r - mean) ** 2 for r in rewards) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return [(r - mean) / (std + ADV_EPS) for r in rewards]


def evaluate(world: World, theta: np.ndarray) -> list[float]:
    """Per validation question, the mean true success over its fixed evaluation schedules."""
    env = world.environment()
    scores = []
    for task in world.validation:
        wins = 0
        for k in range(1, world.settings.eval_schedules + 1):
            rng = random.Random(pairing.derive_seed("policy-eval", task.task_id, k))
            row = {"task_id": task.task_id, "schedule_seed": pairing.eval_schedule_seed(task.task_id, k)}
            wins += play(env, row, theta, rng).true_success
        scores.append(wins / world.settings.eval_schedules)
    return scores


def diagnostic_tables(world: World, theta: np.ndarray, run_seed: int, tag: str) -> list[list[list[int]]]:
    """True outcomes (questions x K schedules x M samples) of the luck-share diagnostic."""
    s = world.settings
    env = world.environment()
    tables = []
    for task in world.diagnostic:
        table = []
        for k in range(s.diagnostic_schedules):
            seed = pairing.diagnostic_seed(run_seed, task.task_id, k)
            row = {"task_id": task.task_id, "schedule_seed": seed}
            outcomes = []
            for m in range(s.diagnostic_samples):
                rng = random.Random(pairing.derive_seed("policy-diag", tag, run_seed, task.task_id, k, m))
                outcomes.append(int(play(env, row, theta, rng).true_success))
            table.append(outcomes)
        tables.append(table)
    return tables


def train_run(world: World, run_seed: int, arm: str) -> dict[str, Any]:
    """One run: the training groups, the evaluation curve and the final diagnostic tables."""
    s = world.settings
    factory = pairing.PairedEnvironmentFactory(
        FlakySearch,
        pairing.GroupSchedules(arm),
        kwargs={"tasks": world.tasks, "faults": world.faults, "flip_rate": s.flip_rate, "budget": s.budget},
    )
    pool = [factory() for _ in range(s.prompts_per_step * s.group_size)]  # TRL's pool: one per rollout
    order = list(range(len(world.train)))
    random.Random(f"rows-{run_seed}").shuffle(order)
    theta = initial_theta()
    curve = {0: evaluate(world, theta)}
    groups = []
    for step in range(s.steps):
        grad = np.zeros(len(PARAMETERS))
        decisions = 0
        for g in range(s.prompts_per_step):
            row_index = step * s.prompts_per_step + g
            task = world.train[order[row_index % len(order)]]
            row = {
                "task_id": task.task_id,
                "schedule_seed": pairing.training_schedule_seed(run_seed, SETTING, row_index),
            }
            rollouts: list[Rollout] = []
            for i in range(s.group_size):
                slot = g * s.group_size + i
                rng = random.Random(pairing.derive_seed("policy-train", run_seed, step, slot))
                rollouts.append(play(pool[slot], row, theta, rng))
            advantages = group_advantages([r.observed_reward for r in rollouts])
            for rollout, advantage in zip(rollouts, advantages, strict=True):
                decisions += len(rollout.decisions)
                if advantage:
                    grad += advantage * rollout.score(len(PARAMETERS))
            groups.append(
                {
                    "step": step,
                    "task_id": task.task_id,
                    "seeds": [factory.counter(pool[g * s.group_size + i]).seed for i in range(s.group_size)],
                    "true_success": [int(r.true_success) for r in rollouts],
                    "observed_reward": [r.observed_reward for r in rollouts],
                }
            )
        theta = theta + s.learning_rate * grad / max(decisions, 1)
        if (step + 1) in s.eval_steps():
            curve[step + 1] = evaluate(world, theta)
    return {
        "seed": run_seed,
        "arm": arm,
        "theta": [round(float(x), 6) for x in theta],
        "eval_steps": sorted(curve),
        "eval_scores": [curve[k] for k in sorted(curve)],
        "groups": groups,
        "diagnostic_final": diagnostic_tables(world, theta, run_seed, f"final-{arm}"),
    }


def run_study(settings: StudySettings, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every run of the study and the step-0 diagnostic of each seed: the study's evidence."""
    world = World.build(settings)
    runs = []
    step0 = []
    for seed in range(settings.seeds):
        step0.append({"seed": seed, "tables": diagnostic_tables(world, initial_theta(), seed, "step0")})
        for arm in ARMS:
            runs.append(train_run(world, seed, arm))
            if progress is not None:
                progress(f"seed {seed} {arm}: final eval {np.mean(runs[-1]['eval_scores'][-1]):.3f}")
    return {"settings": asdict(settings), "runs": runs, "diagnostic_step0": step0}


def summarise(evidence: dict[str, Any]) -> dict[str, Any]:
    """The study's numbers from its evidence (what the register states; recomputable by its reader)."""
    settings = StudySettings(**evidence["settings"])
    runs = {
        arm: sorted((r for r in evidence["runs"] if r["arm"] == arm), key=lambda r: r["seed"]) for arm in ARMS
    }
    seeds = [r["seed"] for r in runs["paired"]]
    if seeds != [r["seed"] for r in runs["independent"]] or not seeds:
        raise pairing.PairingError("the evidence needs a paired and an independent run of every seed")
    steps = runs["paired"][0]["eval_steps"]
    scores = {arm: np.array([r["eval_scores"] for r in runs[arm]], dtype=float) for arm in ARMS}
    gap = pairing.arm_gap(scores["paired"], scores["independent"], steps=steps, resamples=settings.resamples)
    final_gap = pairing.arm_gap(
        scores["paired"][:, -1, :], scores["independent"][:, -1, :], resamples=settings.resamples
    )
    weights = pairing.auc_weights(steps)
    rng = np.random.default_rng(pairing.BOOTSTRAP_SEED)
    step0 = [
        pairing.luck_share(np.array(d["tables"]), resamples=settings.resamples, rng=rng)
        for d in sorted(evidence["diagnostic_step0"], key=lambda d: d["seed"])
    ]
    arms: dict[str, Any] = {}
    for arm in ARMS:
        true = np.array([g["true_success"] for r in runs[arm] for g in r["groups"]])
        observed = np.array([g["observed_reward"] for r in runs[arm] for g in r["groups"]])
        groups = pairing.group_diagnostics(true, observed, q=settings.flip_rate)
        final = [pairing.luck_share(np.array(r["diagnostic_final"]), resamples=0) for r in runs[arm]]
        shared = [len(set(g["seeds"])) == 1 for r in runs[arm] for g in r["groups"]]
        arms[arm] = {
            # elementwise and numpy's pairwise sum, not BLAS: the same bits on any CPU (pairing/numeric.py)
            "auc_mean": float(np.mean(np.add.reduce(scores[arm].mean(axis=2) * weights, axis=-1))),
            "step0_mean": float(scores[arm][:, 0, :].mean()),
            "final_mean": float(scores[arm][:, -1, :].mean()),
            "curve_mean": [float(v) for v in scores[arm].mean(axis=(0, 2))],
            "groups": asdict(groups),
            "groups_sharing_one_seed": int(sum(shared)),
            "luck_share_final_mean": _mean([f.lam for f in final]),
        }
    lams = [share.lam for share in step0]
    return {
        "seeds": seeds,
        "eval_steps": steps,
        "auc_gap": _gap(gap),
        "final_gap": _gap(final_gap),
        "luck_share_step0": {
            "mean": _mean(lams),
            "min": min((v for v in lams if v is not None), default=None),
            "by_seed": lams,
            "ci95_by_seed": [share.interval for share in step0],
            "pooled_mean": _mean([share.lam_pooled for share in step0]),
        },
        "arms": arms,
        "spurious": {
            "q": settings.flip_rate,
            "G": settings.group_size,
            "closed_form": pairing.spurious_rate_closed_form(settings.flip_rate, settings.group_size),
            "independent": arms["independent"]["groups"]["spurious_rate"],
            "paired": arms["paired"]["groups"]["spurious_rate"],
        },
        "verdict": _verdict(gap),
    }


def _gap(gap: pairing.ArmGap) -> dict[str, Any]:
    return {
        "gap": gap.gap,
        "ci95": gap.interval,
        "by_seed": gap.by_seed,
        "seeds_positive": sum(1 for v in gap.by_seed if v > 0),
        "resamples": gap.resamples,
    }


def _verdict(gap: pairing.ArmGap) -> str:
    """What the AUC gap's 95 % interval says (the rule the study fixed before its run)."""
    lo, hi = gap.interval
    if lo > 0:
        return "pairing helped"
    if hi < 0:
        return "pairing hurt"
    return "no difference detected"


def _mean(values: list[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return float(np.mean(defined)) if defined else None


def with_overrides(settings: StudySettings, **overrides: Any) -> StudySettings:
    """A copy of ``settings`` with some fields replaced (unknown names are an error)."""
    unknown = set(overrides) - set(asdict(settings))
    if unknown:
        raise pairing.PairingError(f"unknown study settings {sorted(unknown)}")
    return replace(settings, **overrides)

"""The surrogate's GRPO run: the LLM trainer's update, made exact.

Same training rows and schedule seeds as the LLM runs (``training.rows.build_rows``); rollouts resolve
their seeds as TRL's environments do (paired/clean: the row's seed; independent: ``independent_seed(seed,
slot, step, "train")`` with slot = rollout position in the batch). Advantages are standardised within the
group, A_i = (R_i - mean R) / (std_ddof1 R + 1e-4) on the observed reward; the loss is aggregated over
decisions as TRL aggregates over tokens (sum of A_i * score_i over the batch divided by the batch's
decision count); no KL; one on-policy update per batch (the clipped ratio is 1); Adam, on the trained
coordinates of ``surrogate.basis`` (``Trainer`` maps the gradient there and the step back).
The score of each rollout covers every parameter: its actions and its phrasing tokens (drawn per step,
group by group, from ``phrasing_rng("train", seed, step)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paired_rollouts.design import ARMS
from paired_rollouts.noise.seeds import derive_seed, independent_seed
from paired_rollouts.surrogate.basis import to_parameters, to_trained
from paired_rollouts.surrogate.phrasing import DIMENSION, phrasing_rng
from paired_rollouts.surrogate.policy import Shape
from paired_rollouts.surrogate.rollout import SurrogateRunner, Trajectories, episode_scores, policy_rng
from paired_rollouts.training.register import sample_std

ADV_EPS = 1e-4


def group_advantages(rewards: list[float], scaling: str = "group") -> list[float]:
    """Group-relative advantages: centred on the group mean, divided by its std under scaling "group"
    (TRL's scale_rewards="group"), left unscaled under "none"."""
    mean = sum(rewards) / len(rewards)
    if scaling == "none":
        return [r - mean for r in rewards]
    std = sample_std(rewards)
    return [(r - mean) / (std + ADV_EPS) for r in rewards]


@dataclass
class Adam:
    """Adam (Kingma & Ba) for gradient *ascent* on a parameter vector."""

    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    t: int = 0
    m: np.ndarray = field(default_factory=lambda: np.zeros(DIMENSION))
    v: np.ndarray = field(default_factory=lambda: np.zeros(DIMENSION))

    def step(self, theta: np.ndarray, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * grad * grad
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = self.v / (1 - self.beta2**self.t)
        return theta + self.lr * m_hat / (np.sqrt(v_hat) + self.eps)

    def state(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "m": self.m.tolist(),
            "v": self.v.tolist(),
            "lr": self.lr,
            "beta1": self.beta1,
            "beta2": self.beta2,
            "eps": self.eps,
        }


def train_step(
    runner: SurrogateRunner,
    rows: list[dict[str, Any]],
    *,
    step: int,
    G: int,
    arm: str,
    seed: int,
    scaling: str = "group",
    per_group: bool = False,
) -> tuple[np.ndarray, list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """Roll out one batch (len(rows) groups x G) and return (gradient, per-group info, per-group records);
    with ``per_group`` each group's info also holds its own sum_i A_i S_i ("gradient", unnormalised)."""
    grad = np.zeros(DIMENSION)
    total_decisions = 0
    groups, records_by_group = [], []
    independent = ARMS[arm].coupling == "independent"
    sampling_seed = derive_seed("train", seed, step)
    phrases = phrasing_rng("train", seed, step)
    for g, row in enumerate(rows):
        recs, decisions_, seeds, played = [], [], [], []
        for i in range(G):
            slot = g * G + i
            resolved = (
                independent_seed(int(row["schedule_seed"]), slot, step, "train") if independent else None
            )
            rng = policy_rng(sampling_seed, slot)
            record, decisions = runner.play_row(row, rng, phase="train", resolved_seed=resolved, slot=slot)
            record["episode_index"] = (
                step  # this slot's training episodes so far (the TRL environment's count)
            )
            recs.append(record)
            decisions_.append(decisions)
            played.append(runner.played_score)
            total_decisions += record["decisions"]
            seeds.append(int(row["schedule_seed"]) if resolved is None else int(resolved))
        rewards = [float(r["observed_reward"]) for r in recs]
        adv = group_advantages(rewards, scaling)
        policy = runner.policy_for(row["task_id"])
        scores = episode_scores(runner, decisions_, [policy] * G, phrases, played)
        own = np.zeros(DIMENSION)
        for a, s in zip(adv, scores, strict=True):
            own += a * s
        grad += own
        info = {"advantages": adv, "schedule_seeds": seeds, "slots": [g * G + i for i in range(G)]}
        if per_group:
            info["gradient"] = own
        groups.append(info)
        records_by_group.append(recs)
    return grad / max(total_decisions, 1), groups, records_by_group


class Trainer:
    """One run's optimisation state: theta, Adam on the trained coordinates w (surrogate/basis.py), and the
    step that rolls out a batch from theta and moves w (theta follows from w)."""

    def __init__(
        self, theta0: np.ndarray, tasks_by_id: dict[str, dict[str, Any]], shape: Shape, lr: float
    ) -> None:
        self.theta = np.asarray(theta0, dtype=np.float64).copy()
        self.trained = to_trained(self.theta)
        self.adam = Adam(lr=lr)
        self.tasks, self.shape = tasks_by_id, shape

    def step(
        self,
        rows: list[dict[str, Any]],
        *,
        step: int,
        G: int,
        arm: str,
        seed: int,
        scaling: str = "group",
        lean: bool = False,
    ) -> tuple[np.ndarray, list[dict[str, Any]], list[list[dict[str, Any]]]]:
        """Roll out ``rows`` from the current theta, then update; returns train_step's results. With
        ``lean`` the records hold the outcome only (``EpisodeSession.finish_outcome``): for a caller that
        writes no training episode record."""
        # a step's groups share schedules (paired and clean arms): one trajectory tree per step, so
        # lean courses never reach a full rollout's tree
        runner = SurrogateRunner(self.theta.tolist(), self.tasks, self.shape, Trajectories(), lean=lean)
        grad, info, records = train_step(runner, rows, step=step, G=G, arm=arm, seed=seed, scaling=scaling)
        self.trained = self.adam.step(self.trained, to_trained(grad))
        self.theta = to_parameters(self.trained)
        return grad, info, records

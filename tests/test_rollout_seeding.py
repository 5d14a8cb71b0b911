"""``PolicyRunner.rollout`` seeds every generator a generation backend draws from, per batch (issue 25):
torch's (HF generate, vLLM's V1 model runner) and numpy's global one (vLLM 0.30's V2 model runner takes
each request's seed from ``np.random.randint``, ``vllm/v1/worker/gpu/sample/states.py``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
from paired_rollouts.evaluation.rollout import PolicyRunner


class _Trainer:
    """Stands in for the trainer's generation: records what the backends would draw."""

    def __init__(self) -> None:
        self.model = SimpleNamespace(eval=lambda: None)
        self.environments: list = []
        self.draws: list[tuple[int, int]] = []

    def roll_out(self, rows):
        self.draws.append((int(np.random.randint(0, 2**62)), int(torch.randint(0, 2**62, (1,)))))
        self.environments = [
            SimpleNamespace(
                last_episode={"task_id": r["task_id"], "observed_reward": 0.0}, resolved_seed=None
            )
            for r in rows
        ]
        return {}, [0.0] * len(rows)


def test_each_batch_seeds_numpy_and_torch() -> None:
    runner = PolicyRunner.__new__(PolicyRunner)
    runner.trainer = _Trainer()
    runner.episodes = SimpleNamespace(phase=None)
    rows = [{"task_id": "V0001"}]
    for seed in (5, 6, 5):
        np.random.seed(1234)  # whatever ran before the batch must not matter
        torch.manual_seed(99)
        runner.rollout(rows, "periodic", seed)
    first, other, again = runner.trainer.draws
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]

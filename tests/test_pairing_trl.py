"""PairedEnvironmentFactory inside TRL's own GRPOTrainer (a tiny random model on CPU, one step): TRL builds
its instances with it, resets them with the rows, lists the tools and reads get_reward, and every rollout
of a group gets the seed its design gives it, without the environment knowing about groups."""

from __future__ import annotations

import pytest
from paired_rollouts import pairing
from tiny_qwen35 import tiny_standin

pytestmark = pytest.mark.slow


class Coin:
    """A coin the model may flip; the grade is a draw of the rollout's schedule (event "grade")."""

    def reset(self, task_id: str, schedule_seed: int | None = None, **row) -> None:
        self.schedule = pairing.Schedule(schedule_seed, pairing.FaultMixture(0.5, {"tails": 1.0}))
        self.task_id = task_id

    def flip(self, call: str) -> str:
        """Flip the coin.

        Args:
            call: heads or tails.
        """
        return "lost" if self.schedule.fate("flip") else "won"

    def get_reward(self) -> float:
        return 0.0 if self.schedule.fate("grade") else 1.0


@pytest.fixture(scope="module")
def standin(sim_pools):
    return tiny_standin(sim_pools)


def _train_one_step(standin, tmp_path, schedules: pairing.GroupSchedules):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer = standin
    rows = [
        {"prompt": [{"role": "user", "content": f"task {i}"}], "task_id": f"t{i}", "schedule_seed": 100 + i}
        for i in range(4)
    ]
    factory = pairing.PairedEnvironmentFactory(Coin, schedules)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=1,
        num_generations=4,
        max_completion_length=8,
        max_tool_calling_iterations=1,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        learning_rate=1e-3,
        beta=0.0,
        chat_template_kwargs={"enable_thinking": False},
        shuffle_dataset=False,
        seed=0,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=args,
        train_dataset=Dataset.from_list(rows),
        environment_factory=factory,
    )
    assert [t.__name__ for t in trainer.tools] == ["flip"]  # TRL saw the environment's one tool
    trainer.train()
    seeds = {}
    for env in trainer.environments:
        counter = factory.counter(env)
        seeds.setdefault(env.task_id, []).append((counter.slot, counter.seed))
    return seeds, trainer.state.log_history[0]


def test_trl_paired_groups_share_one_seed(standin, tmp_path) -> None:
    seeds, log = _train_one_step(standin, tmp_path, pairing.GroupSchedules.paired())
    assert len(seeds) == 2 and all(len(group) == 4 for group in seeds.values())
    for task_id, group in seeds.items():
        assert {seed for _, seed in group} == {100 + int(task_id[1:])}
    # the grade is a draw of the shared seed: every group's rewards are equal (TRL's own metric)
    assert log["frac_reward_zero_std"] == 1.0


def test_trl_independent_rollouts_draw_their_own_seeds(standin, tmp_path) -> None:
    seeds, _ = _train_one_step(standin, tmp_path, pairing.GroupSchedules.independent())
    for task_id, group in seeds.items():
        expected = [pairing.independent_seed(100 + int(task_id[1:]), slot, 0, "train") for slot, _ in group]
        assert [seed for _, seed in group] == expected and len(set(expected)) == 4

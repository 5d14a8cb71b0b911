"""The group register of a training run: ``groups.jsonl`` (one record per (step, group),
docs/CONTRACT.md#training-group-record) and ``train_episodes.jsonl`` (the episode record of every training
rollout), built from the trainer's own batches and cross-checked against the environments."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from paired_rollouts.io import atomic_write_text, jsonl_line

GROUPS = "groups.jsonl"
TRAIN_EPISODES = "train_episodes.jsonl"


def episode_record(
    raw: dict[str, Any],
    *,
    run: str,
    condition: str,
    arm: str,
    seed: int,
    phase: str,
    step: int,
    regime: str,
    schedule_index: int | None,
) -> dict[str, Any]:
    """A docs/CONTRACT.md#episode-record from the session's record (its extras kept)."""
    record = dict(raw)
    record["phase_stamp"] = raw.get("phase")
    record["condition_stamp"] = raw.get("condition")
    record.update(
        run=run,
        condition=condition,
        arm=arm,
        seed=seed,
        phase=phase,
        step=step,
        regime=regime,
        schedule_index=schedule_index,
        true_success=bool(raw["true_success"]),
        observed_reward=float(raw["observed_reward"]),
        flipped=bool(raw["flipped"]),
        exposed=bool(raw["exposed"]),
        calls=int(raw["calls"]),
        budget=int(raw["budget"]),
        finished=bool(raw["finished"]),
        faults=dict(raw.get("faults") or {}),
    )
    return record


def sample_std(values: list[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


class Register:
    """groups.jsonl + train_episodes.jsonl, appended per step (flushed and fsynced)."""

    def __init__(self, run_dir: Path, meta: dict[str, Any], G: int, prompts_per_step: int, episodes: bool):
        self.run_dir = run_dir
        self.meta = meta
        self.G = G
        self.P = prompts_per_step
        self.episodes = episodes
        self.generation_seconds = 0.0  # summed over the batches handed to the register

    def truncate(self, keep_below_step: int) -> None:
        """Keep only records of steps < ``keep_below_step`` (atomic rewrite)."""
        for name in (GROUPS, TRAIN_EPISODES):
            path = self.run_dir / name
            if not path.exists():
                continue
            kept = []
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError:
                        break  # a torn last line from a kill
                    if record.get("step", 0) < keep_below_step:
                        kept.append(line if line.endswith("\n") else line + "\n")
            atomic_write_text(path, "".join(kept))

    def _append(self, name: str, lines: list[str]) -> None:
        with (self.run_dir / name).open("a", encoding="utf-8") as handle:
            handle.write("".join(lines))
            handle.flush()
            os.fsync(handle.fileno())

    def __call__(  # noqa: C901 - TRL's reward hook: every group's rollouts recorded in one pass
        self,
        trainer: Any,
        inputs: list[dict[str, Any]],
        output: dict[str, Any],
        rewards: list[float],
        generation_seconds: float,
    ) -> None:
        self.generation_seconds += generation_seconds
        step = trainer.state.global_step
        envs = trainer.environments
        advantages = output["advantages"].detach().cpu().tolist()
        G = self.G
        if len(inputs) != self.P * G or len(envs) != len(inputs) or len(advantages) != len(inputs):
            raise RuntimeError(f"step {step}: batch of {len(inputs)} rollouts, expected {self.P} x {G}")
        groups, episodes = [], []
        for g in range(self.P):
            idx = range(g * G, (g + 1) * G)
            row = inputs[g * G]
            expected_row = step * self.P + g
            if row.get("row_index") != expected_row:
                raise RuntimeError(
                    f"step {step} group {g}: got row {row.get('row_index')}, expected {expected_row}"
                )
            recs = []
            for i in idx:
                record = envs[i].last_episode
                if record is None:
                    raise RuntimeError(f"step {step} rollout {i}: the environment was never graded")
                if record["task_id"] != inputs[i]["task_id"] or inputs[i]["row_index"] != expected_row:
                    raise RuntimeError(
                        f"step {step} rollout {i}: environment task {record['task_id']} != row task "
                        f"{inputs[i]['task_id']}"
                    )
                if abs(float(record["observed_reward"]) - rewards[i]) > 1e-9:
                    raise RuntimeError(
                        f"step {step} rollout {i}: environment reward {record['observed_reward']} != "
                        f"TRL reward {rewards[i]}"
                    )
                recs.append(record)
            observed = [float(r["observed_reward"]) for r in recs]
            truth = [bool(r["true_success"]) for r in recs]
            zero_var = math.isclose(sample_std(observed), 0.0, abs_tol=1e-12)
            adv = [advantages[i] for i in idx]
            groups.append(
                {
                    **self.meta,
                    "step": step,
                    "group": g,
                    "row_index": expected_row,
                    "task_id": row["task_id"],
                    "schedule_seed": int(row["schedule_seed"]),
                    "schedule_seeds": [int(envs[i].resolved_seed) for i in idx],
                    "slots": [envs[i].slot for i in idx],
                    "episode_indices": [envs[i].episode_index for i in idx],
                    "true_success": truth,
                    "observed_reward": observed,
                    "flipped": [bool(r["flipped"]) for r in recs],
                    "exposed": [bool(r["exposed"]) for r in recs],
                    "calls": [int(r["calls"]) for r in recs],
                    "advantages": adv,
                    "max_abs_advantage": max(abs(a) for a in adv),
                    "zero_variance": zero_var,
                    "spurious": all(truth) and not zero_var,
                }
            )
            if self.episodes:
                for k, r in zip(idx, recs, strict=True):
                    rec = episode_record(
                        r,
                        run=self.meta["run"],
                        condition=self.meta["condition"],
                        arm=self.meta["arm"],
                        seed=self.meta["seed"],
                        phase="train",
                        step=step,
                        regime="at_training",
                        schedule_index=None,
                    )
                    rec.update(group=g, rollout=k - g * G, advantage=advantages[k])
                    episodes.append(rec)
        self._append(GROUPS, [jsonl_line(r) for r in groups])
        if self.episodes:
            self._append(TRAIN_EPISODES, [jsonl_line(r) for r in episodes])

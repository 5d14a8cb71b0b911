"""One surrogate run end to end, in one process: GRPO training, checkpoints (parameter vectors), the
training-group register, training episode records, the manifest, then every periodic and final
evaluation and the luck-share diagnostic episodes of its checkpoints -- the same files, at the same paths
and with the same schemas, that the LLM's train / evaluate / diagnose jobs write.

At this scale a run takes seconds, so one job per arm (all its seeds) replaces hundreds of per-file jobs
whose start-up would dominate.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts import layout
from paired_rollouts.design import POOLS
from paired_rollouts.errors import UserError
from paired_rollouts.io import atomic_write_json, atomic_write_jsonl, jsonl_line, sha256_file
from paired_rollouts.records import read_calibration, read_surrogate_checkpoint
from paired_rollouts.settings import Settings
from paired_rollouts.training.provenance import code_version

# The sections of the scale block a surrogate run reads (its --settings, as written in the config).
SECTIONS = ("training", "evaluation", "diagnostics", "surrogate")


def run_settings(raw: dict[str, Any] | None, where: str = "--settings") -> dict[str, Any]:
    """The flat view a run reads and its manifest records, parsed from the sections as written in
    config/config.yaml (paired_rollouts.settings: unknown keys and wrong types name the key)."""
    settings = Settings.parse(raw, where)
    training, evaluation, diagnostics = settings.training, settings.evaluation, settings.diagnostics
    return {
        "steps": training.steps,
        "prompts_per_step": training.prompts_per_step,
        "num_generations": training.num_generations,
        "checkpoint_every": training.checkpoint_every,
        "learning_rate": training.learning_rate,
        "eval_tasks": evaluation.eval_tasks,
        "final_tasks": evaluation.final_tasks,
        "eval_batch": evaluation.eval_batch,
        "diag_pool": diagnostics.pool,
        "diag_tasks": diagnostics.tasks,
        "diag_schedules": diagnostics.schedules,
        "diag_samples": diagnostics.samples,
        "task_filter": settings.task_filter,
        "diagnostic_steps": diagnostics.steps,
        "train_episodes_seeds": settings.surrogate.train_episodes_seeds,
        "extra_checkpoint_steps": training.extra_checkpoint_steps,
        "task_difficulty": settings.surrogate.task_difficulty,
        "phrasing_tokens": settings.surrogate.phrasing_tokens,
        "error_phrasing_tokens": settings.surrogate.error_phrasing_tokens,
    }


def shape_of(settings: dict[str, Any]) -> Any:
    """The policy's shape (difficulty spread, phrasing tokens) from a run's flat settings."""
    from paired_rollouts.surrogate.policy import Shape

    return Shape(settings["task_difficulty"], settings["phrasing_tokens"], settings["error_phrasing_tokens"])


def checkpoint_steps(settings: dict[str, Any]) -> list[int]:
    steps = settings["steps"]
    extra = {s for s in settings["extra_checkpoint_steps"] if s <= steps}
    return sorted(set(layout.periodic_steps(steps, settings["checkpoint_every"])) | extra)


def write_checkpoint(run_dir: Path, step: int, theta: np.ndarray, adam: dict[str, Any]) -> None:
    from paired_rollouts.surrogate.rollout import all_parameter_names

    folder = run_dir / "checkpoints" / f"step{step:04d}"
    body = {
        "step": step,
        "theta": [float(x) for x in theta],
        "parameter_names": all_parameter_names(),
        "adam": adam,
    }
    atomic_write_json(folder / "theta.json", body)
    atomic_write_json(
        folder / "COMPLETE", {"step": step, "files": {"theta.json": sha256_file(folder / "theta.json")}}
    )


def read_checkpoint(run_dir: Path, step: int) -> list[float]:
    folder = Path(run_dir) / "checkpoints" / f"step{step:04d}"
    marker = folder / "COMPLETE"
    if not marker.is_file():
        raise UserError(f"{folder}: no complete surrogate checkpoint; run the surrogate arm job first")
    return read_surrogate_checkpoint(folder)["theta"]


def load_calibration(path: str | Path) -> list[float]:
    """theta of a passing calibration register, read through its typed reader (records.py)."""
    source = Path(path)
    if not source.is_file():
        raise UserError(
            f"{source}: calibration register not found; run 'paired-rollouts surrogate calibrate'"
        )
    data = read_calibration(source)
    if data["passes"] is not True:
        raise UserError(
            f"{source}: the calibration missed a target (passes is not true); fix the calibration"
        )
    return data["theta"]


def run_one(
    run: str,
    *,
    tasks_dir: str,
    calibration: str,
    settings: dict[str, Any],
    results: str,
    conditions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train, evaluate and diagnose one run; returns the manifest."""
    from paired_rollouts.backoffice.tasks import load_pool
    from paired_rollouts.design import PAPER_CONDITIONS, PERIODIC_REGIMES
    from paired_rollouts.evaluation.evaluate import diagnostic_rows, evaluation_rows, final_regimes, roll_rows
    from paired_rollouts.surrogate.rollout import SurrogateRunner, all_parameter_names, full_vector
    from paired_rollouts.surrogate.trainer import Trainer
    from paired_rollouts.training.inputs import check_pools
    from paired_rollouts.training.register import episode_record
    from paired_rollouts.training.rows import build_rows, run_id, training_noise
    from paired_rollouts.training.settings import filter_tasks

    began = time.perf_counter()
    conditions = conditions if conditions is not None else dict(PAPER_CONDITIONS)
    ident = run_id(run, conditions)
    condition, arm, seed = ident.condition, ident.arm, ident.seed
    spec = conditions[condition]
    pool_hashes = check_pools(tasks_dir)
    theta0 = np.asarray(full_vector(load_calibration(calibration)), dtype=np.float64)
    shape = shape_of(settings)
    files = layout.Layout(str(Path(results)))
    run_dir = Path(files.run_dir(run))
    steps, P_, G = settings["steps"], settings["prompts_per_step"], settings["num_generations"]
    pools = {name: load_pool(Path(tasks_dir) / f"{name}.jsonl") for name in POOLS}
    tasks_by_id = {t["task_id"]: t for pool in pools.values() for t in pool}
    train_tasks = filter_tasks(pools["train"], settings["task_filter"])
    rows = build_rows(train_tasks, condition, arm, seed, steps, P_, conditions)
    meta = {"run": run, "condition": condition, "arm": arm, "seed": seed}

    trainer = Trainer(theta0, tasks_by_id, shape, settings["learning_rate"])
    saves = checkpoint_steps(settings)
    thetas: dict[int, list[float]] = {}
    groups_lines, episode_lines, timings = [], [], []
    if 0 in saves:
        write_checkpoint(run_dir, 0, trainer.theta, trainer.adam.state())
        thetas[0] = trainer.theta.tolist()
    for step in range(steps):
        t0 = time.perf_counter()
        batch = rows[step * P_ : (step + 1) * P_]
        grad, info, recs_by_group = trainer.step(
            batch, step=step, G=G, arm=arm, seed=seed, scaling=ident.scaling
        )
        for g, (row, gi, recs) in enumerate(zip(batch, info, recs_by_group, strict=True)):
            observed = [float(r["observed_reward"]) for r in recs]
            truth = [bool(r["true_success"]) for r in recs]
            zero_var = max(observed) - min(observed) == 0.0
            groups_lines.append(
                jsonl_line(
                    {
                        **meta,
                        "step": step,
                        "group": g,
                        "row_index": row["row_index"],
                        "task_id": row["task_id"],
                        "schedule_seed": int(row["schedule_seed"]),
                        "schedule_seeds": gi["schedule_seeds"],
                        "slots": gi["slots"],
                        "episode_indices": [step] * G,
                        "true_success": truth,
                        "observed_reward": observed,
                        "flipped": [bool(r["flipped"]) for r in recs],
                        "exposed": [bool(r["exposed"]) for r in recs],
                        "calls": [int(r["calls"]) for r in recs],
                        "advantages": gi["advantages"],
                        "max_abs_advantage": max(abs(a) for a in gi["advantages"]),
                        "zero_variance": zero_var,
                        "spurious": all(truth) and not zero_var,
                    }
                )
            )
            if seed in settings["train_episodes_seeds"]:
                for k, r in enumerate(recs):
                    rec = episode_record(
                        r,
                        run=run,
                        condition=condition,
                        arm=arm,
                        seed=seed,
                        phase="train",
                        step=step,
                        regime="at_training",
                        schedule_index=None,
                    )
                    rec.update(group=g, rollout=k, advantage=gi["advantages"][k])
                    episode_lines.append(jsonl_line(rec))
        if step + 1 in saves:
            write_checkpoint(run_dir, step + 1, trainer.theta, trainer.adam.state())
            thetas[step + 1] = trainer.theta.tolist()
        timings.append(
            {
                "step": step,
                "seconds": round(time.perf_counter() - t0, 4),
                "gradient_norm": float(np.linalg.norm(grad)),
            }
        )
    atomic_write_jsonl_lines(run_dir / "groups.jsonl", groups_lines)
    if seed in settings["train_episodes_seeds"]:
        atomic_write_jsonl_lines(run_dir / "train_episodes.jsonl", episode_lines)
    train_seconds = time.perf_counter() - began

    # -- evaluations and diagnostics of the saved checkpoints ------------------------------------------
    t1 = time.perf_counter()
    batch = settings["eval_batch"]
    plan = [
        ("periodic", s, r, files.eval_file(run, "periodic", s, r))
        for s in layout.periodic_steps(steps, settings["checkpoint_every"])
        for r in PERIODIC_REGIMES
    ]
    plan += [("final", steps, r, files.eval_file(run, "final", steps, r)) for r in final_regimes(spec)]
    diag_steps = layout.diagnostic_steps_of(settings["diagnostic_steps"], seed)
    plan += [("diagnostic", s, "diag", files.diagnostic_episodes(run, s)) for s in diag_steps]
    for phase, step, regime, out in plan:
        if phase == "diagnostic":
            rows_ = diagnostic_rows(tasks_dir, spec, seed, settings)
        else:
            rows_ = evaluation_rows(tasks_dir, phase, regime, spec, settings)
        records = roll_rows(
            SurrogateRunner(thetas[step], tasks_by_id, shape),
            rows_,
            run=run,
            condition=condition,
            arm=arm,
            seed=seed,
            phase=phase,
            step=step,
            regime=regime,
            batch=batch,
            progress=False,
        )
        atomic_write_jsonl(out, records)
    eval_seconds = time.perf_counter() - t1

    manifest = {
        **meta,
        "status": "complete",
        "model": {
            "kind": "surrogate",
            "parameters": len(theta0),
            "parameter_names": all_parameter_names(),
            "calibration": str(calibration),
            "calibration_sha256": sha256_file(calibration),
        },
        "settings": settings,
        "noise": json.loads(training_noise(condition, arm, conditions).to_json()),
        "seeds": {"run_seed": seed, "trainer_seed": seed, "data_seed": seed},
        "pools_sha256": pool_hashes,
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "code": {"sources_sha256": code_version()["sources_sha256"]},
        "hardware": {
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "device": "cpu",
        },
        "attempts": [
            {
                "attempt": 1,
                "status": "complete",
                "code_version": code_version()["sources_sha256"],
                "resumed_from_step": 0,
            }
        ],
        "steps_completed": steps,
        "checkpoints": sorted(thetas),
        "timings": timings,
        "seconds": {"training": round(train_seconds, 3), "evaluation": round(eval_seconds, 3)},
    }
    atomic_write_json(run_dir / "manifest.json", manifest)
    return manifest


def atomic_write_jsonl_lines(path: Path, lines: list[str]) -> None:
    from paired_rollouts.io import atomic_write_text

    atomic_write_text(path, "".join(lines))

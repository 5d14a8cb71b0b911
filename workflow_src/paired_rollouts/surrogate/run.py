"""One surrogate run end to end, in one process: GRPO training, checkpoints (parameter vectors), the
training-group register, training episode records, the manifest, then every periodic and final
evaluation and the luck-share diagnostic episodes of its checkpoints -- the same files, at the same paths
and with the same schemas, that the LLM's train / evaluate / diagnose jobs write.

At this scale a run takes seconds, so one job per arm (all its seeds) replaces hundreds of per-file jobs
whose start-up would dominate.
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts import layout
from paired_rollouts.design import POOLS
from paired_rollouts.errors import UserError
from paired_rollouts.io import atomic_write_json, atomic_write_jsonl, jsonl_line, sha256_file
from paired_rollouts.pairing.numeric import dot
from paired_rollouts.records import read_calibration, read_surrogate_checkpoint
from paired_rollouts.settings import Settings, TrainingSettings
from paired_rollouts.training.event_log import ScalarLog
from paired_rollouts.training.provenance import code_version

# The sections of the scale block a surrogate run reads (its --settings, as written in the config).
SECTIONS = ("training", "evaluation", "diagnostics", "surrogate")
# What its manifest records under "settings": the settings a surrogate run reads, by their manifest names.
MANIFEST_SETTINGS = (
    "task_filter",
    "steps",
    "prompts_per_step",
    "num_generations",
    "checkpoint_every",
    "learning_rate",
    "extra_checkpoint_steps",
    "eval_tasks",
    "final_tasks",
    "eval_batch",
    "diag_pool",
    "diag_tasks",
    "diag_schedules",
    "diag_samples",
    "diagnostic_steps",
    "train_episodes_seeds",
    "task_difficulty",
    "phrasing_tokens",
    "error_phrasing_tokens",
)


def manifest_settings(settings: Settings) -> dict[str, Any]:
    """The run manifest's ``settings`` (the names every manifest records, Settings.manifest_dict)."""
    recorded = settings.manifest_dict(SECTIONS)
    return {name: recorded[name] for name in MANIFEST_SETTINGS}


def checkpoint_steps(training: TrainingSettings) -> list[int]:
    """The periodic checkpoints and the extra ones the workflow asks for (diagnostic and probe steps)."""
    extra = {s for s in training.extra_checkpoint_steps if s <= training.steps}
    return sorted(set(layout.periodic_steps(training.steps, training.checkpoint_every)) | extra)


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
    return read_surrogate_checkpoint(folder).theta


def load_calibration(path: str | Path) -> list[float]:
    """theta of a passing calibration register, read through its typed reader (records)."""
    source = Path(path)
    if not source.is_file():
        raise UserError(
            f"{source}: calibration register not found; run 'paired-rollouts surrogate calibrate'"
        )
    data = read_calibration(source)
    if data.passes is not True:
        raise UserError(
            f"{source}: the calibration missed a target (passes is not true); fix the calibration"
        )
    return data.theta


@contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (reference counting still frees everything).

    A run allocates millions of short-lived objects beside the long-lived cached worlds (about 150 KB of
    small dicts each, hundreds of them), so each of the collector's full passes walks the whole cache: a
    fifth of a run's CPU time. A run makes only a few hundred objects in reference cycles. On the way out
    the survivors (the caches) move to the permanent generation (``gc.freeze``), so the first pass after
    the block, and every later one, skips them too; the cycles among them are never collected, a few
    kilobytes per run. Changes no result.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


class _Inputs:
    """What a run derives from the task pools alone (their check, the pools, evaluation and diagnostic
    rows), kept for the next run of the process while the pool files are unchanged: an arm job runs
    several seeds on the same pools. Never changed by a run."""

    def __init__(self, signature: tuple[Any, ...]) -> None:
        self.signature = signature
        self._values: dict[Any, Any] = {}

    def once(self, key: Any, make: Callable[..., Any], *args: Any) -> Any:
        """``make(*args)``, made on the first call with ``key``."""
        if key not in self._values:
            self._values[key] = make(*args)
        return self._values[key]


_INPUTS: list[_Inputs] = []


def _load_pools(tasks_dir: str) -> dict[str, list[dict[str, Any]]]:
    from paired_rollouts.backoffice.tasks import load_pool

    return {name: load_pool(Path(tasks_dir) / f"{name}.jsonl") for name in POOLS}


def _inputs(tasks_dir: str) -> _Inputs:
    """The process's inputs of ``tasks_dir``, new when a pool file or the manifest changed (path, inode,
    size or modification time)."""
    folder = Path(tasks_dir).resolve()
    files = [folder / "MANIFEST.json", *(folder / f"{name}.jsonl" for name in POOLS)]
    signature = tuple(
        (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        for path in files
        if path.is_file() and (st := path.stat())
    )
    if not _INPUTS or _INPUTS[0].signature != signature:
        _INPUTS[:] = [_Inputs(signature)]
    return _INPUTS[0]


def run_one(
    run: str,
    *,
    tasks_dir: str,
    calibration: str,
    settings: Settings,
    results: str,
    conditions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train, evaluate and diagnose one run; returns the manifest."""
    with cycle_collector_paused():
        return _run_one(
            run,
            tasks_dir=tasks_dir,
            calibration=calibration,
            settings=settings,
            results=results,
            conditions=conditions,
        )


def _run_one(
    run: str,
    *,
    tasks_dir: str,
    calibration: str,
    settings: Settings,
    results: str,
    conditions: dict[str, Any] | None,
) -> dict[str, Any]:
    from paired_rollouts.backoffice.tasks import select_tasks
    from paired_rollouts.design import PAPER_CONDITIONS, PERIODIC_REGIMES, parse_run
    from paired_rollouts.evaluation.evaluate import diagnostic_rows, evaluation_rows, final_regimes, roll_rows
    from paired_rollouts.surrogate.policy import Shape
    from paired_rollouts.surrogate.rollout import (
        SurrogateRunner,
        Trajectories,
        all_parameter_names,
        full_vector,
    )
    from paired_rollouts.surrogate.trainer import Trainer
    from paired_rollouts.training.inputs import check_pools
    from paired_rollouts.training.register import episode_record
    from paired_rollouts.training.rows import build_rows, training_noise

    began = time.perf_counter()
    conditions = conditions if conditions is not None else dict(PAPER_CONDITIONS)
    ident = parse_run(run, conditions)
    condition, arm, seed = ident.condition, ident.arm, ident.seed
    spec = conditions[condition]
    inputs = _inputs(tasks_dir)
    pool_hashes = inputs.once("pool_hashes", check_pools, tasks_dir)
    theta0 = np.asarray(full_vector(load_calibration(calibration)), dtype=np.float64)
    shape = Shape.of(settings.surrogate)
    files = layout.Layout(str(Path(results)))
    run_dir = Path(files.run_dir(run))
    training = settings.training
    steps, P_, G = training.steps, training.prompts_per_step, training.num_generations
    keeps_episodes = seed in settings.surrogate.train_episodes_seeds
    pools = inputs.once("pools", _load_pools, tasks_dir)
    tasks_by_id = inputs.once(
        "tasks_by_id", lambda: {t["task_id"]: t for pool in pools.values() for t in pool}
    )
    train_tasks = select_tasks(pools["train"], settings.task_filter)
    rows = build_rows(train_tasks, condition, arm, seed, steps, P_, conditions)
    meta = {"run": run, "condition": condition, "arm": arm, "seed": seed}

    trainer = Trainer(theta0, tasks_by_id, shape, training.learning_rate)
    saves = checkpoint_steps(training)
    thetas: dict[int, list[float]] = {}
    groups_lines, episode_lines, timings = [], [], []
    if 0 in saves:
        write_checkpoint(run_dir, 0, trainer.theta, trainer.adam.state())
        thetas[0] = trainer.theta.tolist()
    # what to watch while it trains (TensorBoard; not a record): step s = s updates done, as for the LLM
    with ScalarLog(files.tensorboard_dir(run), first_step=1) as metrics:
        for step in range(steps):
            t0 = time.perf_counter()
            batch = rows[step * P_ : (step + 1) * P_]
            grad, info, recs_by_group = trainer.step(
                batch, step=step, G=G, arm=arm, seed=seed, scaling=ident.scaling, lean=not keeps_episodes
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
                if keeps_episodes:
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
                    "gradient_norm": math.sqrt(float(dot(grad, grad))),
                }
            )
            metrics.log(step + 1, step_metrics(recs_by_group, timings[-1]))
    atomic_write_jsonl_lines(run_dir / "groups.jsonl", groups_lines)
    if keeps_episodes:
        atomic_write_jsonl_lines(run_dir / "train_episodes.jsonl", episode_lines)
    train_seconds = time.perf_counter() - began

    # -- evaluations and diagnostics of the saved checkpoints ------------------------------------------
    t1 = time.perf_counter()
    batch = settings.evaluation.eval_batch
    plan = [
        ("periodic", s, r, files.eval_file(run, "periodic", s, r))
        for s in layout.periodic_steps(steps, training.checkpoint_every)
        for r in PERIODIC_REGIMES
    ]
    plan += [("final", steps, r, files.eval_file(run, "final", steps, r)) for r in final_regimes(spec)]
    diag_steps = layout.diagnostic_steps_of(settings.diagnostics.steps, seed)
    plan += [("diagnostic", s, "diag", files.diagnostic_episodes(run, s)) for s in diag_steps]
    sets = repr(settings)  # a set's rows are the same at every step and seed
    evaluated = Trajectories()  # schedules met at every checkpoint and by every diagnostic sample
    for phase, step, regime, out in plan:
        if phase == "diagnostic":
            rows_ = inputs.once(
                ("diagnostic", spec, seed, sets), diagnostic_rows, tasks_dir, spec, seed, settings
            )
        else:
            key = (phase, regime, spec, sets)
            rows_ = inputs.once(key, evaluation_rows, tasks_dir, phase, regime, spec, settings)
        records = roll_rows(
            SurrogateRunner(thetas[step], tasks_by_id, shape, evaluated),
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
        "settings": manifest_settings(settings),
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


def step_metrics(records_by_group: list[list[dict[str, Any]]], timing: dict[str, Any]) -> dict[str, float]:
    """The scalars TRL logs for a step, from the surrogate's batch: mean observed reward, its spread over
    the batch (ddof 1, as TRL's ``reward_std``), the share of groups whose rewards are all equal, the
    gradient norm and the step's seconds (both as the manifest's ``timings`` entry)."""
    rewards = [float(r["observed_reward"]) for recs in records_by_group for r in recs]
    zero = [
        max(g) == min(g) for g in ([float(r["observed_reward"]) for r in recs] for recs in records_by_group)
    ]
    return {
        "reward": float(np.mean(rewards)),
        "reward_std": float(np.std(rewards, ddof=1)) if len(rewards) > 1 else 0.0,
        "frac_reward_zero_std": sum(zero) / len(zero),
        "grad_norm": float(timing["gradient_norm"]),
        "step_time": float(timing["seconds"]),
    }


def atomic_write_jsonl_lines(path: Path, lines: list[str]) -> None:
    from paired_rollouts.io import atomic_write_text

    atomic_write_text(path, "".join(lines))

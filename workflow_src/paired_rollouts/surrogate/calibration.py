"""Calibration: initial parameters so that the zero-shot surrogate matches the paper's Qwen3.5-2B at step 0.

Targets (paper and blog, step 0): C2 noisy validation success 0.52-0.54, C4 clean validation 0.81-0.82,
zero-shot luck share at p = 0.25 of 0.33-0.38, about 0.72-0.79 of C2 episodes exposed to a fault, and
(the blog's curve tables) C2 recovery-challenge validation 0.55-0.56.
The parameter vector is built from a few interpretable knobs (how often the agent makes a mistake, how
often it recovers from a failed call, how often it retries a write that failed, how often it reads an order
again after writing it); the other parameters keep fixed
offsets from them. The knobs are fitted by damped Newton steps with finite-difference Jacobians on
common random numbers (every estimate replays the same policy draws), the achieved values are measured on
the evaluation sets the run itself uses at step 0 (many policy samples per schedule), and every target is
checked against its tolerance: a miss raises, so nothing trains from an uncalibrated agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError
from paired_rollouts.surrogate.policy import PARAMETERS

# name -> (target, tolerance, where it comes from)
TARGETS: dict[str, tuple[float, float, str]] = {
    "c4_clean_validation": (0.815, 0.02, "paper/blog step 0: C4 clean validation 0.81-0.82"),
    "c2_noisy_validation": (0.53, 0.02, "paper/blog step 0: C2 noisy (at-training) validation 0.52-0.54"),
    "c2_exposed_fraction": (0.755, 0.035, "paper: 0.72-0.79 of episodes exposed to a fault"),
    "c2_challenge_validation": (0.555, 0.025, "blog step 0: C2 recovery challenge 0.547-0.563"),
    "luck_share_p025": (0.355, 0.06, "paper/blog: zero-shot luck share at p = 0.25 of 0.33-0.38"),
}
FITTED = ("c4_clean_validation", "c2_noisy_validation", "c2_exposed_fraction", "c2_challenge_validation")
KNOBS = ("mistake", "recover", "recover_write", "reread")
START = {"mistake": -3.15, "recover": -1.0, "recover_write": 1.0, "reread": -0.32}
SKIP_READ = -3.0  # fixed: skipping a lookup is rare for the paper's agent
# The calibration always estimates on the paper's step-0 sets, whatever the run shape (the targets are
# defined there): the first 64 validation tasks, and the 16-task diagnostic pool with K = 8 x M = 8, as
# the register records them (the manifests' names: Settings.from_manifest reads them).
STEP0_SETS: dict[str, Any] = {
    "eval_tasks": 64,
    "diag_pool": "diagnostic",
    "diag_tasks": 16,
    "diag_schedules": 8,
    "diag_samples": 8,
    "task_filter": "all",
}


def estimator_settings(raw: dict[str, Any] | None, where: str = "--settings") -> dict[str, Any]:
    """The Estimator's keywords (and the register's `settings`): the paper's step-0 sets and the scale's
    `surrogate.calibration_samples`, from the sections as written in config/config.yaml."""
    from paired_rollouts.settings import Settings

    settings = Settings.parse(raw, where)
    return {**STEP0_SETS, "samples": settings.surrogate.calibration_samples}


def theta_from_knobs(knobs: dict[str, float]) -> list[float]:
    """Every parameter as a knob plus a fixed offset (documented in docs/records.md)."""
    m, r, rw, rr, s = knobs["mistake"], knobs["recover"], knobs["recover_write"], knobs["reread"], SKIP_READ
    out = []
    for ctx, action in PARAMETERS:
        if action == "wrong_argument":
            value = m + (1.5 if ctx == "next_write_unread" else 0.0)
        elif action == "skip_step":
            value = s if ctx == "next_read" else m - (0.5 if ctx == "next_write_unread" else 1.0)
        elif action == "finish_early":
            value = {"next_read": m - 2.0, "next_write": m - 1.5, "next_write_unread": m - 1.5}.get(
                ctx, m - 1.0
            )
        elif action == "reread":
            value = rr
        elif action == "page":
            value = 0.0
        elif action == "wait":
            value = r
        elif action == "check":
            value = r - 1.0
        elif action == "retry":
            value = {
                "rate_read": -1.5,
                "rate_write": -1.5,
                "timeout": r - 1.0,
                "error": -1.0,
                "waited": r + 2.0,
                "unavailable_read": r - 0.5,
                "unavailable_write": rw,
            }.get(ctx, r)
        else:
            raise AssertionError((ctx, action))
        out.append(float(value))
    return out


class Estimator:
    """Step-0 quantities of a parameter vector on the run's own evaluation sets, with fixed policy draws."""

    def __init__(self, tasks_dir: str, *, samples: int, task_filter: str = "all", **sets: Any) -> None:
        """``sets``: eval_tasks, diag_pool, diag_tasks, diag_schedules, diag_samples (STEP0_SETS in the
        workflow); the diagnostic noise is the paper's p = 0.25, where the luck-share target is defined."""
        import dataclasses

        from paired_rollouts.backoffice.tasks import load_pool
        from paired_rollouts.design import DIAGNOSTIC_P
        from paired_rollouts.evaluation.evaluate import diagnostic_rows, evaluation_rows
        from paired_rollouts.settings import Settings
        from paired_rollouts.surrogate.rollout import Trajectories

        settings = Settings.from_manifest({"task_filter": task_filter, **sets}, "calibration sets")
        settings = dataclasses.replace(
            settings, diagnostics=dataclasses.replace(settings.diagnostics, p=DIAGNOSTIC_P)
        )
        self.tasks = {
            t["task_id"]: t
            for name in ("validation", "diagnostic")
            for t in load_pool(Path(tasks_dir) / f"{name}.jsonl")
        }
        self.clean = evaluation_rows(tasks_dir, "periodic", "clean", "C4", settings)
        self.noisy = evaluation_rows(tasks_dir, "periodic", "at_training", "C2", settings)
        self.challenge = evaluation_rows(tasks_dir, "periodic", "challenge", "C2", settings)
        self.diag = diagnostic_rows(tasks_dir, "C2", 0, settings)
        self.samples = samples
        self.K, self.M = settings.diagnostics.schedules, settings.diagnostics.samples
        self.trajectories = Trajectories()  # the same schedules are played at every knob setting

    def _play(self, theta: list[float], rows: list[dict], tag: str, samples: int) -> list[dict]:
        from paired_rollouts.noise.seeds import derive_seed
        from paired_rollouts.surrogate.rollout import SurrogateRunner, policy_rng

        runner = SurrogateRunner(theta, self.tasks, self.trajectories)
        out = []
        for j, row in enumerate(rows):
            for s in range(samples):
                rng = policy_rng(derive_seed("calibration", tag, j), s)
                record, _ = runner.play_row(row, rng, phase="calibration")
                out.append(record)
        return out

    def fitted(self, theta: list[float]) -> dict[str, float]:
        clean = self._play(theta, self.clean, "clean", self.samples)
        noisy = self._play(theta, self.noisy, "noisy", self.samples)
        challenge = self._play(theta, self.challenge, "challenge", 2 * self.samples)
        return {
            "c2_challenge_validation": float(np.mean([r["true_success"] for r in challenge])),
            "c4_clean_validation": float(np.mean([r["true_success"] for r in clean])),
            "c2_noisy_validation": float(np.mean([r["true_success"] for r in noisy])),
            "c2_exposed_fraction": float(np.mean([r["exposed"] for r in noisy])),
        }

    def luck_share(self, theta: list[float]) -> dict[str, Any]:
        from paired_rollouts.stats.luck_share import summarize_tables

        records = self._play(theta, self.diag, "diag", 1)
        by_task: dict[str, list[int]] = {}
        for row, rec in zip(self.diag, records, strict=True):
            by_task.setdefault(row["task_id"], []).append(int(rec["true_success"]))
        tables = np.asarray(
            [np.reshape(v, (self.K, self.M)) for _, v in sorted(by_task.items())], dtype=float
        )
        summary = summarize_tables(tables)
        return {"lam": summary["lam"], "tasks_defined": summary["tasks_defined"], "tasks": summary["tasks"]}


def calibrate(estimator: Estimator, iterations: int = 8, step: float = 0.4) -> dict[str, Any]:
    """Damped Newton on the three fitted targets; returns the calibration register (not yet written)."""
    names = list(KNOBS)
    x = np.array([START[k] for k in names], dtype=np.float64)
    goal = np.array([TARGETS[t][0] for t in FITTED])
    history = []

    def f(v: np.ndarray) -> np.ndarray:
        got = estimator.fitted(theta_from_knobs(dict(zip(names, v.tolist(), strict=True))))
        return np.array([got[t] for t in FITTED]) - goal

    fx = f(x)
    for it in range(iterations):
        history.append(
            {
                "iteration": it,
                "knobs": dict(zip(names, [round(v, 6) for v in x.tolist()], strict=True)),
                "residual": [round(v, 6) for v in fx.tolist()],
            }
        )
        if np.all(np.abs(fx) <= 0.25 * np.array([TARGETS[t][1] for t in FITTED])):
            break
        J = np.empty((len(FITTED), len(names)))
        for k in range(len(names)):
            e = np.zeros(len(names))
            e[k] = step
            J[:, k] = (f(x + e) - fx) / step
        delta = np.linalg.lstsq(J, -fx, rcond=None)[0]
        delta = np.clip(delta, -1.0, 1.0)
        x = x + delta
        fx = f(x)
    knobs = dict(zip(names, x.tolist(), strict=True))
    theta = theta_from_knobs(knobs)
    achieved = estimator.fitted(theta)
    luck = estimator.luck_share(theta)
    achieved["luck_share_p025"] = luck["lam"]
    rows = []
    for name, (target, tol, source) in TARGETS.items():
        got = achieved[name]
        ok = got is not None and abs(got - target) <= tol
        rows.append(
            {
                "target_name": name,
                "target": target,
                "tolerance": tol,
                "achieved": got,
                "difference": None if got is None else got - target,
                "passes": bool(ok),
                "source": source,
            }
        )
    return {
        "knobs": knobs,
        "theta": theta,
        "parameter_names": [f"{c}/{a}" for c, a in PARAMETERS],
        "targets": rows,
        "passes": all(r["passes"] for r in rows),
        "luck_share": luck,
        "iterations": history,
        "estimation": {
            "eval_tasks": len({r["task_id"] for r in estimator.clean}),
            "samples": estimator.samples,
            "clean_episodes": len(estimator.clean) * estimator.samples,
            "noisy_episodes": len(estimator.noisy) * estimator.samples,
            "diagnostic_episodes": len(estimator.diag),
        },
    }


def check_register(register: dict[str, Any], path: str) -> None:
    """Fail loudly, naming every missed target."""
    missed = [r for r in register["targets"] if not r["passes"]]
    if missed:
        text = "; ".join(
            f"{r['target_name']} achieved {r['achieved']} vs target {r['target']} +- {r['tolerance']}"
            for r in missed
        )
        raise UserError(
            f"{path}: surrogate calibration missed {len(missed)} target(s): {text}; change the knob "
            "offsets in surrogate/calibration.py (the register was written for inspection)"
        )

"""Calibration: the surrogate matched to the paper's Qwen3.5-2B at step 0, in its gradient mechanism, and
in the learning curves of the arms the paper ran without pairing.

Three kinds of target, each row of the register saying which (docs/records.md 8.2):

- **fitted** here (``surrogate calibrate``): four behaviour knobs (how often the agent makes a mistake,
  recovers from a failed call, retries a failed write, reads an order again after writing it; every
  parameter is a knob plus a fixed offset) by damped Newton steps with finite-difference Jacobians on
  common random numbers, to the step-0 rates: C4 clean validation, C2 noisy validation, the fraction of
  C2 episodes exposed to a fault, the C2 recovery challenge.
- **fitted offline** (``surrogate fit``, values in the config's ``surrogate:`` section) and re-checked
  here: the policy's shape (task difficulty spread, phrasing tokens) against the spread of step-0 success
  over the paper's clean probe tasks and the probe's step-0 trace reductions (tool faults 40 %, grader
  flips 21 %); the learning rate against the unpaired arms' learning curves.
- **checked**: the zero-shot luck share, and (``surrogate curves``, after the unpaired arms ran) the mean
  learning curves of C0, C2 independent and C4 independent against the published ones.

The paired arms are never read: ``published_curves`` takes only the unpaired columns of curves.yaml and
``curve_runs`` refuses a paired run. Every miss fails the stage with one line naming the register.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError
from paired_rollouts.pairing.numeric import dot, gram_matrix, least_squares
from paired_rollouts.settings import Settings
from paired_rollouts.surrogate.policy import PARAMETERS, PLAIN, Shape

# name -> (target, tolerance, where it comes from): the step-0 behaviour, fitted by the four knobs
TARGETS: dict[str, tuple[float, float, str]] = {
    "c4_clean_validation": (0.815, 0.02, "paper/blog step 0: C4 clean validation 0.81-0.82"),
    "c2_noisy_validation": (0.53, 0.02, "paper/blog step 0: C2 noisy (at-training) validation 0.52-0.54"),
    "c2_exposed_fraction": (0.755, 0.035, "paper: 0.72-0.79 of episodes exposed to a fault"),
    "c2_challenge_validation": (0.555, 0.025, "blog step 0: C2 recovery challenge 0.547-0.563"),
    "luck_share_p025": (
        0.355,
        0.06,
        "paper/blog: zero-shot luck share at p = 0.25 of 0.33-0.38 (its three seeds); here the mean over the "
        "probe captures' diagnostic schedules",
    ),
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

# The spread of step-0 clean success over tasks. The paper's: the success counts k (of 8 clean rollouts)
# of its 64 clean probe groups at the base model, {k: groups} (the study's public probe register
# registers/probe/t1-c2-paired-s1.json, checkpoint 0, summary.outcome.by_k); its between-task SD is
# 0.209 (bootstrap SE over tasks 0.026, hence the tolerance).
PAPER_CLEAN_COUNTS = {8: 23, 7: 11, 6: 10, 5: 6, 4: 7, 3: 3, 2: 2, 1: 2, 0: 0}
SPREAD_TOLERANCE = 0.05
SPREAD_SOURCE = (
    "study's probe register (t1-c2-paired-s1, step 0): between-task SD of clean success over its 64 "
    "clean groups of 8"
)
# The probe's step-0 trace reductions (data/published/paper.yaml ids; the paper's value is one capture,
# so the tolerance is two standard deviations of one capture, measured over the calibration's captures).
MECHANISM: dict[str, tuple[str, str]] = {
    "transition_mc_reduction": ("probe.b0.transition.mc.reduction", "transition"),
    "outcome_mc_reduction": ("probe.b0.outcome.mc.reduction", "outcome"),
}
MECHANISM_MIN_TOLERANCE = 0.03


def mechanism_tolerance(sd: float | None, captures: int) -> float:
    """Two SD of one capture (from the SD over ``captures``, widened for the mean's own error), at least
    MECHANISM_MIN_TOLERANCE (the least, where the reduction is undefined)."""
    if sd is None:
        return MECHANISM_MIN_TOLERANCE
    return max(MECHANISM_MIN_TOLERANCE, 2 * sd * math.sqrt(1 + 1 / captures))


def capture_summary(captures: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """The mean and SD (ddof 1) over the mechanism's captures of every quantity but the seed. A reduction
    is None in a capture whose independent score variance is zero (a block with no noise: no phrasing
    tokens, for one); a quantity None in any capture has mean and SD None: undefined, not a zero."""
    mean: dict[str, float | None] = {}
    sd: dict[str, float | None] = {}
    for key in (k for k in captures[0] if k != "seed"):
        values = [c[key] for c in captures]
        defined = None not in values
        mean[key] = float(np.mean(values)) if defined else None
        sd[key] = float(np.std(values, ddof=1)) if defined and len(values) > 1 else None
    return {"mean": mean, "sd": sd}


# The probe's design at step 0 (the paper's, whatever the scale: docs/analysis.md#probe-design), by the
# settings' manifest names.
PROBE_DESIGN: dict[str, Any] = {
    "task_filter": "all",
    "diag_pool": "diagnostic",
    "prompts_per_step": 24,
    "num_generations": 8,
    "probe_clean_tasks": 64,
    "probe_clean_rollouts": 8,
    "probe_diag_tasks": 16,
    "probe_schedules": 8,
    "probe_samples": 8,
    "probe_resamples": 64,
    "probe_q": 0.10,
    "probe_p": 0.25,
    "probe_seed": 0,
}
# Gradient signal-to-noise per step at step 0: the paper's batch of 24 groups.
SNR_BATCH = 24
SNR_DESIGNS = (
    ("C2", "independent"),
    ("C2", "paired"),
    ("C4", "independent"),
    ("C4", "paired"),
    ("C0", "clean"),
)

# The learning curves checked on the study's unpaired arms: name -> (condition, arm, regime, panel and
# column of data/published/curves.yaml). Only these columns are ever read from that file.
CURVES: dict[str, tuple[str, str, str, str, str]] = {
    "c0_noisy_validation": ("C0", "clean", "at_training", "c2_noisy_validation", "clean"),
    "c0_challenge": ("C0", "clean", "challenge", "c2_challenge", "clean"),
    "c0_clean_validation": ("C0", "clean", "clean", "c4_clean_validation", "clean"),
    "c2_noisy_validation": ("C2", "independent", "at_training", "c2_noisy_validation", "independent"),
    "c2_challenge": ("C2", "independent", "challenge", "c2_challenge", "independent"),
    "c4_clean_validation": ("C4", "independent", "clean", "c4_clean_validation", "independent"),
}
UNPAIRED_ARMS = frozenset((condition, arm) for condition, arm, *_ in CURVES.values())
CURVE_TOLERANCE = 0.04  # RMS gap per curve; each published point carries about 0.025 of sampling noise


def estimator_settings(raw: dict[str, Any] | None, where: str = "--settings") -> dict[str, Any]:
    """The Estimator's keywords (and the register's `settings`): the paper's step-0 sets and the scale's
    `surrogate.calibration_samples`, from the sections as written in config/config.yaml."""
    settings = Settings.parse(raw, where)
    return {**STEP0_SETS, "samples": settings.surrogate.calibration_samples}


def theta_from_knobs(knobs: dict[str, float]) -> list[float]:
    """Every action parameter as a knob plus a fixed offset (documented in docs/records.md)."""
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


def between_task_spread(successes: Sequence[Sequence[float]]) -> float:
    """Between-task SD of success (method of moments): var of the task means minus their mean binomial
    variance; ``successes`` holds each task's n outcomes (n the same for every task)."""
    n = len(successes[0])
    p = np.asarray([float(np.mean(s)) for s in successes])
    between = p.var(ddof=1) - float(np.mean(p * (1 - p))) / (n - 1)
    return math.sqrt(max(between, 0.0))


def paper_spread() -> float:
    return between_task_spread(
        [
            [1.0] * k + [0.0] * (8 - k)
            for k, groups in sorted(PAPER_CLEAN_COUNTS.items())
            for _ in range(groups)
        ]
    )


class Estimator:
    """Step-0 quantities of a parameter vector on the run's own evaluation sets, with fixed policy draws."""

    def __init__(
        self,
        tasks_dir: str,
        *,
        samples: int,
        task_filter: str = "all",
        shape: Shape = PLAIN,
        snr_groups: int = 256,
        **sets: Any,
    ) -> None:
        """``sets``: eval_tasks, diag_pool, diag_tasks, diag_schedules, diag_samples (STEP0_SETS in the
        workflow); the diagnostic noise is the paper's p = 0.25, where the luck-share target is defined."""
        import dataclasses

        from paired_rollouts.backoffice.tasks import load_pool
        from paired_rollouts.design import DIAGNOSTIC_P
        from paired_rollouts.evaluation.evaluate import diagnostic_rows, evaluation_rows
        from paired_rollouts.surrogate.rollout import Trajectories

        settings = Settings.from_manifest({"task_filter": task_filter, **sets}, "calibration sets")
        settings = dataclasses.replace(
            settings, diagnostics=dataclasses.replace(settings.diagnostics, p=DIAGNOSTIC_P)
        )
        self.tasks_dir = tasks_dir
        self.tasks = {
            t["task_id"]: t
            for name in ("train", "validation", "diagnostic")
            for t in load_pool(Path(tasks_dir) / f"{name}.jsonl")
        }
        self.clean = evaluation_rows(tasks_dir, "periodic", "clean", "C4", settings)
        self.noisy = evaluation_rows(tasks_dir, "periodic", "at_training", "C2", settings)
        self.challenge = evaluation_rows(tasks_dir, "periodic", "challenge", "C2", settings)
        self.diag = diagnostic_rows(tasks_dir, "C2", 0, settings)
        self.diag_settings = settings
        self.samples = samples
        self.K, self.M = settings.diagnostics.schedules, settings.diagnostics.samples
        self.shape = shape
        self.snr_groups = snr_groups
        self.trajectories = Trajectories()  # the same schedules are played at every knob setting

    def runner(self, theta: Sequence[float]) -> Any:
        from paired_rollouts.surrogate.rollout import SurrogateRunner

        return SurrogateRunner(theta, self.tasks, self.shape, self.trajectories)

    def _play(self, theta: Sequence[float], rows: list[dict], tag: str, samples: int) -> list[dict]:
        from paired_rollouts.noise.seeds import derive_seed
        from paired_rollouts.surrogate.rollout import policy_rng

        runner = self.runner(theta)
        out = []
        for j, row in enumerate(rows):
            for s in range(samples):
                rng = policy_rng(derive_seed("calibration", tag, j), s)
                record, _ = runner.play_row(row, rng, phase="calibration")
                out.append(record)
        return out

    def fitted(self, theta: Sequence[float]) -> dict[str, float]:
        clean = self._play(theta, self.clean, "clean", self.samples)
        noisy = self._play(theta, self.noisy, "noisy", self.samples)
        challenge = self._play(theta, self.challenge, "challenge", 2 * self.samples)
        return {
            "c2_challenge_validation": float(np.mean([r["true_success"] for r in challenge])),
            "c4_clean_validation": float(np.mean([r["true_success"] for r in clean])),
            "c2_noisy_validation": float(np.mean([r["true_success"] for r in noisy])),
            "c2_exposed_fraction": float(np.mean([r["exposed"] for r in noisy])),
        }

    def clean_spread(self, theta: Sequence[float]) -> float:
        """Between-task SD of clean success on the clean set (every schedule and sample of a task)."""
        records = self._play(theta, self.clean, "clean", self.samples)
        by_task: dict[str, list[float]] = {}
        for rec in records:
            by_task.setdefault(rec["task_id"], []).append(float(rec["true_success"]))
        return between_task_spread(list(by_task.values()))

    def luck_share(self, theta: Sequence[float], captures: int) -> dict[str, Any]:
        """The zero-shot luck share (K x M diagnostic tables at p = 0.25) on the diagnostic schedules of run
        seeds 0..captures-1, one policy sample per row: the mean over captures (the paper's range covers
        its three seeds) and each capture's value."""
        from paired_rollouts.evaluation.evaluate import diagnostic_rows
        from paired_rollouts.stats.luck_share import summarize_tables

        summaries = []
        for seed in range(captures):
            rows = self.diag if seed == 0 else diagnostic_rows(self.tasks_dir, "C2", seed, self.diag_settings)
            records = self._play(theta, rows, "diag" if seed == 0 else f"diag-{seed}", 1)
            by_task: dict[str, list[int]] = {}
            for row, rec in zip(rows, records, strict=True):
                by_task.setdefault(row["task_id"], []).append(int(rec["true_success"]))
            tables = [np.reshape(v, (self.K, self.M)) for _, v in sorted(by_task.items())]
            summaries.append(summarize_tables(np.asarray(tables, dtype=float)))
        lams = [s["lam"] for s in summaries]
        return {
            "lam": None if None in lams else float(np.mean(lams)),
            "lam_by_capture": lams,
            "lam_pooled": float(np.mean([s["lam_pooled"] for s in summaries])),
            "tasks_defined": min(s["tasks_defined"] for s in summaries),
            "tasks": summaries[0]["tasks"],
        }

    def mechanism(self, theta: Sequence[float], captures: int) -> dict[str, Any]:
        """The probe at step 0 (the paper's design) for run seeds 0..captures-1: the MC trace reductions
        under transition and outcome noise over every coordinate, and over the action parameters and the
        phrasing vocabulary alone (which part of the score decides them); lhs/rhs of Equation 5; the
        contrast reduction (1 - paired/independent reward-contrast variance, the luck in the contrasts).
        Their means and the SD of one capture."""
        from paired_rollouts.surrogate.policy import P
        from paired_rollouts.surrogate.probe import probe_checkpoint

        design = Settings.from_manifest(PROBE_DESIGN, "the probe's step-0 design")
        rows = []
        for seed in range(captures):
            probe = probe_checkpoint(
                list(theta),
                condition="C2",
                seed=seed,
                step=0,
                tasks_dir=self.tasks_dir,
                settings=design,
                tasks_by_id=self.tasks,
                shape=self.shape,
                blocks={"actions": slice(0, P), "phrasing": slice(P, None)},
            )
            parts = {
                "": probe,
                "_actions": probe["blocks"]["actions"],
                "_phrasing": probe["blocks"]["phrasing"],
            }
            row: dict[str, Any] = {"seed": seed}
            for suffix, part in parts.items():
                for noise in ("transition", "outcome"):
                    ratio = part[noise]["mean_centered"]["ratio_paired_over_independent"]
                    row[noise + suffix] = None if ratio is None else 1.0 - ratio
            contrast = probe["transition"]["mean_centered"]["reward_variance"]
            row["contrast_reduction"] = 1.0 - contrast["paired"] / contrast["independent_resampled"]
            row["lhs_over_rhs"] = probe["outcome"]["lhs_over_rhs"]
            rows.append(row)
        return {"captures": rows, **capture_summary(rows)}

    def signal_to_noise(self, theta: Sequence[float]) -> dict[str, Any]:
        """Per design: the trainer's group gradient g = sum_i A_i S_i (standardised advantages, exact scores
        over every parameter) on ``snr_groups`` training groups at step 0; the per-step signal-to-noise with
        the paper's batch of SNR_BATCH groups, ||E g||^2 / (Tr Var g / SNR_BATCH), over every parameter and
        over the 32 action parameters alone (the reward-relevant block), with standard errors."""
        from paired_rollouts.backoffice.tasks import load_pool
        from paired_rollouts.surrogate.policy import P
        from paired_rollouts.surrogate.trainer import train_step
        from paired_rollouts.training.rows import build_rows

        train = load_pool(Path(self.tasks_dir) / "train.jsonl")
        out = {}
        for condition, arm in SNR_DESIGNS:
            rows = build_rows(train, condition, arm, 0, 1, self.snr_groups)
            _, groups, _ = train_step(self.runner(theta), rows, step=0, G=8, arm=arm, seed=0, per_group=True)
            g = np.stack([group["gradient"] for group in groups])
            out[f"{condition}/{arm}"] = {
                "groups": len(groups),
                "zero_variance_groups": sum(1 for group in groups if not any(group["advantages"])),
                "all": signal_and_noise(g),
                "actions": signal_and_noise(g[:, :P]),
            }
        return out


def signal_and_noise(g: np.ndarray, batch: int = SNR_BATCH) -> dict[str, float | None]:
    """From n group gradients (rows of ``g``): the unbiased ||E g||^2 = ||mean||^2 - Tr Var / n, Tr Var of
    one group's gradient, and the per-step ratio with ``batch`` groups; the signal's standard error by the
    delta method, sqrt((4 mean' S mean + 2 Tr(S^2) / n) / n), S the sample covariance. The ratio and its
    error are None where Tr Var is zero: every group gave the same gradient (few ``snr_groups``, all of
    them without reward variance, for one), so no noise was measured to divide by."""
    n = g.shape[0]
    mean = g.mean(axis=0)
    centred = g - mean
    gram = gram_matrix(centred) / (n - 1)  # shares its non-zero spectrum with S
    trace = float(np.trace(gram))
    signal = float(dot(mean, mean)) - trace / n
    projected = dot(centred, mean)
    quad = float(dot(projected, projected)) / (n - 1)
    se = math.sqrt(max(4 * quad + 2 * float((gram * gram).sum()) / n, 0.0) / n)
    return {
        "signal": signal,
        "signal_se": se,
        "trace_var_group": trace,
        "snr_per_step": signal / (trace / batch) if trace > 0 else None,
        "snr_per_step_se": se / (trace / batch) if trace > 0 else None,
    }


def calibrate(estimator: Estimator, iterations: int = 8, step: float = 0.4) -> dict[str, Any]:
    """Damped Newton on the four fitted targets; returns the knobs, the action parameters and the history."""
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
        delta = least_squares(J, -fx)
        delta = np.clip(delta, -1.0, 1.0)
        x = x + delta
        fx = f(x)
    knobs = dict(zip(names, x.tolist(), strict=True))
    return {"knobs": knobs, "theta": theta_from_knobs(knobs), "iterations": history}


def _row(name: str, target: float, tolerance: float, achieved: float | None, kind: str, source: str) -> dict:
    ok = achieved is not None and abs(achieved - target) <= tolerance
    return {
        "target_name": name,
        "target": target,
        "tolerance": tolerance,
        "achieved": achieved,
        "difference": None if achieved is None else achieved - target,
        "passes": bool(ok),
        "kind": kind,
        "source": source,
    }


def published_reductions(published: str | Path) -> dict[str, float]:
    """The probe's step-0 reductions from data/published/paper.yaml, as fractions."""
    from paired_rollouts.compare.published import load_published

    entries = {e.id: e for e in load_published(published).entries}
    out = {}
    for name, (entry_id, _) in MECHANISM.items():
        if entry_id not in entries:
            raise UserError(f"{published}: no entry {entry_id!r} (the probe's step-0 reduction)")
        entry = entries[entry_id]
        out[name] = float(entry.value) / entry.scale
    return out


def step0_register(
    estimator: Estimator, published: str | Path, captures: int, iterations: int = 8
) -> dict[str, Any]:
    """Everything the calibration knows before any training: the fitted knobs and every step-0 target
    (behaviour, spread, luck share, the probe's reductions) with the signal-to-noise per step."""
    from paired_rollouts.surrogate.rollout import all_parameter_names, full_vector

    fit = calibrate(estimator, iterations)
    theta = full_vector(fit["theta"])
    achieved = estimator.fitted(theta)
    luck = estimator.luck_share(theta, captures)
    rows = [_row(t, *TARGETS[t][:2], achieved[t], "fitted", TARGETS[t][2]) for t in FITTED]
    rows.append(
        _row(
            "clean_task_spread",
            paper_spread(),
            SPREAD_TOLERANCE,
            estimator.clean_spread(theta),
            "fitted offline",
            SPREAD_SOURCE,
        )
    )
    rows.append(
        _row(
            "luck_share_p025",
            *TARGETS["luck_share_p025"][:2],
            luck["lam"],
            "checked",
            TARGETS["luck_share_p025"][2],
        )
    )
    mechanism = estimator.mechanism(theta, captures)
    for name, target in published_reductions(published).items():
        key = MECHANISM[name][1]
        tolerance = mechanism_tolerance(mechanism["sd"][key], captures)
        source = f"data/published/paper.yaml {MECHANISM[name][0]} (one capture; tolerance 2 SD of a capture)"
        rows.append(_row(name, target, tolerance, mechanism["mean"][key], "fitted offline", source))
    return {
        "stage": "step0",
        "passes": all(r["passes"] for r in rows),
        "knobs": fit["knobs"],
        "shape": {
            "task_difficulty": estimator.shape.difficulty,
            "phrasing_tokens": estimator.shape.tokens,
            "error_phrasing_tokens": estimator.shape.error_tokens,
        },
        "theta": theta,
        "parameter_names": all_parameter_names(),
        "targets": rows,
        "luck_share": luck,
        "mechanism": mechanism,
        "signal_to_noise": estimator.signal_to_noise(theta),
        "iterations": fit["iterations"],
        "estimation": {
            "eval_tasks": len({r["task_id"] for r in estimator.clean}),
            "samples": estimator.samples,
            "clean_episodes": len(estimator.clean) * estimator.samples,
            "noisy_episodes": len(estimator.noisy) * estimator.samples,
            "diagnostic_episodes": len(estimator.diag) * captures,
            "probe_captures": captures,
            "snr_groups": estimator.snr_groups,
        },
    }


# ------------------------------------------------------------------------------- learning curves


def published_curves(path: str | Path) -> dict[str, dict[str, Any]]:
    """The published curves of the unpaired arms only (CURVES), as fractions: {name: {steps, values}}.
    The paired columns of the file are never read."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        steps = [int(s) for s in data["steps"]]
        out = {}
        for name, (_, _, _, panel, column) in CURVES.items():
            values = [float(v) / 100 for v in data["panels"][panel][column]]
            if len(values) != len(steps):
                raise ValueError(f"{panel}.{column} has {len(values)} points for {len(steps)} steps")
            out[name] = {"steps": steps, "values": values}
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
        from paired_rollouts.io import yaml_problem

        problem = yaml_problem(exc) if isinstance(exc, yaml.YAMLError) else exc
        raise UserError(
            f"{path}: not a published-curves file ({problem}); see data/published/curves.yaml"
        ) from None
    return out


def is_curve_run(run: str) -> bool:
    """A run of an arm whose learning curve the calibration checks (the paper ran it without pairing)."""
    from paired_rollouts.design import parse_run

    ident = parse_run(run)
    return (ident.condition, ident.arm) in UNPAIRED_ARMS and ident.scaling == "group"


def curve_runs(runs: Iterable[str]) -> dict[tuple[str, str], list[str]]:
    """The runs of each unpaired arm; a paired (or any other) arm is refused: the fit never reads one."""
    from paired_rollouts.design import parse_run

    out: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        ident = parse_run(run)
        key = (ident.condition, ident.arm)
        if not is_curve_run(run):
            raise UserError(
                f"run {run}: the calibration reads only the arms the paper ran without pairing "
                f"({', '.join(sorted(f'{c} {a}' for c, a in UNPAIRED_ARMS))}), never a paired curve"
            )
        if run in out.get(key, []):
            raise UserError(f"run {run} is given twice: each run counts once in its arm's mean curve")
        out.setdefault(key, []).append(run)
    return out


def curves_register(
    step0: dict[str, Any],
    step0_sha256: str,
    runs: Iterable[str],
    results: str | Path,
    published: str | Path,
    check: bool,
) -> dict[str, Any]:
    """The calibration register: the step-0 register plus each unpaired curve's mean over its runs at the
    published steps, the gap per point and the RMS gap per curve (checked against CURVE_TOLERANCE unless
    ``check`` is false: then reported, and said so)."""
    from paired_rollouts import layout
    from paired_rollouts.records import iter_episodes

    files = layout.Layout(str(Path(results)))
    by_arm = curve_runs(runs)
    targets = published_curves(published)
    curves, rows = {}, list(step0["targets"])
    for name, (condition, arm, regime, _, _) in CURVES.items():
        arm_runs = sorted(by_arm.get((condition, arm), []))
        if not arm_runs:
            raise UserError(f"no {condition} {arm} runs given: the curve {name} cannot be checked")
        points = []
        for step, target in zip(targets[name]["steps"], targets[name]["values"], strict=True):
            per_run = []
            for run in arm_runs:
                path = Path(files.eval_file(run, "periodic", step, regime))
                if not path.is_file():
                    per_run = []
                    break
                per_run.append(float(np.mean([rec["true_success"] for _, rec in iter_episodes(path)])))
            if not per_run:
                continue
            mean = float(np.mean(per_run))
            se = float(np.std(per_run, ddof=1) / math.sqrt(len(per_run))) if len(per_run) > 1 else None
            points.append({"step": step, "target": target, "achieved": mean, "se": se, "gap": mean - target})
        rms = math.sqrt(float(np.mean([p["gap"] ** 2 for p in points]))) if points else None
        curves[name] = {
            "condition": condition,
            "arm": arm,
            "regime": regime,
            "runs": arm_runs,
            "points": points,
            "rms_gap": rms,
            "tolerance": CURVE_TOLERANCE,
            "checked": bool(check),
        }
        row = _row(
            f"curve_rms_{name}", 0.0, CURVE_TOLERANCE, rms, "checked", f"data/published/curves.yaml {name}"
        )
        if not check:
            row["passes"], row["kind"] = True, "reported (not checked at this scale)"
        rows.append(row)
    return {
        **step0,
        "stage": "curves",
        "step0_sha256": step0_sha256,
        "targets": rows,
        "passes": all(r["passes"] for r in rows),
        "curves": curves,
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
            f"{path}: surrogate calibration missed {len(missed)} target(s): {text}; see docs/training.md "
            "(surrogate calibration) for the knobs (the register was written for inspection)"
        )

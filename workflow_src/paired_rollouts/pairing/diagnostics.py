"""Diagnostics on plain arrays: how much of the reward is luck, and what grader luck does to groups.

- **Luck share** (lambda): the share of outcome variance that the schedule explains. For each task a
  K x M table of true outcomes (K schedules as rows, M policy samples per schedule) is split by a one-way
  random-effects decomposition into a between-schedule part (environment luck) and a within-schedule part
  (the policy's own sampling): ``lam = sigma2_env / (sigma2_env + sigma2_pol)``, with sigma2_env clipped at
  0 (a small positive bias under the null: about 0.027 for 8 x 8 Bernoulli(0.5) tables). ``lam_pooled``
  is the ratio of the mean components, less affected by the clipping.
- **Zero-variance groups**: groups whose observed rewards are all equal (sample std, ddof 1, at most
  1e-12) carry no group-relative learning signal.
- **Spurious variance**: a group whose true outcomes are all equal but whose observed rewards differ
  learns from grader luck alone. With independent one-sided flips at rate q, an all-correct group of G
  is spurious with probability ``1 - (1 - q)^G - q^G``; a paired group flips as one and never is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from paired_rollouts.pairing.bootstrap import (
    RESAMPLES,
    _check_percentiles,
    _check_resamples,
    _generator,
    _percentile_pair,
    _refuse_non_finite,
    percentile_interval,
    task_bootstrap_nanmean,
)
from paired_rollouts.pairing.dice import _number
from paired_rollouts.pairing.errors import PairingError, whole_number

#: A group's observed rewards are "all equal" when their sample std is at most this.
ZERO_VARIANCE_TOL = 1e-12


def variance_components(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Components of a stack of outcome tables (tasks x K x M, or one K x M).

    Returns arrays ``ms_between``, ``ms_within``, ``sigma2_env``, ``sigma2_pol`` and ``lam`` (NaN where
    undefined: an all-equal table), one entry per table (scalars for one table). Outcomes must be
    finite: a missing one (NaN) would pass for an all-equal table.
    """
    r = _float_array("outcomes", tables)
    single = r.ndim == 2
    if single:
        r = r[None]
    if r.ndim != 3:
        raise PairingError(f"luck share needs K x M tables, got shape {np.shape(tables)}")
    n, k, m = r.shape
    if n == 0:
        raise PairingError("luck share got no tasks: outcomes need shape (tasks, K, M) with tasks >= 1")
    if k < 2 or m < 2:
        raise PairingError(f"luck share needs K >= 2 schedules and M >= 2 samples, got {k} x {m}")
    _refuse_non_finite("outcome", r, ("task", "schedule", "sample"))
    row_mean = r.mean(axis=2)
    grand = row_mean.mean(axis=1)
    ms_between = m / (k - 1) * ((row_mean - grand[:, None]) ** 2).sum(axis=1)
    ms_within = ((r - row_mean[:, :, None]) ** 2).sum(axis=(1, 2)) / (k * (m - 1))
    env = np.maximum(0.0, (ms_between - ms_within) / m)
    pol = ms_within
    denom = env + pol
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(denom > 0, env / np.where(denom > 0, denom, 1.0), np.nan)
    out = {"ms_between": ms_between, "ms_within": ms_within, "sigma2_env": env, "sigma2_pol": pol, "lam": lam}
    if single:
        out = {key: value[0] for key, value in out.items()}
    return out


def _float_array(name: str, values: object) -> np.ndarray:
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:  # strings, ragged lists
        raise PairingError(f"{name} must be a rectangular array of numbers ({err})") from None


def luck_share_interval(
    per_task_lam: np.ndarray,
    resamples: int,
    rng: np.random.Generator | int | None,
    lower: float = 2.5,
    upper: float = 97.5,
) -> list[float | None]:
    """Percentile interval (default 95 %) of the task bootstrap of the mean per-task lambda.

    Undefined tasks (NaN) are skipped within each replicate (``nanmean``, ``nanpercentile``); no defined
    task, or ``resamples=0``, gives ``[None, None]``. ``rng`` (a Generator, an int seed, or None for
    ``BOOTSTRAP_SEED``) is consumed, so several calls can share one generator.
    """
    resamples = _check_resamples(resamples)
    _check_percentiles(lower, upper)
    v = np.asarray(per_task_lam, dtype=float)
    if v.size == 0 or np.all(np.isnan(v)) or resamples == 0:
        return [None, None]
    return percentile_interval(task_bootstrap_nanmean(v, resamples, _generator(rng)), lower, upper)


@dataclass(frozen=True)
class LuckShare:
    """The luck share of a set of tasks: ``lam`` (mean of the defined per-task values) with its
    task-bootstrap ``interval``, ``lam_pooled``, the mean components and the per-task values."""

    lam: float | None
    lam_pooled: float | None
    interval: list[float | None]
    sigma2_env_mean: float
    sigma2_pol_mean: float
    tasks: int
    tasks_defined: int
    per_task: np.ndarray
    components: dict[str, np.ndarray]


def luck_share(
    outcomes: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    rng: np.random.Generator | int | None = None,
    percentiles: tuple[float, float] = (2.5, 97.5),
) -> LuckShare:
    """The luck share of (task, schedule, sample) outcomes: an array of shape (tasks, K, M).

    Collect it by rolling out each task under K schedules (paired: one seed per row) and M policy samples
    per schedule, and record the *true* outcome (before any grader noise). ``interval`` holds the
    ``percentiles`` (default 2.5 and 97.5: 95 %) of ``resamples`` task-bootstrap replicates; ``resamples=0``
    skips the bootstrap; ``rng`` is a Generator, an int seed, or None for
    ``numpy.random.default_rng(BOOTSTRAP_SEED)``.
    """
    resamples = _check_resamples(resamples)
    lower, upper = _percentile_pair(percentiles)
    generator = _generator(rng)
    stack = _float_array("outcomes", outcomes)
    if stack.ndim < 2:
        raise PairingError(f"luck share needs outcomes of shape (tasks, K, M), got shape {stack.shape}")
    comps = variance_components(stack.reshape((-1,) + stack.shape[-2:]))
    lam = comps["lam"]
    defined = ~np.isnan(lam)
    env_mean = float(comps["sigma2_env"].mean())
    pol_mean = float(comps["sigma2_pol"].mean())
    pooled_den = env_mean + pol_mean
    bounds = luck_share_interval(lam, resamples, generator, lower, upper)  # [None, None] for resamples=0
    return LuckShare(
        lam=float(lam[defined].mean()) if defined.any() else None,
        lam_pooled=env_mean / pooled_den if pooled_den > 0 else None,
        interval=bounds,
        sigma2_env_mean=env_mean,
        sigma2_pol_mean=pol_mean,
        tasks=int(lam.size),
        tasks_defined=int(defined.sum()),
        per_task=lam,
        components=comps,
    )


def spurious_rate_closed_form(q: float, group_size: int) -> float:
    """Share of all-correct groups of ``group_size`` whose observed rewards still differ under
    independent one-sided grader flips at rate ``q``: ``1 - (1 - q)^G - q^G`` (0 for G < 2).

    ``q`` is a probability in [0, 1] (not a percent) and ``group_size`` an int.
    """
    q = _number("q (the grader's flip rate)", q, 1.0)
    size = whole_number(group_size)
    if size < 0:  # G = 0 stays 0.0: the study's group statistics ask for it when no group was usable
        raise PairingError(f"group_size must be an integer >= 0 (the G of a group), not {group_size!r}")
    if size < 2:
        return 0.0
    return 1.0 - (1.0 - q) ** size - q**size


class GroupFlags(NamedTuple):
    """One group's flags: observed rewards all equal; true outcomes all correct; spurious (both of
    the last: all correct, yet the observed rewards differ)."""

    zero_variance: bool
    all_correct: bool
    spurious: bool


#: what a true outcome may be (bool, or a number equal to 0 or 1)
_TRUTH_VALUES = frozenset((0, 1))


def _check_truth(truth: list[Any]) -> None:
    for i, t in enumerate(truth):
        try:
            ok = t in _TRUTH_VALUES
        except TypeError:  # unhashable
            ok = False
        if not ok:
            raise PairingError(f"true outcome {i} of the group is {t!r}; true outcomes must be 0/1 or bool")


def group_flags(true_success: Sequence[Any], observed: Sequence[float]) -> GroupFlags:
    """The flags of one group from its true outcomes and observed rewards (one entry per rollout).

    True outcomes must be 0/1 or bool and observed rewards finite numbers, one of each per rollout: a NaN
    reward (a failed rollout) would otherwise count as reward variance.
    """
    truth = list(true_success)
    try:
        obs = [float(x) for x in observed]
    except (TypeError, ValueError):
        raise PairingError(f"observed rewards must be numbers, not {list(observed)!r}") from None
    n = len(obs)
    if len(truth) != n:
        raise PairingError(
            f"{len(truth)} true outcomes but {n} observed rewards; give one of each per rollout"
        )
    _check_truth(truth)
    if not all(map(math.isfinite, obs)):
        i = next(i for i, x in enumerate(obs) if not math.isfinite(x))
        raise PairingError(f"observed reward {i} of the group is {obs[i]}; every reward must be finite")
    if n < 2:
        zero_var = True
    else:  # sample std (ddof 1) in plain Python: groups are small and there are thousands of them
        mean = sum(obs) / n
        zero_var = math.sqrt(sum((x - mean) ** 2 for x in obs) / (n - 1)) <= ZERO_VARIANCE_TOL
    all_correct = bool(all(bool(t) for t in truth))
    return GroupFlags(zero_var, all_correct, all_correct and not zero_var)


@dataclass(frozen=True)
class GroupDiagnostics:
    """Counts over groups: zero-variance groups and their fraction, all-correct groups, the spurious
    ones among them and their rate (None without an all-correct group), and, when the flip rate ``q``
    is given, the independent design's expected rate ``1 - (1 - q)^G - q^G``."""

    groups: int
    group_size: int
    zero_variance_groups: int
    zero_variance_fraction: float
    all_correct_groups: int
    spurious_groups: int
    spurious_rate: float | None
    expected_spurious_rate: float | None


def group_diagnostics(
    true_success: np.ndarray, observed: np.ndarray, q: float | None = None
) -> GroupDiagnostics:
    """Zero-variance and spurious-variance statistics of groups: arrays of shape (groups, G) of true
    outcomes (0/1 or bool) and finite observed rewards; ``q``, when given, is the flip rate in [0, 1]."""
    try:
        truth = np.asarray(true_success)
    except ValueError as err:  # ragged lists
        raise PairingError(f"true outcomes must be a (groups, G) array ({err})") from None
    obs = _float_array("observed rewards", observed)
    if truth.ndim != 2 or obs.ndim != 2:
        raise PairingError(
            f"group diagnostics need 2-D (groups, G) arrays, got shapes {truth.shape} and {obs.shape}"
        )
    if truth.shape != obs.shape:
        raise PairingError(f"true outcomes {truth.shape} and observed rewards {obs.shape} differ in shape")
    n, size = truth.shape
    if n == 0:
        raise PairingError("group diagnostics got no groups: the arrays need shape (groups, G), groups >= 1")
    if size < 1:
        raise PairingError(f"group diagnostics need groups of G >= 1 rollouts, got shape {truth.shape}")
    if q is not None:
        q = _number("q (the grader's flip rate)", q, 1.0)
    _refuse_non_finite("observed reward", obs, ("group", "rollout"))
    flags = []
    for i, (t, o) in enumerate(zip(truth.tolist(), obs.tolist(), strict=True)):
        try:
            flags.append(group_flags(t, o))
        except PairingError as err:
            raise PairingError(f"group {i}: {err}") from None
    zero = sum(f.zero_variance for f in flags)
    correct = sum(f.all_correct for f in flags)
    spurious = sum(f.spurious for f in flags)
    return GroupDiagnostics(
        groups=n,
        group_size=size,
        zero_variance_groups=zero,
        zero_variance_fraction=zero / n,
        all_correct_groups=correct,
        spurious_groups=spurious,
        spurious_rate=spurious / correct if correct else None,
        expected_spurious_rate=None if q is None else spurious_rate_closed_form(q, size),
    )


def zero_variance_fraction(observed: np.ndarray) -> float:
    """The fraction of groups (rows of a (groups, G) array of observed rewards) whose rewards are all
    equal."""
    obs = np.asarray(observed, dtype=float)
    return group_diagnostics(np.zeros(obs.shape, dtype=int), obs).zero_variance_fraction

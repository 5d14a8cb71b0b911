"""Luck share: the fraction of outcome variance explained by the fault schedule (docs/analysis.md#luck-share).

The estimator is ``paired_rollouts.pairing.luck_share``; this module builds the study's tables from its
diagnostic episodes and writes ``luck-step{N}.json``.

One K x M table per diagnostic task and checkpoint (K schedules as rows, ordered by schedule seed; M
samples of the policy per schedule). A one-way random-effects decomposition splits the variance into
between-schedule (environment luck) and within-schedule (policy) parts. The environment component is
clipped at 0, which gives the estimator a small positive bias under the null (about 0.027 for 8 x 8
Bernoulli(0.5) tables); ``lam_pooled`` is the ratio of mean components and is less affected by it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts import pairing
from paired_rollouts.errors import UserError


def luck_share(table: np.ndarray) -> float | None:
    """lambda of one K x M table; None when undefined (all-0 or all-1 table)."""
    lam = float(pairing.variance_components(table)["lam"])
    return None if np.isnan(lam) else lam


def summarize_tables(tables: np.ndarray) -> dict[str, Any]:
    """lam (mean over defined tasks), lam_pooled and the mean components over all tables."""
    share = pairing.luck_share(tables, resamples=0)
    return {**_summary(share), "components": share.components}


def _summary(share: pairing.LuckShare) -> dict[str, Any]:
    return {
        "tasks": share.tasks,
        "tasks_defined": share.tasks_defined,
        "lam": share.lam,
        "lam_pooled": share.lam_pooled,
        "sigma2_env_mean": share.sigma2_env_mean,
        "sigma2_pol_mean": share.sigma2_pol_mean,
    }


def _usual(counts: Iterable[int]) -> int:
    """The most common count (the largest of those tied)."""
    tally = Counter(counts)
    return max(tally, key=lambda count: (tally[count], count))


def build_tables(
    records: Iterable[dict[str, Any]],
    schedules: int | None = None,
    samples: int | None = None,
    tasks: int | None = None,
) -> dict[str, Any]:
    """Group diagnostic episodes task -> schedule_seed -> outcomes and enforce exact K x M shape.

    Returns {K, M, tables: {task_id: (seeds, K x M int array)}, defects: [...]}; a task whose table is
    not exactly K x M becomes a defect and gets no table.
    """
    by_task: dict[str, dict[int, list[int]]] = {}
    for rec in records:
        seed = rec.get("schedule_seed")
        if seed is None:
            raise UserError(f"diagnostic record of task {rec.get('task_id')} has no schedule_seed")
        by_task.setdefault(str(rec["task_id"]), {}).setdefault(int(seed), []).append(
            int(bool(rec["true_success"]))
        )
    if not by_task:
        raise UserError("no diagnostic episodes found; run 'paired-rollouts diagnose' first")
    # without the design's K and M, the shape most tables have: a duplicated or missing row is then
    # blamed on its own task, not on every intact one (the largest would make the intact ones short)
    k_expected = schedules if schedules is not None else _usual(len(rows) for rows in by_task.values())
    m_expected = (
        samples if samples is not None else _usual(len(v) for rows in by_task.values() for v in rows.values())
    )
    defects: list[dict[str, Any]] = []
    tables: dict[str, tuple[list[int], np.ndarray]] = {}
    if tasks is not None and len(by_task) != tasks:
        defects.append({"task_id": None, "problem": f"{len(by_task)} tasks, expected {tasks}"})
    for task_id in sorted(by_task):
        rows = by_task[task_id]
        problems = []
        if len(rows) != k_expected:
            problems.append(f"{len(rows)} schedules, expected {k_expected}")
        for seed in sorted(rows):
            if len(rows[seed]) != m_expected:
                problems.append(f"schedule {seed} has {len(rows[seed])} samples, expected {m_expected}")
        if problems:
            defects.append({"task_id": task_id, "problem": "; ".join(problems)})
            continue
        seeds = sorted(rows)
        tables[task_id] = (seeds, np.array([rows[s] for s in seeds], dtype=int))
    return {"K": int(k_expected), "M": int(m_expected), "tables": tables, "defects": defects}


def _num(value: Any) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def luck_share_file(
    records: list[dict[str, Any]],
    *,
    run: str | None,
    step: int | None,
    source: str,
    source_sha256: str,
    resamples: int,
    seed: int,
    schedules: int | None = None,
    samples: int | None = None,
    tasks: int | None = None,
) -> dict[str, Any]:
    """The content of ``luck-step{N}.json`` (docs/records.md section 1)."""
    built = build_tables(records, schedules, samples, tasks)
    task_ids = list(built["tables"])
    k, m = built["K"], built["M"]
    out: dict[str, Any] = {
        "run": run,
        "step": step,
        "source": source,
        "source_sha256": source_sha256,
        "K": k,
        "M": m,
        "bootstrap": {"resamples": resamples, "seed": seed},
        "defects": built["defects"],
        "complete": not built["defects"],
    }
    if not task_ids:
        out.update(
            tasks=0,
            tasks_defined=0,
            lam=None,
            lam_pooled=None,
            sigma2_env_mean=None,
            sigma2_pol_mean=None,
            ci95=[None, None],
            contrast_precision_equivalent=None,
            per_task=[],
        )
        return out
    stack = np.stack([built["tables"][t][1] for t in task_ids])
    try:
        share = pairing.luck_share(stack, resamples=resamples, rng=np.random.default_rng(seed))
    except pairing.PairingError as exc:  # name the file the tables were read from
        hint = (
            "; the diagnostic evaluation must give every task K >= 2 schedules x M >= 2 samples "
            "(diagnostics.schedules and diagnostics.samples)"
            if min(k, m) < 2
            else ""
        )
        raise UserError(f"{source}: {exc}{hint}") from None
    comps = share.components
    out.update(_summary(share))
    out["ci95"] = share.interval
    lam = share.lam
    out["contrast_precision_equivalent"] = m / (1 - lam) if lam is not None and lam < 1 else None
    out["per_task"] = [
        {
            "task_id": t,
            "schedule_seeds": built["tables"][t][0],
            "table": built["tables"][t][1].tolist(),
            "ms_between": float(comps["ms_between"][i]),
            "ms_within": float(comps["ms_within"][i]),
            "sigma2_env": float(comps["sigma2_env"][i]),
            "sigma2_pol": float(comps["sigma2_pol"][i]),
            "lam": _num(comps["lam"][i]),
        }
        for i, t in enumerate(task_ids)
    ]
    return out


def single_value(records: list[dict[str, Any]], key: str, path: str) -> Any:
    """The one value of ``key`` over all records (a mix is a UserError)."""
    values = Counter(r.get(key) for r in records)
    if len(values) > 1:
        raise UserError(
            f"{path}: records mix several {key} values {sorted(map(str, values))}; one file per run and step"
        )
    return next(iter(values)) if values else None


def step_from_path(path: str | Path) -> int | None:
    name = Path(path).stem
    if "step" in name:
        digits = name.rsplit("step", 1)[1].split("-")[0]
        if digits.isdigit():
            return int(digits)
    return None

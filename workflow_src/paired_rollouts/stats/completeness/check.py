"""``check_run``: a run's evidence against what its design calls for, as the content of complete.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.io import iter_jsonl
from paired_rollouts.layout import RunFiles
from paired_rollouts.records import read_luck, read_pool_manifest
from paired_rollouts.stats.completeness.episodes import (
    EvaluationSets,
    check_diagnostic_file,
    check_luck_file,
    check_stray_files,
)
from paired_rollouts.stats.completeness.expected import DiagnosticSets, ExpectedEvidence, pool_task_ids
from paired_rollouts.stats.completeness.findings import Findings
from paired_rollouts.stats.completeness.groups import check_groups
from paired_rollouts.stats.completeness.provenance import check_provenance


def check_run(
    run: str,
    expected: ExpectedEvidence,
    *,
    evals_dir: str | Path,
    diagnostics_dir: str | Path | None,
    groups_path: str | Path | None,
    run_manifest_path: str | Path | None,
    data_manifest_path: str | Path,
    tasks_dir: str | Path | None = None,
    luck_paths: list[str | Path] | None = None,
) -> dict[str, Any]:
    """The content of ``complete.json`` (docs/records.md section 3); files are keyed as ``RunFiles`` names
    them. ``tasks_dir``: the task pools (default: the data manifest's folder)."""
    if expected.run not in (None, run):
        raise UserError(f"the expected evidence names run {expected.run!r}, not {run!r}")
    data_manifest = read_pool_manifest(data_manifest_path)
    tasks_root = Path(tasks_dir) if tasks_dir else Path(data_manifest_path).parent
    f = Findings(run)
    episodes = _evaluation_sets(f, expected, Path(evals_dir), tasks_root)
    skipped = _skipped_diagnostics(expected.diagnostic, diagnostics_dir)
    diagnosed = [] if skipped or expected.diagnostic is None else list(expected.diagnostic.steps)
    if diagnosed and expected.diagnostic is not None and diagnostics_dir is not None:
        episodes += _diagnostic_sets(
            f, expected.diagnostic, Path(diagnostics_dir), tasks_root, expected.selection
        )
    _luck_files(f, luck_paths or [], diagnosed)
    if diagnostics_dir is not None and diagnosed:
        allowed = {RunFiles.diagnostic_episodes(s) for s in diagnosed} | {RunFiles.luck(s) for s in diagnosed}
        check_stray_files(f, Path(diagnostics_dir), RunFiles.DIAGNOSTICS, allowed)
    groups = _training_groups(f, expected, groups_path, tasks_root)
    provenance = check_provenance(f, run_manifest_path, data_manifest, data_manifest_path, tasks_root)
    return {
        "run": run,
        **f.ident,
        "complete": f.complete,
        "settings": expected.record(),
        "episodes_expected": episodes,
        "episodes_found": f.episodes_found,
        **groups,
        "files": f.files,
        **provenance,
        "missing": f.missing,
        "defects": f.defects,
        "skipped": skipped,
    }


def _evaluation_sets(f: Findings, expected: ExpectedEvidence, evals: Path, tasks_root: Path) -> int:
    """Every periodic and final set, then anything else in the evaluation folder; the episodes expected."""
    sets = EvaluationSets(f)
    plan = []
    if expected.periodic is not None:
        p = expected.periodic
        plan += [("periodic", step, p.pool, p.tasks, p.regimes) for step in p.steps]
    if expected.final is not None:
        final = expected.final
        plan.append(("final", final.step, final.pool, final.tasks, final.regimes))
    count, keys = 0, set()
    ids_of: dict[tuple[str, int], list[str]] = {}
    for phase, step, pool, tasks, regimes in plan:
        ids = ids_of.setdefault((pool, tasks), pool_task_ids(tasks_root, pool, tasks, expected.selection))
        for regime, indices in sorted(regimes.items()):
            key = RunFiles.eval_file(phase, step, regime)
            keys.add(key)
            count += len(ids) * len(indices)
            sets.check(evals / RunFiles.name(key), key, phase, step, regime, ids, indices)
    check_stray_files(f, evals, RunFiles.EVALS, keys)
    return count


def _skipped_diagnostics(diagnostic: DiagnosticSets | None, diagnostics_dir: str | Path | None) -> list[str]:
    if diagnostic is None or not diagnostic.steps:
        return []
    if diagnostics_dir is None:
        return ["diagnostic episodes: no --diagnostics folder given"]
    if not diagnostic.counted:
        return ["diagnostic episodes: the expected evidence lacks diagnostic tasks/schedules/samples"]
    return []


def _diagnostic_sets(
    f: Findings, diag: DiagnosticSets, folder: Path, tasks_root: Path, selection: str
) -> int:
    """Each diagnosed checkpoint's K x M table per task; the episodes expected."""
    tasks, k, m = diag.tasks, diag.schedules, diag.samples
    if tasks is None or k is None or m is None:  # not counted: listed under skipped
        return 0
    ids = pool_task_ids(tasks_root, diag.pool, tasks, selection)
    for step in diag.steps:
        key = RunFiles.diagnostic_episodes(step)
        check_diagnostic_file(f, folder / RunFiles.name(key), key, step, ids, k, m)
    return len(diag.steps) * len(ids) * k * m


def _luck_files(f: Findings, paths: list[str | Path], diagnosed: list[int]) -> None:
    """Each given luck-share file: one per diagnosed step, derived from the checked diagnostic file."""
    by_step: dict[int, Path] = {}
    for path in paths:
        step = read_luck(path).step
        if step in by_step:
            raise UserError(f"{path}: a second luck-share file for step {step} (first {by_step[step]})")
        by_step[step] = Path(path)
    for step in sorted(by_step):
        if step in diagnosed:
            check_luck_file(f, by_step[step], step)
        else:
            f.defects.append(
                {
                    "kind": "luck",
                    "path": str(by_step[step]),
                    "problem": f"step {step} is not a diagnostic step of the design",
                }
            )


def _training_groups(
    f: Findings, expected: ExpectedEvidence, groups_path: str | Path | None, tasks_root: Path
) -> dict[str, int]:
    """The groups and rollouts expected and found (zero when the expected evidence has no training)."""
    training = expected.training
    if training is None:
        return {"groups_expected": 0, "groups_found": 0, "rollouts_expected": 0, "rollouts_found": 0}
    if groups_path is None:
        raise UserError(
            "the expected evidence includes training groups; pass --groups results/runs/RUN/groups.jsonl"
        )
    from paired_rollouts.backoffice.tasks import select_tasks

    train_pool = tasks_root / "train.jsonl"
    train_ids = None
    if train_pool.is_file():
        train_ids = [
            str(t["task_id"]) for t in select_tasks(list(iter_jsonl(train_pool)), expected.selection)
        ]
    groups, rollouts = check_groups(f, Path(groups_path), training, train_ids)
    expected_groups = training.steps * training.prompts
    return {
        "groups_expected": expected_groups,
        "groups_found": groups,
        "rollouts_expected": expected_groups * training.generations,
        "rollouts_found": rollouts,
    }

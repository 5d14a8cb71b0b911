"""The episode files of a run's evidence: evaluation sets, diagnostic sets, the luck-share files derived
from them, and nothing else in their folders."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from paired_rollouts.io import sha256_file
from paired_rollouts.layout import RunFiles
from paired_rollouts.noise.seeds import diagnostic_seed, eval_schedule_seed
from paired_rollouts.records import iter_episodes, read_luck
from paired_rollouts.stats.completeness.findings import Findings


class EvaluationSets:
    """Evaluation files against the design's (task, schedule index) multiset; one schedule seed per
    (regime, task, index) across all of the run's files, the design's own."""

    def __init__(self, findings: Findings) -> None:
        self.f = findings
        self.seen_seeds: dict[tuple[str, str, int], int] = {}

    def check(
        self,
        path: Path,
        key: str,
        phase: str,
        step: int,
        regime: str,
        task_ids: list[str],
        indices: tuple[int, ...],
    ) -> None:
        f = self.f
        expected = Counter((t, int(k)) for t in task_ids for k in indices)
        if not path.is_file():
            f.missing.append({"kind": "file", "path": key, "expected": sum(expected.values())})
            return
        f.files[key] = sha256_file(path)
        found: Counter = Counter()
        for line, rec in iter_episodes(path):
            f.episodes_found += 1
            f.identity(rec, key, line, phase=phase, step=step, regime=regime)
            index = rec["schedule_index"] if rec["schedule_index"] is not None else -1
            item = (rec["task_id"], index)
            found[item] += 1
            self._seed(rec["schedule_seed"], regime, item, key, line)
        f.compare(key, expected, found, "episodes")

    def _seed(self, seed: int, regime: str, item: tuple[str, int], key: str, line: int) -> None:
        task, index = item
        # the evaluation schedules are the design's, identical across arms and checkpoints
        if seed != eval_schedule_seed(task, index):
            self.f.defect(
                kind="schedule_seed",
                path=key,
                line=line,
                item=list(item),
                problem=f"schedule_seed {seed} is not eval_schedule_seed({task}, {index})",
            )
        seen = (regime, *item)
        if seen in self.seen_seeds and self.seen_seeds[seen] != seed:
            self.f.defect(
                kind="schedule_seed",
                item=list(item),
                path=key,
                problem=f"seeds {self.seen_seeds[seen]} and {seed} for one schedule",
            )
        self.seen_seeds.setdefault(seen, seed)


def check_diagnostic_file(
    f: Findings, path: Path, key: str, step: int, task_ids: list[str], schedules: int, samples: int
) -> None:
    """K schedules x M samples per task, on the run seed's diagnostic schedules."""
    if not path.is_file():
        f.missing.append({"kind": "file", "path": key, "expected": len(task_ids) * schedules * samples})
        return
    f.files[key] = sha256_file(path)
    per_task: dict[str, Counter] = {}
    for line, rec in iter_episodes(path):
        f.episodes_found += 1
        f.identity(rec, key, line, phase="diagnostic", step=step, regime="diag")
        _diagnostic_schedule(f, rec, key, line, schedules)
        per_task.setdefault(rec["task_id"], Counter())[rec["schedule_seed"]] += 1
    for task in task_ids:
        problem = _table_problem(per_task.get(task), schedules, samples)
        if problem:
            f.missing.append({"kind": "diagnostic", "path": key, "task_id": task, "problem": problem})
    for task in sorted(set(per_task) - set(task_ids)):
        f.defects.append({"kind": "unexpected", "path": key, "item": [task]})


def _diagnostic_schedule(f: Findings, rec: dict[str, Any], key: str, line: int, schedules: int) -> None:
    run_seed, index = f.ident["seed"], rec["schedule_index"]
    if index is None or not 0 <= index < schedules:
        f.defect(
            kind="identity",
            path=key,
            line=line,
            problem=f"schedule_index {index!r} outside 0..{schedules - 1}",
        )
    elif rec["schedule_seed"] != diagnostic_seed(run_seed, rec["task_id"], index):
        f.defect(
            kind="schedule_seed",
            path=key,
            line=line,
            item=[rec["task_id"], index],
            problem=f"schedule_seed {rec['schedule_seed']} is not diagnostic_seed({run_seed}, "
            f"{rec['task_id']}, {index})",
        )


def _table_problem(seeds: Counter | None, schedules: int, samples: int) -> str:
    """What is wrong with one task's schedule x sample table ('' when it is whole)."""
    if seeds is None:
        return "no episodes"
    problems = []
    if len(seeds) != schedules:
        problems.append(f"{len(seeds)} schedules, expected {schedules}")
    short = sorted(str(s) for s, n in seeds.items() if n != samples)
    if short:
        problems.append(f"schedules {short[:5]} do not have {samples} samples")
    return "; ".join(problems)


def check_luck_file(f: Findings, path: Path, step: int) -> None:
    """A luck-share file must be derived from the very diagnostic file checked here."""
    key, source = RunFiles.luck(step), RunFiles.diagnostic_episodes(step)
    data = read_luck(path)
    f.files[key] = sha256_file(path)
    if data.run != f.run or data.step != step:
        f.defect(
            kind="identity",
            path=key,
            problem=f"luck-share file of {data.run} step {data.step}, expected {f.run} step {step}",
        )
    if source not in f.files:
        f.defect(kind="luck", path=key, problem=f"{source} was not checked")
    elif data.source_sha256 != f.files[source]:
        f.defect(kind="luck", path=key, problem=f"source_sha256 differs from {source}; rerun luck-share")


def check_stray_files(f: Findings, folder: Path, top: str, allowed: set[str]) -> None:
    """Files in a run's evidence folder (``top``: evals or diagnostics) whose keys the design does not call
    for (e.g. a final set stamped at the wrong step, or a same-named copy in a subfolder) are defects."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*")):
        if path.is_dir() or (path.name.startswith(".") and path.name.endswith(".tmp")):
            continue
        key = RunFiles.key(top, path.relative_to(folder).as_posix())
        if key not in allowed:
            f.defect(
                kind="stray",
                path=key,
                problem="file not called for by the design; delete it or fix the settings",
            )

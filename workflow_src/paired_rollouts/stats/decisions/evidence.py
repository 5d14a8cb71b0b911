"""What a decision reads, loaded and indexed: each run's episode outcomes, its training groups, its
luck-share files and completeness record, each evidence file with the sha256 of its bytes (admission
compares them with the completeness record)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.design import parse_run
from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file
from paired_rollouts.records import (
    Completeness,
    LuckShare,
    iter_episodes,
    iter_groups,
    read_completeness,
    read_luck,
)
from paired_rollouts.records.schema import differing_keys
from paired_rollouts.stats.completeness.expected import ExpectedEvidence


@dataclass
class RunEvidence:
    """One run's episode outcomes, indexed for the decisions."""

    run: str
    condition: str
    arm: str
    seed: int
    scaling: str = "group"
    periodic: dict[str, dict[int, dict[str, list[float]]]] = field(default_factory=dict)
    final: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    final_exposed: dict[str, list[float]] = field(default_factory=dict)
    diagnostic: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    episodes: int = 0

    def add(self, rec: dict[str, Any]) -> bool:
        """File one record; False for phases the decisions do not use (e.g. train)."""
        phase = rec["phase"]
        success = 1.0 if rec["true_success"] is True else 0.0
        if phase == "periodic":
            by_step = self.periodic.setdefault(rec["regime"], {})
            by_step.setdefault(int(rec["step"]), {}).setdefault(rec["task_id"], []).append(success)
        elif phase == "final":
            self.final.setdefault(rec["regime"], {}).setdefault(rec["task_id"], []).append(success)
            if rec.get("exposed"):
                self.final_exposed.setdefault(rec["regime"], []).append(success)
        elif phase == "diagnostic":
            self.diagnostic.setdefault(int(rec["step"]), []).append(rec)
        else:
            return False
        self.episodes += 1
        return True

    def periodic_steps(self, regime: str) -> list[int]:
        return sorted(self.periodic.get(regime, {}))

    def curve(self, regime: str, steps: Sequence[int], tasks: Sequence[str]) -> np.ndarray:
        """steps x tasks matrix of task scores (mean over schedules)."""
        table = self.periodic[regime]
        return np.array([[score(table[s][t]) for t in tasks] for s in steps])

    def final_scores(self, regime: str, tasks: Sequence[str]) -> np.ndarray:
        table = self.final[regime]
        return np.array([score(table[t]) for t in tasks])


def score(outcomes: list[float]) -> float:
    """A task's score: the mean of its schedules' true successes (plain Python: lists are tiny)."""
    return sum(outcomes) / len(outcomes)


def expand_paths(paths: Iterable[str | Path]) -> list[tuple[Path, Path | None]]:
    """(file, folder it was found in) for files as given and ``*.jsonl`` under directories; sorted,
    de-duplicated. The folder lets the digest key be the file's path relative to the run."""
    out: dict[Path, Path | None] = {}
    for p in paths:
        path = Path(p)
        if path.is_dir():
            for f in path.rglob("*.jsonl"):
                if f.name != "groups.jsonl":
                    out.setdefault(f, path)
        elif path.is_file():
            out.setdefault(path, None)
        else:
            raise UserError(f"{path}: no such file or directory (--episodes)")
    return sorted(out.items())


def _relative_key(path: Path, folder: Path | None, run: str, phase: str) -> str:
    """``evals/<path below the run's folder>`` (or ``diagnostics/...``), as complete.json lists files."""
    top = "diagnostics" if phase == "diagnostic" else "evals"
    if folder is None:
        return f"{top}/{path.name}"
    parts = path.relative_to(folder).parts
    if parts and parts[0] == run and len(parts) > 1:  # a folder above the runs' folders was given
        parts = parts[1:]
    return f"{top}/{'/'.join(parts)}"


def _new_evidence(run: str) -> RunEvidence:
    ident = parse_run(run)
    return RunEvidence(run, ident.condition, ident.arm, ident.seed, ident.scaling)


def load_episodes(paths: Iterable[str | Path]) -> dict[str, RunEvidence]:
    """Read episode files (typed) into one ``RunEvidence`` per run, with each file's sha256 keyed by its
    path relative to the run; two files under one key are refused."""
    runs: dict[str, RunEvidence] = {}
    origin: dict[tuple[str, str], Path] = {}
    for path, folder in expand_paths(paths):
        digest = sha256_file(path)
        for line, rec in iter_episodes(path):
            run = rec["run"]
            ev = runs.get(run) or runs.setdefault(run, _new_evidence(run))
            if rec["condition"] != ev.condition or rec["seed"] != ev.seed or rec["arm"] != ev.arm:
                raise UserError(
                    f"{path}:{line}: record of run {run} says condition {rec['condition']} arm "
                    f"{rec['arm']} seed {rec['seed']}; the run name says {ev.condition} {ev.arm} "
                    f"seed {ev.seed}"
                )
            if ev.add(rec):
                rel = _relative_key(path, folder, run, rec["phase"])
                first = origin.setdefault((run, rel), path)
                if first != path:
                    raise UserError(
                        f"{path}: a second file for {run} {rel} (first {first}); give each evidence file once"
                    )
                ev.files[rel] = digest
    return runs


class Groups(dict):
    """{run: [group records]} plus the sha256 of the file each run's records came from."""

    def __init__(self) -> None:
        super().__init__()
        self.digests: dict[str, tuple[str, str]] = {}


def load_groups(paths: Iterable[str | Path] | None) -> Groups:
    out = Groups()
    for p in paths or []:
        digest = sha256_file(p)
        runs_here = set()
        for _, rec in iter_groups(p):
            out.setdefault(rec["run"], []).append(rec)
            runs_here.add(rec["run"])
        for run in runs_here:
            if run in out.digests:
                raise UserError(
                    f"{p}: training groups of {run} also in {out.digests[run][0]}; give one file per run"
                )
            out.digests[run] = (str(p), digest)
    return out


@dataclass(frozen=True)
class LuckFile:
    """A run's luck-share file as a decision reads it: the record and the sha256 of its bytes (None for
    a record built in memory, which no completeness record can vouch for)."""

    record: LuckShare
    sha256: str | None


Luck = dict[tuple[str, int], LuckFile]  # (run, diagnostic step) -> its luck-share file


def load_inputs(
    complete_paths: Iterable[str | Path] | None, luck_paths: Iterable[str | Path] | None
) -> tuple[dict[str, Completeness], Luck]:
    """The completeness records by run and the luck-share files by (run, step); a second file for one
    of them is refused."""
    complete: dict[str, Completeness] = {}
    for p in complete_paths or []:
        record = read_completeness(p)
        if record.run in complete:
            raise UserError(
                f"{p}: a second complete file for {record.run} (first: {complete[record.run].path})"
            )
        complete[record.run] = record
    luck: Luck = {}
    for p in luck_paths or []:
        record = read_luck(p)
        at = (record.run, record.step)
        if at in luck:
            raise UserError(
                f"{p}: a second luck file for {record.run}@{record.step} (first: {luck[at].record.path})"
            )
        luck[at] = LuckFile(record, sha256_file(p))
    return complete, luck


def run_inputs(run: str, groups: dict[str, Any], luck: Luck) -> dict[str, str | None]:
    """The non-episode inputs a decision reads for ``run``, keyed as complete.json lists them."""
    out: dict[str, str | None] = {}
    digests = getattr(groups, "digests", {})
    if run in digests:
        out["groups.jsonl"] = digests[run][1]
    for (of_run, step), entry in luck.items():
        if of_run == run:
            out[f"diagnostics/luck-step{step}.json"] = entry.sha256
    return out


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    """{dotted key: leaf value} of a JSON object (lists are leaves)."""
    if not isinstance(node, dict):
        return {prefix: node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def settings_mismatch(complete: Completeness, design: ExpectedEvidence) -> list[str]:
    """Where the evidence complete.json was checked against (its ``settings``) differs from what the
    design calls for: a record made with weaker settings (fewer tasks, steps, regimes) is not evidence
    of the design's run. The run's name is compared elsewhere (the record's ``run``)."""
    recorded = _flat({k: v for k, v in (complete.settings or {}).items() if k != "run"})
    wanted = _flat({k: v for k, v in design.record().items() if k != "run"})
    return [
        f"complete.json was checked with settings.{key} = {json.dumps(recorded.get(key))}; the design's "
        f"is {json.dumps(wanted.get(key))} (rerun the completeness check with the design's settings)"
        for key in sorted(set(recorded) | set(wanted))
        if recorded.get(key) != wanted.get(key)
    ]


def recheck_completeness(complete: Completeness, design: ExpectedEvidence, data_manifest: str) -> list[str]:
    """complete.json is a summary of files: the completeness check is run again on the files it names
    (``RESULTS/runs/RUN/complete.json``: the run's folders under that results root) against the design's
    evidence, and must give the same record; a record re-hashed over edited evidence differs here."""
    from paired_rollouts.layout import Layout
    from paired_rollouts.stats.completeness import check_run
    from paired_rollouts.stats.run_register import evidence_path

    run_dir = Path(complete.path).parent
    results = run_dir.parent.parent
    layout = Layout(str(results))
    diagnostics = Path(layout.diagnostics_dir(complete.run))
    luck = [
        evidence_path(rel, complete.run, run_dir, results)
        for rel in sorted(complete.files)
        if rel.startswith("diagnostics/luck-step")
    ]
    try:
        again = check_run(
            complete.run,
            design,
            evals_dir=layout.eval_dir(complete.run),
            diagnostics_dir=diagnostics if diagnostics.is_dir() else None,
            groups_path=run_dir / "groups.jsonl",
            run_manifest_path=run_dir / "manifest.json",
            data_manifest_path=data_manifest,
            luck_paths=luck,
        )
    except UserError as exc:
        return [f"complete.json cannot be recomputed from the files it names ({exc})"]
    keys = differing_keys(again, complete.raw)
    if not keys:
        return []
    return [f"complete.json is not what the completeness check gives on its files now ({', '.join(keys)})"]


def admit(
    ev: RunEvidence,
    complete: Completeness | None,
    pools: dict[str, str],
    inputs: dict[str, str | None] | None = None,
    design: ExpectedEvidence | None = None,
    data_manifest: str | None = None,
) -> dict[str, Any]:
    """Is this run's evidence whole and untouched, and was it checked against the design? Returns the
    acceptance entry.

    ``inputs`` are the run's other decision inputs (``groups.jsonl``, ``diagnostics/luck-stepN.json``:
    relative path -> sha256); like every episode file, each must be listed in complete.json with the
    same digest. ``design``: the evidence the design calls for; the settings complete.json was checked
    against must equal it, and with ``data_manifest`` the check run again on the run's files must give
    complete.json as written (None: not compared; the register then is not decided)."""
    entry: dict[str, Any] = {
        "admitted": False,
        "checked": complete is not None,
        "episodes": ev.episodes,
        "complete_source": None,
        "code_versions": [],
        "reasons": [],
    }
    reasons = entry["reasons"]
    if complete is None:
        reasons.append("no completeness file given for this run (--complete)")
        return entry
    entry["complete_source"] = complete.path
    entry["code_versions"] = list(complete.code_versions)
    if not complete.complete:
        reasons.append(
            f"completeness check failed: {len(complete.missing)} missing, {len(complete.defects)} defects"
        )
    if design is not None:
        reasons += settings_mismatch(complete, design)
    recorded = complete.pool_sha256
    for name, want in sorted(pools.items()):
        if recorded.get(name) != want:
            reasons.append(f"task pool {name}: run used {recorded.get(name)}, manifest says {want}")
    reasons += _file_reasons(complete.files, ev.files, inputs or {})
    if not reasons and design is not None and data_manifest is not None:
        reasons += recheck_completeness(complete, design, data_manifest)
    entry["admitted"] = not reasons
    return entry


def _file_reasons(
    checked: dict[str, str], episodes: dict[str, str], inputs: dict[str, str | None]
) -> list[str]:
    """Each file decide reads must be one the completeness check hashed, with that digest; each checked
    evaluation file must be given."""
    reasons = []
    for rel, digest in sorted({**episodes, **inputs}.items()):
        if rel not in checked:
            reasons.append(f"{rel}: not covered by the completeness check")
        elif checked[rel] != digest:
            reasons.append(f"{rel}: sha256 differs from complete.json (tampered)")
    for rel in sorted(checked):
        if rel.startswith("evals/") and rel not in episodes:
            reasons.append(f"{rel}: checked for completeness but not given to decide")
    return reasons

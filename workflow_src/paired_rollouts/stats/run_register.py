"""The per-run register and its acceptance check (``run-register``, ``verify-run``).

The register gathers what a reader of one run wants in one file: the curves and AUC per evaluation set,
the final sets, the luck share per diagnostic checkpoint, the training curve, timing, the lineage of
attempts and the checkpoint inventory. ``verify-run`` re-hashes every evidence file against the
completeness record, looks for files the record does not list, and prints a human-readable ACCEPT or
REJECT report (exit 0 or 3), so a run can be judged on its own before any decision reads it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from paired_rollouts.design import parse_run
from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file
from paired_rollouts.pairing.numeric import dot
from paired_rollouts.records import (
    Completeness,
    RunManifest,
    RunRegister,
    iter_episodes,
    iter_groups,
    read_completeness,
    read_luck,
    read_run_manifest,
    read_run_register,
)
from paired_rollouts.records.schema import differing_keys
from paired_rollouts.stats.curves import auc_weights

REGISTER_FORMAT = "paired-rollouts-run-register/1"


def evidence_path(rel: str, run: str, run_dir: Path, results: Path) -> Path:
    """Where a ``complete.json`` file key lives (docs/records.md section 3)."""
    top, _, rest = rel.partition("/")
    if top == "evals":
        return results / "evals" / run / rest
    if top == "diagnostics":
        return results / "diagnostics" / run / rest
    return run_dir / rel


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def _outcomes(
    complete: Completeness, run: str, run_dir: Path, results: Path
) -> tuple[dict[str, dict[int, list[float]]], dict[str, list[float]], dict[str, Any]]:
    """Periodic successes by set and step, final successes by set, and the luck share per diagnostic
    checkpoint, from the files the completeness record lists."""
    periodic: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    final: dict[str, list[float]] = defaultdict(list)
    luck: dict[str, Any] = {}
    for rel in sorted(complete.files):
        path = evidence_path(rel, run, run_dir, results)
        if rel.startswith("evals/"):
            for _, rec in iter_episodes(path):
                success = 1.0 if rec["true_success"] else 0.0
                if rec["phase"] == "periodic":
                    periodic[rec["regime"]][rec["step"]].append(success)
                elif rec["phase"] == "final":
                    final[rec["regime"]].append(success)
        elif rel.startswith("diagnostics/luck-step"):
            record = read_luck(path)
            luck[str(record.step)] = {
                "lam": record.lam,
                "ci95": record.ci95,
                "tasks_defined": record.tasks_defined,
            }
    return periodic, final, luck


def _training_curve(groups_path: Path) -> list[dict[str, Any]]:
    """Per training step: groups, mean true success and observed reward, share of zero-variance groups."""
    training: list[dict[str, Any]] = []
    if not groups_path.is_file():
        return training
    by_step: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for _, rec in iter_groups(groups_path):
        by_step[rec["step"]].append(rec)
    for step in sorted(by_step):
        rows = by_step[step]
        truth = [1.0 if t else 0.0 for g in rows for t in g["true_success"]]
        reward = [float(r) for g in rows for r in g["observed_reward"]]
        zero = [1.0 if len(set(g["observed_reward"])) == 1 else 0.0 for g in rows]
        training.append(
            {
                "step": step,
                "groups": len(rows),
                "true_success": _mean(truth),
                "observed_reward": _mean(reward),
                "zero_variance_frac": _mean(zero),
            }
        )
    return training


def _lineage(manifest: RunManifest | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The timing over the timed steps and the attempts as the run manifest records them."""
    timings = manifest.timings if manifest is not None else []
    seconds = [float(t["seconds"]) for t in timings if isinstance(t.get("seconds"), int | float)]
    attempts = [  # a training manifest's attempt ends at ``ended`` (a surrogate run records no times)
        {
            "attempt": a.get("attempt"),
            "started": a.get("started"),
            "finished": a.get("ended"),
            "resumed_from_step": a.get("resumed_from_step"),
            "status": a.get("status"),
        }
        for a in (manifest.attempts if manifest is not None else [])
    ]
    timing = {
        "steps_timed": len(seconds),
        "seconds_total": round(sum(seconds), 3),
        "seconds_per_step": round(sum(seconds) / len(seconds), 3) if seconds else None,
    }
    return timing, attempts


def build_register(run_dir: str | Path, results: str | Path) -> dict[str, Any]:
    """The content of ``results/runs/{run}/register.json`` (docs/records.md section 3.1)."""
    run_dir, results = Path(run_dir), Path(results)
    run = run_dir.name
    ident = parse_run(run)
    complete_path = run_dir / "complete.json"
    complete = read_completeness(complete_path)
    periodic, final, luck = _outcomes(complete, run, run_dir, results)
    curves, auc = {}, {}
    for regime, by_step in sorted(periodic.items()):
        steps = sorted(by_step)
        curve = [sum(by_step[s]) / len(by_step[s]) for s in steps]
        curves[regime] = {str(s): round(v, 6) for s, v in zip(steps, curve, strict=True)}
        auc[regime] = round(float(dot(auc_weights(steps), curve)), 6)
    manifest_path = run_dir / "manifest.json"
    timing, attempts = _lineage(read_run_manifest(manifest_path) if manifest_path.is_file() else None)
    inventory = sorted(
        int(p.name.removeprefix("step"))
        for p in (run_dir / "checkpoints").glob("step*")
        if p.is_dir() and (p / "COMPLETE").is_file() and p.name.removeprefix("step").isdigit()
    )
    return {
        "format": REGISTER_FORMAT,
        "run": run,
        "condition": ident.condition,
        "arm": ident.arm,
        "seed": ident.seed,
        "scaling": ident.scaling,
        "complete": complete.complete,
        "complete_sha256": sha256_file(complete_path),
        "paper_pools": complete.paper_pools,
        "curves": curves,
        "auc": auc,
        "final": {regime: _mean(v) for regime, v in sorted(final.items())},
        "luck_share": luck,
        "training_curve": _training_curve(run_dir / "groups.jsonl"),
        "timing": timing,
        "attempts": attempts,
        "code_versions": complete.code_versions,
        "checkpoints": inventory,
    }


def _stray_files(complete: Completeness, run: str, results: Path) -> list[str]:
    """Files under the run's evals/diagnostics folders that complete.json does not list."""
    reasons = []
    for top, folder in (("evals", results / "evals" / run), ("diagnostics", results / "diagnostics" / run)):
        if folder.is_dir():
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                rel = f"{top}/{path.relative_to(folder).as_posix()}"
                if rel not in complete.files and not (
                    path.name.startswith(".") and path.name.endswith(".tmp")
                ):
                    reasons.append(f"{rel}: not listed in complete.json (stray or unchecked file)")
    return reasons


def _changed_files(complete: Completeness, run: str, run_dir: Path, results: Path) -> list[str]:
    """Files complete.json lists that are missing or whose bytes changed after the check."""
    reasons = []
    for rel, digest in sorted(complete.files.items()):
        path = evidence_path(rel, run, run_dir, results)
        if not path.is_file():
            reasons.append(f"{rel}: listed in complete.json but missing ({path})")
        elif sha256_file(path) != digest:
            reasons.append(f"{rel}: sha256 differs from complete.json (changed after the check)")
    return reasons


def verify_run(run_dir: str | Path, results: str | Path) -> tuple[bool, list[str], list[str]]:
    """(accepted, reasons to reject, notes). Re-hashes every listed file, refuses unlisted ones."""
    run_dir, results = Path(run_dir), Path(results)
    run = run_dir.name
    complete_path = run_dir / "complete.json"
    if not complete_path.is_file():
        raise UserError(f"{complete_path}: no completeness record; run the completeness check first")
    complete = read_completeness(complete_path)
    reasons: list[str] = []
    notes: list[str] = []
    if complete.run != run:
        reasons.append(f"{complete_path} is the record of {complete.run}, not {run}")
    if not complete.complete:
        reasons.append(
            f"completeness check failed: {len(complete.missing)} missing, {len(complete.defects)} defects"
        )
        for item in (complete.missing + complete.defects)[:5]:
            reasons.append(f"  {item}")
    reasons += _changed_files(complete, run, run_dir, results)
    reasons += _stray_files(complete, run, results)
    if len(complete.code_versions) != 1:
        reasons.append(f"code versions over the attempts: {complete.code_versions or 'none recorded'}")
    if complete.paper_pools is False:
        notes.append("the task pools are NOT the paper's (hashes differ from the paper's frozen pools)")
    register = run_dir / "register.json"
    if register.is_file():
        if read_run_register(register).complete_sha256 != sha256_file(complete_path):
            reasons.append("register.json was not built from this complete.json; rebuild it (run-register)")
        elif not reasons:  # the evidence is intact: the register must be its recomputation from it
            reasons += register_differences(register, run_dir, results)
    else:
        notes.append("no register.json (paired-rollouts run-register)")
    return not reasons, reasons, notes


def register_differences(path: Path, run_dir: Path, results: Path) -> list[str]:
    """Where the register at ``path`` differs from its recomputation from the files it names (a register
    is a summary: its numbers are never trusted as written)."""
    written = read_run_register(path).raw
    rebuilt = build_register(run_dir, results)
    keys = differing_keys(written, rebuilt)
    if not keys:
        return []
    return [
        f"register.json differs from its recomputation from the files it names ({', '.join(keys)}); "
        "rebuild it (run-register)"
    ]


def verified_register(path: str | Path) -> RunRegister:
    """A run register read for averaging or pairing: refused unless it equals its recomputation from the
    evidence it names (``RESULTS/runs/RUN/register.json``: the run's folder and its results root)."""
    path = Path(path)
    register = read_run_register(path)
    run_dir = path.parent
    if run_dir.name != register.run:
        raise UserError(f"{path}: the register of {register.run} lies in the folder of {run_dir.name}")
    try:
        differences = register_differences(path, run_dir, run_dir.parent.parent)
    except UserError as exc:
        raise UserError(f"{path}: not recomputable from the files it names ({exc})") from None
    if differences:
        raise UserError(f"{path}: {differences[0]}")
    return register


def format_report(
    run: str, accepted: bool, reasons: list[str], notes: list[str], register: RunRegister | None
) -> str:
    lines = [f"{run}: {'ACCEPT' if accepted else 'REJECT'}"]
    lines += [f"  reject: {r}" for r in reasons]
    lines += [f"  note: {n}" for n in notes]
    if register:
        lines.append(f"  AUC per set: {register.auc}")
        lines.append(f"  final sets: {register.final}")
        lines.append(f"  luck share: { {k: v.lam for k, v in register.luck_share.items()} }")
        lines.append(f"  attempts: {len(register.attempts)}, checkpoints: {register.checkpoints}")
    return "\n".join(lines)

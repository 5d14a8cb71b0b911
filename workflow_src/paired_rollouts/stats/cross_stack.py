"""The cross-stack replication register (``cross-stack``): runs with one condition, arm and seed under
two accelerator stacks, each run's AUC and final sets from its run register, and their difference.

A results tree holds one stack, so a replication needs the manifests and run registers of two trees;
the stack of a run is its manifest's ``hardware.gpu`` (else ``hardware.device``) and torch version.
Table 11 shows this register as written (docs/records.md section 3.3).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from paired_rollouts.design import parse_run
from paired_rollouts.errors import UserError
from paired_rollouts.records import RunManifest, RunRegister, read_run_manifest
from paired_rollouts.records.schema import differing_keys
from paired_rollouts.settings import Settings
from paired_rollouts.stats.run_register import verified_register

CROSS_STACK_FORMAT = "paired-rollouts-cross-stack/1"
FINAL_SETS = ("clean", "noisy_p025", "heldout_types")


def _root(path: str | Path) -> str:
    """RESULTS of ``RESULTS/runs/RUN/{manifest,register}.json``."""
    return str(Path(path).resolve().parent.parent.parent)


def stack_label(manifest: RunManifest) -> str:
    label = manifest.gpu or manifest.device
    if "torch" in manifest.versions:
        label += f", torch {manifest.versions['torch']}"
    return label


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def run_difference(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Two runs' difference, the first's values minus the second's: the AUC and each final set (None
    where either is None). The register's ``difference``, and what its reader recomputes."""
    return {
        "auc": _difference(a["auc"], b["auc"]),
        "final": {r: _difference(a["final"].get(r), b["final"].get(r)) for r in FINAL_SETS},
    }


def run_values(run: str, register: RunRegister | None) -> dict[str, Any]:
    """What the register holds of a run from its run register (None: none was given): whether one was,
    its AUC (at training for C2, else clean) and its final clean / p=0.25 / held-out success. The writer
    takes them here, and the reader (records/curves.py) compares them with the run register at hand."""
    regime = "at_training" if parse_run(run).condition == "C2" else "clean"
    return {
        "register": register is not None,
        "auc": register.auc.get(regime) if register else None,
        "final": {r: register.final.get(r) if register else None for r in FINAL_SETS},
    }


def _same_experiment(
    members: list[dict[str, Any]], experiment: dict[tuple[str, str], dict[str, Any]]
) -> None:
    """Runs of two stacks are one replication only if they ran the same experiment (scale settings)."""
    first = members[0]
    want = experiment[(first["root"], first["run"])]
    for other in members[1:]:
        got = experiment[(other["root"], other["run"])]
        keys = differing_keys(want, got)
        if keys:
            diffs = ", ".join(f"{k} {want.get(k)!r} vs {got.get(k)!r}" for k in keys[:6])
            raise UserError(
                f"{first['run']} of {first['root']} and of {other['root']} ran different "
                f"settings ({diffs}); only runs of one scale replicate each other"
            )


def build_cross_stack(manifests: Iterable[str | Path], registers: Iterable[str | Path]) -> dict[str, Any]:
    """Per (condition, arm, seed) run under more than one stack: each run's AUC (at training for C2,
    else clean) and final clean / p=0.25 / held-out success, and with two runs their difference."""
    stacks: dict[tuple[str, str], str] = {}
    experiment: dict[tuple[str, str], dict[str, Any]] = {}
    for path in manifests:
        manifest = read_run_manifest(path)
        stacks[(_root(path), manifest.run)] = stack_label(manifest)
        experiment[(_root(path), manifest.run)] = Settings.of_the_experiment(manifest.recorded_settings)
    values: dict[tuple[str, str], RunRegister] = {}
    for path in registers:
        register = verified_register(path)
        values[(_root(path), register.run)] = register
    by_ident: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    for (root, run), label in sorted(stacks.items()):
        ident = parse_run(run)
        by_ident[(ident.condition, ident.arm, ident.seed)].append(
            {"run": run, "root": root, "stack": label, **run_values(run, values.get((root, run)))}
        )
    replications = []
    for (condition, arm, seed), members in sorted(by_ident.items()):
        if len({m["stack"] for m in members}) < 2:
            continue
        _same_experiment(members, experiment)
        entry: dict[str, Any] = {"condition": condition, "arm": arm, "seed": seed, "runs": members}
        if len(members) == 2:
            entry["difference"] = run_difference(*members)
        replications.append(entry)
    return {
        "format": CROSS_STACK_FORMAT,
        "manifests": len(stacks),
        "stacks": sorted(set(stacks.values())),
        "replications": replications,
    }

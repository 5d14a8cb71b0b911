"""Where a run's evidence came from: the task pools it trained and was evaluated on (their hashes in the
run manifest, the data manifest and the pool files agree) and one code version across its attempts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file
from paired_rollouts.layout import RunFiles
from paired_rollouts.records import PoolManifest, read_run_manifest
from paired_rollouts.stats.completeness.findings import Findings


def check_provenance(
    f: Findings,
    run_manifest_path: str | Path | None,
    data_manifest: PoolManifest,
    source: str | Path,
    tasks_root: Path,
) -> dict[str, Any]:
    """The record's task_pools, task_pools_match, paper_pools, code_versions and code_consistent entries;
    disagreements are defects, a missing run manifest is missing evidence."""
    from paired_rollouts.backoffice.tasks import paper_pools

    expected_pools = data_manifest.sha256
    if not expected_pools:
        raise UserError(f"{source}: no 'pools' with sha256 values; regenerate with 'paired-rollouts tasks'")
    task_pools: dict[str, Any] = {}
    code_versions: list[str] = []
    if run_manifest_path is None or not Path(run_manifest_path).is_file():
        f.missing.append({"kind": "file", "path": RunFiles.MANIFEST})
    else:
        run_manifest = read_run_manifest(run_manifest_path)
        task_pools = _run_pools(f, run_manifest.pools_sha256, expected_pools)
        code_versions = _code_versions(f, run_manifest.code_versions)
    for name, want in sorted(expected_pools.items()):
        pool_file = tasks_root / f"{name}.jsonl"
        if pool_file.is_file() and sha256_file(pool_file) != want:
            f.defects.append(
                {
                    "kind": "pool",
                    "name": name,
                    "problem": f"{pool_file} sha256 differs from the data manifest",
                }
            )
    return {
        "task_pools": task_pools,
        "task_pools_match": bool(task_pools) and all(v["match"] for v in task_pools.values()),
        "paper_pools": paper_pools(data_manifest.raw),
        "code_versions": code_versions,
        "code_consistent": len(code_versions) == 1,
    }


def _run_pools(f: Findings, run_pools: dict[str, str], expected_pools: dict[str, str]) -> dict[str, Any]:
    if not run_pools:
        f.defects.append(
            {"kind": "pool", "name": None, "problem": "run manifest records no task-pool hashes"}
        )
    task_pools = {}
    for name in sorted(set(expected_pools) | set(run_pools)):
        got, want = run_pools.get(name), expected_pools.get(name)
        task_pools[name] = {"sha256": got, "expected_sha256": want, "match": got == want}
        if run_pools and got != want:
            f.defects.append(
                {
                    "kind": "pool",
                    "name": name,
                    "problem": "run manifest sha256 differs from the data manifest",
                }
            )
    return task_pools


def _code_versions(f: Findings, code_versions: list[str]) -> list[str]:
    if not code_versions:
        f.defects.append({"kind": "code_version", "problem": "run manifest records no code version"})
    elif len(code_versions) > 1:
        f.defects.append(
            {"kind": "code_version", "problem": f"attempts ran different code: {', '.join(code_versions)}"}
        )
    return code_versions

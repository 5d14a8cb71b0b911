"""The frozen task pools on disk (docs/simulator.md#pools): their serialisation and MANIFEST.json, the
paper's hashes (``PAPER_POOL_SHA256``; ``write_pools`` refuses pools that differ), verification, and
``load_pool`` with its record checks.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from paired_rollouts.backoffice.generation import (
    GENERATOR_SEED,
    GENERATOR_VERSION,
    TEMPLATE_WEIGHTS,
    build_pools,
)
from paired_rollouts.backoffice.tools import WRITE_TOOLS
from paired_rollouts.errors import UserError
from paired_rollouts.io import atomic_write_bytes, atomic_write_json, loads_strict, sha256_bytes, sha256_file

#: pool name on disk (docs/CONTRACT.md#targets) -> the paper's pool name, kept inside the records
POOL_FILES: dict[str, str] = {
    "train": "train",
    "validation": "heldout",
    "test": "test",
    "diagnostic": "diagnostic",
}
POOL_ORDER: tuple[str, ...] = ("train", "validation", "test", "diagnostic")
POOL_COUNTS: dict[str, int] = {"train": 2000, "validation": 300, "test": 300, "diagnostic": 16}

#: The paper's frozen pool hashes (MANIFEST.json of environment v3, docs/simulator.md#check-numbers), keyed by file name.
PAPER_POOL_SHA256: dict[str, str] = {
    "train": "2bbec1c596afc8495933a59a35cc69fec0b75c22caa7ab42759f4f7a296828ae",
    "validation": "9cceb1013563ebe47c6bde1f510ae12784724884aa10e47080800a89590121c7",
    "diagnostic": "43f82bdf1c6e5fc74beb3c05c8ac0ebb21fc60ee34787fd109ad64400430ef78",
    "test": "ce49f8bf9fe0ad8679106f92ce33ff7f0fa2b1c9ebc609b41754f2d727e7bb10",
}

TASK_FIELDS: dict[str, type | tuple[type, ...]] = {
    "task_id": str,
    "split": str,
    "world_seed": int,
    "customer_id": str,
    "templates": list,
    "instruction": str,
    "oracle_plan": list,
    "n_subgoals": int,
    "reference": str,
    "order_ids": list,
}


# --------------------------------------------------------------------------------------------------
# writing and verifying
# --------------------------------------------------------------------------------------------------
def task_line(task: dict[str, Any]) -> str:
    """The pool-file serialisation: sorted keys, *default* separators, ASCII, newline."""
    return json.dumps(task, sort_keys=True) + "\n"


def _counts(values: Iterable[Any]) -> dict[str, int]:
    counter = Counter(values)
    return {str(k): counter[k] for k in sorted(counter)}


def pool_summary(tasks: list[dict], data: bytes, filename: str) -> dict[str, Any]:
    return {
        "path": filename,
        "count": len(tasks),
        "sha256": sha256_bytes(data),
        "templates": _counts(t for task in tasks for t in task["templates"]),
        "requests_per_task": _counts(len(task["templates"]) for task in tasks),
        "write_calls_per_task": _counts(task["n_subgoals"] for task in tasks),
    }


def render_pools(pools: dict[str, list[dict]], seed: int = GENERATOR_SEED) -> tuple[dict[str, bytes], dict]:
    """File bytes per pool and the MANIFEST object."""
    files = {name: "".join(task_line(t) for t in pools[name]).encode("ascii") for name in POOL_ORDER}
    manifest = {
        "generator_seed": seed,
        "generator_version": GENERATOR_VERSION,
        "pools": {
            name: {**pool_summary(pools[name], files[name], f"{name}.jsonl"), "spec_pool": POOL_FILES[name]}
            for name in POOL_ORDER
        },
        "expected_sha256": dict(sorted(PAPER_POOL_SHA256.items())),
    }
    return files, manifest


def write_pools(
    out_dir: str | os.PathLike, seed: int = GENERATOR_SEED, check: bool = True, progress: bool = False
) -> dict[str, Any]:
    """Regenerate the pools; write them and MANIFEST.json only if every hash equals the paper's."""
    pools = build_pools(seed, progress)
    files, manifest = render_pools(pools, seed)
    if check:
        bad = [
            f"{name} (got {manifest['pools'][name]['sha256']}, expected {PAPER_POOL_SHA256[name]})"
            for name in POOL_ORDER
            if manifest["pools"][name]["sha256"] != PAPER_POOL_SHA256[name]
        ]
        if bad:
            raise UserError(
                f"{out_dir}: regenerated pools differ from the paper's frozen hashes: "
                f"{'; '.join(bad)}; nothing was written. The generator code changed: restore "
                "backoffice/{world,tools,generation}.py or pass --no-check to write non-paper pools"
            )
    out = Path(out_dir)
    for name in POOL_ORDER:
        atomic_write_bytes(out / f"{name}.jsonl", files[name])
    atomic_write_json(out / "MANIFEST.json", manifest)
    return manifest


def paper_pools(manifest: dict[str, Any]) -> bool:
    """Whether a manifest's pools are the paper's (every hash equal to ``PAPER_POOL_SHA256``). A pool
    edited together with a re-hashed MANIFEST passes the manifest check but not this one."""
    pools = manifest.get("pools") or {}
    got = {name: (e.get("sha256") if isinstance(e, dict) else e) for name, e in pools.items()}
    return got == PAPER_POOL_SHA256


def verify_pools(tasks_dir: str | os.PathLike) -> dict[str, str]:
    """Hash the pool files in ``tasks_dir`` against the paper and against MANIFEST.json beside them;
    UserError listing every mismatch."""
    folder = Path(tasks_dir)
    hashes, bad = {}, []
    manifest_path = folder / "MANIFEST.json"
    manifest: dict[str, Any] = {}
    if not manifest_path.is_file():
        bad.append(f"{manifest_path}: missing")
    else:
        from paired_rollouts.io import read_json

        data = read_json(manifest_path)
        manifest = data.get("pools") if isinstance(data, dict) and isinstance(data.get("pools"), dict) else {}
        if not manifest:
            bad.append(f"{manifest_path}: no 'pools'")
    for name in POOL_ORDER:
        path = folder / f"{name}.jsonl"
        if not path.is_file():
            bad.append(f"{path}: missing")
            continue
        hashes[name] = sha256_file(path)
        if hashes[name] != PAPER_POOL_SHA256[name]:
            bad.append(f"{path}: sha256 {hashes[name]} != paper {PAPER_POOL_SHA256[name]}")
        entry = manifest.get(name)
        listed = entry.get("sha256") if isinstance(entry, dict) else None
        if manifest and listed != PAPER_POOL_SHA256[name]:
            bad.append(f"{manifest_path}: pools.{name}.sha256 {listed} != paper {PAPER_POOL_SHA256[name]}")
    extra = sorted(set(manifest) - set(POOL_ORDER))
    if extra:
        bad.append(f"{manifest_path}: lists pools {extra} that are not the paper's")
    if bad:
        raise UserError("; ".join(bad) + f"; regenerate with `paired-rollouts tasks --out {folder}`")
    return hashes


# --------------------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------------------
def _check_task(task: Any, where: str) -> dict[str, Any]:
    if not isinstance(task, dict):
        raise UserError(f"{where}: expected a task object")
    for key, kind in TASK_FIELDS.items():
        if key not in task:
            raise UserError(f"{where}: task is missing the field {key!r}; regenerate the pool")
        value = task[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise UserError(
                f"{where}: field {key!r} must be {getattr(kind, '__name__', kind)}, not "
                f"{type(value).__name__}"
            )
    plan = task["oracle_plan"]
    for step in plan:
        if not (
            isinstance(step, dict) and step.get("tool") in WRITE_TOOLS and isinstance(step.get("args"), dict)
        ):
            raise UserError(f"{where}: oracle_plan entries must be {{tool: <write tool>, args: {{...}}}}")
    if task["n_subgoals"] != len(plan):
        raise UserError(f"{where}: n_subgoals {task['n_subgoals']} != len(oracle_plan) {len(plan)}")
    if task["reference"] not in ("id", "description"):
        raise UserError(f"{where}: reference must be 'id' or 'description'")
    unknown = [t for t in task["templates"] if t not in TEMPLATE_WEIGHTS]
    if unknown:
        raise UserError(f"{where}: unknown templates {unknown}")
    return task


def _manifest_pools(manifest: dict[str, Any], where: Any, folder: Path) -> dict[str, dict[str, Any]]:
    """The manifest's ``pools: {name: {path, sha256, count}}``, each key's type checked as the typed
    reader (records.read_pool_manifest) checks it, so a malformed manifest is one line naming it; the
    count is checked against the pool's tasks after they are read."""
    from paired_rollouts.records.schema import At, is_dict, is_sha256, is_str

    at = At(str(where), "pool manifest", f"regenerate the pools with `paired-rollouts tasks --out {folder}`")
    if "pools" not in manifest:
        raise at.missing("pools")
    pools = manifest["pools"]
    if not isinstance(pools, dict):
        raise at.wrong("pools", pools, is_dict)
    for name, entry in pools.items():
        if not isinstance(entry, dict):
            raise at.at("pools").error(f"{name}: expected {{path, sha256, count}}")
        here = at.at(f"pools.{name}")
        if "sha256" not in entry:
            raise here.missing("sha256")
        if not is_sha256(entry["sha256"]):
            raise here.wrong("sha256", entry["sha256"], is_sha256)
        if "path" in entry and not is_str(entry["path"]):
            raise here.wrong("path", entry["path"], is_str)
    return pools


def _manifest_entry(path: Path, manifest: Any) -> tuple[dict | None, Path | None]:
    if manifest is False:
        return None, None
    if manifest is None:
        manifest = path.parent / "MANIFEST.json"
    manifest_path: Path | None = None
    if not isinstance(manifest, dict):
        manifest_path = Path(manifest)
        if not manifest_path.is_file():
            raise UserError(
                f"{path}: no {manifest_path} to check the pool against; regenerate the pools with "
                f"`paired-rollouts tasks --out {path.parent}`"
            )
        from paired_rollouts.io import read_json

        manifest = read_json(manifest_path)
        if not isinstance(manifest, dict):
            raise UserError(
                f"{manifest_path}: not a pool manifest (expected an object); regenerate the pools"
            )
    for name, entry in _manifest_pools(manifest, manifest_path or "the manifest", path.parent).items():
        if Path(entry.get("path", f"{name}.jsonl")).name == path.name:
            return entry, manifest_path
    raise UserError(
        f"{path}: not listed in {manifest_path or 'the manifest'}; use a pool file from "
        "`paired-rollouts tasks`"
    )


def load_pool(path: str | os.PathLike, manifest: Any = None) -> list[dict[str, Any]]:
    """Load a pool file after checking its SHA-256 against the manifest.

    ``manifest``: None = ``MANIFEST.json`` next to the file, a path, an already-parsed dict, or False to
    skip the hash check (custom pools). Malformed lines raise UserError with ``file:line``.
    """
    source = _pool_file(Path(path))
    data = source.read_bytes()
    entry, manifest_path = _manifest_entry(source, manifest)
    if entry is not None:
        actual = sha256_bytes(data)
        if actual != entry.get("sha256"):
            raise UserError(
                f"{source}: SHA-256 {actual} differs from {manifest_path or 'the manifest'} "
                f"({entry.get('sha256')}); the pool was modified: restore it (git checkout -- {source}) or "
                f"regenerate the pools with `paired-rollouts tasks --out {source.parent}`"
            )
    tasks = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data[: exc.start].count(b"\n") + 1
        raise UserError(
            f"{source}:{line_no}: not UTF-8 (byte offset {exc.start}); restore the pool "
            f"(git checkout -- {source})"
        ) from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = loads_strict(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{source}:{number}: not valid JSON ({exc.msg}); regenerate the pool") from exc
        except ValueError as exc:  # NaN or Infinity: no task holds one
            raise UserError(f"{source}:{number}: {exc}; regenerate the pool") from exc
        tasks.append(_check_task(record, f"{source}:{number}"))
    if entry is not None and "count" in entry:
        _check_count(entry["count"], len(tasks), source, manifest_path)
    return tasks


def _pool_file(source: Path) -> Path:
    """The pool file, or one line saying what to give instead."""
    if source.parent.is_file():  # --tasks-dir given a pool file: the advice below would name the file
        raise UserError(
            f"{source.parent}: is a file; give the folder that holds the pools and MANIFEST.json (data/tasks)"
        )
    if not source.is_file():
        raise UserError(
            f"{source}: task pool not found; generate it with `paired-rollouts tasks --out {source.parent}`"
        )
    return source


def _check_count(count: Any, found: int, source: Path, manifest_path: Any) -> None:
    """The manifest's task count of a pool: an integer (not "300") equal to the tasks read."""
    if isinstance(count, bool) or not isinstance(count, int):
        raise UserError(
            f"{manifest_path or 'the manifest'}: the count of {source.name} is {count!r}, not an integer; "
            f"regenerate the pools with `paired-rollouts tasks --out {source.parent}`"
        )
    if count != found:
        raise UserError(f"{source}: {found} tasks but the manifest says {count}")

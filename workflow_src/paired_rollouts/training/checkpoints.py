"""Checkpoint folders ``checkpoints/step{N:04d}/`` and their ``COMPLETE`` marker.

A checkpoint counts only if its ``COMPLETE`` marker exists and every file the marker lists is present with
the recorded SHA-256: the marker is written last, after an atomic rename of the whole folder, so a job
killed while saving leaves a folder that is ignored (and removed on the next resume).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from paired_rollouts.io import atomic_write_json, atomic_write_text, sha256_file

MARKER = "COMPLETE"
STEP_DIR = re.compile(r"^step(\d{4,})$")
# What a resumable checkpoint must hold (HF Trainer layout inside our folder).
RESUME_PARTS = (
    "adapter_model.safetensors",
    "adapter_config.json",
    "optimizer.pt",
    "scheduler.pt",
    "rng_state.pth",
    "trainer_state.json",
)
INITIAL_PARTS = ("adapter_model.safetensors", "adapter_config.json")


def step_dir(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"step{step:04d}"


def write_marker(folder: Path, step: int, kind: str) -> None:
    files = {p.name: sha256_file(p) for p in sorted(folder.iterdir()) if p.is_file() and p.name != MARKER}
    required = RESUME_PARTS if kind == "full" else INITIAL_PARTS
    missing = [name for name in required if name not in files]
    if missing:
        raise RuntimeError(f"{folder}: checkpoint lacks {', '.join(missing)}; not marking it complete")
    atomic_write_json(folder / MARKER, {"step": step, "kind": kind, "files": files})


def is_complete(folder: Path, *, resumable: bool = False) -> bool:
    marker = folder / MARKER
    if not marker.is_file():
        return False
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
        files = info["files"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return False
    required = RESUME_PARTS if (resumable and info.get("step", 0) > 0) else INITIAL_PARTS
    if any(name not in files for name in required):
        return False
    for name, digest in files.items():
        path = folder / name
        if not path.is_file() or sha256_file(path) != digest:
            return False
    return True


def list_steps(run_dir: str | Path) -> list[int]:
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    steps = []
    for child in root.iterdir():
        match = STEP_DIR.match(child.name)
        if child.is_dir() and match:
            steps.append(int(match.group(1)))
    return sorted(steps)


def last_complete(run_dir: str | Path) -> int | None:
    """The highest step whose checkpoint is complete and resumable (0 = only the initial adapter)."""
    for step in reversed(list_steps(run_dir)):
        if is_complete(step_dir(run_dir, step), resumable=True):
            return step
    return None


def discard_after(run_dir: str | Path, step: int) -> list[int]:
    """Remove checkpoint folders beyond ``step`` or incomplete ones (they will be recomputed)."""
    removed = []
    for other in list_steps(run_dir):
        folder = step_dir(run_dir, other)
        if other > step or not is_complete(folder, resumable=True):
            shutil.rmtree(folder)
            removed.append(other)
    return removed


# LoraConfig fields that PEFT keeps as sets and saves as lists in set order, which changes with the
# process's hash seed (PYTHONHASHSEED): written sorted, so that identical runs write identical folders.
SET_FIELDS = ("target_modules", "exclude_modules")


def canonical_adapter_config(folder: Path) -> None:
    """Rewrite ``adapter_config.json`` with its set-valued fields sorted (PEFT's own format otherwise)."""
    path = folder / "adapter_config.json"
    if not path.is_file():
        return
    config = json.loads(path.read_text(encoding="utf-8"))
    for key in SET_FIELDS:
        if isinstance(config.get(key), list):
            config[key] = sorted(config[key])
    atomic_write_text(path, json.dumps(config, indent=2, sort_keys=True))


def install(src: Path, run_dir: str | Path, step: int, kind: str = "full") -> Path:
    """Move a freshly saved folder into place, then write the marker (last)."""
    canonical_adapter_config(src)
    target = step_dir(run_dir, step)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    src.replace(target)
    write_marker(target, step, kind)
    return target

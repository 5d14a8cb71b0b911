"""What a run manifest records about where and how the run was made: versions, git commit, source hash,
hardware, timestamps and peak memory; ``Manifest`` is the working manifest file."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from paired_rollouts.io import atomic_write_json
from paired_rollouts.training.kernels import kernels_in_use


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in (
        "paired-rollouts",
        "torch",
        "transformers",
        "trl",
        "peft",
        "accelerate",
        "datasets",
        "tokenizers",
        "vllm",
        "flash-linear-attention",
    ):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_info() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[3]
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--", "workflow_src"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout.strip()
        )
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


def code_version() -> dict[str, str]:
    import hashlib

    import paired_rollouts

    package = Path(paired_rollouts.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return {"version": paired_rollouts.__version__, "sources_sha256": digest.hexdigest()}


def hardware(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": device,
        "cpu_kernels": kernels_in_use(),
    }
    if device == "cuda" and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    return info


def peak_memory(device: str) -> dict[str, Any]:
    import resource

    import torch

    out: dict[str, Any] = {"host_max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if device == "cuda" and torch.cuda.is_available():
        out["gpu_max_allocated_bytes"] = torch.cuda.max_memory_allocated()
        out["gpu_max_reserved_bytes"] = torch.cuda.max_memory_reserved()
    return out


class Manifest:
    def __init__(self, path: Path, base: dict[str, Any]):
        self.path = path
        self.data = base

    def save(self) -> None:
        atomic_write_json(self.path, self.data)

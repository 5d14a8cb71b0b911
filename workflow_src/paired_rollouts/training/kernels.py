"""Torch's CPU kernels, pinned so that a CPU run gives the same bits on any x86-64 machine.

Torch picks its CPU kernels by the CPU it finds: ATen's vectorised loops for AVX-512 or AVX2, and MKL's
matrix products for the instruction set at hand. Each rounds in its own order, so the same seeds gave a
different checkpoint on an AVX2 laptop than on an AVX-512 server (docs/ARCHITECTURE.md, "Determinism").
``ATEN_CPU_CAPABILITY=default`` selects ATen's portable loops and ``MKL_CBWR=COMPATIBLE`` MKL's portable
path (Intel's conditional numerical reproducibility). Both are read when torch runs its first operation,
so :func:`prepare_torch` comes first in every command that computes with torch; it refuses to go on when
torch had already chosen its kernels (``stack.portable_cpu_kernels: false`` keeps the fastest ones).
"""

from __future__ import annotations

import os
from typing import Any

PORTABLE_CPU_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
PORTABLE_CAPABILITY = "DEFAULT"  # what torch.backends.cpu.get_cpu_capability() reports for them


def pin_cpu_kernels() -> None:
    """Ask for the portable kernels (before torch's first operation in this process)."""
    os.environ.update(PORTABLE_CPU_KERNELS)


def prepare_torch(stack: Any) -> None:
    """Pin the kernels where ``stack`` (a ``StackSettings``) runs on the CPU with portable kernels, then
    make torch deterministic on CPU. The run manifest records the kernels through ``kernels_in_use``."""
    portable = stack.device == "cpu" and stack.portable_cpu_kernels
    if portable:
        pin_cpu_kernels()
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    if portable and capability != PORTABLE_CAPABILITY:
        raise RuntimeError(
            f"torch chose its CPU kernels ({capability}) before they were pinned: call "
            "training.kernels.prepare_torch before torch's first operation in the process"
        )
    torch.use_deterministic_algorithms(stack.device == "cpu", warn_only=True)


def kernels_in_use() -> dict[str, Any]:
    """The CPU kernels this process computes with (the run manifest's ``hardware.cpu_kernels``)."""
    import torch

    return {"aten": torch.backends.cpu.get_cpu_capability(), "mkl_cbwr": os.environ.get("MKL_CBWR")}


__all__ = [
    "PORTABLE_CPU_KERNELS",
    "PORTABLE_CAPABILITY",
    "pin_cpu_kernels",
    "prepare_torch",
    "kernels_in_use",
]

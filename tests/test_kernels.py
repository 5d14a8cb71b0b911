"""Torch's CPU kernels pinned (training/kernels.py): the LLM path's training step has the same bits on
another CPU. The other CPU is emulated: ``qemu-x86_64 -cpu Haswell-v4`` (user mode, from Debian's
qemu-user, which scripts/setup.sh installs) runs the same interpreter on an AVX2 CPU without AVX-512.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paired_rollouts.training.kernels import PORTABLE_CPU_KERNELS

REPO = Path(__file__).resolve().parents[1]
DIGEST = REPO / "tests/kernel_digest.py"
EMULATED = ["qemu-x86_64", "-cpu", "Haswell-v4"]  # Intel Haswell: AVX2 and FMA, no AVX-512

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 CPUs only")


def _unpinned() -> dict[str, str]:
    """This environment without the pins (the test process may hold them: tests/conftest.py)."""
    return {k: v for k, v in os.environ.items() if k not in PORTABLE_CPU_KERNELS}


def _digest(mode: str, emulated: bool = False) -> dict:
    command = [sys.executable, str(DIGEST), mode]
    if emulated:
        assert shutil.which(EMULATED[0]), "qemu-x86_64 missing: bash scripts/setup.sh installs qemu-user"
        command = EMULATED + command
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=REPO, env=_unpinned())
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def native() -> dict:
    here = _digest("native")
    if not here["avx512"]:
        pytest.skip("this CPU has no AVX-512: emulating an AVX2 CPU would not change torch's kernels")
    return here


@pytest.mark.slow
def test_a_training_step_has_the_same_bits_on_an_avx2_cpu(native) -> None:
    """Forward, backward, gradient clipping, the fused AdamW step, softmax and sampling of a tiny
    Qwen3.5-family model: the same digest natively (AVX-512) and on the emulated AVX2 CPU."""
    here, there = _digest("portable"), _digest("portable", emulated=True)
    assert (here["avx512"], there["avx512"], there["avx2"]) == (True, False, True)
    assert here["kernels"] == there["kernels"] == "DEFAULT"
    assert here["digest"] == there["digest"]


@pytest.mark.slow
def test_the_cpus_own_kernels_differ_there(native) -> None:
    """The control: with the kernels torch picks by the CPU the same step differs on the emulated CPU,
    so the comparison above can fail."""
    there = _digest("native", emulated=True)
    assert (native["kernels"], there["kernels"]) == ("AVX512", "AVX2")
    assert native["digest"] != there["digest"]


def test_pinning_after_torch_chose_its_kernels_is_refused() -> None:
    """The environment variables act only before torch's first operation; a command that pins later
    would silently run the CPU's own kernels, so prepare_torch refuses."""
    script = (
        "import torch; from types import SimpleNamespace as S\n"
        "from paired_rollouts.training.kernels import prepare_torch\n"
        "torch.ones(4).exp()\n"
        "prepare_torch(S(device='cpu', portable_cpu_kernels=True))\n"
    )
    late = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_unpinned())
    assert late.returncode != 0 and "before they were pinned" in late.stderr
    first = script.replace("torch.ones(4).exp()\n", "") + "assert torch.ones(4).exp()[0] > 2\n"
    assert subprocess.run([sys.executable, "-c", first], capture_output=True, env=_unpinned()).returncode == 0

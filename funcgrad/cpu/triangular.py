"""Triangular solves on the CPU, blocked as LAPACK's trsm: the rows above (or below) a block of
BLOCK rows are folded in by one BLAS matrix product, and the block itself is solved by substitution
in a numba loop whose inner loop runs along the contiguous right-hand sides. O(n^2 k) work, nearly
all of it in GEMMs; NumPy has no triangular solve, and np.linalg.solve would factor the matrix
again (O(n^3))."""
from __future__ import annotations

import math
from functools import cache

import numpy as np

BLOCK = 64


@cache
def _substitute():
    from numba import njit  # numba's first import costs ~0.3 s: pay it only when used

    @njit(cache=True, error_model="numpy")
    def substitute(a, x, lower, unit):
        """Solve a[m] y = x[m] in place for every m; a[m] is triangular (n, n), x[m] (n, k)."""
        batch, n, k = x.shape
        for m in range(batch):
            for step in range(n):
                r = step if lower else n - 1 - step
                lo, hi = (0, r) if lower else (r + 1, n)
                for j in range(lo, hi):
                    f = a[m, r, j]
                    for c in range(k):
                        x[m, r, c] -= f * x[m, j, c]
                if not unit:
                    d = a[m, r, r]
                    for c in range(k):
                        x[m, r, c] /= d
    return substitute


def triangular_solve(a: np.ndarray, b: np.ndarray, lower: bool, unit_diagonal: bool) -> np.ndarray:
    """x with a @ x = b, reading only a's lower (or upper) triangle; leading axes broadcast."""
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, k, batch = a.shape[-1], b.shape[-1], math.prod(lead)
    a = np.broadcast_to(a, lead + (n, n)).reshape((batch, n, n))
    x = np.array(np.broadcast_to(b, lead + (n, k)).reshape((batch, n, k)), order="C")
    substitute = _substitute()
    starts = range(0, n, BLOCK) if lower else reversed(range(0, n, BLOCK))
    for i0 in starts:
        i1 = min(i0 + BLOCK, n)
        if lower and i0:
            x[:, i0:i1] -= np.matmul(a[:, i0:i1, :i0], x[:, :i0])
        elif not lower and i1 < n:
            x[:, i0:i1] -= np.matmul(a[:, i0:i1, i1:], x[:, i1:])
        block = np.ascontiguousarray(x[:, i0:i1])
        substitute(np.ascontiguousarray(a[:, i0:i1, i0:i1]), block, lower, unit_diagonal)
        x[:, i0:i1] = block
    return x.reshape(lead + (n, k))

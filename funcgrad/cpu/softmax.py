"""softmax and log_softmax over the last axis in one numba pass per row.

NumPy needs nine calls (max, isfinite, where, subtract, exp, sum, log, subtract, astype) and a
temporary per step; for the small rows of a classifier's logits or attention scores those calls
cost far more than the arithmetic. A row whose maximum is infinite is shifted by 0, as the NumPy
path does, so -inf entries give 0 (softmax) and -inf (log_softmax) and NaN propagates.
"""
from __future__ import annotations

from functools import cache

import numpy as np


@cache
def _kernels():
    from numba import njit  # imported on first use (numba's import costs ~0.3 s)

    @njit(cache=True, nogil=True, error_model="numpy")
    def row_softmax(x, out, log):
        rows, n = x.shape
        for r in range(rows):
            m = x[r, 0]
            for j in range(1, n):
                if x[r, j] > m or np.isnan(x[r, j]):
                    m = x[r, j]
            if not np.isfinite(m):
                m = 0.0 if not np.isnan(m) else m
            total = 0.0
            for j in range(n):
                total += np.exp(x[r, j] - m)
            if log:
                shift = m + np.log(total)
                for j in range(n):
                    out[r, j] = x[r, j] - shift
            else:
                scale = 1.0 / total
                for j in range(n):
                    out[r, j] = np.exp(x[r, j] - m) * scale
    return row_softmax


def last_axis(x: np.ndarray, log: bool) -> np.ndarray | None:
    """softmax (or log_softmax) of x over its last axis, or None when the kernel does not apply
    (another dtype, an empty array)."""
    if x.dtype not in (np.float32, np.float64) or x.ndim == 0 or x.size == 0:
        return None
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    _kernels()(rows, out, log)
    return out.reshape(x.shape)

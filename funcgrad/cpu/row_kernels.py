"""The numba kernels of rows.py, at module level so numba caches them on disk (cache=True): the
first softmax or cross-entropy of a process loads them instead of compiling for a second. rows.py
imports this on first use, so importing funcgrad does not import numba."""
import numpy as np
from numba import njit


@njit(inline="always", error_model="numpy")
def row_shift(x, r, zero):
    """The row's maximum, or zero if it is infinite. zero has x's dtype, so a float32 row's exp is
    libm's expf (in these short, summed loops faster than vecmath's, which pays off vectorised)."""
    m = x[r, 0]
    for j in range(1, x.shape[1]):
        if x[r, j] > m or np.isnan(x[r, j]):
            m = x[r, j]
    if np.isinf(m):
        m = zero
    return m


@njit(cache=True, nogil=True, error_model="numpy")
def row_softmax(x, out, log, zero):
    rows, n = x.shape
    for r in range(rows):
        m = row_shift(x, r, zero)
        total = 0.0  # float64: the sum of the exponentials is accumulated exactly enough
        for j in range(n):
            e = np.exp(x[r, j] - m)
            out[r, j] = e  # kept for softmax: one exp per element
            total += e
        if log:
            shift = m + np.log(total)
            for j in range(n):
                out[r, j] = x[r, j] - shift
        else:
            scale = 1.0 / total
            for j in range(n):
                out[r, j] = out[r, j] * scale


@njit(cache=True, nogil=True, error_model="numpy")
def row_logsumexp(x, out, zero):
    for r in range(x.shape[0]):
        m = row_shift(x, r, zero)
        total = 0.0
        for j in range(x.shape[1]):
            total += np.exp(x[r, j] - m)
        out[r] = np.log(total) + m


@njit(cache=True, nogil=True)
def pick_rows(x, labels, out):
    """out[r] = x[r, labels[r]]; returns the first row whose label is out of range, or -1."""
    for r in range(x.shape[0]):
        k = labels[r]
        if k < 0 or k >= x.shape[1]:
            return r
        out[r] = x[r, k]
    return -1


@njit(cache=True, nogil=True)
def unpick_rows(g, labels, out):
    """out[r, labels[r]] = g[r] in zeros; returns the first row out of range, or -1."""
    for r in range(out.shape[0]):
        k = labels[r]
        if k < 0 or k >= out.shape[1]:
            return r
        out[r, k] = g[r]
    return -1

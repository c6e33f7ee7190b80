"""The numba kernels of rows.py, at module level so numba caches them on disk (cache=True): the
first softmax or cross-entropy of a process loads them instead of compiling for a second. rows.py
imports this on first use, so importing funcgrad does not import numba."""
import numpy as np
from numba import njit

from . import vecmath as vm


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


@njit(cache=True, nogil=True, error_model="numpy")
def attention_probs(s, bias, scale, causal, row0, zero):
    """In place: s (B, R, Lk), the raw q . k of query rows row0 .. row0 + R, becomes the softmax
    of each row of s * scale + bias (bias (1 or B, Lq, Lk)), keys after the query masked out when
    causal (probability 0). The shift and the NaN and -inf rules are row_softmax's; the exponential
    is vecmath's, whose loop vectorises (libm's expf took two thirds of the time)."""
    batch, rows, keys = s.shape
    if keys == 0:
        return
    for b in range(batch):
        for i in range(rows):
            row, brow = s[b, i], bias[b if bias.shape[0] > 1 else 0, row0 + i]
            n = min(keys, row0 + i + 1) if causal else keys  # the keys this query sees
            m = row[0] * scale + brow[0]  # scale and bias have the row's dtype: so has m, and vm.exp
            for j in range(n):  # takes the float32 path for float32 rows
                x = row[j] * scale + brow[j]
                row[j] = x
                if x > m or np.isnan(x):
                    m = x
            if np.isinf(m):
                m = zero
            for j in range(n):
                row[j] = vm.exp(row[j] - m)
            total = 0.0
            for j in range(n):
                total += row[j]
            inv = 1.0 / total
            for j in range(n):
                row[j] = row[j] * inv
            masked = (0.0 if m == m else np.nan) * inv  # exp(-inf - m) / total, as the unfused form
            for j in range(n, keys):
                row[j] = masked


@njit(cache=True, nogil=True)
def add_rows(g, index, out):
    """out[index[i]] += g[i] row by row (NumPy's negative indices wrap); returns the position of
    the first index out of range, or -1."""
    n = out.shape[0]
    for i in range(index.shape[0]):
        r = index[i]
        if r < 0:
            r += n
        if r < 0 or r >= n:
            return i
        for j in range(out.shape[1]):
            out[r, j] += g[i, j]
    return -1

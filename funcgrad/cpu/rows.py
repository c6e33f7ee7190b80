"""softmax, log_softmax and logsumexp over the last axis in one numba pass per row, and picking
each row's entry at its label (cross-entropy's likelihood term) and its transpose.

NumPy needs nine calls (max, isfinite, where, subtract, exp, sum, log, subtract, astype) and a
temporary per step; for the small rows of a classifier's logits or attention scores those calls
cost far more than the arithmetic. A row whose
maximum is infinite is shifted by 0, as the NumPy path does, so -inf entries give 0 (softmax) and
-inf (log_softmax) and NaN propagates.
"""
from __future__ import annotations

from functools import cache

import numpy as np


@cache
def _kernels():
    from numba import njit  # imported on first use (numba's import costs ~0.3 s)

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
                total += np.exp(x[r, j] - m)
            if log:
                shift = m + np.log(total)
                for j in range(n):
                    out[r, j] = x[r, j] - shift
            else:
                scale = 1.0 / total
                for j in range(n):
                    out[r, j] = np.exp(x[r, j] - m) * scale

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
    return row_softmax, row_logsumexp, pick_rows, unpick_rows


def _rows(x: np.ndarray) -> np.ndarray | None:
    """x as contiguous rows of its last axis, if the kernels apply (float32/64, not empty)."""
    if x.dtype not in (np.float32, np.float64) or x.ndim == 0 or x.size == 0:
        return None
    return np.ascontiguousarray(x).reshape(-1, x.shape[-1])


def last_axis(x: np.ndarray, log: bool) -> np.ndarray | None:
    """softmax (or log_softmax) of x over its last axis, or None when the kernel does not apply
    (another dtype, an empty array)."""
    rows = _rows(x)
    if rows is None:
        return None
    out = np.empty_like(rows)
    _kernels()[0](rows, out, log, rows.dtype.type(0))
    return out.reshape(x.shape)


def logsumexp_last_axis(x: np.ndarray) -> np.ndarray | None:
    """logsumexp of x over its last axis (that axis dropped), or None as for last_axis."""
    rows = _rows(x)
    if rows is None:
        return None
    out = np.empty(rows.shape[0], x.dtype)
    _kernels()[1](rows, out, rows.dtype.type(0))
    return out.reshape(x.shape[:-1])


def _label_error(labels: np.ndarray, classes: int) -> IndexError:
    return IndexError(f"label out of range: labels span [{labels.min()}, {labels.max()}] for {classes} classes")


_NATIVE = (np.float32, np.float64, np.int32, np.int64)  # numba's types; float16/bfloat16 go through NumPy


def _positions(labels: np.ndarray, classes: int) -> np.ndarray:
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise _label_error(labels, classes)
    return labels[..., None].astype(np.intp)


def pick(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """x[..., labels] (labels: x's leading shape); a label outside [0, classes) raises IndexError."""
    if x.dtype not in _NATIVE:
        return np.take_along_axis(x, _positions(labels, x.shape[-1]), axis=-1)[..., 0]
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    flat = np.ascontiguousarray(labels, dtype=np.int64).reshape(-1)
    out = np.empty(flat.shape[0], x.dtype)
    if _kernels()[2](rows, flat, out) >= 0:
        raise _label_error(labels, x.shape[-1])
    return out.reshape(labels.shape)


def unpick(g: np.ndarray, labels: np.ndarray, classes: int) -> np.ndarray:
    """zeros of shape g.shape + (classes,) with g at each row's label (pick's transpose)."""
    if g.dtype not in _NATIVE:
        out = np.zeros(g.shape + (classes,), g.dtype)
        np.put_along_axis(out, _positions(labels, classes), g[..., None], axis=-1)
        return out
    out = np.zeros((g.size, classes), g.dtype)
    flat = np.ascontiguousarray(labels, dtype=np.int64).reshape(-1)
    if _kernels()[3](np.ascontiguousarray(g).reshape(-1), flat, out) >= 0:
        raise _label_error(labels, classes)
    return out.reshape(g.shape + (classes,))

"""softmax, log_softmax and logsumexp over the last axis in one numba pass per row, picking
each row's entry at its label (cross-entropy's likelihood term) and its transpose, and adding rows
into a table at repeated indices (an embedding's gradient; np.add.at took 0.7 ms for 1024 rows
of 128).

NumPy needs nine calls (max, isfinite, where, subtract, exp, sum, log, subtract, astype) and a
temporary per step; for the small rows of a classifier's logits or attention scores those calls
cost far more than the arithmetic. The shift rules are the NumPy path's (ops/reductions.py's
_stable_max): -inf entries give 0 (softmax) and -inf (log_softmax), a row holding +inf or NaN is
NaN (as in PyTorch and JAX), and logsumexp of a row holding +inf is +inf.
"""
from __future__ import annotations

import numpy as np


def row_kernels():
    from . import row_kernels as kernels  # numba loads on first use
    return kernels


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
    row_kernels().row_softmax(rows, out, log, rows.dtype.type(0))
    return out.reshape(x.shape)


def logsumexp_last_axis(x: np.ndarray) -> np.ndarray | None:
    """logsumexp of x over its last axis (that axis dropped), or None as for last_axis."""
    rows = _rows(x)
    if rows is None:
        return None
    out = np.empty(rows.shape[0], x.dtype)
    row_kernels().row_logsumexp(rows, out, rows.dtype.type(0))
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
    if row_kernels().pick_rows(rows, flat, out) >= 0:
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
    if row_kernels().unpick_rows(np.ascontiguousarray(g).reshape(-1), flat, out) >= 0:
        raise _label_error(labels, classes)
    return out.reshape(g.shape + (classes,))


def add_rows(g: np.ndarray, index: np.ndarray, shape: tuple) -> np.ndarray | None:
    """zeros(shape) with g's rows added at rows `index` of it (x[index]'s transpose: g has shape
    index.shape + shape[1:]), or None for a dtype the kernel does not take."""
    if g.dtype not in _NATIVE:
        return None
    out = np.zeros((shape[0], int(np.prod(shape[1:], dtype=np.int64))), g.dtype)
    flat = np.ascontiguousarray(index, dtype=np.int64).reshape(-1)
    bad = row_kernels().add_rows(np.ascontiguousarray(g).reshape(flat.size, out.shape[1]), flat, out)
    if bad >= 0:
        raise IndexError(f"index {flat[bad]} is out of bounds for axis 0 with size {shape[0]}")
    return out.reshape(shape)

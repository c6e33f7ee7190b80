"""Descriptive statistics of jax.scipy.stats: mode, rankdata, sem, with SciPy's nan_policy
('propagate', 'omit', 'raise'). Ties are found on the sorted values: an element's smallest and
largest rank are the counts of values below it and not above it (searchsorted)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ... import dtypes
from ... import numpy as fnp
from ...array import Array
from ...vmap import vmap

_POLICIES = ("propagate", "omit", "raise")


class ModeResult(NamedTuple):
    mode: Array
    count: Array


def _policy(a, nan_policy: str, name: str) -> None:
    if nan_policy not in _POLICIES:
        raise ValueError(f"{name}: nan_policy must be one of {_POLICIES}, got {nan_policy!r}")
    if nan_policy == "raise":
        known = fnp.concrete_or_none(fnp.any(fnp.isnan(a)))
        if known is None:
            raise ValueError(f"{name}: nan_policy='raise' needs concrete values (not inside jit)")
        if known:
            raise ValueError(f"{name}: the input contains NaN (nan_policy='raise')")


def _rows(a, axis):
    """a with `axis` moved last and the rest flattened: (rows, n), and how to put results back."""
    moved = fnp.moveaxis(a, axis, -1)
    batch = tuple(moved.shape[:-1])
    return fnp.reshape(moved, (-1, moved.shape[-1])), batch


def _bounds(row):
    """Each element's smallest and largest 1-based rank among the row (NaN sorted last, equal to itself)."""
    ordered = fnp.sort(row)
    return fnp.searchsorted(ordered, row, side="left") + 1, fnp.searchsorted(ordered, row, side="right")


def rankdata(a, method: str = "average", *, axis: int | None = None, nan_policy: str = "propagate") -> Array:
    """The ranks of a's values, 1-based, ties by method: 'average' (float), 'min', 'max', 'dense'
    or 'ordinal' (ints). Along axis, or of the flattened array when axis is None."""
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"rankdata: unknown method {method!r}")
    a = fnp.asarray(a)
    _policy(a, nan_policy, "rankdata")
    if axis is None:
        a, axis = fnp.ravel(a), 0
    axis = fnp._normalize_axis(axis, a.ndim)
    rows, batch = _rows(a, axis)
    integer = dtypes.default_int

    def rank_row(row):
        if method == "ordinal":
            return fnp.astype(fnp.argsort(fnp.argsort(row, stable=True), stable=True) + 1, integer)
        low, high = _bounds(row)
        if method == "min":
            return fnp.astype(low, integer)
        if method == "max":
            return fnp.astype(high, integer)
        if method == "dense":
            ordered = fnp.sort(row)
            distinct = fnp.concatenate([fnp.ones((1,), integer), fnp.astype(ordered[1:] != ordered[:-1], integer)])
            return fnp.take(fnp.cumsum(distinct), low - 1)
        return fnp.astype(low + high, dtypes.float64) / 2
    ranks = vmap(rank_row)(rows) if rows.shape[0] else fnp.zeros(rows.shape, dtypes.float64)
    if fnp.issubdtype(a.dtype, fnp.inexact) and nan_policy != "raise":
        nan = fnp.isnan(rows)
        ranks = fnp.astype(ranks, dtypes.float64)
        if nan_policy == "propagate":  # a row holding NaN is all NaN
            ranks = fnp.where(fnp.any(nan, axis=-1, keepdims=True), math.nan, ranks)
        else:  # omit: NaN sorted last keeps the others' ranks; it is NaN itself
            ranks = fnp.where(nan, math.nan, ranks)
    return fnp.moveaxis(fnp.reshape(ranks, batch + (rows.shape[-1],)), -1, axis)


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False) -> ModeResult:
    """The most frequent value along axis (the smallest of those tied) and its count. With NaN and
    'propagate', NaN and the number of NaNs; 'omit' leaves them out."""
    a = fnp.asarray(a)
    _policy(a, nan_policy, "mode")
    ndim, flattened = a.ndim, axis is None
    if flattened:
        a, axis = fnp.ravel(a), 0
    axis = fnp._normalize_axis(axis, a.ndim)
    if a.shape[axis] == 0:
        raise ValueError(f"mode: axis {axis} of a is empty")
    rows, batch = _rows(a, axis)
    inexact = fnp.issubdtype(a.dtype, fnp.inexact)

    def mode_row(row):
        nan = fnp.isnan(row) if inexact else fnp.zeros(row.shape, bool)
        ordered = fnp.sort(row)
        low, high = _bounds(ordered)
        counts = fnp.where(fnp.isnan(ordered) if inexact else nan, 0, high - low + 1)
        best = fnp.argmax(counts)
        value, count = ordered[best], counts[best]
        if inexact and nan_policy == "propagate":
            nans = fnp.sum(nan)
            value, count = fnp.where(nans > 0, math.nan, value), fnp.where(nans > 0, nans, count)
        return value, count
    value, count = vmap(mode_row)(rows)
    value, count = fnp.reshape(value, batch), fnp.reshape(fnp.astype(count, dtypes.default_int), batch)
    if keepdims:  # over every axis (axis=None): all of them kept, of length 1
        keep = (lambda v: fnp.reshape(v, (1,) * ndim)) if flattened else (lambda v: fnp.expand_dims(v, axis))
        value, count = keep(value), keep(count)
    return ModeResult(value, count)


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False) -> Array:
    """The standard error of the mean: std(ddof) / sqrt(n); 'omit' counts and sums the non-NaN values."""
    a = fnp._float_arg(a)
    _policy(a, nan_policy, "sem")
    if axis is None:
        a, axis = fnp.ravel(a), 0
    if nan_policy == "omit":
        n = fnp.sum(~fnp.isnan(a), axis=axis, keepdims=keepdims)
        return fnp.nanstd(a, axis=axis, ddof=ddof, keepdims=keepdims) / fnp.sqrt(fnp.astype(n, a.dtype))
    return fnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(a.shape[axis])

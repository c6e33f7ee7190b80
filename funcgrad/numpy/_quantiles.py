"""Order statistics: quantile, percentile and median (and their NaN-ignoring forms) by all thirteen
of NumPy's methods, with NumPy 2's weights for inverted_cdf; differentiable through the values they
read."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from . import _base as fnp
from ..array import ArrayBase
from ..errors import ShapeError
from ._util import _beside

__all__ = ["quantile", "percentile", "nanquantile", "nanpercentile", "median", "nanmedian"]


# NumPy's quantile methods: Hyndman and Fan's continuous ones as (alpha, beta) of the position
# n q + alpha + q (1 - alpha - beta) - 1 among n sorted values, its discontinuous ones, and four more.
_CONTINUOUS = {"linear": (1.0, 1.0), "interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5),
               "weibull": (0.0, 0.0), "median_unbiased": (1 / 3, 1 / 3), "normal_unbiased": (3 / 8, 3 / 8)}
_QUANTILE_METHODS = (*_CONTINUOUS, "lower", "higher", "nearest", "midpoint", "inverted_cdf", "averaged_inverted_cdf",
                     "closest_observation")


def _quantile_positions(method: str, q, count):
    """(lo, hi, weight of hi): the sorted positions a quantile q reads among count values (an array
    per slice) and how it mixes them, as NumPy's method does."""
    last = fnp.maximum(count - 1, 0)  # an all-NaN slice of nanquantile reads position 0, then is NaN
    if method in ("lower", "higher", "nearest", "midpoint"):
        pos = q * last
        lo, hi = fnp.floor(pos), fnp.ceil(pos)
        if method != "midpoint":
            lo = hi = {"lower": lo, "higher": hi, "nearest": fnp.round(pos)}[method]
        return lo, hi, 0.5
    if method in ("inverted_cdf", "closest_observation"):  # one sorted value: the next unless exactly on one
        pos = count * q - (1.0 if method == "inverted_cdf" else 1.5)
        below = fnp.floor(pos)
        stays = (pos == below) if method == "inverted_cdf" else (pos == below) & (below % 2 == 1)
        at = fnp.maximum(fnp.where(stays, below, below + 1), 0)
        return at, at, 0.0
    if method == "averaged_inverted_cdf":
        pos = count * q - 1.0
    else:
        alpha, beta = _CONTINUOUS[method]
        pos = q * last if method == "linear" else count * q + (alpha + q * (1 - alpha - beta)) - 1
    below = fnp.floor(pos)
    weight = fnp.where(pos == below, 0.5, 1.0) if method == "averaged_inverted_cdf" else pos - below
    clamp = lambda i: fnp.where(pos >= last, last, fnp.where(pos < 0, 0, i))  # noqa: E731  (NumPy's bounds)
    return clamp(below), clamp(below + 1), weight


def _weights_along(a, weights, axes: list, kept: list, n: int, ignore_nan: bool):
    """NumPy 2's quantile weights (a's shape, or 1-D along the one reduced axis) in float64, laid out
    as _quantile lays out a: the kept axes, then the n reduced values; checked where concrete."""
    w = fnp.astype(fnp._arrays(a, weights)[1], dtypes.float64)
    if w.shape != a.shape:
        if w.ndim != 1 or len(axes) != 1 or w.shape[0] != a.shape[axes[0]]:
            raise ShapeError(f"quantile: weights of shape {w.shape} must have a's shape {a.shape}, or be 1-D "
                             f"along the one reduced axis")
        w = fnp.broadcast_to(fnp.reshape(w, tuple(-1 if d == axes[0] else 1 for d in range(a.ndim))), a.shape)
    w = fnp.reshape(fnp.transpose(w, kept + axes), tuple(a.shape[d] for d in kept) + (n,))
    concrete = fnp.concrete_or_none(w)
    if concrete is not None:
        if not ((concrete >= 0) & np.isfinite(concrete)).all():
            raise ValueError("quantile: weights must be non-negative and finite")
        if not ignore_nan and (concrete.sum(-1) == 0).any():  # nanquantile: NaN, as for an all-NaN slice
            raise ValueError("quantile: the weights of a slice are all zero")
    return w


def _quantile(a, q, axis, method, keepdims, ignore_nan, per: int = 1, weights=None):
    """q of a, given per `per` (100 for percentiles): constants take a's dtype before the division,
    so 0.3 or 30 percent of a float64 array is not first rounded to float32. With weights (NumPy 2,
    method inverted_cdf only), the first sorted value whose share of the total weight reaches q."""
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"quantile method must be one of {_QUANTILE_METHODS}, got {method!r}")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"only method 'inverted_cdf' supports weights, got {method!r}")
    a = fnp._float_arg(a)
    if weights is not None:  # compared in float64 with the weights' shares, as NumPy compares them
        q64 = fnp.astype(_beside(q if isinstance(q, ArrayBase) else np.asarray(q, np.float64), a), dtypes.float64) / per
    q = fnp.astype(_beside(q if isinstance(q, ArrayBase) else np.asarray(q, a.dtype), a), a.dtype)
    if per != 1:
        q = q / per
    concrete_q = fnp.concrete_or_none(q)
    if concrete_q is not None and ((concrete_q < 0) | (concrete_q > 1)).any():
        raise ValueError(f"quantiles must be in the range [0, 1], got {concrete_q}")
    axes = fnp._axes(axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    x = fnp.transpose(a, kept + list(axes))
    n = int(np.prod([a.shape[d] for d in axes], dtype=np.int64))  # not -1: a kept axis may be empty
    x = fnp.reshape(x, x.shape[:len(kept)] + (n,))
    if n == 0:  # nothing to take a quantile of: NaN, as jax.numpy (and NumPy's median) give
        out = fnp.full(q.shape + x.shape[:-1], np.nan, a.dtype, device=a.device)
        return fnp.reshape(out, q.shape + tuple(1 if d in axes else a.shape[d] for d in range(a.ndim))) \
            if keepdims else out
    if weights is None:
        x = fnp.sort(x, axis=-1)  # NaN sorts last
    else:
        w = _weights_along(a, weights, list(axes), kept, n, ignore_nan)
        order = fnp.argsort(x, axis=-1)
        x, w = fnp.take_along_axis(x, order, axis=-1), fnp.take_along_axis(w, order, axis=-1)
    if ignore_nan:
        count = fnp.sum(~fnp.isnan(x), axis=-1, keepdims=True)
    else:
        count = fnp.full(x.shape[:-1] + (1,), n, dtypes.default_int, device=x.device)
    qs = fnp.reshape(q, q.shape + (1,) * (x.ndim - 1) + (1,))  # q axes lead, then the kept axes
    if weights is None:
        lo, hi, frac = _quantile_positions(method, qs, fnp.astype(count, a.dtype))
    else:  # NumPy's: cdf[i - 1] < q <= cdf[i], a leading run of zero weights never chosen
        cdf = fnp.cumsum(fnp.where(fnp.isnan(x), 0.0, w) if ignore_nan else w, axis=-1)
        total = cdf[..., -1:]
        count = fnp.where(total > 0, count, 0)  # a slice without weight has no quantile
        cdf = cdf / fnp.maximum(total, np.finfo(np.float64).tiny)
        cdf = fnp.where(cdf == 0, -1.0, cdf)
        q64s = fnp.reshape(q64, q64.shape + (1,) * (x.ndim - 1) + (1,))
        lo = hi = fnp.minimum(fnp.sum(cdf < q64s, axis=-1, keepdims=True), n - 1)
        frac = 0.0
    xb = fnp.broadcast_to(x, q.shape + x.shape)
    take = lambda i: fnp.take_along_axis(xb, fnp.astype(fnp.broadcast_to(i, q.shape + x.shape[:-1] + (1,)),  # noqa: E731
                                                           dtypes.int64), axis=-1)
    below, above = take(lo), take(hi)
    out = below + (above - below) * frac
    out = fnp.squeeze(out, -1)
    if not ignore_nan:
        out = fnp.where(fnp.any(fnp.isnan(x), axis=-1), np.asarray(np.nan, a.dtype), out)
    else:
        out = fnp.where(fnp.squeeze(count, -1) == 0, np.asarray(np.nan, a.dtype), out)
    if keepdims:
        shape = list(a.shape)
        for d in axes:
            shape[d] = 1
        out = fnp.reshape(out, q.shape + tuple(shape))
    return out


def quantile(a, q, axis=None, method: str = "linear", keepdims: bool = False, *, weights=None, interpolation=None):
    return _quantile(a, q, axis, interpolation or method, keepdims, ignore_nan=False, weights=weights)


def nanquantile(a, q, axis=None, method: str = "linear", keepdims: bool = False, *, weights=None, interpolation=None):
    return _quantile(a, q, axis, interpolation or method, keepdims, ignore_nan=True, weights=weights)


def percentile(a, q, axis=None, method: str = "linear", keepdims: bool = False, *, weights=None, interpolation=None):
    return _quantile(a, q, axis, interpolation or method, keepdims, ignore_nan=False, per=100, weights=weights)


def nanpercentile(a, q, axis=None, method: str = "linear", keepdims: bool = False, *, weights=None, interpolation=None):
    return _quantile(a, q, axis, interpolation or method, keepdims, ignore_nan=True, per=100, weights=weights)


def median(a, axis=None, keepdims: bool = False):
    return quantile(a, 0.5, axis, keepdims=keepdims)


def nanmedian(a, axis=None, keepdims: bool = False):
    return nanquantile(a, 0.5, axis, keepdims=keepdims)

"""NaN-aware reductions, searching and counting (searchsorted, histogram, nonzero, unique, ...) and
covariance (quantiles and medians: _quantiles.py).

Functions whose output shape depends on the values (nonzero, unique, ...) need concrete inputs, as in
JAX: under jit they raise ConcretizationError, and nonzero/argwhere/flatnonzero take size= to stay
traceable."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import dtypes
from . import _base as fnp
from ..array import Array, ArrayBase
from ..errors import ShapeError
from ._index_tricks import unravel_index
from ._shapes import atleast_2d, cumprod, diagonal, diff
from ._util import _beside, _concrete

__all__ = [
    "nancumsum", "nancumprod", "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanargmax",
    "nanargmin", "average", "ptp",
    "count_nonzero", "searchsorted", "digitize", "bincount", "histogram", "histogram_bin_edges", "histogramdd",
    "histogram2d", "cov", "corrcoef",
    "where", "nonzero", "argwhere", "flatnonzero", "unique", "isin", "intersect1d", "union1d", "setdiff1d", "setxor1d",
    "trim_zeros", "lexsort", "argpartition",
    "partition",
]


def nancumsum(a, axis: int | None = None, dtype=None):
    a = fnp.asarray(a)
    return fnp.cumsum(_nan_filled(a, 0), axis=axis, dtype=dtype)


def nancumprod(a, axis: int | None = None, dtype=None):
    return cumprod(_nan_filled(fnp.asarray(a), 1), axis=axis, dtype=dtype)


def _nan_filled(a, value):
    return fnp.where(fnp.isnan(a), np.asarray(value, a.dtype), a) if dtypes.is_inexact(a.dtype) else a


def nansum(a, axis=None, dtype=None, keepdims: bool = False):
    return fnp.sum(_nan_filled(fnp.asarray(a), 0), axis=axis, keepdims=keepdims, dtype=dtype)


def nanprod(a, axis=None, dtype=None, keepdims: bool = False):
    return fnp.prod(_nan_filled(fnp.asarray(a), 1), axis=axis, keepdims=keepdims, dtype=dtype)


def nanmean(a, axis=None, dtype=None, keepdims: bool = False):
    """mean over the values that are not NaN (NaN where all are)."""
    a = fnp._float_arg(a) if dtype is None else fnp.astype(a, dtype)
    return fnp.mean(a, axis, keepdims=keepdims, where=~fnp.isnan(a))


def nanvar(a, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False):
    """var over the values that are not NaN: an infinity still makes its slice's variance NaN (NumPy's)."""
    a = fnp._float_arg(a) if dtype is None else fnp.astype(a, dtype)
    return fnp.var(a, axis, ddof=ddof, keepdims=keepdims, where=~fnp.isnan(a))


def nanstd(a, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False):
    a = fnp._float_arg(a) if dtype is None else fnp.astype(a, dtype)
    return fnp.std(a, axis, ddof=ddof, keepdims=keepdims, where=~fnp.isnan(a))


def _nan_extreme(reduce, fill, a, axis, keepdims):
    a = fnp.asarray(a)
    if not dtypes.is_float(a.dtype):
        return reduce(a, axis=axis, keepdims=keepdims)
    out = reduce(_nan_filled(a, fill), axis=axis, keepdims=keepdims)
    return fnp.where(fnp.all(fnp.isnan(a), axis=axis, keepdims=keepdims), np.asarray(np.nan, a.dtype), out)


def nanmax(a, axis=None, keepdims: bool = False):
    return _nan_extreme(fnp.max, -np.inf, a, axis, keepdims)


def nanmin(a, axis=None, keepdims: bool = False):
    return _nan_extreme(fnp.min, np.inf, a, axis, keepdims)


def _nan_arg(reduce, fill, a, axis, keepdims):
    a = fnp.asarray(a)
    if not dtypes.is_float(a.dtype):
        return reduce(a, axis=axis, keepdims=keepdims)
    out = reduce(_nan_filled(a, fill), axis=axis, keepdims=keepdims)
    return fnp.where(fnp.all(fnp.isnan(a), axis=axis, keepdims=keepdims), np.asarray(-1, out.dtype), out)


def nanargmax(a, axis=None, keepdims: bool = False):
    """argmax ignoring NaN; -1 where a slice is all NaN (JAX's choice; NumPy raises)."""
    return _nan_arg(fnp.argmax, -np.inf, a, axis, keepdims)


def nanargmin(a, axis=None, keepdims: bool = False):
    return _nan_arg(fnp.argmin, np.inf, a, axis, keepdims)


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    a = fnp._float_arg(a)
    if weights is None:
        avg = fnp.mean(a, axis, keepdims=keepdims)
        count = fnp.full(avg.shape, fnp.size(a) / builtins.max(fnp.size(avg), 1), avg.dtype, device=avg.device)
        return (avg, count) if returned else avg
    w = fnp._arrays(a, weights)[1]
    if w.shape != a.shape:
        if axis is None or w.ndim != 1 or not isinstance(axis, (int, np.integer)):
            raise ShapeError(f"average: weights of shape {w.shape} differ from a's {a.shape}; 1-D weights need "
                             f"an integer axis")
        ax = fnp._normalize_axis(axis, a.ndim)
        if w.shape[0] != a.shape[ax]:
            raise ShapeError(f"average: {w.shape[0]} weights for axis {ax} of length {a.shape[ax]}")
        w = fnp.reshape(w, (1,) * ax + (-1,) + (1,) * (a.ndim - ax - 1))
    w = fnp.broadcast_to(fnp.astype(w, dtypes.promote(w.dtype, a.dtype)), a.shape)
    total = fnp.sum(w, axis, keepdims=keepdims)
    avg = fnp.sum(a * w, axis, keepdims=keepdims) / total
    return (avg, total) if returned else avg


def ptp(a, axis=None, keepdims: bool = False):
    return fnp.max(a, axis, keepdims=keepdims) - fnp.min(a, axis, keepdims=keepdims)


def count_nonzero(a, axis=None, keepdims: bool = False):
    return fnp.sum(fnp.not_equal(a, 0), axis=axis, keepdims=keepdims, dtype=dtypes.int64)


def lexsort(keys, axis: int = -1):
    return Array(np.lexsort([_concrete(k, "lexsort") for k in keys], axis=axis))


def argpartition(a, kth: int, axis: int = -1):
    """Indices that partition a around its kth element (here: a full stable argsort, which is one)."""
    return fnp.argsort(a, axis)


def partition(a, kth: int, axis: int = -1):
    return fnp.sort(a, axis)


def searchsorted(a, v, side: str = "left", sorter=None):
    """Insertion points of v in the sorted 1-D a; traceable (it counts comparisons)."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a, v = fnp._arrays(a, v)
    if a.ndim != 1:
        raise ShapeError(f"searchsorted needs a 1-D sorted array, got shape {a.shape}")
    if sorter is not None:
        if tuple(np.shape(sorter)) != tuple(a.shape):
            raise ShapeError(f"searchsorted: sorter of shape {tuple(np.shape(sorter))} must order all of a, shape "
                             f"{tuple(a.shape)}")
        a = fnp.take(a, sorter)
    v = fnp.asarray(v)
    a, v = fnp._common((a, v))
    concrete_a, concrete_v = fnp.concrete_or_none(a), fnp.concrete_or_none(v)
    if concrete_a is not None and concrete_v is not None:  # NumPy's binary search when values are known
        return Array(np.searchsorted(concrete_a, concrete_v, side=side).astype(np.int64))
    compare = fnp.less if side == "left" else fnp.less_equal
    below = compare(a, fnp.expand_dims(v, -1))
    return fnp.sum(below | (fnp.isnan(fnp.expand_dims(v, -1)) & ~fnp.isnan(a)) if dtypes.is_float(a.dtype)
                   else below, axis=-1, dtype=dtypes.int64)


def digitize(x, bins, right: bool = False):
    bins = fnp.asarray(bins)
    if bins.ndim != 1:
        raise ShapeError(f"digitize needs 1-D bins, got shape {bins.shape}")
    concrete = fnp.concrete_or_none(bins)
    if concrete is not None and concrete.size > 1:
        steps = np.diff(concrete)
        if not ((steps >= 0).all() or (steps <= 0).all()):
            raise ValueError("digitize: bins must be monotonically increasing or decreasing")
    decreasing = concrete is not None and concrete.size > 1 and concrete[0] > concrete[-1]
    side = "left" if right else "right"
    if decreasing:
        return bins.shape[0] - searchsorted(fnp.flip(bins), x, side=side)
    return searchsorted(bins, x, side=side)


def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None):
    x = fnp.asarray(x)
    if x.ndim != 1 or x.dtype.kind not in "iub":
        raise ValueError(f"bincount needs a 1-D array of non-negative integers, got {x.dtype} of shape {x.shape}")
    if length is None:
        values = _concrete(x, "bincount without length=")
        if values.size and values.min() < 0:
            raise ValueError(f"bincount: negative value {values.min()} in x")
        length = builtins.max(int(values.max()) + 1 if values.size else 0, minlength)
    w = fnp.ones(x.shape, dtypes.default_int, device=x.device) if weights is None else \
        fnp.asarray(fnp.follow(x, weights)[1])
    if w.shape != x.shape:
        raise ShapeError(f"bincount: weights of shape {tuple(w.shape)} for x of shape {tuple(x.shape)} (one weight "
                         f"per value)")
    return fnp.zeros((length,), w.dtype, device=w.device).at[x].add(w)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The edges histogram uses: bins + 1 equal steps over range (default a's min to max, widened by
    half a unit each way where that is a point, as NumPy), or bins itself as a sequence of edges."""
    a = fnp.ravel(fnp._float_arg(a))
    if isinstance(bins, str):  # NumPy's estimators ('auto', 'fd', 'sturges', ...): the count depends on the values
        edges = np.histogram_bin_edges(_concrete(a, f"histogram bins={bins!r}"), bins, range)
        return fnp.astype(_beside(edges, a), a.dtype)
    if np.ndim(bins) != 0:
        return fnp.astype(_beside(bins, a), a.dtype)
    # NumPy's linspace from the data's min and max runs in the data's dtype, from a range (Python
    # floats) in float64; either way the last edge is exactly the end, so the maximum is counted
    if range is None:
        lo, hi = (fnp.min(a), fnp.max(a)) if a.shape[0] else (0.0, 1.0)
        exact = a.dtype
    else:
        lo, hi = range
        exact = dtypes.float64
    ends = [fnp.concrete_or_none(v) if isinstance(v, ArrayBase) else np.asarray(v) for v in (lo, hi)]
    if all(e is not None for e in ends):
        if not np.isfinite(ends).all():
            raise ValueError(f"histogram: the range [{ends[0]}, {ends[1]}] is not finite"
                             + (" (the data hold NaN or inf: give range=)" if range is None else ""))
        if ends[0] > ends[1]:
            raise ValueError(f"histogram: range {tuple(range)} has its maximum below its minimum")
    lo, hi = (fnp.astype(_beside(np.asarray(v, exact) if not isinstance(v, ArrayBase) else v, a), exact)
              for v in (lo, hi))
    same = hi == lo
    lo, hi = fnp.where(same, lo - 0.5, lo), fnp.where(same, hi + 0.5, hi)
    n = int(bins)
    inner = fnp.arange(n, dtype=exact, device=a.device) * ((hi - lo) / n) + lo
    return fnp.astype(fnp.concatenate([inner, fnp.reshape(hi, (1,))]), a.dtype)


def _bin_of(a, edges):
    """(bin index, inside) of each value of a: bins are half-open but the last includes its right
    edge, as NumPy's."""
    idx = searchsorted(edges, a, side="right") - 1
    idx = fnp.where(a == edges[-1], edges.shape[0] - 2, idx)
    return idx, (a >= edges[0]) & (a <= edges[-1])


def _counted(flat_bin, inside, weights, n: int, like):
    """Sums of the weights (ones by default) of the inside values in each of n bins."""
    w = fnp.ones(like.shape, like.dtype, device=like.device) if weights is None else \
        fnp.ravel(fnp.asarray(fnp.follow(like, weights)[1]))
    if w.shape != like.shape:
        raise ShapeError(f"histogram: {w.shape[0]} weights for {like.shape[0]} values (one weight per value)")
    return fnp.zeros((n,), w.dtype, device=w.device).at[fnp.where(inside, flat_bin, 0)].add(
        fnp.where(inside, w, np.zeros((), w.dtype)))


def histogram(a, bins=10, range=None, weights=None, density: bool = False):  # noqa: A002
    """(counts, bin edges); the last bin includes its right edge, as NumPy."""
    a = fnp.ravel(fnp._float_arg(a))
    edges = histogram_bin_edges(a, bins, range)
    counts = _counted(*_bin_of(a, edges), weights, edges.shape[0] - 1, a)
    if density:
        counts = counts / (fnp.sum(counts) * diff(edges))
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density: bool = False):  # noqa: A002
    """(counts, [edges per dimension]) of N points in D dimensions: sample (N, D), or D sequences of
    N coordinates; bins and range per dimension or one for all, as NumPy's."""
    if isinstance(sample, (list, tuple)):  # D sequences of N coordinates: NumPy's atleast_2d(sample).T
        sample = fnp.transpose(atleast_2d(fnp.stack([fnp.asarray(s) for s in sample])))
    sample = fnp._float_arg(sample)
    sample = fnp.reshape(sample, (-1, 1)) if sample.ndim == 1 else sample
    if sample.ndim != 2:
        raise ShapeError(f"histogramdd: sample must be (N, D) points, got shape {sample.shape}")
    d = sample.shape[1]
    per_dim = [bins] * d if isinstance(bins, (int, np.integer)) else list(bins)
    ranges = [None] * d if range is None else list(range)
    if len(per_dim) != d or len(ranges) != d:
        raise ValueError(f"histogramdd: {d} dimensions need {d} bins and ranges, got {len(per_dim)} and {len(ranges)}")
    edges = [histogram_bin_edges(sample[:, k], per_dim[k], ranges[k]) for k in builtins.range(d)]
    sizes = [e.shape[0] - 1 for e in edges]
    flat, inside = 0, True
    for k in builtins.range(d):
        idx, within = _bin_of(sample[:, k], edges[k])
        flat, inside = flat * sizes[k] + idx, inside & within
    counts = fnp.reshape(_counted(flat, inside, weights, int(np.prod(sizes, dtype=np.int64)), sample[:, 0]), sizes)
    if density:
        volume = 1.0
        for k in builtins.range(d):
            volume = fnp.expand_dims(volume, -1) * diff(edges[k]) if k else diff(edges[k])
        counts = counts / (fnp.sum(counts) * volume)
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density: bool = False):  # noqa: A002
    """(counts, x edges, y edges): histogramdd of the points (x, y); bins one count or one edge
    array for both, or a pair."""
    if isinstance(bins, (int, np.integer)) or len(bins) != 2:
        bins = [bins, bins]
    counts, (x_edges, y_edges) = histogramdd([x, y], bins, range, weights, density)
    return counts, x_edges, y_edges


def where(condition, x=None, y=None, *, size: int | None = None, fill_value=None):
    """where(c, x, y) selects elementwise; where(c) is nonzero(c), with JAX's size and fill_value
    for a static length."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise TypeError("where takes either one argument or three")
    if size is not None or fill_value is not None:
        raise TypeError("where: size and fill_value belong to the one-argument form, where(condition)")
    return fnp.where(condition, x, y)


def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple:
    """Indices of the non-zero elements, one array per axis. With size= (as in JAX) the result has
    that length, padded with fill_value (default 0), so it can run under jit."""
    a = fnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("nonzero is not defined for 0-d arrays; use atleast_1d first")
    if size is None:
        return tuple(Array(i.astype(np.int64)) for i in np.nonzero(_concrete(a, "nonzero without size=")))
    flat = fnp.ravel(fnp.not_equal(a, 0))
    order = fnp.argsort(fnp.astype(~flat, dtypes.int32))[:size]  # stable: the true elements first, in order
    found = fnp.take(flat, order)
    if order.shape[0] < size:
        pad = size - order.shape[0]
        order = fnp.concatenate([order, fnp.zeros((pad,), order.dtype, device=order.device)])
        found = fnp.concatenate([found, fnp.zeros((pad,), dtypes.bool_, device=found.device)])
    fill = (0,) * a.ndim if fill_value is None else tuple(np.broadcast_to(fill_value, (a.ndim,)).tolist())
    return tuple(fnp.where(found, i, np.asarray(f, np.int64)) for i, f in zip(unravel_index(order, a.shape), fill))


def argwhere(a, *, size: int | None = None, fill_value=None):
    a = fnp.asarray(a)
    if a.ndim == 0:
        a = fnp.reshape(a, (1,))
        return fnp.reshape(nonzero(a, size=size, fill_value=fill_value)[0], (-1, 0))
    return fnp.stack(nonzero(a, size=size, fill_value=fill_value), axis=-1)


def flatnonzero(a, *, size: int | None = None, fill_value=None):
    return nonzero(fnp.ravel(a), size=size, fill_value=fill_value)[0]


def unique(ar, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, size: int | None = None, fill_value=None):
    """NumPy's unique. With size= (JAX's) the result has that many values, so it runs under jit:
    the first size distinct values, padded with fill_value (by default the smallest value), their
    first indices and counts padded likewise (counts with 0)."""
    if size is not None:
        if axis is not None:
            raise TypeError("unique: size= is supported for the flattened array (axis=None)")
        return _unique_sized(fnp.ravel(fnp.asarray(ar)), operator.index(size), fill_value, return_index,
                             return_inverse, return_counts, equal_nan, fnp.asarray(ar).shape)
    values = _concrete(ar, "unique without size=")
    out = np.unique(values, return_index=return_index, return_inverse=return_inverse, return_counts=return_counts,
                    axis=axis, equal_nan=equal_nan)
    if isinstance(out, tuple):
        return tuple(Array(o) for o in out)
    return Array(out)


def _unique_sized(flat, size: int, fill_value, return_index: bool, return_inverse: bool, return_counts: bool,
                  equal_nan: bool, shape: tuple):
    """unique with a static size, from array operations (JAX's _unique): a stable sort, a mask of
    each run's first element, and nonzero(mask, size=size) to take those."""
    n = flat.shape[0]
    if n == 0 and size and fill_value is None:
        raise ValueError("unique: an empty input with size > 0 needs fill_value")
    perm = fnp.argsort(flat, stable=True)
    ordered = fnp.take(flat, perm)
    if n:
        starts = fnp.not_equal(ordered[1:], ordered[:-1])
        if equal_nan and dtypes.is_inexact(flat.dtype):
            starts = starts & ~(fnp.isnan(ordered[1:]) & fnp.isnan(ordered[:-1]))
        mask = fnp.concatenate([fnp.ones((1,), dtypes.bool_, device=flat.device), starts])
        first = nonzero(mask, size=size)[0]
        values = fnp.take(ordered, first)
    else:
        mask, first = fnp.zeros((0,), dtypes.bool_, device=flat.device), fnp.zeros((size,), dtypes.int64)
        values = fnp.zeros((size,), flat.dtype, device=flat.device)
    if fill_value is not None:
        found = fnp.arange(size, device=flat.device) < fnp.sum(fnp.astype(mask, dtypes.int64))
        values = fnp.where(found, values, fnp.asarray(fill_value, flat.dtype))
    out = [values]
    if return_index:
        out.append(fnp.take(perm, first) if n else first)
    if return_inverse:
        group = fnp.cumsum(fnp.astype(mask, dtypes.int64)) - 1
        out.append(fnp.reshape(fnp.zeros((n,), dtypes.int64, device=flat.device).at[perm].set(group), shape))
    if return_counts:
        ends = nonzero(mask, size=size + 1)[0][1:] if n else fnp.zeros((size,), dtypes.int64)
        ends = fnp.where(ends > 0, ends, n)  # past the last run: n, so padded counts are 0
        starts_at = fnp.concatenate([first[:1] * 0, ends[:-1]])
        out.append(ends - starts_at)
    return out[0] if len(out) == 1 else tuple(out)


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False):
    element = fnp.asarray(element)
    tests = fnp.ravel(_beside(test_elements, element))
    found = fnp.any(fnp.equal(fnp.expand_dims(element, -1), tests), axis=-1)
    return ~found if invert else found


def _set_op(fn, *arrays, what: str, **kw):
    out = fn(*[_concrete(a, what) for a in arrays], **kw)
    return tuple(Array(part) for part in out) if isinstance(out, tuple) else Array(out)


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False):
    """The sorted common values; with return_indices also where each first occurs in ar1 and ar2."""
    return _set_op(np.intersect1d, ar1, ar2, what="intersect1d", assume_unique=assume_unique,
                   return_indices=return_indices)


def union1d(ar1, ar2):
    return _set_op(np.union1d, ar1, ar2, what="union1d")


def setdiff1d(ar1, ar2, assume_unique: bool = False):
    return _set_op(np.setdiff1d, ar1, ar2, what="setdiff1d", assume_unique=assume_unique)


def setxor1d(ar1, ar2, assume_unique: bool = False):
    return _set_op(np.setxor1d, ar1, ar2, what="setxor1d", assume_unique=assume_unique)


def trim_zeros(filt, trim: str = "fb"):
    values = _concrete(filt, "trim_zeros")
    nz = np.flatnonzero(values)
    start = nz[0] if ("f" in trim.lower() and nz.size) else (values.size if "f" in trim.lower() else 0)
    stop = nz[-1] + 1 if ("b" in trim.lower() and nz.size) else (0 if "b" in trim.lower() else values.size)
    return fnp.asarray(filt)[start:builtins.max(start, stop)]


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof: int | None = None, fweights=None,
        aweights=None):
    """Covariance matrix of the variables (rows, or columns with rowvar=False)."""
    x = atleast_2d(fnp._float_arg(m))
    if not rowvar and x.shape[0] != 1:
        x = fnp.transpose(x)
    if y is not None:
        y = atleast_2d(fnp._float_arg(y))
        if not rowvar and y.shape[0] != 1:
            y = fnp.transpose(y)
        x = fnp.concatenate(fnp._common((x, y)), axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    n = x.shape[1]
    w = None
    for name, given in (("fweights", fweights), ("aweights", aweights)):
        if given is not None and tuple(np.shape(given)) != (n,):
            raise ShapeError(f"cov: {name} of shape {tuple(np.shape(given))} for {n} observations (one weight each)")
    fweights, aweights = (None if v is None else fnp.astype(fnp._arrays(x, v)[1], x.dtype)
                          for v in (fweights, aweights))
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = fnp.mean(x, axis=1, keepdims=True)
        fact = float(n - ddof)
    else:
        w_sum = fnp.sum(w)
        avg = fnp.sum(x * w, axis=1, keepdims=True) / w_sum
        if aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * fnp.sum(w * aweights) / w_sum
    centered = x - avg
    weighted = centered if w is None else centered * w
    c = fnp.matmul(weighted, fnp.transpose(centered)) / fact
    return fnp.squeeze(c) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar: bool = True):
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    d = fnp.sqrt(diagonal(c))
    return fnp.clip(c / d[:, None] / d[None, :], -1, 1)

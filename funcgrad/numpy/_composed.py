"""The rest of jax.numpy's everyday surface, composed from the functions in funcgrad.numpy.

Nothing here binds a primitive of its own, so gradients, jit, vmap and the GPU come for free.
Functions whose output shape depends on the values (nonzero, unique, repeat with an array of
counts, ...) need concrete inputs, as in JAX: under jit they raise ConcretizationError, and
nonzero/argwhere/flatnonzero accept size= to stay traceable.
"""
from __future__ import annotations

import builtins
import functools
import math
import re
from typing import Sequence

import ml_dtypes
import numpy as np

from .. import dtypes
from ..array import Array, ArrayBase
from ..errors import ShapeError
from ..ops import prng
from ..trace import bind
from ..tree import tree_map
from ..vmap import vmap
from .. import numpy as fnp

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack", "column_stack", "row_stack", "concat",
    "append", "array_split", "hsplit", "vsplit", "dsplit", "diagonal", "diag", "diagflat", "trace", "diff",
    "ediff1d", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod", "isclose",
    "array_equal", "array_equiv", "logaddexp", "logaddexp2", "exp2", "cbrt", "copysign", "signbit",
    "deg2rad", "radians", "rad2deg", "degrees", "fabs", "fmax", "fmin", "fmod", "heaviside", "hypot",
    "float_power", "ldexp", "rint", "around", "fix", "sinc", "nan_to_num", "conj", "conjugate", "real", "imag",
    "angle", "iscomplexobj", "isreal", "isrealobj", "positive", "bitwise_not", "bitwise_invert", "nansum",
    "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanargmax", "nanargmin", "quantile",
    "percentile", "nanquantile", "nanpercentile", "median", "nanmedian", "average", "ptp", "count_nonzero",
    "meshgrid", "repeat", "tile", "roll", "rot90", "fliplr", "flipud", "searchsorted", "digitize",
    "bincount", "histogram", "cross", "kron", "cov", "corrcoef", "interp", "trapezoid", "polyval",
    "convolve", "correlate", "nonzero", "argwhere", "flatnonzero", "unique", "isin", "intersect1d",
    "union1d", "setdiff1d", "empty", "empty_like", "identity", "logspace", "geomspace", "indices",
    "tril_indices", "triu_indices", "diag_indices", "diag_indices_from", "tril_indices_from",
    "triu_indices_from", "unravel_index", "ravel_multi_index", "mgrid", "ogrid", "copy", "promote_types",
    "result_type", "can_cast", "finfo", "iinfo", "dtype", "isscalar", "issubdtype", "select", "choose",
    "piecewise", "compress", "extract", "delete", "resize", "block", "trim_zeros", "gcd", "lcm", "frexp",
    "matrix_transpose", "permute_dims", "vecdot", "fill_diagonal", "lexsort", "argpartition", "partition",
    "vectorize", "apply_along_axis", "ix_",
]


def _axis_index(ndim: int, axis: int, index) -> tuple:
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)


def _concrete(x, what: str) -> np.ndarray:
    """x's values on the host; inside jit this raises ConcretizationError naming `what`."""
    if isinstance(x, ArrayBase):
        x = fnp.device_put(x, "cpu") if x.device.platform != "cpu" else x
        try:
            return np.asarray(x)
        except Exception as e:  # ConcretizationError, re-raised with the function named
            raise type(e)(f"{what} needs concrete values (its output shape depends on them): {e}") from None
    return np.asarray(x)


def _beside(values, ref):
    """values as an Array on ref's device: constants the caller passes as lists or NumPy arrays
    (quantiles, test elements) follow the data, as index constants do."""
    return values if isinstance(values, ArrayBase) else fnp._placed(fnp.asarray(values), ref.device)


# ==== stacking and splitting ===========================================================================
def atleast_1d(*arys):
    out = [fnp.reshape(a, (1,)) if fnp.asarray(a).ndim == 0 else fnp.asarray(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        a = fnp.asarray(a)
        out.append(fnp.reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    out = []
    for a in arys:
        a = fnp.asarray(a)
        if a.ndim == 0:
            a = fnp.reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = fnp.reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = fnp.reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def _listed(arys, name: str) -> list:
    if isinstance(arys, ArrayBase) or not len(arys):
        raise ValueError(f"{name} needs a sequence of arrays")
    return list(arys)


def hstack(tup: Sequence, dtype=None):
    arrs = [atleast_1d(a) for a in _listed(tup, "hstack")]
    out = fnp.concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1)
    return out if dtype is None else fnp.astype(out, dtype)


def vstack(tup: Sequence, dtype=None):
    out = fnp.concatenate([atleast_2d(a) for a in _listed(tup, "vstack")], axis=0)
    return out if dtype is None else fnp.astype(out, dtype)


row_stack = vstack


def dstack(tup: Sequence, dtype=None):
    out = fnp.concatenate([atleast_3d(a) for a in _listed(tup, "dstack")], axis=2)
    return out if dtype is None else fnp.astype(out, dtype)


def column_stack(tup: Sequence):
    cols = []
    for a in _listed(tup, "column_stack"):
        a = fnp.asarray(a)
        cols.append(fnp.reshape(a, (-1, 1)) if a.ndim < 2 else a)
    return fnp.concatenate(cols, axis=1)


def concat(arrays: Sequence, /, *, axis: int | None = 0):
    return fnp.concatenate(arrays, axis=axis)


def append(arr, values, axis: int | None = None):
    if axis is None:
        return fnp.concatenate([fnp.ravel(arr), fnp.ravel(values)])
    return fnp.concatenate([arr, values], axis=axis)


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """Like split, but n sections need not divide the axis: the first ones get one more."""
    ary = fnp.asarray(ary)
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if n <= 0:
            raise ValueError(f"number of sections must be larger than 0, got {n}")
        length = ary.shape[fnp._normalize_axis(axis, ary.ndim)]
        each, extra = divmod(length, n)
        sizes = [each + 1] * extra + [each] * (n - extra)
        indices_or_sections = np.cumsum(sizes)[:-1].tolist()
    return fnp.split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections) -> list:
    ary = fnp.asarray(ary)
    if ary.ndim == 0:
        raise ShapeError("hsplit only works on arrays of 1 or more dimensions")
    return fnp.split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections) -> list:
    if fnp.asarray(ary).ndim < 2:
        raise ShapeError("vsplit only works on arrays of 2 or more dimensions")
    return fnp.split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections) -> list:
    if fnp.asarray(ary).ndim < 3:
        raise ShapeError("dsplit only works on arrays of 3 or more dimensions")
    return fnp.split(ary, indices_or_sections, 2)


# ==== diagonals and differences ==========================================================================
def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The offset diagonal of the (axis1, axis2) planes, as a new last axis (NumPy's layout)."""
    a = fnp.asarray(a)
    if a.ndim < 2:
        raise ShapeError(f"diagonal needs an array of rank >= 2, got shape {a.shape}")
    a1, a2 = fnp._normalize_axis(axis1, a.ndim), fnp._normalize_axis(axis2, a.ndim)
    if a1 == a2:
        raise ShapeError(f"diagonal: axis1 and axis2 cannot be the same axis ({axis1})")
    a = fnp.moveaxis(a, (a1, a2), (-2, -1))
    rows, cols = a.shape[-2], a.shape[-1]
    n = builtins.max(0, builtins.min(rows + builtins.min(offset, 0), cols - builtins.max(offset, 0)))
    i = np.arange(n) + builtins.max(-offset, 0)
    return a[..., i, i + offset]


def diag(v, k: int = 0):
    """A 1-D v becomes a square matrix with v on diagonal k; a 2-D v gives its diagonal k."""
    v = fnp.asarray(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ShapeError(f"diag needs a 1-D or 2-D array, got shape {v.shape}")
    n = v.shape[0] + builtins.abs(k)
    i = np.arange(v.shape[0])
    rows, cols = i + builtins.max(-k, 0), i + builtins.max(k, 0)
    return fnp.zeros((n, n), v.dtype, device=v.device).at[rows, cols].set(v)


def diagflat(v, k: int = 0):
    return diag(fnp.ravel(v), k)


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None):
    return fnp.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """n-th discrete difference along axis (booleans: not-equal, as NumPy)."""
    a = fnp.asarray(a)
    if n < 0:
        raise ValueError(f"diff order must be non-negative, got {n}")
    if a.ndim == 0:
        raise ShapeError("diff needs an array of rank >= 1")
    axis = fnp._normalize_axis(axis, a.ndim)

    def edge(values):
        e = fnp.asarray(values)
        return fnp.broadcast_to(e, a.shape[:axis] + (1,) + a.shape[axis + 1:]) if e.ndim == 0 else e
    parts = ([edge(prepend)] if prepend is not None else []) + [a] + ([edge(append)] if append is not None else [])
    a = fnp.concatenate(parts, axis=axis) if len(parts) > 1 else a
    for _ in range(n):
        hi, lo = a[_axis_index(a.ndim, axis, slice(1, None))], a[_axis_index(a.ndim, axis, slice(None, -1))]
        a = fnp.not_equal(hi, lo) if a.dtype == dtypes.bool_ else fnp.subtract(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    out = diff(fnp.ravel(ary))
    pieces = ([fnp.ravel(to_begin)] if to_begin is not None else []) + [out] + \
        ([fnp.ravel(to_end)] if to_end is not None else [])
    return fnp.concatenate(pieces) if len(pieces) > 1 else out


def _scan_axis(x, axis, dtype):
    x = fnp.asarray(x) if dtype is None else fnp.astype(x, dtype)
    if axis is None:
        return fnp.ravel(x), 0
    return x, fnp._normalize_axis(axis, x.ndim)


def cumprod(a, axis: int | None = None, dtype=None):
    """Running product: each output is the product of a masked row, so zeros differentiate exactly
    (O(n^2) work along the axis)."""
    x, axis = _scan_axis(a, axis, dtype)
    if x.dtype == dtypes.bool_:
        x = fnp.astype(x, dtypes.default_int)
    moved = fnp.moveaxis(x, axis, -1)
    n = moved.shape[-1]
    mask = fnp.tri(n, n, device=moved.device)  # row i keeps entries j <= i
    rows = fnp.where(mask, fnp.expand_dims(moved, -2), np.ones((), moved.dtype))
    return fnp.moveaxis(fnp.prod(rows, axis=-1), -1, axis)


def _cumulative(fn, x, axis, dtype, include_initial, initial):
    x = fnp.asarray(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"axis is required for arrays of rank > 1 (got shape {x.shape})")
        axis = 0
    out = fn(x, axis=axis, dtype=dtype)
    if include_initial:
        axis = fnp._normalize_axis(axis, x.ndim)
        start = fnp.full(out.shape[:axis] + (1,) + out.shape[axis + 1:], initial, out.dtype, device=out.device)
        out = fnp.concatenate([start, out], axis=axis)
    return out


def cumulative_sum(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
    return _cumulative(fnp.cumsum, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
    return _cumulative(cumprod, x, axis, dtype, include_initial, 1)


def nancumsum(a, axis: int | None = None, dtype=None):
    a = fnp.asarray(a)
    return fnp.cumsum(_nan_filled(a, 0), axis=axis, dtype=dtype)


def nancumprod(a, axis: int | None = None, dtype=None):
    return cumprod(_nan_filled(fnp.asarray(a), 1), axis=axis, dtype=dtype)


# ==== elementwise ======================================================================================
def isclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    a, b = fnp._pair(a, b)
    a, b = fnp.asarray(a), fnp.asarray(b)
    if not dtypes.is_float(a.dtype):
        return fnp.equal(a, b)
    close = fnp.less_equal(fnp.abs(a - b), atol + rtol * fnp.abs(b)) & fnp.isfinite(b)
    close = close | fnp.equal(a, b)
    return close | (fnp.isnan(a) & fnp.isnan(b)) if equal_nan else close


def array_equal(a1, a2, equal_nan: bool = False):
    a1, a2 = fnp.asarray(a1), fnp.asarray(a2)
    if a1.shape != a2.shape:
        return fnp.asarray(False)
    same = fnp.equal(a1, a2)
    if equal_nan and dtypes.is_float(a1.dtype):
        same = same | (fnp.isnan(a1) & fnp.isnan(a2))
    return fnp.all(same)


def array_equiv(a1, a2):
    a1, a2 = fnp.asarray(a1), fnp.asarray(a2)
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return fnp.asarray(False)
    return fnp.all(fnp.equal(a1, a2))


def _log_add(x1, x2, exp, log_scale: float):
    """top + log(1 + base**(bottom - top)): no overflow, and infinite tops pass through without
    an inf - inf."""
    x1, x2 = fnp._pair(fnp._float_arg(x1), x2)
    x1, x2 = fnp.asarray(x1), fnp._float_arg(x2)
    top, bottom = fnp.maximum(x1, x2), fnp.minimum(x1, x2)
    infinite = fnp.isinf(top)
    finite_top = fnp.where(infinite, np.zeros((), top.dtype), top)
    return fnp.where(infinite, top, top + fnp.log1p(exp(bottom - finite_top)) / log_scale)


def logaddexp(x1, x2):
    """log(exp(x1) + exp(x2)) without overflow."""
    return _log_add(x1, x2, fnp.exp, 1.0)


def logaddexp2(x1, x2):
    return _log_add(x1, x2, exp2, math.log(2))


def exp2(x):
    x = fnp._float_arg(x)
    return fnp.power(np.asarray(2, x.dtype), x)


def cbrt(x):
    x = fnp._float_arg(x)
    return fnp.sign(x) * fnp.power(fnp.abs(x), 1.0 / 3.0)


def signbit(x):
    """True where the sign bit is set, -0.0 included (read from the bits)."""
    x = fnp.asarray(x)
    if dtypes.is_float(x.dtype):
        as_int = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[x.dtype.itemsize]
        return fnp.less(bind(prng.bitcast_p, x, dtype=as_int), 0)
    return fnp.less(x, 0) if x.dtype.kind == "i" else fnp.zeros(x.shape, dtypes.bool_, device=x.device)


def copysign(x1, x2):
    x1 = fnp._float_arg(x1)
    return fnp.where(signbit(fnp.asarray(x2)), -fnp.abs(x1), fnp.abs(x1))


def deg2rad(x):
    return fnp.multiply(fnp._float_arg(x), math.pi / 180)


def rad2deg(x):
    return fnp.multiply(fnp._float_arg(x), 180 / math.pi)


radians, degrees = deg2rad, rad2deg


def fabs(x):
    return fnp.abs(fnp._float_arg(x))


def fmax(x1, x2):
    """maximum that ignores a NaN when the other operand is a number."""
    x1, x2 = fnp._pair(x1, x2)
    x1, x2 = fnp.asarray(x1), fnp.asarray(x2)
    return fnp.where(fnp.isnan(x2), x1, fnp.where(fnp.isnan(x1), x2, fnp.maximum(x1, x2)))


def fmin(x1, x2):
    x1, x2 = fnp._pair(x1, x2)
    x1, x2 = fnp.asarray(x1), fnp.asarray(x2)
    return fnp.where(fnp.isnan(x2), x1, fnp.where(fnp.isnan(x1), x2, fnp.minimum(x1, x2)))


def fmod(x1, x2):
    """C's fmod: the remainder takes the sign of the dividend (remainder takes the divisor's)."""
    x1, x2 = fnp._pair(x1, x2)
    rem = fnp.remainder(x1, x2)
    flip = fnp.not_equal(rem, 0) & fnp.not_equal(signbit(fnp.asarray(x1)), signbit(fnp.asarray(x2)))
    return fnp.where(flip, rem - x2, rem)


def heaviside(x1, x2):
    x1 = fnp._float_arg(x1)
    x1, x2 = fnp._pair(x1, x2)
    step = fnp.where(fnp.less(x1, 0), np.zeros((), x1.dtype), np.ones((), x1.dtype))
    return fnp.where(fnp.isnan(x1), x1, fnp.where(fnp.equal(x1, 0), x2, step))


def hypot(x1, x2):
    """sqrt(x1^2 + x2^2), scaled by the larger magnitude so it neither overflows nor underflows."""
    x1, x2 = fnp._pair(fnp._float_arg(x1), x2)
    a, b = fnp.abs(fnp.asarray(x1)), fnp.abs(fnp._float_arg(x2))
    big, small = fnp.maximum(a, b), fnp.minimum(a, b)
    safe = fnp.where(fnp.equal(big, 0), np.ones((), big.dtype), big)
    ratio = small / safe
    out = big * fnp.sqrt(1 + ratio * ratio)
    return fnp.where(fnp.isinf(a) | fnp.isinf(b), np.asarray(np.inf, big.dtype), out)


def float_power(x1, x2):
    return fnp.power(fnp.astype(x1, dtypes.float64), fnp.astype(x2, dtypes.float64))


def ldexp(x1, x2):
    x1 = fnp._float_arg(x1)
    return x1 * exp2(fnp.astype(x2, x1.dtype))


def rint(x):
    return fnp.round(fnp._float_arg(x))


def around(a, decimals: int = 0):
    return fnp.round(a, decimals)


def fix(x):
    return fnp.trunc(fnp._float_arg(x))


def sinc(x):
    """sin(pi x) / (pi x), 1 at 0 (and a zero derivative there)."""
    x = fnp._float_arg(x)
    zero = fnp.equal(x, 0)
    y = math.pi * fnp.where(zero, np.ones((), x.dtype), x)
    return fnp.where(zero, np.ones((), x.dtype), fnp.sin(y) / y)


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
    x = fnp.asarray(x)
    if not dtypes.is_float(x.dtype):
        return x
    info = finfo(x.dtype)
    x = fnp.where(fnp.isnan(x), np.asarray(nan, x.dtype), x)
    x = fnp.where(fnp.isinf(x) & (x > 0), np.asarray(info.max if posinf is None else posinf, x.dtype), x)
    return fnp.where(fnp.isinf(x) & (x < 0), np.asarray(info.min if neginf is None else neginf, x.dtype), x)


def conj(x):
    """Arrays are real here: the conjugate is x itself (complex dtypes are not supported)."""
    return fnp.asarray(x)


conjugate = real = conj


def imag(x):
    x = fnp.asarray(x)
    return fnp.zeros(x.shape, x.dtype, device=x.device)


def angle(z, deg: bool = False):
    z = fnp._float_arg(z)
    out = fnp.where(fnp.less(z, 0), np.asarray(180.0 if deg else math.pi, z.dtype), np.zeros((), z.dtype))
    return out


def iscomplexobj(x) -> bool:
    return False


def isrealobj(x) -> bool:
    return True


def isreal(x):
    x = fnp.asarray(x)
    return fnp.ones(x.shape, dtypes.bool_, device=x.device)


def positive(x):
    return fnp.asarray(x)


def bitwise_not(x):
    return fnp.invert(x)


bitwise_invert = bitwise_not


# ==== NaN-aware reductions ================================================================================
def _nan_filled(a, value):
    return fnp.where(fnp.isnan(a), np.asarray(value, a.dtype), a) if dtypes.is_float(a.dtype) else a


def _nan_count(a, axis, keepdims):
    return fnp.sum(~fnp.isnan(a), axis=axis, keepdims=keepdims)


def nansum(a, axis=None, dtype=None, keepdims: bool = False):
    return fnp.sum(_nan_filled(fnp.asarray(a), 0), axis=axis, keepdims=keepdims, dtype=dtype)


def nanprod(a, axis=None, dtype=None, keepdims: bool = False):
    return fnp.prod(_nan_filled(fnp.asarray(a), 1), axis=axis, keepdims=keepdims, dtype=dtype)


def nanmean(a, axis=None, dtype=None, keepdims: bool = False):
    a = fnp._float_arg(a) if dtype is None else fnp.astype(a, dtype)
    return nansum(a, axis, keepdims=keepdims) / _nan_count(a, axis, keepdims)


def nanvar(a, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False):
    a = fnp._float_arg(a) if dtype is None else fnp.astype(a, dtype)
    centered = a - nanmean(a, axis, keepdims=True)
    count = _nan_count(a, axis, keepdims)
    return nansum(centered * centered, axis, keepdims=keepdims) / fnp.maximum(count - ddof, 0)


def nanstd(a, axis=None, dtype=None, ddof: int = 0, keepdims: bool = False):
    return fnp.sqrt(nanvar(a, axis, dtype, ddof, keepdims))


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


# ==== order statistics ========================================================================================
_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile(a, q, axis, method, keepdims, ignore_nan):
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"quantile method must be one of {_QUANTILE_METHODS}, got {method!r}")
    a = fnp._float_arg(a)
    q = fnp.astype(_beside(q, a), a.dtype)
    concrete_q = fnp.concrete_or_none(q)
    if concrete_q is not None and ((concrete_q < 0) | (concrete_q > 1)).any():
        raise ValueError(f"quantiles must be in the range [0, 1], got {concrete_q}")
    axes = fnp._axes(axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    x = fnp.transpose(a, kept + list(axes))
    x = fnp.reshape(x, x.shape[:len(kept)] + (-1,))
    n = x.shape[-1]
    x = fnp.sort(x, axis=-1)  # NaN sorts last
    if ignore_nan:
        count = fnp.sum(~fnp.isnan(x), axis=-1, keepdims=True)
    else:
        count = fnp.full(x.shape[:-1] + (1,), n, dtypes.default_int, device=x.device)
    qs = fnp.reshape(q, q.shape + (1,) * (x.ndim - 1) + (1,))  # q axes lead, then the kept axes
    pos = qs * fnp.astype(fnp.maximum(count - 1, 0), a.dtype)
    lo = fnp.floor(pos)
    hi = fnp.ceil(pos)
    if method == "lower":
        hi = lo
    elif method == "higher":
        lo = hi
    elif method == "nearest":
        lo = hi = fnp.round(pos)
    frac = 0.5 if method == "midpoint" else pos - lo
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


def quantile(a, q, axis=None, method: str = "linear", keepdims: bool = False, *, interpolation=None):
    return _quantile(a, q, axis, interpolation or method, keepdims, ignore_nan=False)


def nanquantile(a, q, axis=None, method: str = "linear", keepdims: bool = False, *, interpolation=None):
    return _quantile(a, q, axis, interpolation or method, keepdims, ignore_nan=True)


def percentile(a, q, axis=None, method: str = "linear", keepdims: bool = False, *, interpolation=None):
    return quantile(a, fnp.divide(q, 100), axis, method, keepdims, interpolation=interpolation)


def nanpercentile(a, q, axis=None, method: str = "linear", keepdims: bool = False, *, interpolation=None):
    return nanquantile(a, fnp.divide(q, 100), axis, method, keepdims, interpolation=interpolation)


def median(a, axis=None, keepdims: bool = False):
    return quantile(a, 0.5, axis, keepdims=keepdims)


def nanmedian(a, axis=None, keepdims: bool = False):
    return nanquantile(a, 0.5, axis, keepdims=keepdims)


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    a = fnp._float_arg(a)
    if weights is None:
        avg = fnp.mean(a, axis, keepdims=keepdims)
        count = fnp.full(avg.shape, fnp.size(a) / builtins.max(fnp.size(avg), 1), avg.dtype, device=avg.device)
        return (avg, count) if returned else avg
    w = fnp.asarray(weights)
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


# ==== tiling and rearranging ======================================================================================
def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [fnp.ravel(x) for x in xi]
    n = len(xs)
    shapes = [[1] * n for _ in xs]
    for i, x in enumerate(xs):
        shapes[i][i] = x.shape[0]
    if indexing == "xy" and n >= 2:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    out = [fnp.reshape(x, tuple(s)) for x, s in zip(xs, shapes)]
    if sparse:
        return out
    full = tuple(builtins.max(s[d] for s in shapes) for d in range(n))
    return [fnp.broadcast_to(x, full) for x in out]


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    a = fnp.asarray(a)
    if axis is None:
        a, axis = fnp.ravel(a), 0
    axis = fnp._normalize_axis(axis, a.ndim)
    counts = _concrete(repeats, "repeat with array repeats")
    if (counts < 0).any():
        raise ValueError(f"repeat counts must be non-negative, got {counts}")
    source = np.repeat(np.arange(a.shape[axis]), np.broadcast_to(counts, (a.shape[axis],)))
    if total_repeat_length is not None:
        source = np.resize(source, total_repeat_length) if source.size else np.zeros(0, np.int64)
    return fnp.take(a, source, axis=axis)


def tile(A, reps):
    A = fnp.asarray(A)
    reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
    d = builtins.max(A.ndim, len(reps))
    reps = (1,) * (d - len(reps)) + reps
    A = fnp.reshape(A, (1,) * (d - A.ndim) + A.shape)
    spread = fnp.broadcast_to(fnp.reshape(A, tuple(v for n in A.shape for v in (1, n))),
                              tuple(v for r, n in zip(reps, A.shape) for v in (r, n)))
    return fnp.reshape(spread, tuple(r * n for r, n in zip(reps, A.shape)))


def roll(a, shift, axis=None):
    a = fnp.asarray(a)
    if axis is None:
        return fnp.reshape(roll(fnp.ravel(a), shift, 0), a.shape)
    shifts, axes = np.broadcast_arrays(np.atleast_1d(shift), np.atleast_1d(axis))
    for s, ax in zip(shifts.tolist(), axes.tolist()):
        ax = fnp._normalize_axis(ax, a.ndim)
        n = a.shape[ax]
        if n:
            a = fnp.take(a, (np.arange(n) - s) % n, axis=ax)
    return a


def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
    m = fnp.asarray(m)
    if len(axes) != 2:
        raise ValueError(f"rot90 needs exactly two axes, got {axes}")
    a0, a1 = (fnp._normalize_axis(a, m.ndim) for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90 axes must differ, got {axes}")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return fnp.flip(fnp.flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return fnp.transpose(fnp.flip(m, a1), perm) if k == 1 else fnp.flip(fnp.transpose(m, perm), a1)


def fliplr(m):
    if fnp.asarray(m).ndim < 2:
        raise ShapeError("fliplr needs an array of rank >= 2")
    return fnp.flip(m, 1)


def flipud(m):
    if fnp.asarray(m).ndim < 1:
        raise ShapeError("flipud needs an array of rank >= 1")
    return fnp.flip(m, 0)


def matrix_transpose(x, /):
    x = fnp.asarray(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose needs an array of rank >= 2, got shape {x.shape}")
    return fnp.swapaxes(x, -1, -2)


def permute_dims(a, /, axes: Sequence[int]):
    return fnp.transpose(a, axes)


def vecdot(x1, x2, /, *, axis: int = -1):
    return fnp.sum(fnp.multiply(x1, x2), axis=axis)


# ==== searching and counting ====================================================================================
def searchsorted(a, v, side: str = "left", sorter=None):
    """Insertion points of v in the sorted 1-D a; traceable (it counts comparisons)."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a = fnp.asarray(a)
    if a.ndim != 1:
        raise ShapeError(f"searchsorted needs a 1-D sorted array, got shape {a.shape}")
    if sorter is not None:
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
    w = fnp.ones(x.shape, dtypes.default_int, device=x.device) if weights is None else fnp.asarray(weights)
    return fnp.zeros((length,), w.dtype, device=w.device).at[x].add(w)


def histogram(a, bins=10, range=None, weights=None, density: bool = False):  # noqa: A002
    """(counts, bin edges); the last bin includes its right edge, as NumPy."""
    a = fnp.ravel(fnp._float_arg(a))
    if np.ndim(bins) == 0:
        if range is None:
            lo, hi = (fnp.min(a), fnp.max(a)) if a.shape[0] else (fnp.asarray(0.0, a.dtype), fnp.asarray(1.0, a.dtype))
        else:
            lo, hi = (fnp.asarray(float(v), a.dtype) for v in range)
        same = hi == lo  # NumPy widens an empty range by half a unit each way
        lo, hi = fnp.where(same, lo - 0.5, lo), fnp.where(same, hi + 0.5, hi)
        edges = lo + (hi - lo) * fnp.linspace(0, 1, int(bins) + 1, dtype=a.dtype, device=a.device)
    else:
        edges = fnp.astype(_beside(bins, a), a.dtype)
    n = edges.shape[0] - 1
    idx = searchsorted(edges, a, side="right") - 1
    idx = fnp.where(a == edges[-1], n - 1, idx)
    inside = (a >= edges[0]) & (a <= edges[-1])
    w = fnp.ones(a.shape, a.dtype, device=a.device) if weights is None else fnp.ravel(fnp.asarray(weights))
    counts = fnp.zeros((n,), w.dtype, device=w.device).at[fnp.where(inside, idx, 0)].add(
        fnp.where(inside, w, np.zeros((), w.dtype)))
    if density:
        counts = counts / (fnp.sum(counts) * diff(edges))
    return counts, edges


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
           axis: int | None = None, *, equal_nan: bool = True):
    values = _concrete(ar, "unique")
    out = np.unique(values, return_index=return_index, return_inverse=return_inverse, return_counts=return_counts,
                    axis=axis, equal_nan=equal_nan)
    if isinstance(out, tuple):
        return tuple(Array(o) for o in out)
    return Array(out)


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False):
    element = fnp.asarray(element)
    tests = fnp.ravel(_beside(test_elements, element))
    found = fnp.any(fnp.equal(fnp.expand_dims(element, -1), tests), axis=-1)
    return ~found if invert else found


def _set_op(fn, *arrays, what: str, **kw):
    return Array(fn(*[_concrete(a, what) for a in arrays], **kw))


def intersect1d(ar1, ar2, assume_unique: bool = False):
    return _set_op(np.intersect1d, ar1, ar2, what="intersect1d", assume_unique=assume_unique)


def union1d(ar1, ar2):
    return _set_op(np.union1d, ar1, ar2, what="union1d")


def setdiff1d(ar1, ar2, assume_unique: bool = False):
    return _set_op(np.setdiff1d, ar1, ar2, what="setdiff1d", assume_unique=assume_unique)


def trim_zeros(filt, trim: str = "fb"):
    values = _concrete(filt, "trim_zeros")
    nz = np.flatnonzero(values)
    start = nz[0] if ("f" in trim.lower() and nz.size) else (values.size if "f" in trim.lower() else 0)
    stop = nz[-1] + 1 if ("b" in trim.lower() and nz.size) else (0 if "b" in trim.lower() else values.size)
    return fnp.asarray(filt)[start:builtins.max(start, stop)]


# ==== products and signal helpers ==================================================================================
def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """Cross product of 3-vectors (or 2-vectors, giving the z component) along the given axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = fnp._common((a, b))
    a, b = fnp.moveaxis(a, axisa, -1), fnp.moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ShapeError(f"cross needs vectors of length 2 or 3, got {a.shape[-1]} and {b.shape[-1]}")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else None
    b2 = b[..., 2] if b.shape[-1] == 3 else None
    z = a0 * b1 - a1 * b0
    if a2 is None and b2 is None:
        return z
    a2 = fnp.zeros_like(a0) if a2 is None else a2
    b2 = fnp.zeros_like(b0) if b2 is None else b2
    out = fnp.stack(fnp.broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z), axis=-1)
    return fnp.moveaxis(out, -1, axisc)


def kron(a, b):
    a, b = fnp._common((a, b))
    nd = builtins.max(a.ndim, b.ndim)
    a = fnp.reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = fnp.reshape(b, (1,) * (nd - b.ndim) + b.shape)
    a2 = fnp.reshape(a, tuple(v for n in a.shape for v in (n, 1)))
    b2 = fnp.reshape(b, tuple(v for n in b.shape for v in (1, n)))
    return fnp.reshape(a2 * b2, tuple(m * n for m, n in zip(a.shape, b.shape)))


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
    if fweights is not None:
        w = fnp.astype(fweights, x.dtype)
    if aweights is not None:
        w = fnp.astype(aweights, x.dtype) if w is None else w * fnp.astype(aweights, x.dtype)
    if w is None:
        avg = fnp.mean(x, axis=1, keepdims=True)
        fact = float(n - ddof)
    else:
        w_sum = fnp.sum(w)
        avg = fnp.sum(x * w, axis=1, keepdims=True) / w_sum
        if aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * fnp.sum(w * fnp.astype(aweights, x.dtype)) / w_sum
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


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation (differentiable in x and fp)."""
    x = fnp._float_arg(x)
    xp, fp = fnp._float_arg(xp), fnp._float_arg(fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape:
        raise ShapeError(f"interp needs 1-D xp and fp of one length, got {xp.shape} and {fp.shape}")
    if period is not None:
        if period == 0:
            raise ValueError("interp period must be non-zero")
        period = builtins.abs(period)
        x = fnp.remainder(x, period)
        xp = fnp.remainder(xp, period)
        order = fnp.argsort(xp)
        xp, fp = fnp.take(xp, order), fnp.take(fp, order)
        xp = fnp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = fnp.concatenate([fp[-1:], fp, fp[:1]])
    n = xp.shape[0]
    i = fnp.clip(searchsorted(xp, x, side="right"), 1, n - 1)
    x0, x1 = fnp.take(xp, i - 1), fnp.take(xp, i)
    y0, y1 = fnp.take(fp, i - 1), fnp.take(fp, i)
    span = x1 - x0
    t = (x - x0) / fnp.where(span == 0, np.ones((), span.dtype), span)
    out = fnp.where(span == 0, y1, y0 + t * (y1 - y0))
    if period is None:
        out = fnp.where(x < xp[0], fp[0] if left is None else left, out)
        out = fnp.where(x > xp[-1], fp[-1] if right is None else right, out)
    return out


def trapezoid(y, x=None, dx: float = 1.0, axis: int = -1):
    y = fnp._float_arg(y)
    axis = fnp._normalize_axis(axis, y.ndim)
    hi, lo = y[_axis_index(y.ndim, axis, slice(1, None))], y[_axis_index(y.ndim, axis, slice(None, -1))]
    if x is None:
        d = dx
    else:
        x = fnp._float_arg(x)
        d = diff(x) if x.ndim == 1 else diff(x, axis=axis)
        if x.ndim == 1:
            d = fnp.reshape(d, (1,) * axis + (-1,) + (1,) * (y.ndim - axis - 1))
    return fnp.sum(d * (hi + lo) / 2.0, axis=axis)


def polyval(p, x):
    """Horner's rule: p[0] * x**(n-1) + ... + p[n-1]."""
    p = fnp.asarray(p)
    x = fnp.asarray(x)
    out = fnp.zeros_like(x) if not p.shape[0] else p[0] * fnp.ones_like(x)
    for i in builtins.range(1, p.shape[0]):
        out = out * x + p[i]
    return out


def correlate(a, v, mode: str = "valid"):
    """1-D cross-correlation: c[k] = sum_n a[n + k] * v[n] (NumPy's modes)."""
    a, v = fnp._common((a, v))
    if a.ndim != 1 or v.ndim != 1:
        raise ShapeError(f"correlate needs 1-D arrays, got shapes {a.shape} and {v.shape}")
    n, m = a.shape[0], v.shape[0]
    if not n or not m:
        raise ValueError("correlate: inputs cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be 'full', 'same' or 'valid', got {mode!r}")
    padded = fnp.pad(a, (m - 1, m - 1))
    windows = fnp.take(padded, np.arange(n + m - 1)[:, None] + np.arange(m)[None, :])
    full = fnp.matmul(windows, v)
    if mode == "full":
        return full
    if mode == "valid":
        start, length = builtins.min(n, m) - 1, builtins.max(n, m) - builtins.min(n, m) + 1
    else:
        length = builtins.max(n, m)
        start = (n + m - 1 - length) // 2 + ((n + m - 1 - length) % 2 if n < m else 0)
    return full[start:start + length]


def convolve(a, v, mode: str = "full"):
    v = fnp.asarray(v)
    if v.ndim != 1:
        raise ShapeError(f"convolve needs 1-D arrays, got shape {v.shape}")
    a = fnp.asarray(a)
    if a.ndim == 1 and v.shape[0] > a.shape[0]:
        a, v = v, a  # NumPy swaps, so 'valid' and 'same' follow the longer input
    return correlate(a, fnp.flip(v), mode)


# ==== constructors ===================================================================================================
def empty(shape, dtype=dtypes.float32, device=None):
    """Arrays are immutable, so 'uninitialised' memory would be unusable: zeros, as JAX."""
    return fnp.zeros(shape, dtype, device)


def empty_like(prototype, dtype=None, shape=None, device=None):
    prototype = fnp.asarray(prototype)
    return fnp.zeros(prototype.shape if shape is None else shape, dtype or prototype.dtype,
                     device if device is not None else prototype.device)


def identity(n: int, dtype=dtypes.float32, device=None):
    return fnp.eye(n, dtype=dtype, device=device)


def logspace(start, stop, num: int = 50, endpoint: bool = True, base: float = 10.0, dtype=dtypes.float32, axis: int = 0):
    return Array(np.logspace(start, stop, num, endpoint=endpoint, base=base, axis=axis).astype(dtypes.canonicalize(dtype)))


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=dtypes.float32, axis: int = 0):
    return Array(np.geomspace(start, stop, num, endpoint=endpoint, axis=axis).astype(dtypes.canonicalize(dtype)))


def indices(dimensions, dtype=dtypes.int64, sparse: bool = False):
    out = np.indices(tuple(dimensions), dtype=dtypes.canonicalize(dtype), sparse=sparse)
    return tuple(Array(o) for o in out) if sparse else Array(out)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    return tuple(Array(i.astype(np.int64)) for i in np.tril_indices(n, k, m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    return tuple(Array(i.astype(np.int64)) for i in np.triu_indices(n, k, m))


def tril_indices_from(arr, k: int = 0) -> tuple:
    shape = fnp.shape(arr)
    return tril_indices(shape[-2], k, shape[-1])


def triu_indices_from(arr, k: int = 0) -> tuple:
    shape = fnp.shape(arr)
    return triu_indices(shape[-2], k, shape[-1])


def diag_indices(n: int, ndim: int = 2) -> tuple:
    return tuple(Array(np.arange(n)) for _ in builtins.range(ndim))


def diag_indices_from(arr) -> tuple:
    shape = fnp.shape(arr)
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ShapeError(f"diag_indices_from needs an array of rank >= 2 with equal sides, got shape {shape}")
    return diag_indices(shape[0], len(shape))


def unravel_index(indices, shape) -> tuple:
    """The multi-index of flat indices into shape (traceable: divisions, not a lookup)."""
    idx = fnp.asarray(indices)
    concrete = fnp.concrete_or_none(idx)
    size = int(np.prod(shape, dtype=np.int64))
    if concrete is not None and concrete.size and (concrete.min() < -size or concrete.max() >= size):
        raise ValueError(f"index {concrete.max() if concrete.max() >= size else concrete.min()} is out of bounds "
                         f"for an array of size {size}")
    idx = fnp.where(idx < 0, idx + size, idx)
    out = []
    for n in reversed(tuple(shape)):
        out.append(fnp.remainder(idx, n) if n else idx)
        idx = fnp.floor_divide(idx, n) if n else idx
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C"):
    if order != "C":
        raise ValueError(f"ravel_multi_index supports order='C' only, got {order!r}")
    out = None
    for i, n in zip(multi_index, dims):
        i = fnp.asarray(i)
        concrete = fnp.concrete_or_none(i)
        if mode == "raise" and concrete is not None and concrete.size and (concrete.min() < 0 or concrete.max() >= n):
            raise ValueError(f"invalid entry in coordinates array: {concrete} for a dimension of size {n}")
        if mode == "clip":
            i = fnp.clip(i, 0, n - 1)
        elif mode == "wrap":
            i = fnp.remainder(i, n)
        out = i if out is None else out * n + i
    return out


class _Grid:
    """mgrid / ogrid: np.mgrid's slicing syntax, floats in the default float dtype."""

    def __init__(self, sparse: bool):
        self.sparse = sparse

    def __getitem__(self, key):
        grid = (np.ogrid if self.sparse else np.mgrid)[key]

        def convert(g):
            g = np.asarray(g)
            return Array(g.astype(dtypes.default_float) if g.dtype.kind == "f" else g.astype(dtypes.default_int))
        return [convert(g) for g in grid] if isinstance(grid, (list, tuple)) else convert(grid)


mgrid, ogrid = _Grid(False), _Grid(True)


def copy(a, order: str = "K"):
    return fnp.array(a)


# ==== dtypes ============================================================================================================
def promote_types(type1, type2) -> np.dtype:
    return dtypes.promote(dtypes.canonicalize(type1), dtypes.canonicalize(type2))


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype binary operations on these would give (Python scalars are weak)."""
    out = None
    for x in arrays_and_dtypes:
        if isinstance(x, (bool, int, float)):
            continue
        d = fnp.asarray(x).dtype if not isinstance(x, (np.dtype, type, str)) else dtypes.canonicalize(x)
        out = d if out is None else dtypes.promote(out, d)
    if out is None:
        scalars = [x for x in arrays_and_dtypes if isinstance(x, (bool, int, float))]
        return dtypes.scalar_dtype(scalars[-1]) if scalars else dtypes.default_float
    for x in arrays_and_dtypes:
        if isinstance(x, (bool, int, float)) and fnp._weak(x, out) is None:
            out = dtypes.promote(out, dtypes.scalar_dtype(x))
    return out


def can_cast(from_, to, casting: str = "safe") -> bool:
    return bool(np.can_cast(fnp.asarray(from_).dtype if isinstance(from_, ArrayBase) else from_,
                            dtypes.canonicalize(to), casting))


def finfo(dtype):
    """Machine limits of a float dtype, bfloat16 included (ml_dtypes' finfo)."""
    dt = fnp.asarray(dtype).dtype if isinstance(dtype, ArrayBase) else dtypes.canonicalize(dtype)
    return ml_dtypes.finfo(dt)


def iinfo(int_type):
    dt = fnp.asarray(int_type).dtype if isinstance(int_type, ArrayBase) else dtypes.canonicalize(int_type)
    return np.iinfo(dt)


def dtype(obj) -> np.dtype:
    return dtypes.canonicalize(obj)


def issubdtype(arg1, arg2) -> bool:
    """NumPy's issubdtype, with bfloat16 counted as a floating type (as in JAX)."""
    d = dtypes.canonicalize(arg1)
    if d in dtypes.low_precision and arg2 in (np.floating, np.inexact, np.number, np.generic):
        return True
    return bool(np.issubdtype(d, arg2))


def isscalar(element) -> bool:
    """Python and NumPy scalars, and 0-d arrays (JAX's rule)."""
    if isinstance(element, ArrayBase):
        return element.ndim == 0
    return bool(np.isscalar(element))


# ==== selection =========================================================================================================
def select(condlist: Sequence, choicelist: Sequence, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: {len(condlist)} conditions but {len(choicelist)} choices")
    if not len(condlist):
        raise ValueError("select needs at least one condition")
    out = default
    for cond, choice in zip(reversed(list(condlist)), reversed(list(choicelist))):
        out = fnp.where(cond, choice, out)
    return fnp.asarray(out)


def choose(a, choices: Sequence, mode: str = "raise"):
    a = fnp.asarray(a)
    n = len(choices)
    if mode == "raise":
        concrete = fnp.concrete_or_none(a)
        if concrete is not None and concrete.size and (concrete.min() < 0 or concrete.max() >= n):
            raise ValueError(f"choose: index {concrete.max() if concrete.max() >= n else concrete.min()} is out of "
                             f"range for {n} choices")
    elif mode == "wrap":
        a = fnp.remainder(a, n)
    elif mode == "clip":
        a = fnp.clip(a, 0, n - 1)
    else:
        raise ValueError(f"choose mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    return select([fnp.equal(a, i) for i in builtins.range(n)], list(choices), default=choices[0])


def piecewise(x, condlist, funclist, *args, **kw):
    """Each function (or constant) where its condition holds; an extra last function covers
    the rest. Functions see the whole array (results elsewhere are discarded)."""
    x = fnp.asarray(x)
    if isinstance(condlist, ArrayBase) and condlist.ndim == x.ndim or not isinstance(condlist, (list, tuple)):
        condlist = [condlist]
    conds = [fnp.astype(c, dtypes.bool_) for c in condlist]
    if len(funclist) == len(conds) + 1:
        otherwise = fnp.all(fnp.stack([~c for c in conds]), axis=0) if conds else fnp.ones(x.shape, dtypes.bool_)
        conds.append(otherwise)
    elif len(funclist) != len(conds):
        raise ValueError(f"piecewise: {len(funclist)} functions for {len(conds)} conditions "
                         f"(give one per condition, plus one optional default)")

    def value(f):
        return fnp.astype(f(x, *args, **kw), x.dtype) if callable(f) else fnp.full(x.shape, f, x.dtype)
    out = fnp.zeros(x.shape, x.dtype, device=x.device)
    for cond, f in zip(conds, funclist):
        out = fnp.where(cond, value(f), out)
    return out


def compress(condition, a, axis: int | None = None):
    keep = np.flatnonzero(_concrete(condition, "compress"))
    a = fnp.asarray(a)
    if axis is None:
        return fnp.take(fnp.ravel(a), keep)
    return fnp.take(a, keep, axis=axis)


def extract(condition, arr):
    return compress(fnp.ravel(condition), fnp.ravel(arr))


def delete(arr, obj, axis: int | None = None):
    arr = fnp.asarray(arr)
    if axis is None:
        arr, axis = fnp.ravel(arr), 0
    axis = fnp._normalize_axis(axis, arr.ndim)
    keep = np.delete(np.arange(arr.shape[axis]), _concrete(obj, "delete") if not isinstance(obj, slice) else obj)
    return fnp.take(arr, keep, axis=axis)


def resize(a, new_shape):
    a = fnp.ravel(a)
    shape = (int(new_shape),) if np.ndim(new_shape) == 0 else tuple(int(s) for s in new_shape)
    total = int(np.prod(shape, dtype=np.int64))
    if a.shape[0] == 0:
        return fnp.zeros(shape, a.dtype, device=a.device)
    return fnp.reshape(fnp.take(a, np.arange(total) % a.shape[0]), shape)


def block(arrays):
    """Assemble an array from nested lists of blocks (NumPy's block)."""
    def depth(x):
        if isinstance(x, list):
            if not x:
                raise ValueError("block: lists cannot be empty")
            depths = {depth(y) for y in x}
            if len(depths) != 1:
                raise ValueError("block: list depths are mismatched")
            return depths.pop() + 1
        if isinstance(x, tuple):
            raise TypeError("block: use lists, not tuples, to nest blocks")
        return 0

    list_depth = depth(arrays)

    def leaves(x):
        return [z for y in x for z in leaves(y)] if isinstance(x, list) else [fnp.asarray(x)]
    result_ndim = builtins.max([list_depth] + [leaf.ndim for leaf in leaves(arrays)])

    def build(x, level):
        if not isinstance(x, list):
            x = fnp.asarray(x)
            return fnp.reshape(x, (1,) * (result_ndim - x.ndim) + x.shape)
        return fnp.concatenate([build(y, level + 1) for y in x], axis=-(list_depth - level))
    return build(arrays, 0)


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """a with val on its main diagonal. Arrays are immutable, so, as in JAX, pass inplace=False."""
    if inplace:
        raise ValueError("fill_diagonal cannot work in place on immutable arrays; pass inplace=False and use "
                         "the returned array")
    a = fnp.asarray(a)
    if a.ndim < 2 or (a.ndim > 2 and len(set(a.shape)) != 1):
        raise ShapeError(f"fill_diagonal needs a 2-D array or one with equal sides, got shape {a.shape}")
    if a.ndim == 2:
        rows, cols = a.shape
        n = rows if wrap else builtins.min(rows, cols)
        flat = np.arange(0, n * cols, cols + 1) if wrap else np.arange(n) * (cols + 1)
        flat = flat[flat < rows * cols]
        values = fnp.ravel(fnp.asarray(val))
        values = fnp.take(values, np.arange(flat.size) % builtins.max(values.shape[0], 1))
        return fnp.reshape(fnp.ravel(a).at[flat].set(fnp.astype(values, a.dtype)), a.shape)
    idx = np.arange(a.shape[0])
    values = fnp.astype(fnp.broadcast_to(fnp.ravel(fnp.asarray(val))[:a.shape[0]] if fnp.size(val) > 1
                                         else fnp.asarray(val), (a.shape[0],)), a.dtype)
    return a.at[(idx,) * a.ndim].set(values)


# ==== integer helpers (values needed: Euclid's loop runs on the host) ============================================================
def gcd(x1, x2):
    a, b = _concrete(x1, "gcd"), _concrete(x2, "gcd")
    return Array(np.gcd(a, b))


def lcm(x1, x2):
    a, b = _concrete(x1, "lcm"), _concrete(x2, "lcm")
    return Array(np.lcm(a, b))


def frexp(x):
    mantissa, exponent = np.frexp(_concrete(fnp._float_arg(x), "frexp"))
    return Array(mantissa), Array(exponent.astype(np.int32))


# ==== mapping a function over arrays (through vmap) ==============================================================
def _parse_signature(signature: str):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    try:
        ins, outs = signature.replace(" ", "").split("->")
        parse = lambda part: [tuple(d for d in group.split(",") if d) for group in re.findall(r"\(([^)]*)\)", part)]  # noqa: E731
        return parse(ins), parse(outs)
    except ValueError:
        raise ValueError(f"invalid gufunc signature {signature!r}; expected e.g. '(m,n),(n)->(m)'") from None


def vectorize(pyfunc, *, excluded=frozenset(), signature: str | None = None):
    """jnp.vectorize: pyfunc mapped over the broadcast leading ("loop") axes of its arguments with
    vmap; signature names each argument's trailing core axes, e.g. '(n),(n)->()'."""
    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        fixed = {i: a for i, a in enumerate(args) if i in excluded}
        mapped = [fnp.asarray(a) for i, a in enumerate(args) if i not in excluded]
        cores = _parse_signature(signature)[0] if signature else [()] * len(mapped)
        if len(cores) != len(mapped):
            raise ValueError(f"vectorize: signature {signature!r} names {len(cores)} inputs, got {len(mapped)}")
        for a, core in zip(mapped, cores):
            if a.ndim < len(core):
                raise ShapeError(f"vectorize: an input of shape {a.shape} has fewer axes than its core dims {core}")
        loop_shape = np.broadcast_shapes(*[tuple(a.shape[:a.ndim - len(c)]) for a, c in zip(mapped, cores)])
        flat = [fnp.reshape(fnp.broadcast_to(a, loop_shape + tuple(a.shape[a.ndim - len(c):])),
                            (-1,) + tuple(a.shape[a.ndim - len(c):])) for a, c in zip(mapped, cores)]

        def call(*inner):
            it = iter(inner)
            full = [fixed[i] if i in fixed else next(it) for i in range(len(args))]
            return pyfunc(*full, **kwargs)
        count = int(np.prod(loop_shape, dtype=np.int64))
        if count == 0:
            raise ValueError("vectorize: the broadcast loop shape has no elements")
        out = vmap(call)(*flat)
        return tree_map(lambda o: fnp.reshape(o, loop_shape + tuple(o.shape[1:])), out)
    return wrapped


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """func1d applied to every 1-D slice of arr along axis (through vmap); the slice's result
    axes replace that axis, as in NumPy."""
    arr = fnp.asarray(arr)
    axis = fnp._normalize_axis(axis, arr.ndim)
    moved = fnp.moveaxis(arr, axis, -1)
    rows = fnp.reshape(moved, (-1, moved.shape[-1]))
    out = vmap(lambda row: fnp.asarray(func1d(row, *args, **kwargs)))(rows)
    out = fnp.reshape(out, moved.shape[:-1] + tuple(out.shape[1:]))
    result_axes = out.ndim - (arr.ndim - 1)
    return fnp.moveaxis(out, tuple(range(arr.ndim - 1, out.ndim)), tuple(range(axis, axis + result_axes))) \
        if result_axes else out


def ix_(*args) -> tuple:
    """Open-mesh index arrays from 1-D sequences (np.ix_)."""
    return tuple(Array(a) for a in np.ix_(*[_concrete(a, "ix_") for a in args]))

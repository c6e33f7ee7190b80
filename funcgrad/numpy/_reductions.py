"""Reductions over axes (sum, mean, var, max, argmax, logsumexp...) and cumulative sums."""
from __future__ import annotations

import builtins

import numpy as np

from ..errors import ShapeError
from ..ops import layout as Ly
from ..ops import reductions as R
from ..trace import bind
from ._creation import _axes, _float_arg, _normalize_axis, asarray, astype, autocast_to_float32
from ._elementwise import _abs_squared, divide, equal, multiply, sqrt, subtract, where
from ._layout import ravel, reshape

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "cumsum", "logsumexp", "max", "mean", "min", "prod",
    "std", "sum", "var",
]


def _reduce(prim, x, axis, keepdims):
    x = autocast_to_float32(asarray(x))
    return bind(prim, x, axes=_axes(axis, x.ndim), keepdims=bool(keepdims))


def sum(x, axis=None, keepdims: bool = False, dtype=None):  # noqa: A001
    """dtype, when given, is the result's (small integers otherwise widen, as NumPy's)."""
    return _reduce_as(Ly.sum_p, x, axis, keepdims, dtype)


def prod(x, axis=None, keepdims: bool = False, dtype=None):
    return _reduce_as(R.prod_p, x, axis, keepdims, dtype)


def _reduce_as(prim, x, axis, keepdims, dtype):
    x = asarray(x) if dtype is None else astype(x, dtype)
    return _as_given(_reduce(prim, x, axis, keepdims), dtype)


def _as_given(out, dtype):
    """out in the dtype the caller gave, if any: sums of small integers widen inside (NumPy's
    default), but dtype= names the result's."""
    return out if dtype is None or out.dtype == dtype else astype(out, dtype)


def max(x, axis=None, keepdims: bool = False):  # noqa: A001
    x = asarray(x)
    if x.size == 0 and (axis is None or builtins.any(x.shape[a] == 0 for a in _axes(axis, x.ndim))):
        raise ShapeError(f"max of an empty selection (shape {x.shape}) has no identity")
    return _reduce(R.max_p, x, axis, keepdims)


def min(x, axis=None, keepdims: bool = False):  # noqa: A001
    x = asarray(x)
    if x.size == 0 and (axis is None or builtins.any(x.shape[a] == 0 for a in _axes(axis, x.ndim))):
        raise ShapeError(f"min of an empty selection (shape {x.shape}) has no identity")
    return _reduce(R.min_p, x, axis, keepdims)


amax, amin = max, min


def all(x, axis=None, keepdims: bool = False):  # noqa: A001
    return _reduce(R.all_p, x, axis, keepdims)


def any(x, axis=None, keepdims: bool = False):  # noqa: A001
    return _reduce(R.any_p, x, axis, keepdims)


def _count(x, axes) -> int:
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def mean(x, axis=None, keepdims: bool = False, dtype=None):
    x = autocast_to_float32(_float_arg(x)) if dtype is None else astype(x, dtype)
    axes = _axes(axis, x.ndim)
    total = bind(Ly.sum_p, x, axes=axes, keepdims=bool(keepdims))
    n = _count(x, axes)
    return multiply(total, 1.0 / n) if n else divide(total, 0.0)


def var(x, axis=None, ddof: int = 0, keepdims: bool = False, correction=None, dtype=None):
    """Variance with NumPy's default ddof=0 (torch.var's default is correction=1); of complex
    numbers, the mean squared modulus of the deviations (a real array, as NumPy's)."""
    x = _float_arg(x if dtype is None else astype(x, dtype))
    ddof = ddof if correction is None else correction
    axes = _axes(axis, x.ndim)
    centered = subtract(x, mean(x, axes, keepdims=True))
    n = _count(x, axes)
    return divide(sum(_abs_squared(centered), axes, keepdims=keepdims), float(builtins.max(n - ddof, 0)))


def std(x, axis=None, ddof: int = 0, keepdims: bool = False, correction=None, dtype=None):
    """sqrt(var); where the variance is 0 (one element, equal elements) the gradient is 0, as
    PyTorch's, not sqrt's infinite slope times var's zero."""
    v = var(x, axis, ddof=ddof, keepdims=keepdims, correction=correction, dtype=dtype)
    zero = equal(v, 0)
    return where(zero, 0.0, sqrt(where(zero, 1.0, v)))


def logsumexp(x, axis=None, keepdims: bool = False):
    return _reduce(R.logsumexp_p, _float_arg(x), axis, keepdims)


def _arg_reduce(prim, x, axis, keepdims):
    x = asarray(x)
    if x.size == 0:
        raise ShapeError(f"{prim.name} of an empty array (shape {x.shape})")
    if axis is None:
        out = bind(prim, Ly.reshape_p(x, shape=(-1,)), axis=0, keepdims=False)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    return bind(prim, x, axis=_normalize_axis(axis, x.ndim), keepdims=bool(keepdims))


def argmax(x, axis=None, keepdims: bool = False):
    return _arg_reduce(R.argmax_p, x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False):
    return _arg_reduce(R.argmin_p, x, axis, keepdims)


def cumsum(x, axis=None, dtype=None):
    x = asarray(x) if dtype is None else astype(x, dtype)
    if axis is None:
        x, axis = ravel(x), 0
    return _as_given(bind(R.cumsum_p, x, axis=_normalize_axis(axis, x.ndim), reverse=False), dtype)

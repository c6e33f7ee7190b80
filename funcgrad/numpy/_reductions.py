"""Reductions over axes (sum, mean, var, max, argmax, logsumexp...) and cumulative sums."""
from __future__ import annotations

import builtins

import numpy as np

from ..errors import ShapeError
from ..ops import layout as Ly
from ..ops import reductions as R
from ..trace import bind
from ._creation import (_axes, _float_arg, _narrowed, _normalize_axis, _widened, asarray, astype, autocast_to_float32,
                        follow, full)
from ._elementwise import _abs_squared, add, divide, equal, maximum, minimum, multiply, sqrt, subtract
from ._elementwise import where as where_
from ._layout import broadcast_to, ravel, reshape

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "cumsum", "logsumexp", "max", "mean", "min", "prod",
    "std", "sum", "var",
]


def _reduce(prim, x, axis, keepdims):
    x = autocast_to_float32(asarray(x))
    return bind(prim, x, axes=_axes(axis, x.ndim), keepdims=bool(keepdims))


def _masked(x, mask, fill):
    """x where mask (NumPy's where=, broadcast to x's shape) holds, fill elsewhere: the elements a
    reduction leaves out become its identity."""
    return x if mask is None else where_(broadcast_to(asarray(follow(x, mask)[1]), x.shape), x, fill)


def sum(x, axis=None, keepdims: bool = False, dtype=None, initial=None, where=None):  # noqa: A001
    """dtype, when given, is the result's (small integers otherwise widen, as NumPy's); NumPy's
    initial (added) and where (the elements summed)."""
    out = _reduce_as(Ly.sum_p, x, axis, keepdims, dtype, where, 0)
    return out if initial is None else _as_given(add(out, initial), dtype)


def prod(x, axis=None, keepdims: bool = False, dtype=None, initial=None, where=None):
    out = _reduce_as(R.prod_p, x, axis, keepdims, dtype, where, 1)
    return out if initial is None else _as_given(multiply(out, initial), dtype)


def _reduce_as(prim, x, axis, keepdims, dtype, mask=None, identity=0):
    x = asarray(x) if dtype is None else astype(x, dtype)
    return _as_given(_reduce(prim, _masked(x, mask, identity), axis, keepdims), dtype)


def _as_given(out, dtype):
    """out in the dtype the caller gave, if any: sums of small integers widen inside (NumPy's
    default), but dtype= names the result's."""
    return out if dtype is None or out.dtype == dtype else astype(out, dtype)


def _extreme(prim, name: str, x, axis, keepdims, initial, mask):
    """max or min with NumPy's initial (a value every result is compared with, so an empty
    selection has one) and where (which, having no identity to fill in, needs initial)."""
    x = asarray(x)
    if mask is not None and initial is None:
        raise ValueError(f"{name} has no identity, so a where mask needs initial (NumPy's rule)")
    axes = _axes(axis, x.ndim)
    if initial is None:
        if x.size == 0 and builtins.any(x.shape[a] == 0 for a in axes):
            raise ShapeError(f"{name} of an empty selection (shape {x.shape}) has no identity; pass initial")
        return _reduce(prim, x, axes, keepdims)
    initial = np.asarray(initial).astype(x.dtype)
    if builtins.any(x.shape[a] == 0 for a in axes):  # nothing to compare: initial itself
        kept = tuple(1 if d in axes else n for d, n in enumerate(x.shape)) if keepdims else \
            tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return full(kept, initial, x.dtype, device=x.device)
    out = _reduce(prim, _masked(x, mask, initial), axes, keepdims)
    return maximum(out, initial) if name == "max" else minimum(out, initial)


def max(x, axis=None, keepdims: bool = False, initial=None, where=None):  # noqa: A001
    return _extreme(R.max_p, "max", x, axis, keepdims, initial, where)


def min(x, axis=None, keepdims: bool = False, initial=None, where=None):  # noqa: A001
    return _extreme(R.min_p, "min", x, axis, keepdims, initial, where)


amax, amin = max, min


def all(x, axis=None, keepdims: bool = False, where=None):  # noqa: A001
    return _reduce(R.all_p, _masked(asarray(x), where, True), axis, keepdims)


def any(x, axis=None, keepdims: bool = False, where=None):  # noqa: A001
    return _reduce(R.any_p, _masked(asarray(x), where, False), axis, keepdims)


def _count(x, axes) -> int:
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def mean(x, axis=None, keepdims: bool = False, dtype=None, where=None):
    """NumPy's where= averages the selected elements (NaN where none is)."""
    x = autocast_to_float32(_float_arg(x)) if dtype is None else astype(x, dtype)
    out_dtype, x = x.dtype, _widened(x)
    axes = _axes(axis, x.ndim)
    total = bind(Ly.sum_p, _masked(x, where, 0), axes=axes, keepdims=bool(keepdims))
    if where is not None:
        chosen = astype(broadcast_to(asarray(follow(x, where)[1]), x.shape), total.dtype)
        return _narrowed(divide(total, bind(Ly.sum_p, chosen, axes=axes, keepdims=bool(keepdims))), out_dtype)
    n = _count(x, axes)
    return _narrowed(multiply(total, 1.0 / n) if n else divide(total, 0.0), out_dtype)


def var(x, axis=None, ddof: int = 0, keepdims: bool = False, correction=None, dtype=None, where=None):
    """Variance with NumPy's default ddof=0 (torch.var's default is correction=1); of complex
    numbers, the mean squared modulus of the deviations (a real array, as NumPy's); where= as mean's."""
    x = _float_arg(x if dtype is None else astype(x, dtype))
    out_dtype, x = x.dtype, _widened(x)
    ddof = ddof if correction is None else correction
    axes = _axes(axis, x.ndim)
    # the left-out deviations are zeroed before squaring, so their NaN or inf gives no NaN gradient
    centered = _masked(subtract(x, mean(x, axes, keepdims=True, where=where)), where, 0)
    squares = sum(_abs_squared(centered), axes, keepdims=keepdims)
    if where is None:
        return _narrowed(divide(squares, float(builtins.max(_count(x, axes) - ddof, 0))), out_dtype)
    n = sum(broadcast_to(asarray(follow(x, where)[1]), x.shape), axes, keepdims=keepdims)
    return _narrowed(divide(squares, maximum(subtract(astype(n, squares.dtype), ddof), 0)), out_dtype)


def std(x, axis=None, ddof: int = 0, keepdims: bool = False, correction=None, dtype=None, where=None):
    """sqrt(var); where the variance is 0 (one element, equal elements) the gradient is 0, as
    PyTorch's, not sqrt's infinite slope times var's zero."""
    x = _float_arg(x if dtype is None else astype(x, dtype))
    v = var(_widened(x), axis, ddof=ddof, keepdims=keepdims, correction=correction, where=where)
    zero = equal(v, 0)
    return _narrowed(where_(zero, 0.0, sqrt(where_(zero, 1.0, v))), x.dtype)


def logsumexp(x, axis=None, keepdims: bool = False):
    return _reduce(R.logsumexp_p, _float_arg(x), axis, keepdims)


def _arg_reduce(prim, x, axis, keepdims):
    x = asarray(x)
    if x.size == 0 and (axis is None or x.shape[_normalize_axis(axis, x.ndim)] == 0):
        raise ShapeError(f"{prim.name} of an empty selection (shape {x.shape}, axis {axis}) has no answer")
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

"""fnp.linalg's norms: vector_norm, matrix_norm, norm (NumPy's dispatch on ord and axis) and cond.
Their gradients at 0 are 0 (PyTorch's), not the 0 / 0 of the formulas."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...errors import ShapeError
from .. import _base as fnp
from ._core import inv, svdvals

__all__ = ["norm", "vector_norm", "matrix_norm", "cond"]


def _safe_sqrt(s):
    """sqrt with a zero (not NaN) derivative at 0, as torch.linalg.norm."""
    return _at_zero_flat(s, fnp.sqrt)


def _at_zero_flat(s, power):
    """power(s) for s >= 0, with the value and derivative 0 where s is 0 (torch.linalg.norm's
    gradients: NaN or inf there otherwise, for roots and powers below 1)."""
    zero = fnp.equal(s, 0)
    return fnp.where(zero, np.zeros((), s.dtype), power(fnp.where(zero, np.ones((), s.dtype), s)))


def vector_norm(x, ord=2, axis=None, keepdims: bool = False):  # noqa: A002
    """NumPy's and the standard's vector norms; float16/bfloat16 ones are computed in float32 (the
    squares of a float16 vector of norm 500 overflow)."""
    x = fnp._float_arg(x)
    out = _vector_norm(fnp._widened(x), ord, axis, keepdims)
    return fnp._narrowed(out, x.dtype)


def _vector_norm(x, ord, axis, keepdims: bool):  # noqa: A002
    if axis is None:
        x, axis, shape = fnp.ravel(x), 0, x.shape
    else:
        shape = None
    mag = fnp.abs(x)
    if ord == 2:
        out = _safe_sqrt(fnp.sum(fnp._abs_squared(x), axis=axis, keepdims=keepdims))
    elif ord == np.inf:
        out = fnp.max(mag, axis=axis, keepdims=keepdims)
    elif ord == -np.inf:
        out = fnp.min(mag, axis=axis, keepdims=keepdims)
    elif ord == 0:
        out = fnp.astype(fnp.sum(fnp.not_equal(x, 0), axis=axis, keepdims=keepdims), x.dtype)
    elif ord == 1:
        out = fnp.sum(mag, axis=axis, keepdims=keepdims)
    elif isinstance(ord, str):
        raise ValueError(f"invalid norm order {ord!r} for vectors")
    else:
        out = _power_norm(mag, float(ord), axis, keepdims)
    if shape is not None and keepdims:
        out = fnp.reshape(out, (1,) * len(shape))
    return out


def _power_norm(mag, p: float, axis, keepdims: bool):
    """(sum |x|^p)^(1/p); for p > 0 with torch's zero gradient at zero entries and a zero norm (a
    negative p's norm is 0 where an entry is: |0|^p is inf)."""
    if p < 0:
        return fnp.power(fnp.sum(fnp.power(mag, p), axis=axis, keepdims=keepdims), 1.0 / p)
    powers = _at_zero_flat(mag, lambda m: fnp.power(m, p))
    return _at_zero_flat(fnp.sum(powers, axis=axis, keepdims=keepdims), lambda t: fnp.power(t, 1.0 / p))


def matrix_norm(x, ord="fro", keepdims: bool = False):  # noqa: A002
    x = fnp._float_arg(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm needs an array of rank >= 2, got shape {x.shape}")
    return _matrix_norm(x, ord, (x.ndim - 2, x.ndim - 1), keepdims)


def _matrix_norm(x, ord, axes, keepdims):  # noqa: A002
    if x.dtype in dtypes.low_precision:  # as vector_norm's
        return fnp._narrowed(_matrix_norm(fnp._widened(x), ord, axes, keepdims), x.dtype)
    row, col = axes
    if ord == "fro" or ord is None:
        out = _safe_sqrt(fnp.sum(fnp._abs_squared(x), axis=axes, keepdims=keepdims))
    elif ord in (1, -1):
        sums = fnp.sum(fnp.abs(x), axis=row, keepdims=True)
        out = (fnp.max if ord == 1 else fnp.min)(sums, axis=col, keepdims=True)
    elif ord in (np.inf, -np.inf):
        sums = fnp.sum(fnp.abs(x), axis=col, keepdims=True)
        out = (fnp.max if ord == np.inf else fnp.min)(sums, axis=row, keepdims=True)
    elif ord in (2, -2, "nuc"):
        moved = fnp.moveaxis(x, (row, col), (-2, -1))
        s = svdvals(moved)
        # the largest / smallest by max / min, whose gradient splits a tie evenly (PyTorch's amax / amin)
        out = fnp.max(s, axis=-1) if ord == 2 else fnp.min(s, axis=-1) if ord == -2 else fnp.sum(s, axis=-1)
        if keepdims:
            out = fnp.expand_dims(fnp.expand_dims(out, min(row, col)), max(row, col))
        return out
    else:
        raise ValueError(f"invalid norm order {ord!r} for matrices")
    if ord not in ("fro", None) and not keepdims:
        out = fnp.squeeze(out, axis=axes)
    return out


def norm(x, ord=None, axis=None, keepdims: bool = False):  # noqa: A002
    """NumPy's norm: the 2-norm of the flattened array by default; vector norms over one axis,
    matrix norms over two ('fro', 'nuc', 1, -1, 2, -2, inf, -inf). Its gradient at 0 is 0."""
    x = fnp._float_arg(x)
    if axis is None:
        if ord is None:
            out = vector_norm(x, 2, None, keepdims)
            return out
        if x.ndim == 1:
            return vector_norm(x, ord, 0, keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, ord, (0, 1), keepdims)
        raise ValueError(f"norm with ord={ord!r} needs a 1-D or 2-D array or an axis, got shape {x.shape}")
    if isinstance(axis, int) or np.ndim(axis) == 0 or len(axis) == 1:
        axis = int(axis if np.ndim(axis) == 0 else axis[0])
        return vector_norm(x, 2 if ord is None else ord, axis, keepdims)
    if len(axis) == 2:
        axes = tuple(fnp._normalize_axis(a, x.ndim) for a in axis)
        if axes[0] == axes[1]:
            raise ValueError(f"norm: duplicate axes {tuple(axis)}")
        return _matrix_norm(x, "fro" if ord is None else ord, axes, keepdims)
    raise ValueError(f"norm takes one or two axes, got {tuple(axis)}")


def cond(x, p=None):
    """Condition number: the ratio of the largest to the smallest singular value (p None or 2)."""
    if p not in (None, 2, -2):
        return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
    s = svdvals(x)
    return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]

"""Products and signal helpers (cross, kron, interp, convolve, gradient, ...) and mapping functions
over arrays (vectorize, apply_along_axis), through vmap."""
from __future__ import annotations

import builtins
import functools
import re

import numpy as np

from .. import dtypes
from . import _base as fnp
from ..array import Array
from ..errors import ShapeError
from ..tree import tree_map
from ..vmap import vmap
from ._shapes import diff
from ._statistics import searchsorted
from ._util import _axis_index, _concrete

__all__ = [
    "cross", "kron", "interp", "trapezoid", "polyval", "convolve", "correlate", "vectorize", "apply_along_axis",
    "ix_", "gradient",
]


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


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation (differentiable in x and fp)."""
    x, xp, fp = (fnp._float_arg(v) for v in fnp._arrays(x, xp, fp))
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
        x = fnp._float_arg(fnp._arrays(y, x)[1])
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
    """1-D cross-correlation: c[k] = sum_n a[n + k] * conj(v[n]) (NumPy's, modes too)."""
    a, v = fnp._common((a, v))
    return _sliding_products(a, fnp.conj(v) if dtypes.is_complex(v.dtype) else v, mode)


def _sliding_products(a, v, mode: str):
    """c[k] = sum_n a[n + k] * v[n], the k of NumPy's correlate modes."""
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
    a, v = fnp._arrays(a, v)
    if v.ndim != 1:
        raise ShapeError(f"convolve needs 1-D arrays, got shape {v.shape}")
    if a.ndim == 1 and v.shape[0] > a.shape[0]:
        a, v = v, a  # NumPy swaps, so 'valid' and 'same' follow the longer input
    a, v = fnp._common((a, v))
    return _sliding_products(a, fnp.flip(v), mode)


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


def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """NumPy's gradient: second-order central differences inside, first- or second-order one-sided
    differences at the ends; spacing per axis a scalar or the coordinates. One array for one axis,
    else a tuple (differentiable: it is slicing and arithmetic)."""
    f = fnp._float_arg(f)
    axes = tuple(range(f.ndim)) if axis is None else tuple(
        fnp._normalize_axis(a, f.ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"gradient: {len(varargs)} spacings given for {len(axes)} axes; give one, or one per axis")
    out = [_gradient_along(f, ax, h, edge_order) for ax, h in zip(axes, spacings)]
    return out[0] if len(out) == 1 else tuple(out)


def _gradient_along(f, ax: int, h, edge_order: int):
    n = f.shape[ax]
    if n < edge_order + 1:
        raise ValueError(f"gradient: axis {ax} has {n} elements; edge_order {edge_order} needs at least "
                         f"{edge_order + 1}")

    def part(start, stop=None):
        index = [slice(None)] * f.ndim
        index[ax] = slice(start, stop)
        return f[tuple(index)]

    def along(v):  # a 1-D coefficient vector broadcast along axis ax
        return fnp.reshape(v, (-1,) + (1,) * (f.ndim - 1 - ax))

    if np.ndim(h) == 0:
        dx = None
    else:
        x = fnp._float_arg(h)
        if x.ndim != 1 or x.shape[0] != n:
            raise ValueError(f"gradient: the coordinates of axis {ax} must be 1-D of length {n}, got shape {x.shape}")
        dx = diff(x)
    if dx is None:  # uniform spacing
        inner = (part(2) - part(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first, last = (part(1, 2) - part(0, 1)) / h, (part(n - 1) - part(n - 2, n - 1)) / h
        else:
            first = (-1.5 * part(0, 1) + 2.0 * part(1, 2) - 0.5 * part(2, 3)) / h
            last = (0.5 * part(n - 3, n - 2) - 2.0 * part(n - 2, n - 1) + 1.5 * part(n - 1)) / h
    else:
        d1, d2 = dx[:-1], dx[1:]
        inner = (along(-d2 / (d1 * (d1 + d2))) * part(0, n - 2) + along((d2 - d1) / (d1 * d2)) * part(1, n - 1)
                 + along(d1 / (d2 * (d1 + d2))) * part(2))
        if edge_order == 1:
            first, last = (part(1, 2) - part(0, 1)) / dx[0], (part(n - 1) - part(n - 2, n - 1)) / dx[-1]
        else:
            a, b = dx[0], dx[1]
            first = (-(2 * a + b) / (a * (a + b)) * part(0, 1) + (a + b) / (a * b) * part(1, 2)
                     - a / (b * (a + b)) * part(2, 3))
            a, b = dx[-2], dx[-1]
            last = (b / (a * (a + b)) * part(n - 3, n - 2) - (a + b) / (a * b) * part(n - 2, n - 1)
                    + (2 * b + a) / (b * (a + b)) * part(n - 1))
    return fnp.concatenate([first, inner, last], axis=ax)

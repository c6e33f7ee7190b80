"""ufunc objects (jnp.ufunc): fnp.add, fnp.maximum, ... are callable as before and also carry
NumPy's methods outer, reduce, accumulate, at and reduceat; frompyfunc makes one from a function
written with fnp. Reductions and scans use the library's fast forms where they exist (sum, cumsum,
max, ...), a pairwise tree (log2 n steps) for the other associative functions, and NumPy's
left-to-right order for the rest (subtract.accumulate is a - b - c ...)."""
from __future__ import annotations

import math
import types
from typing import Callable

import numpy as np

from ..array import Array
from . import _base as fnp
from . import _elementwise, _math, _reductions, _shapes

__all__ = ["ufunc", "frompyfunc"]


class ufunc:  # noqa: N801  (NumPy's and JAX's name)
    """A function of nin arrays with NumPy's ufunc methods (binary ones: nin == 2)."""

    def __init__(self, func: Callable, nin: int, nout: int = 1, *, name: str | None = None, identity=None,
                 associative: bool = False, reduce: Callable | None = None, accumulate: Callable | None = None,
                 at: str | None = None):
        self._func = func
        self.nin, self.nout, self.nargs = nin, nout, nin + nout
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = getattr(func, "__doc__", None)
        self._associative = associative
        self._reduce, self._accumulate, self._at = reduce, accumulate, at

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"

    def __call__(self, *args, **kwargs):
        return self._func(*args, **kwargs)

    def __get__(self, instance, owner=None):
        """Bound as a function is (Array's operators are these objects: x + y is add(x, y))."""
        return self if instance is None else types.MethodType(self, instance)

    def _binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{self.__name__}.{method} needs a binary ufunc with one output, not {self.nin} -> "
                             f"{self.nout}")

    def outer(self, a, b) -> Array:
        """f(a[i..., None...], b[None..., j...]) for every pair of elements."""
        self._binary("outer")
        a, b = fnp.asarray(a), fnp.asarray(b)
        return self(fnp.reshape(a, tuple(a.shape) + (1,) * b.ndim), b)

    def reduce(self, a, axis: int | None = 0, dtype=None, out=None, keepdims: bool = False, initial=None,
               where=None) -> Array:
        """f folded along axis (None: over every axis), starting from initial if given; where masks
        elements out (they count as the identity)."""
        self._binary("reduce")
        if out is not None:
            raise ValueError(f"{self.__name__}.reduce: out= is not supported (arrays are immutable)")
        a = fnp.asarray(a) if dtype is None else fnp.astype(fnp.asarray(a), dtype)
        if where is not None:
            if self.identity is None and initial is None:
                raise ValueError(f"{self.__name__}.reduce: where= needs an identity or an initial value")
            a = fnp.where(where, a, self.identity if self.identity is not None else initial)  # max/min: idempotent
        ndim, flattened = a.ndim, axis is None
        if flattened:
            a, axis = fnp.reshape(a, (-1,)), 0
        axis = fnp._normalize_axis(axis, max(a.ndim, 1))
        if a.shape[axis] == 0:
            if initial is None and self.identity is None:
                raise ValueError(f"zero-size reduction along axis {axis} of {self.__name__}, which has no identity")
            empty = self.identity if initial is None else initial
            return fnp.full(tuple(np.delete(a.shape, axis)), empty, a.dtype)
        if self._reduce is not None:
            result = self._reduce(a, axis=axis)
        else:
            moved = fnp.moveaxis(a, axis, 0)
            result = _tree_fold(self, moved) if self._associative else _sequential_fold(self, moved)
        if initial is not None:
            result = self(initial, result)
        if keepdims:
            result = fnp.reshape(result, (1,) * ndim) if flattened else fnp.expand_dims(result, axis)
        return result

    def accumulate(self, a, axis: int = 0, dtype=None, out=None) -> Array:
        """The running fold along axis: out[i] = f(out[i - 1], a[i])."""
        self._binary("accumulate")
        if out is not None:
            raise ValueError(f"{self.__name__}.accumulate: out= is not supported (arrays are immutable)")
        a = fnp.asarray(a) if dtype is None else fnp.astype(fnp.asarray(a), dtype)
        axis = fnp._normalize_axis(axis, a.ndim)
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis)
        moved = fnp.moveaxis(a, axis, 0)
        scan = _tree_scan(self, moved) if self._associative else _sequential_scan(self, moved)
        return fnp.moveaxis(scan, 0, axis)

    def at(self, a, indices, b=None, /, *, inplace: bool = True) -> Array:
        """a with f applied at indices (repeated indices accumulate, as NumPy's): a new array, so
        inplace=False is required (JAX's rule; funcgrad arrays are immutable)."""
        if inplace:
            raise ValueError(f"{self.__name__}.at: funcgrad arrays are immutable; pass inplace=False for the "
                             f"updated copy")
        if self._at is None:
            raise ValueError(f"{self.__name__}.at is available for add, subtract, multiply, divide, minimum and "
                             f"maximum")
        updater = fnp.asarray(a).at[indices]
        if self._at == "subtract":
            return updater.add(-fnp.asarray(b))
        return getattr(updater, self._at)(b)

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None) -> Array:
        """reduce over the slices indices[i]:indices[i + 1] along axis (the element indices[i] where
        the next index is not larger, as NumPy's); indices must be concrete."""
        self._binary("reduceat")
        a = fnp.asarray(a) if dtype is None else fnp.astype(fnp.asarray(a), dtype)
        axis = fnp._normalize_axis(axis, a.ndim)
        known = fnp.concrete_or_none(fnp.asarray(indices))
        if known is None:
            raise ValueError(f"{self.__name__}.reduceat needs concrete indices (not traced under jit)")
        idx = np.asarray(known, np.int64).ravel()
        n = a.shape[axis]
        if ((idx < 0) | (idx >= n)).any():
            raise IndexError(f"{self.__name__}.reduceat: indices must lie in [0, {n}), got {idx.tolist()}")
        ends = list(idx[1:]) + [n]
        pieces = []
        for start, stop in zip(idx, ends):
            take = slice(start, stop) if stop > start else slice(start, start + 1)
            part = fnp.take(a, np.arange(n)[take], axis=axis)
            pieces.append(self.reduce(part, axis=axis, keepdims=True))
        return fnp.concatenate(pieces, axis=axis)


def _sequential_fold(f, x):
    out = x[0]
    for i in range(1, x.shape[0]):
        out = f(out, x[i])
    return out


def _tree_fold(f, x):
    """Pairwise combination, log2 n vectorised steps (an associative f)."""
    while x.shape[0] > 1:
        half = x.shape[0] // 2
        combined = f(x[:half], x[half:2 * half])
        x = fnp.concatenate([combined, x[2 * half:]], axis=0) if x.shape[0] % 2 else combined
    return x[0]


def _sequential_scan(f, x):
    outs = [x[0]]
    for i in range(1, x.shape[0]):
        outs.append(f(outs[-1], x[i]))
    return fnp.stack(outs, axis=0)


def _tree_scan(f, x):
    """Hillis-Steele: after the step of shift s every entry holds the fold of its last 2s inputs."""
    n = x.shape[0]
    shift = 1
    while shift < n:
        x = fnp.concatenate([x[:shift], f(x[:n - shift], x[shift:])], axis=0)
        shift *= 2
    return x


def frompyfunc(func: Callable, /, nin: int, nout: int, *, identity=None) -> ufunc:
    """A ufunc from a function written with fnp operations (applied to whole arrays, so it must
    broadcast as elementwise functions do); its methods fold and scan in NumPy's left-to-right order."""
    return ufunc(func, nin, nout, identity=identity)


def _make(name: str, identity=None, associative: bool = False, reduce=None, accumulate=None, at=None) -> ufunc:
    func = getattr(_elementwise, name, None) or getattr(_math, name, None) or getattr(fnp, name)
    return ufunc(func, 2, 1, name=name, identity=identity, associative=associative, reduce=reduce,
                 accumulate=accumulate, at=at)


_BINARY = {
    "add": dict(identity=0, associative=True, reduce=_reductions.sum, accumulate=_reductions.cumsum, at="add"),
    "multiply": dict(identity=1, associative=True, reduce=_reductions.prod, accumulate=_shapes.cumprod,
                     at="multiply"),
    "maximum": dict(associative=True, reduce=_reductions.max, at="max"),
    "minimum": dict(associative=True, reduce=_reductions.min, at="min"),
    "logical_and": dict(identity=True, associative=True, reduce=_reductions.all),
    "logical_or": dict(identity=False, associative=True, reduce=_reductions.any),
    "logical_xor": dict(identity=False, associative=True),
    "bitwise_and": dict(identity=-1, associative=True), "bitwise_or": dict(identity=0, associative=True),
    "bitwise_xor": dict(identity=0, associative=True), "fmax": dict(associative=True),
    "fmin": dict(associative=True), "logaddexp": dict(identity=-math.inf, associative=True),
    "logaddexp2": dict(identity=-math.inf, associative=True), "gcd": dict(identity=0, associative=True),
    "lcm": dict(associative=True), "hypot": dict(identity=0, associative=True),
    "subtract": dict(at="subtract"), "divide": dict(at="divide"), "true_divide": dict(at="divide"),
    **{name: {} for name in ("floor_divide", "power", "remainder", "mod", "fmod", "left_shift", "right_shift",
                             "arctan2", "copysign", "nextafter", "equal", "not_equal", "less", "less_equal",
                             "greater", "greater_equal", "heaviside", "float_power", "ldexp")},
}
globals().update({name: _make(name, **options) for name, options in _BINARY.items()})
__all__ += list(_BINARY)

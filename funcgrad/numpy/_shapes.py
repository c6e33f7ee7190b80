"""Stacking, splitting, diagonals, differences, tiling, constructors and selection (jax.numpy's names),
composed from funcgrad.numpy's primitives-backed functions: differentiable, traceable, batchable."""
from __future__ import annotations

import builtins
from typing import Sequence

import numpy as np

from .. import dtypes
from . import _base as fnp
from ..array import Array, ArrayBase
from ..errors import ShapeError
from ._util import _axis_index, _concrete

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack", "column_stack", "row_stack", "concat",
    "append", "array_split", "hsplit", "vsplit", "dsplit", "diagonal", "diag", "diagflat", "trace", "diff",
    "ediff1d", "cumprod", "cumulative_sum", "cumulative_prod", "meshgrid", "repeat", "tile", "roll", "rot90",
    "fliplr", "flipud", "empty", "empty_like", "identity", "logspace", "geomspace", "copy", "select", "choose",
    "piecewise", "compress", "extract", "delete",
    "resize", "block", "matrix_transpose", "permute_dims", "vecdot", "fill_diagonal",
]


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
    """The arrays to stack: a sequence, or one array read as the sequence of its rows (NumPy's)."""
    if isinstance(arys, ArrayBase) and arys.ndim == 0 or not len(arys):
        raise ValueError(f"{name} needs a sequence of arrays, or an array of at least one dimension")
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
    arr, values = fnp._arrays(arr, values)
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
        e = fnp._arrays(a, values)[1]
        return fnp.broadcast_to(e, a.shape[:axis] + (1,) + a.shape[axis + 1:]) if e.ndim == 0 else e
    parts = ([edge(prepend)] if prepend is not None else []) + [a] + ([edge(append)] if append is not None else [])
    a = fnp.concatenate(parts, axis=axis) if len(parts) > 1 else a
    for _ in range(n):
        hi, lo = a[_axis_index(a.ndim, axis, slice(1, None))], a[_axis_index(a.ndim, axis, slice(None, -1))]
        a = fnp.not_equal(hi, lo) if a.dtype == dtypes.bool_ else fnp.subtract(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    ary = fnp.asarray(ary)
    to_end, to_begin = (None if e is None else fnp._arrays(ary, e)[1] for e in (to_end, to_begin))
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
    mask = fnp.tri(n, n, dtype=bool, device=moved.device)  # row i keeps entries j <= i
    rows = fnp.where(mask, fnp.expand_dims(moved, -2), np.ones((), moved.dtype))
    return fnp.moveaxis(fnp.prod(rows, axis=-1, dtype=dtype), -1, axis)


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


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [fnp.ravel(x) for x in xi]
    n = len(xs)
    axes = list(range(n))  # the output axis along which input i varies
    if indexing == "xy" and n >= 2:
        axes[0], axes[1] = 1, 0
    full = [0] * n
    for x, axis in zip(xs, axes):
        full[axis] = x.shape[0]
    out = [fnp.reshape(x, tuple(full[d] if d == axis else 1 for d in range(n))) for x, axis in zip(xs, axes)]
    return out if sparse else [fnp.broadcast_to(x, tuple(full)) for x in out]


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    a = fnp.asarray(a)
    if axis is None:
        a, axis = fnp.ravel(a), 0
    axis = fnp._normalize_axis(axis, a.ndim)
    counts = _concrete(repeats, "repeat with array repeats")
    if (counts < 0).any():
        raise ValueError(f"repeat counts must be non-negative, got {counts}")
    source = np.repeat(np.arange(a.shape[axis]), np.broadcast_to(counts, (a.shape[axis],)))
    if total_repeat_length is not None:  # JAX's: cut to the length, or filled out with the last value
        fill = source[-1:] if source.size else np.arange(a.shape[axis])[-1:]  # no repeats: the last entry
        if total_repeat_length > source.size and not fill.size:
            raise ValueError(f"repeat: nothing to fill {total_repeat_length} entries from an empty axis {axis}")
        missing = builtins.max(0, total_repeat_length - source.size)
        source = np.concatenate([source[:total_repeat_length], np.repeat(fill, missing)])
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
    """sum(conj(x1) * x2) along axis (the Array API's; the conjugate is a no-op for reals). The
    contracted axes must have one length (no broadcasting along them); the result keeps the operands'
    promoted dtype (uint8 stays uint8)."""
    x1, x2 = fnp.asarray(x1), fnp.asarray(x2)
    ndim = max(x1.ndim, x2.ndim)
    axis = axis - ndim if axis >= 0 else axis  # a non-negative axis counts in the broadcast shape (NumPy)
    if not -min(x1.ndim, x2.ndim) <= axis < 0:
        raise ShapeError(f"vecdot: axis {axis} is outside operands of ranks {x1.ndim} and {x2.ndim}")
    n1, n2 = ((1,) * (ndim - x.ndim) + tuple(x.shape) for x in (x1, x2))
    if n1[axis] != n2[axis]:
        raise ShapeError(f"vecdot: the contracted axes differ in length ({n1[axis]} and {n2[axis]}) "
                         f"in shapes {x1.shape} and {x2.shape}")
    product = fnp.multiply(fnp.conj(x1), x2)
    return fnp.sum(product, axis=axis, dtype=product.dtype)


def empty(shape, dtype=None, device=None):
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


def copy(a, order: str = "K"):
    return fnp.array(a)


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
    a, *choices = fnp._arrays(a, *choices)
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
    conds = [fnp.astype(fnp._arrays(x, c)[1], dtypes.bool_) for c in condlist]
    if len(funclist) == len(conds) + 1:
        otherwise = fnp.all(fnp.stack([~c for c in conds]), axis=0) if conds else fnp.ones(x.shape, dtypes.bool_)
        conds.append(otherwise)
    elif len(funclist) != len(conds):
        raise ValueError(f"piecewise: {len(funclist)} functions for {len(conds)} conditions "
                         f"(give one per condition, plus one optional default)")

    def value(f):
        if callable(f):
            return fnp.astype(f(x, *args, **kw), x.dtype)
        return fnp.full(x.shape, f, x.dtype, device=x.device)
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
    if any(s < 0 for s in shape):
        raise ValueError(f"resize: every side of the new shape must be non-negative, got {shape}")
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

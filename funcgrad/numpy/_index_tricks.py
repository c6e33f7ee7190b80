"""NumPy's index tricks r_ and c_: concatenation written as indexing (differentiable, as in
jax.numpy): fnp.r_[a, 0.0, 1:4, b], fnp.c_[x, y] (1-D arrays as columns); s_ / index_exp,
which build index tuples (NumPy's own objects: an index is the same whatever the array); and the
index builders: indices, the triangle and diagonal indices, mgrid / ogrid, and flat <-> multi-index
conversion (unravel_index, ravel_multi_index, traceable)."""
from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes
from . import _base as fnp
from ..array import Array, ArrayBase
from ..errors import ShapeError
from ._creation import _is_scalar, arange, asarray, astype, linspace
from ._layout import concatenate, reshape, transpose
from ._math import result_type

__all__ = ["c_", "index_exp", "r_", "s_", "indices", "tril_indices", "triu_indices", "diag_indices",
           "diag_indices_from", "tril_indices_from", "triu_indices_from", "unravel_index", "ravel_multi_index",
           "mgrid", "ogrid"]


def _at_least(a, ndmin: int, trans1d: int):
    """a with ndmin dimensions: NumPy's array(a, ndmin=) prepends axes, then trans1d says where
    the original axes go (-1: last, 0: first)."""
    have = a.ndim
    if have >= ndmin:
        return a
    a = reshape(a, (1,) * (ndmin - have) + tuple(a.shape))
    if trans1d == -1:
        return a
    k1, k2 = trans1d if trans1d >= 0 else trans1d + ndmin - have + 1, ndmin - have
    axes = list(range(ndmin))
    return transpose(a, axes[:k1] + axes[k2:] + axes[k1:k2])


class _Concatenator:
    def __init__(self, axis: int, ndmin: int, trans1d: int):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        parts = []  # arrays, and Python scalars whose dtype waits for the arrays' (weak, as NumPy's)
        for i, item in enumerate(items):
            if isinstance(item, str):
                if i:
                    raise ValueError(f"only the first item of an index trick may be a directive string, got {item!r}")
                try:
                    numbers = [int(v) for v in item.split(",")]
                except ValueError:
                    raise ValueError(f"the directive {item!r} is not 'axis[,ndmin[,trans1d]]' (the matrix "
                                     f"directives 'r' and 'c' make numpy.matrix, which funcgrad has not)") from None
                if not 1 <= len(numbers) <= 3:
                    raise ValueError(f"the directive {item!r} has {len(numbers)} numbers; at most 3")
                axis, ndmin, trans1d = (numbers + [ndmin, trans1d][len(numbers) - 1:])[:3]
                continue
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, complex):  # 0:1:5j is five points from 0 to 1, ends included
                    part = linspace(start, item.stop, int(builtins.abs(step)))
                else:
                    part = arange(start, item.stop, step)
            else:
                part = item if isinstance(item, ArrayBase) or _is_scalar(item) else asarray(item)
            parts.append(part)
        if not parts:
            return asarray([])
        if not any(isinstance(p, ArrayBase) for p in parts):
            parts = [asarray(p) for p in parts]
        common = result_type(*parts)  # Python scalars weak beside the arrays, as everywhere
        return concatenate([_at_least(astype(p, common), builtins.max(ndmin, 1), trans1d) for p in parts], axis=axis)

    def __len__(self) -> int:
        return 0


r_ = _Concatenator(0, 1, -1)
c_ = _Concatenator(-1, 2, 0)

s_, index_exp = np.s_, np.index_exp


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


def _order(order: str) -> str:
    if order not in ("C", "F"):
        raise ValueError(f"only 'C' or 'F' order is permitted, got {order!r}")
    return order


def unravel_index(indices, shape, order: str = "C") -> tuple:
    """The multi-index of flat indices into shape (traceable: divisions, not a lookup); order='F'
    takes the first axis as the fastest-varying."""
    dims = tuple(shape) if _order(order) == "C" else tuple(shape)[::-1]
    idx = fnp.asarray(indices)
    concrete = fnp.concrete_or_none(idx)
    size = int(np.prod(shape, dtype=np.int64))
    if concrete is not None and concrete.size and (concrete.min() < -size or concrete.max() >= size):
        raise ValueError(f"index {concrete.max() if concrete.max() >= size else concrete.min()} is out of bounds "
                         f"for an array of size {size}")
    idx = fnp.where(idx < 0, idx + size, idx)
    out = []
    for n in reversed(dims):
        out.append(fnp.remainder(idx, n) if n else idx)
        idx = fnp.floor_divide(idx, n) if n else idx
    return tuple(reversed(out)) if order == "C" else tuple(out)


def ravel_multi_index(multi_index, dims, mode="raise", order: str = "C"):
    """Flat indices of a multi-index into dims (NumPy's): mode 'raise', 'clip' or 'wrap', or one per
    dimension; order='F' takes the first axis as the fastest-varying."""
    multi_index, dims = tuple(multi_index), tuple(dims)
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if len(multi_index) != len(dims) or len(modes) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays and {len(modes)} modes for "
                         f"{len(dims)} dimensions {dims}: give one of each per dimension")
    if any(m not in ("raise", "clip", "wrap") for m in modes):
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
    axes = zip(multi_index, dims, modes)
    out = None
    for i, n, mode in (axes if _order(order) == "C" else reversed(tuple(axes))):
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

"""Arrays made by editing or generating others, as NumPy's functions of those names: insert,
put_along_axis, put and place (inplace=False, as jax.numpy: arrays are immutable),
apply_over_axes, fromfunction, packbits/unpackbits, sort_complex and mask_indices. Composed from
the primitive-backed functions, so they differentiate."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from . import _base as fnp
from ..errors import ShapeError
from ._index_tricks import indices as _indices
from ._statistics import lexsort
from ._util import _beside, _concrete

__all__ = ["insert", "put_along_axis", "apply_over_axes", "fromfunction", "put", "place", "packbits", "unpackbits",
           "sort_complex", "mask_indices"]


def insert(arr, obj, values, axis: int | None = None):
    """arr with values inserted before index (or indices) obj along axis (arr flattened when axis is
    None), in NumPy's three forms: an int inserts values as a block (its first axis along `axis`);
    a sequence of one index inserts values as they stand; several indices insert one slice each,
    the j-th value before obj[j]. values take arr's dtype."""
    arr = fnp.asarray(arr)
    if axis is None:
        arr, axis = fnp.ravel(arr), 0
    axis = fnp._normalize_axis(axis, arr.ndim)
    values = fnp.astype(_beside(values, arr), arr.dtype)
    n = arr.shape[axis]
    positions = np.arange(n)[obj] if isinstance(obj, slice) else np.asarray(obj)
    if positions.size == 0:
        positions = positions.astype(np.int64)  # [] is float64 to NumPy: no indices, nothing inserted
    if positions.dtype.kind not in "iu":
        raise IndexError(f"insert: indices must be integers, got {positions.dtype}")
    lead = (1,) * (arr.ndim - values.ndim) + tuple(values.shape) if values.ndim < arr.ndim else tuple(values.shape)
    block = fnp.reshape(values, lead)
    if positions.ndim == 0:  # a block whose first axis runs along `axis`
        block = fnp.moveaxis(block, 0, axis)
    if positions.ndim == 0 or positions.size == 1:
        count = block.shape[axis]
        where = np.full(count, positions.reshape(-1)[0])
    else:
        count, where = positions.size, positions.reshape(-1)
        block = values
        while block.ndim > arr.ndim and block.shape[0] == 1:  # as an assignment, leading 1s may go
            block = fnp.squeeze(block, 0)
    shape = arr.shape[:axis] + (count,) + arr.shape[axis + 1:]
    try:
        block = fnp.broadcast_to(block, shape)
    except ShapeError as e:
        raise ShapeError(f"insert: values of shape {tuple(values.shape)} do not fit {count} slices of shape "
                         f"{arr.shape[:axis] + arr.shape[axis + 1:]} along axis {axis}") from e
    order = np.insert(np.arange(n), where, n + np.arange(count))  # NumPy's placement, and its index checks
    return fnp.take(fnp.concatenate([arr, block], axis=axis), order, axis=axis)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *, mode: str | None = None):
    """arr with values written at indices along axis (the positions take_along_axis reads); arrays
    are immutable, so as in JAX pass inplace=False and use the result."""
    if inplace:
        raise ValueError("put_along_axis cannot write in place into an immutable array; pass inplace=False and "
                         "use the returned array")
    arr = fnp.asarray(arr)
    if axis is None:
        arr, axis, shape = fnp.ravel(arr), 0, arr.shape
    else:
        shape = None
    axis = fnp._normalize_axis(axis, arr.ndim)
    idx = fnp._index_array(indices, arr.device)
    if idx.ndim != arr.ndim:
        raise ShapeError(f"put_along_axis: indices of rank {idx.ndim} for an array of rank {arr.ndim}")
    if mode not in (None, "raise", "wrap", "clip"):
        raise ValueError(f"put_along_axis: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    n = arr.shape[axis]
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = fnp.clip(idx, 0, n - 1)
    grid = np.indices(tuple(1 if d == axis else size for d, size in enumerate(arr.shape)), sparse=True)
    index = tuple(idx if d == axis else g for d, g in enumerate(grid))  # take_along_axis's positions
    index_shape = np.broadcast_shapes(*(tuple(i.shape) for i in index))
    values = fnp.astype(_beside(values, arr), arr.dtype)
    out = arr.at[index].set(fnp.broadcast_to(values, index_shape))
    return out if shape is None else fnp.reshape(out, shape)


def apply_over_axes(func, a, axes):
    """func(a, axis) for each axis in turn, each result kept at a's rank (a reduction's axis
    restored as length 1), as NumPy's apply_over_axes."""
    a = fnp.asarray(a)
    for axis in np.atleast_1d(np.asarray(axes)).tolist():
        axis = axis + a.ndim if axis < 0 else axis
        result = fnp.asarray(func(a, axis))
        if result.ndim == a.ndim - 1:
            result = fnp.expand_dims(result, axis)
        if result.ndim != a.ndim:
            raise ValueError(f"apply_over_axes: func must keep the array's rank or reduce one axis; it gave rank "
                             f"{result.ndim} for rank {a.ndim}")
        a = result
    return a


def fromfunction(function, shape, *, dtype=None, **kwargs):
    """function(*coordinate_arrays, **kwargs), each coordinate array of `shape` holding its own
    index along one axis (in dtype: float32 by default, as jax.numpy)."""
    dtype = dtypes.default_float if dtype is None or dtype is float else dtype
    return function(*_indices(tuple(int(s) for s in shape), dtype=dtype), **kwargs)


def _not_in_place(inplace: bool, fname: str) -> None:
    if inplace:
        raise ValueError(f"{fname}: arrays are immutable, so the edit cannot happen in place: pass inplace=False "
                         f"and use the array returned")


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """a (flattened) with v at the flat indices ind, v repeated to their number (NumPy's put, as a
    copy: inplace=False); mode 'raise' (the default), 'wrap' or 'clip' for indices out of range."""
    _not_in_place(inplace, "put")
    a = fnp.asarray(a)
    index = np.asarray(_concrete(ind, "put's indices")).astype(np.int64).reshape(-1)
    n = a.size
    if mode in (None, "raise") and index.size and (index.min() < -n or index.max() >= n):
        raise IndexError(f"put: index {index[(index < -n) | (index >= n)][0]} is out of bounds for size {n}")
    if mode == "wrap":
        index = index % max(n, 1)
    elif mode == "clip":
        index = np.clip(index, 0, n - 1)
    elif mode not in (None, "raise"):
        raise ValueError(f"put: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    values = fnp.ravel(fnp.astype(_beside(v, a), a.dtype))
    if index.size and values.size == 0:
        raise ValueError("put: cannot put an empty set of values")
    values = values[_beside(np.arange(index.size) % max(values.size, 1), a)] if index.size else values[:0]
    return fnp.reshape(fnp.ravel(a).at[_beside(index % max(n, 1), a)].set(values), a.shape)


def place(arr, mask, vals, *, inplace: bool = True):
    """arr with the positions where mask is true filled by vals in order, repeated as needed
    (NumPy's place, as a copy: inplace=False)."""
    _not_in_place(inplace, "place")
    arr = fnp.asarray(arr)
    chosen = np.asarray(_concrete(mask, "place's mask")).astype(bool)
    if chosen.size != arr.size:
        raise ShapeError(f"place: mask of {chosen.size} elements for an array of {arr.size}")
    return put(arr, np.flatnonzero(chosen), vals, inplace=False)


def _bit_axis(a, axis, bitorder: str):
    """(a with the bit axis last (a flattened when axis is None), that axis, each bit position's
    shift within a byte as a uint8 constant beside a)."""
    if bitorder not in ("big", "little"):
        raise ValueError(f"bitorder must be 'big' or 'little', got {bitorder!r}")
    if axis is None:
        a, axis = fnp.ravel(a), 0
    axis = fnp._normalize_axis(axis, a.ndim)
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    return fnp.moveaxis(a, axis, -1), axis, _beside(shifts.astype(np.uint8), a)


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """Each uint8 of a as its 8 bits (0 or 1) along axis (a flattened when None), big- or
    little-endian within the byte; count keeps that many bits (negative: drops them)."""
    a = fnp.asarray(a)
    if a.dtype != dtypes.uint8:
        raise TypeError(f"unpackbits takes a uint8 array, got {a.dtype}")
    moved, axis, shifts = _bit_axis(a, axis, bitorder)
    bits = (fnp.expand_dims(moved, -1) >> shifts) & 1
    bits = fnp.reshape(bits, moved.shape[:-1] + (moved.shape[-1] * 8,))
    if count is not None:
        total = moved.shape[-1] * 8
        keep = count if count >= 0 else max(total + count, 0)
        bits = bits[..., :keep] if keep <= total else fnp.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, keep - total)])
    return fnp.moveaxis(fnp.astype(bits, dtypes.uint8), -1, axis)


def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """The inverse of unpackbits: each run of 8 truthy-or-not elements along axis (a flattened when
    None, the last run zero-padded) packed into a uint8."""
    a = fnp.asarray(a)
    if a.dtype.kind not in "biu":
        raise TypeError(f"packbits takes integers or booleans, got {a.dtype}")
    moved, axis, shifts = _bit_axis(a, axis, bitorder)
    moved = fnp.astype(moved != 0, dtypes.uint8)
    n = moved.shape[-1]
    moved = fnp.pad(moved, [(0, 0)] * (moved.ndim - 1) + [(0, -n % 8)])
    groups = fnp.reshape(moved, moved.shape[:-1] + (moved.shape[-1] // 8, 8))
    packed = fnp.sum(groups << shifts, axis=-1, dtype=dtypes.uint8)
    return fnp.moveaxis(packed, -1, axis)


def sort_complex(a):
    """a sorted by real part, then imaginary part (a complex array, as NumPy's)."""
    a = fnp.asarray(a)
    z = fnp.astype(a, dtypes.complex_dtype(a.dtype)) if not dtypes.is_complex(a.dtype) else a
    order = lexsort((fnp.imag(z), fnp.real(z)), axis=-1)
    return fnp.take_along_axis(z, order, axis=-1)


def mask_indices(n: int, mask_func, k: int = 0):
    """The indices (rows, columns) where mask_func(ones((n, n)), k) is non-zero, as NumPy's (for
    fnp.triu, fnp.tril and the like)."""
    picked = np.asarray(_concrete(mask_func(fnp.ones((n, n), dtypes.int64), k), "mask_indices' mask"))
    rows, cols = np.nonzero(picked)
    return fnp.asarray(rows), fnp.asarray(cols)

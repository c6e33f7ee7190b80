"""Arrays made by editing or generating others, as NumPy's functions of those names: insert,
put_along_axis (inplace=False, as jax.numpy: arrays are immutable), apply_over_axes and
fromfunction. Composed from the primitive-backed functions, so they differentiate."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from . import _base as fnp
from ..errors import ShapeError
from ._shapes import indices as _indices
from ._util import _beside

__all__ = ["insert", "put_along_axis", "apply_over_axes", "fromfunction"]


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

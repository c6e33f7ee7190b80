"""Random bits as primitives, so sampling traces under jit like any other operation; and the
two bit-level primitives sampling needs (a reinterpreting view, a stable argsort)."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..cpu.threefry import threefry2x32
from .core import Primitive, ShapedArray, real_only
from .layout import batch_axis, batch_first, batch_leading, normalized_axes


def _threefry_impl(key, x0, x1):
    key = np.asarray(key)
    if key.ndim > 1:  # a batch of keys (vmap): each row encrypts the counters that broadcast with it
        key = key.reshape(key.shape[:-1] + (1,) + key.shape[-1:])
    y0, y1 = threefry2x32(key, np.asarray(x0, np.uint32), np.asarray(x1, np.uint32))
    return np.stack([y0, y1], axis=-1)


def _threefry_shape(key, x0, x1):
    if not key.shape or key.shape[-1] != 2:
        raise ValueError(f"threefry2x32 takes keys of shape (..., 2), got {key.shape}")
    lead = key.shape[:-1] + (1,) if len(key.shape) > 1 else ()
    return ShapedArray(np.broadcast_shapes(lead, x0.shape, x1.shape) + (2,), dtypes.uint32)


def _threefry_batch(size, prim, vals, dims):
    key = batch_first(vals[0], dims[0], size)
    counters = [c if d is None else batch_first(c, d, size) for c, d in zip(vals[1:], dims[1:])]
    return prim(key, *counters), 0


def _bitcast_shape(x, *, dtype):
    dtype = np.dtype(dtype)
    if dtype.itemsize == x.dtype.itemsize:
        return ShapedArray(x.shape, dtype)
    if not x.shape or x.shape[-1] * x.dtype.itemsize % dtype.itemsize:
        raise ValueError(f"cannot view {x.dtype}{list(x.shape)} as {dtype}: the last axis does not divide")
    return ShapedArray(x.shape[:-1] + (x.shape[-1] * x.dtype.itemsize // dtype.itemsize,), dtype)


def _argsort_shape(x, *, axis):
    normalized_axes(axis, len(x.shape))
    return ShapedArray(x.shape if axis is not None else (int(np.prod(x.shape, dtype=np.int64)),), dtypes.int64)


# threefry2x32(key (..., 2), x0 (n,), x1 (n,)) -> (..., n, 2): the encrypted counter pairs.
threefry2x32_p = Primitive("threefry2x32", _threefry_impl, shape_rule=_threefry_shape, batch_rule=_threefry_batch,
                           cuda="threefry2x32", fresh=True, differentiable=False)
# bitcast reinterprets memory, so it is no elementwise primitive and never fuses: the last axis
# grows or shrinks when the itemsizes differ.
bitcast_p = Primitive("bitcast", lambda x, dtype: np.asarray(x).view(dtype), shape_rule=_bitcast_shape,
                      batch_rule=batch_leading, cuda="bitcast", differentiable=False)
argsort_p = Primitive("argsort", real_only("argsort", lambda x, axis: np.argsort(x, axis=axis, kind="stable")),
                      shape_rule=real_only("argsort", _argsort_shape),
                      batch_rule=batch_axis, cuda="argsort", differentiable=False)

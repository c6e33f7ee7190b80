"""The layout primitives (reshape, broadcast_to, transpose) and sum, broadcasting's transpose, with
the helpers every other primitive's rules use: broadcasting a value and summing a cotangent back
(unbroadcast), and moving vmap's batch axis (batching rules put it first on their operands and
return it first on the result, so each rule only shifts axes, prepends to shapes or adds an index).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .core import Primitive, ShapedArray, deflinear, shape_of


# ---- shapes and axes -----------------------------------------------------------------------------
def normalized_axes(axes, ndim: int) -> tuple[int, ...]:
    """Reduction axes as sorted non-negative ints (None: all), checked against the rank."""
    if axes is None:
        return tuple(range(ndim))
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    out = []
    for a in axes:
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.append(a % ndim if ndim else a)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axis': {axes}")
    return tuple(sorted(out))


def broadcast_shapes(*shapes: tuple) -> tuple:
    """np.broadcast_shapes, answering equal shapes (most operands of a step) without NumPy's 4 us of
    argument handling: the GPU runner and the shape rules call it for every elementwise operation."""
    first = shapes[0] if shapes else ()
    if all(s == first for s in shapes):
        return tuple(first)
    return np.broadcast_shapes(*shapes)


def reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def accumulated_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype NumPy sums (and multiplies) an integer or boolean array in: the 64-bit one."""
    if dtype == dtypes.bool_ or dtype.kind == "i":
        return dtypes.int64 if dtype.itemsize < 8 or dtype == dtypes.bool_ else dtype
    if dtype.kind == "u":
        return dtypes.uint64
    return dtype


def resolved_shape(size: int, shape) -> tuple[int, ...]:
    """A reshape target with its -1 filled in, checked against the number of elements."""
    shape = [int(d) for d in shape]
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in shape):
        raise ValueError(f"can only specify one unknown dimension, got shape {tuple(shape)}")
    known = math.prod(d for d in shape if d != -1)
    if unknown and known and size % known == 0:
        shape[unknown[0]] = size // known
    if -1 in shape or math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return tuple(shape)


def _reshape_shape(x, *, shape):
    return ShapedArray(resolved_shape(math.prod(x.shape), shape), x.dtype)


def _broadcast_to_shape(x, *, shape):
    shape = tuple(int(d) for d in shape)
    lead = len(shape) - len(x.shape)
    if lead < 0 or any(a not in (1, b) for a, b in zip(x.shape, shape[lead:])):
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {x.shape} and requested shape {shape}")
    return ShapedArray(shape, x.dtype)


def _transpose_shape(x, *, perm):
    if sorted(int(p) for p in perm) != list(range(len(x.shape))):
        raise ValueError(f"axes {tuple(perm)} don't match array of rank {len(x.shape)}")
    return ShapedArray(tuple(x.shape[p] for p in perm), x.dtype)


def _sum_shape(x, *, axes, keepdims):
    axes = normalized_axes(axes, len(x.shape))
    return ShapedArray(reduced_shape(x.shape, axes, keepdims), accumulated_dtype(x.dtype))


# ---- moving vmap's batch axis --------------------------------------------------------------------
def _ndim(x) -> int:
    return len(shape_of(x)) if hasattr(x, "shape") else np.ndim(x)


def batch_first(x, d, size: int):
    """x with its batch axis first; an unbatched x (d None) is broadcast to the batch."""
    if d is None:
        return broadcast_to_p(x, shape=(size,) + tuple(np.shape(x) if not hasattr(x, "shape") else x.shape))
    if d == 0:
        return x
    return transpose_p(x, perm=(d,) + tuple(i for i in range(_ndim(x)) if i != d))


def batch_to(x, d, axis: int, size: int):
    """x with its batch axis at position `axis`."""
    x = batch_first(x, d, size)
    if axis == 0:
        return x
    return transpose_p(x, perm=tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, _ndim(x))))


def aligned(x, d, rank: int):
    """A batched operand (batch axis moved first) padded with 1s to `rank` logical axes, so it
    broadcasts against unbatched operands as NumPy would have broadcast the unbatched values."""
    x = batch_first(x, d, 0)
    logical = tuple(x.shape[1:])
    if len(logical) == rank:
        return x
    return reshape_p(x, shape=(x.shape[0],) + (1,) * (rank - len(logical)) + logical)


def logical_rank(vals, dims) -> int:
    """The largest rank among operands as the unbatched function sees them."""
    return max((_ndim(v) - (d is not None) for v, d in zip(vals, dims) if v is not None), default=0)


def batch_elementwise(size, prim, vals, dims, **params):
    """Operands broadcast against each other: align the batched ones, leave the rest."""
    rank = logical_rank(vals, dims)
    return prim(*(v if d is None else aligned(v, d, rank) for v, d in zip(vals, dims)), **params), 0


def batch_axes(size, prim, vals, dims, axes, **params):
    """A primitive over an `axes` tuple of its one operand: the axes shift past the batch."""
    return prim(batch_first(vals[0], dims[0], size), axes=tuple(a + 1 for a in axes), **params), 0


def batch_axis(size, prim, vals, dims, axis, **params):
    """A primitive along one `axis` of its one operand (None: the flattened operand, batch kept)."""
    x = batch_first(vals[0], dims[0], size)
    if axis is not None:
        return prim(x, axis=axis + 1, **params), 0
    out = prim(reshape_p(x, shape=(size, math.prod(x.shape[1:]))), axis=1, **params)
    if params.get("keepdims"):
        out = reshape_p(out, shape=(size,) + (1,) * (_ndim(x) - 1))
    return out, 0


def batch_leading(size, prim, vals, dims, **params):
    """Primitives that already map over the leading axes of every operand: batch axes first."""
    return prim(*(batch_first(v, d, size) for v, d in zip(vals, dims)), **params), 0


def _reshape_batch(size, prim, vals, dims, shape):
    x = batch_first(vals[0], dims[0], size)
    return prim(x, shape=(x.shape[0],) + tuple(shape)), 0


def _broadcast_to_batch(size, prim, vals, dims, shape):
    x = aligned(vals[0], dims[0], len(shape))
    return prim(x, shape=(x.shape[0],) + tuple(shape)), 0


def _transpose_batch(size, prim, vals, dims, perm):
    return prim(batch_first(vals[0], dims[0], size), perm=(0,) + tuple(p + 1 for p in perm)), 0


def view_strides(shape: tuple, strides: tuple, new_shape: tuple) -> tuple | None:
    """Strides with which new_shape views the elements of (shape, strides) in C order, or None when
    a copy is needed (NumPy's no-copy reshape): each run of old axes that multiplies out to a run of
    new axes must be walkable as one (stride[k] == shape[k + 1] * stride[k + 1] within the run)."""
    old = [(d, s) for d, s in zip(shape, strides) if d != 1]
    out = [0] * len(new_shape)
    o = n = 0
    while n < len(new_shape) and o < len(old):
        o_end, n_end = o + 1, n + 1
        old_size, new_size = old[o][0], new_shape[n]
        while old_size != new_size:
            if new_size < old_size:
                new_size *= new_shape[n_end]
                n_end += 1
            else:
                old_size *= old[o_end][0]
                o_end += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(o, o_end - 1)):
            return None
        out[n_end - 1] = old[o_end - 1][1]
        for k in range(n_end - 1, n, -1):
            out[k - 1] = out[k] * new_shape[k]
        o, n = o_end, n_end
    for k in range(n, len(new_shape)):  # trailing axes of length 1
        out[k] = out[n - 1] if n else 1
    return tuple(out)


# ---- the primitives --------------------------------------------------------------------------------
def _reshape_impl(x, shape, out=None):
    """np.reshape, whose copy (where no strides walk the elements in order: merging a transposed
    view's axes, as attention's heads) goes into out, jit's planned buffer, where one is given."""
    if out is None or not isinstance(x, np.ndarray) or view_strides(x.shape, x.strides, out.shape) is not None:
        return np.reshape(x, shape)
    out.reshape(x.shape)[...] = x  # out is C-contiguous: this is the copy in C order
    return out


reshape_p = Primitive("reshape", _reshape_impl, shape_rule=_reshape_shape, batch_rule=_reshape_batch, cuda="reshape",
                      writes_into=True)
deflinear(reshape_p, lambda g, out, x, shape: reshape_p(g, shape=x.shape))

broadcast_to_p = Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), shape_rule=_broadcast_to_shape,
                           batch_rule=_broadcast_to_batch, cuda="broadcast_to")
deflinear(broadcast_to_p, lambda g, out, x, shape: unbroadcast(g, x.shape))

transpose_p = Primitive("transpose", lambda x, perm: np.transpose(x, perm), shape_rule=_transpose_shape,
                        batch_rule=_transpose_batch, cuda="transpose")
deflinear(transpose_p, lambda g, out, x, perm: transpose_p(g, perm=tuple(np.argsort(perm))))


def accumulate(x):
    """Low-precision floats accumulate in float32, as PyTorch does."""
    return x.astype(np.float32) if x.dtype in dtypes.low_precision else x


def _sum_impl(x, axes, keepdims):
    # the ufunc's reduce is np.sum (same dtypes, same pairwise sums) without np.sum's Python layer
    out = np.add.reduce(accumulate(x), axis=axes, keepdims=keepdims)
    return out.astype(x.dtype) if x.dtype in dtypes.low_precision else out


sum_p = Primitive("sum", _sum_impl, shape_rule=_sum_shape, batch_rule=batch_axes, cuda="reduce_sum", fresh=True)
deflinear(sum_p, lambda g, out, x, axes, keepdims: broadcast_to_p(
    expand_reduced(g, x.shape, axes, keepdims), shape=x.shape))


# ---- broadcasting in derivative rules -----------------------------------------------------------------
def expand_reduced(g, x_shape, axes, keepdims):
    """Reshape a reduced result so it broadcasts against the input again."""
    return g if keepdims else reshape_p(g, shape=reduced_shape(x_shape, normalized_axes(axes, len(x_shape)), True))


def broadcast_like(t, out):
    shape = shape_of(out)
    return t if shape_of(t) == shape else broadcast_to_p(t, shape=shape)


def unbroadcast(g, shape):
    """Sum a cotangent over the axes NumPy broadcasting added or stretched."""
    g_shape = g.shape
    if g_shape == shape:
        return g
    lead = len(g_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g_shape[lead + i] != 1)
    if axes:
        g = sum_p(g, axes=axes, keepdims=False)
    return g if g.shape == shape else reshape_p(g, shape=shape)

"""jax.lax's remaining array builders and rearrangements, in funcgrad.numpy's terms."""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from .. import numpy as fnp
from ..errors import ShapeError
from ..tree import tree_map

__all__ = ["top_k", "broadcasted_iota", "broadcast_to_rank", "broadcast_shapes", "split", "tile", "stack", "unstack",
           "empty", "index_take", "optimization_barrier", "approx_max_k", "approx_min_k"]


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    """An array of shape counting 0, 1, ... along dimension, constant along the others."""
    shape = tuple(int(n) for n in shape)
    dimension = operator.index(dimension)
    if not 0 <= dimension < len(shape):
        raise ValueError(f"broadcasted_iota: dimension {dimension} is out of range for shape {shape}")
    counts = fnp.arange(shape[dimension], dtype=dtype)
    return fnp.broadcast_to(fnp.reshape(counts, tuple(n if a == dimension else 1 for a, n in enumerate(shape))), shape)


def broadcast_to_rank(x, rank: int):
    """x with leading axes of 1 added up to rank (none when it has as many already)."""
    x = fnp.asarray(x)
    return fnp.reshape(x, (1,) * max(int(rank) - x.ndim, 0) + tuple(x.shape))


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))


def split(operand, sizes: Sequence[int], axis: int = 0) -> list:
    """Chunks of the given sizes along axis, which they must add up to."""
    operand = fnp.asarray(operand)
    sizes = [operator.index(n) for n in sizes]
    length = operand.shape[axis]
    if sum(sizes) != length or any(n < 0 for n in sizes):
        raise ValueError(f"lax.split: sizes {sizes} must be non-negative and add up to {length}, the length of axis "
                         f"{axis} of shape {operand.shape}")
    return list(fnp.split(operand, np.cumsum(sizes)[:-1].tolist(), axis=axis))


def tile(operand, reps: Sequence[int]):
    return fnp.tile(operand, tuple(reps))


def stack(operands, axis: int = 0):
    return fnp.stack(operands, axis=axis)


def unstack(x, axis: int = 0) -> tuple:
    """The slices of x along axis, as a tuple."""
    x = fnp.asarray(x)
    return tuple(fnp.moveaxis(x, axis, 0)[i] for i in range(x.shape[axis]))


def empty(shape, dtype):
    """An array of shape and dtype (XLA leaves it unset; funcgrad's holds zeros)."""
    return fnp.zeros(tuple(shape), dtype)


def index_take(src, idxs, axes: Sequence[int]):
    """src at the points idxs (one index array per axis of axes, wrapped modulo each axis's length):
    the points first, then src's other axes (jax.lax.index_take)."""
    src = fnp.asarray(src)
    axes = tuple(operator.index(a) % src.ndim for a in axes)
    if len(idxs) != len(axes):
        raise ShapeError(f"index_take: {len(idxs)} index arrays for {len(axes)} axes")
    moved = fnp.moveaxis(src, axes, tuple(range(len(axes))))
    return moved[tuple(fnp.asarray(i) % src.shape[a] for i, a in zip(idxs, axes))]


def optimization_barrier(operand):
    """operand unchanged (XLA's barrier against moving work across it; funcgrad's jit moves none)."""
    return tree_map(lambda leaf: leaf, operand)


def top_k(operand, k: int):
    """(values, indices) of the k largest entries along the last axis, largest first, equal values
    in index order (jax.lax.top_k, torch.topk); the values are differentiable."""
    return _top(operand, k, -1, True)


def _top(operand, k: int, axis: int, largest: bool):
    operand = fnp.asarray(operand)
    n = operand.shape[axis] if operand.ndim else 0
    k = operator.index(k)
    if not operand.ndim or not 0 <= k <= n:
        raise ValueError(f"top_k: k = {k} must be in [0, {n}] for an operand of shape {operand.shape}")
    moved = fnp.moveaxis(operand, axis, -1)
    if largest:  # a stable ascending sort of the reversed axis, reversed, is descending with ties in index order
        indices = (n - 1) - fnp.flip(fnp.argsort(fnp.flip(moved, -1), axis=-1), -1)[..., :k]
    else:
        indices = fnp.argsort(moved, axis=-1)[..., :k]
    values = fnp.take_along_axis(moved, indices, axis=-1)
    return fnp.moveaxis(values, -1, axis), fnp.moveaxis(indices, -1, axis)


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """(values, indices) of the k largest along reduction_dimension: exact here, as JAX on a CPU."""
    return _top(operand, k, reduction_dimension, True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """(values, indices) of the k smallest along reduction_dimension, exact."""
    return _top(operand, k, reduction_dimension, False)

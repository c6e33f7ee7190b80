"""XLA's Gather and Scatter (jax.lax.gather, scatter, scatter_add, ...) with their dimension numbers,
as one advanced index per operand axis: each output (or update) element's operand position is its
window's start, read from the indices, plus its offset inside the window. So the gradients, jit
and vmap of funcgrad's indexing and .at[] updates carry over.

Out-of-bounds windows: 'clip' (and gather's default, 'promise_in_bounds', which XLA clamps) moves
the window inside; 'fill' gives gather's fill_value for the whole window and drops a scatter's
whole window (scatter's default, as JAX's).
"""
from __future__ import annotations

import enum
from typing import Callable, NamedTuple, Sequence

import numpy as np

from .. import numpy as fnp
from ..errors import ShapeError

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather", "scatter",
           "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max", "scatter_apply"]


class GatherDimensionNumbers(NamedTuple):
    offset_dims: Sequence[int]
    collapsed_slice_dims: Sequence[int]
    start_index_map: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    start_indices_batching_dims: Sequence[int] = ()


class ScatterDimensionNumbers(NamedTuple):
    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @staticmethod
    def from_any(mode) -> "GatherScatterMode":
        if isinstance(mode, GatherScatterMode):
            return mode
        names = {"clip": "CLIP", "fill": "FILL_OR_DROP", "drop": "FILL_OR_DROP",
                 "promise_in_bounds": "PROMISE_IN_BOUNDS"}
        if mode not in names:
            raise ValueError(f"unknown gather/scatter mode {mode!r}; use one of {sorted(names)}")
        return GatherScatterMode[names[mode]]


def _positions(operand_shape, indices, window_positions, window_dims, window_sizes, index_map, operand_batching,
               indices_batching, out_rank: int, clip: bool, what: str):
    """(per operand axis, its index broadcastable over the out_rank result; whether each window
    starts in bounds, broadcastable too). Result positions not in window_positions are the
    indices' batch axes, in order."""
    batch_shape = tuple(indices.shape[:-1])
    if indices.shape[-1] != len(index_map):
        raise ShapeError(f"{what}: the index vectors have {indices.shape[-1]} entries, the index map {len(index_map)}")
    batch_positions = [p for p in range(out_rank) if p not in window_positions]
    if len(batch_positions) != len(batch_shape):
        raise ShapeError(f"{what}: {len(batch_shape)} batch axes of indices {tuple(indices.shape)} for "
                         f"{len(batch_positions)} non-window axes of the result")

    def at_batch(a):  # (batch_shape) -> the result's rank, batch axes in their positions
        shape = [1] * out_rank
        for p, n in zip(batch_positions, batch_shape):
            shape[p] = n
        return fnp.reshape(a, tuple(shape))
    in_bounds = True
    per_axis = []
    for d, n in enumerate(operand_shape):
        size = window_sizes[window_dims.index(d)] if d in window_dims else 1
        if size > n:
            raise ShapeError(f"{what}: a window of {size} does not fit operand axis {d} of length {n}")
        if d in index_map:
            start = fnp.astype(indices[..., list(index_map).index(d)], np.int64)
            in_bounds = in_bounds & (start >= 0) & (start <= n - size)
            if clip:
                start = fnp.clip(start, 0, n - size)
        elif d in operand_batching:
            axis = indices_batching[list(operand_batching).index(d)]
            start = fnp.broadcast_to(fnp.reshape(fnp.arange(batch_shape[axis]), tuple(
                batch_shape[axis] if a == axis else 1 for a in range(len(batch_shape)))), batch_shape)
        else:
            start = fnp.zeros(batch_shape, np.int64)
        index = at_batch(start)
        if d in window_dims:
            j = window_dims.index(d)
            index = index + fnp.reshape(fnp.arange(size), tuple(size if p == window_positions[j] else 1
                                                                  for p in range(out_rank)))
        per_axis.append(index)
    mask = at_batch(in_bounds) if not isinstance(in_bounds, bool) else None
    return per_axis, mask


def _window_dims(rank: int, excluded: Sequence[int], batching: Sequence[int]) -> list[int]:
    return [d for d in range(rank) if d not in excluded and d not in batching]


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes, *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode=None, fill_value=None):
    """XLA's Gather: for each index vector (the last axis of start_indices), the slice of
    slice_sizes starting there, collapsed_slice_dims dropped, its axes at offset_dims."""
    operand, indices = fnp.asarray(operand), fnp.asarray(start_indices)
    dn = GatherDimensionNumbers(*(tuple(int(a) for a in f) for f in dimension_numbers))
    mode = GatherScatterMode.from_any("promise_in_bounds" if mode is None else mode)
    slice_sizes = tuple(int(n) for n in slice_sizes)
    if len(slice_sizes) != operand.ndim:
        raise ShapeError(f"gather: slice_sizes {slice_sizes} for an operand of rank {operand.ndim}")
    window_dims = _window_dims(operand.ndim, dn.collapsed_slice_dims, dn.operand_batching_dims)
    if len(window_dims) != len(dn.offset_dims):
        raise ShapeError(f"gather: {len(dn.offset_dims)} offset_dims for {len(window_dims)} uncollapsed slice axes")
    out_rank = indices.ndim - 1 + len(window_dims)
    per_axis, in_bounds = _positions(operand.shape, indices, list(dn.offset_dims), window_dims,
                                     [slice_sizes[d] for d in window_dims], dn.start_index_map,
                                     dn.operand_batching_dims, dn.start_indices_batching_dims, out_rank, True, "gather")
    out = operand[tuple(per_axis)] if per_axis else fnp.broadcast_to(operand, ())
    if mode is GatherScatterMode.FILL_OR_DROP and in_bounds is not None:
        out = fnp.where(in_bounds, out, _default_fill(operand.dtype) if fill_value is None else fill_value)
    return fnp.astype(out, operand.dtype)


def _default_fill(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return True


def _scatter(operand, scatter_indices, updates, dimension_numbers, mode, combine: str):
    operand, indices, updates = fnp.asarray(operand), fnp.asarray(scatter_indices), fnp.asarray(updates)
    dn = ScatterDimensionNumbers(*(tuple(int(a) for a in f) for f in dimension_numbers))
    mode = GatherScatterMode.from_any("fill" if mode is None else mode)
    window_dims = _window_dims(operand.ndim, dn.inserted_window_dims, dn.operand_batching_dims)
    if len(window_dims) != len(dn.update_window_dims):
        raise ShapeError(f"scatter: {len(dn.update_window_dims)} update_window_dims for {len(window_dims)} operand "
                         f"window axes")
    sizes = [updates.shape[p] for p in dn.update_window_dims]
    per_axis, in_bounds = _positions(operand.shape, indices, list(dn.update_window_dims), window_dims, sizes,
                                     dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                     dn.scatter_indices_batching_dims, updates.ndim,
                                     mode is GatherScatterMode.CLIP, "scatter")
    if mode is not GatherScatterMode.CLIP and in_bounds is not None and operand.ndim:
        per_axis[0] = fnp.where(in_bounds, per_axis[0], operand.shape[0])  # past the end: the .at[] drops it
    target = fnp.broadcast_shapes(*(tuple(np.shape(i)) for i in per_axis)) if per_axis else ()
    if tuple(updates.shape) != tuple(target):
        raise ShapeError(f"scatter: updates of shape {tuple(updates.shape)} for windows of shape {tuple(target)}")
    return getattr(operand.at[tuple(per_axis)], combine)(fnp.astype(updates, operand.dtype), mode="drop")


def _combining(name: str, combine: str, doc: str, negate: bool = False):
    """One of XLA's scatters, combining each update with what it lands on by `combine` (an .at[] method)."""
    def scattered(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                  indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
        updates = fnp.negative(updates) if negate else updates
        return _scatter(operand, scatter_indices, updates, dimension_numbers, mode, combine)
    scattered.__name__ = scattered.__qualname__ = name
    scattered.__doc__ = doc
    return scattered


scatter = _combining("scatter", "set", "XLA's Scatter that writes the updates' windows (one wins where they repeat).")
scatter_add = _combining("scatter_add", "add", "XLA's Scatter that adds the updates' windows in.")
scatter_sub = _combining("scatter_sub", "add", "XLA's Scatter that subtracts the updates' windows.", negate=True)
scatter_mul = _combining("scatter_mul", "multiply", "XLA's Scatter that multiplies by the updates' windows.")
scatter_min = _combining("scatter_min", "min", "XLA's Scatter that keeps the minimum with the updates' windows.")
scatter_max = _combining("scatter_max", "max", "XLA's Scatter that keeps the maximum with the updates' windows.")


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape=(), indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    """func applied to each operand element once per window of update_shape that covers it (twice
    where two index vectors overlap, as XLA's combiner runs once per update)."""
    operand = fnp.asarray(operand)
    counts = _scatter(fnp.zeros(operand.shape, np.int64), scatter_indices, fnp.ones(tuple(update_shape), np.int64),
                      dimension_numbers, mode, "add")
    known = fnp.concrete_or_none(fnp.max(counts)) if counts.size else 0
    rounds = int(known) if known is not None else int(np.prod(np.shape(scatter_indices)[:-1]))  # traced: the bound
    out = operand
    for i in range(rounds):
        out = fnp.where(counts > i, func(out), out)
    return out

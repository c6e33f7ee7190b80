"""Collectives over a vmap axis (vmap(f, axis_name="i")): the batch members play the processes of
a mesh axis, so psum sums over the batch and all_gather stacks it, with the semantics (and the
checks: each rule validates through the primitive's own shape rule) the processes would have.

Each rule takes the operand one level below the vmap, with its batch axis d (None: the operand is
the same for every member), and returns the result and its batch axis, as vmap's batch rules do.
They are compositions of ordinary operations, so grad, jit and vmap see through them.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..ops.core import ShapedArray
from ..ops.layout import batch_first


def _member_shape(x, d) -> tuple[int, ...]:
    shape = tuple(x.shape)
    return shape if d is None else shape[:d] + shape[d + 1:]


def _checked(prim, x, d, **params) -> ShapedArray:
    """The result's per-member shape and dtype, from the primitive's shape rule (its errors)."""
    return prim.shape_rule(ShapedArray(_member_shape(x, d), x.dtype), **params)


def psum(n: int, prim, x, d, **params):
    _checked(prim, x, d, **params)
    return (x * n if d is None else fnp.sum(x, axis=d, dtype=x.dtype)), None


def extreme(reduce):
    def rule(n: int, prim, x, d, **params):
        _checked(prim, x, d, **params)
        return (x if d is None else reduce(x, axis=d)), None
    return rule


def all_gather(n: int, prim, x, d, *, axis_name, axis, tiled):
    out = _checked(prim, x, d, axis_name=axis_name, axis=axis, tiled=tiled)
    members = batch_first(x, d, n)
    stacked = fnp.moveaxis(members, 0, axis % (members.ndim - tiled))
    return (fnp.reshape(stacked, out.shape) if tiled else stacked), None


def psum_scatter(n: int, prim, x, d, *, axis_name, scatter_dimension, tiled):
    _checked(prim, x, d, axis_name=axis_name, scatter_dimension=scatter_dimension, tiled=tiled)
    shape = _member_shape(x, d)
    total = x * n if d is None else fnp.sum(x, axis=d, dtype=x.dtype)
    s = scatter_dimension % len(shape)
    if tiled:  # member i keeps tile i: the scattered axis becomes (members, tile)
        total = fnp.reshape(total, shape[:s] + (n, shape[s] // n) + shape[s + 1:])
    return total, s


def ppermute(n: int, prim, x, d, *, axis_name, perm):
    _checked(prim, x, d, axis_name=axis_name, perm=perm)
    members = batch_first(x, d, n)
    source = dict((dst, src) for src, dst in perm)
    received = fnp.take(members, np.array([source.get(i, 0) for i in range(n)]), axis=0)
    if len(source) < n:  # a member nothing is sent to gets zeros
        gets = np.array([i in source for i in range(n)]).reshape((n,) + (1,) * (members.ndim - 1))
        received = fnp.where(gets, received, fnp.zeros((), members.dtype))
    return received, 0


def all_to_all(n: int, prim, x, d, *, axis_name, split_axis, concat_axis, tiled):
    out = _checked(prim, x, d, axis_name=axis_name, split_axis=split_axis, concat_axis=concat_axis, tiled=tiled)
    members = batch_first(x, d, n)  # (source, *member shape)
    s = split_axis % (members.ndim - 1) + 1
    if tiled:  # the split axis becomes (destination, tile)
        members = fnp.reshape(members, members.shape[:s] + (n, members.shape[s] // n) + members.shape[s + 1:])
    by_destination = fnp.moveaxis(members, s, 0)  # (destination, source, ...)
    c = concat_axis % len(out.shape)
    received = fnp.moveaxis(by_destination, 1, c + 1)  # each destination's sources along concat_axis
    return (fnp.reshape(received, (n,) + tuple(out.shape)) if tiled else received), 0


def pvary(n: int, prim, x, d, **params):
    return x, d

"""ravel_pytree (jax.flatten_util's): a pytree of arrays as one flat vector and back, for code that
works on vectors (a second-order optimiser, a Hessian, scipy.optimize)."""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from . import dtypes
from . import numpy as fnp
from .errors import ShapeError
from .tree import tree_flatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """(flat, unravel): the leaves raveled and concatenated in flattening order (in their promoted
    dtype; float32 for a tree without leaves), and the function that splits such a vector back
    into a tree of this structure, each leaf in its own shape and dtype. Both differentiate."""
    leaves, treedef = tree_flatten(pytree)
    leaves = [fnp.asarray(leaf) for leaf in leaves]
    shapes = [tuple(leaf.shape) for leaf in leaves]
    kinds = [leaf.dtype for leaf in leaves]
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    dtype = functools.reduce(dtypes.promote, kinds) if kinds else dtypes.default_float
    flat = fnp.concatenate([fnp.ravel(fnp.astype(leaf, dtype)) for leaf in leaves]) if leaves else fnp.zeros(0, dtype)
    total = sum(sizes)

    def unravel(vector):
        vector = fnp.asarray(vector)
        if tuple(vector.shape) != (total,):
            raise ShapeError(f"unravel: expected a vector of shape ({total},) for this tree, got {tuple(vector.shape)}")
        parts, start = [], 0
        for shape, kind, size in zip(shapes, kinds, sizes):
            parts.append(fnp.astype(fnp.reshape(vector[start:start + size], shape), kind))
            start += size
        return treedef.unflatten(parts)

    return flat, unravel

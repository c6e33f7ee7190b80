"""Host Python functions inside transformed code (jax.pure_callback, jax.experimental.io_callback):
the callback runs with NumPy arrays where the program runs, eagerly or at every call of a jitted
function, and returns results of the shapes and dtypes declared up front, which jit needs before
anything runs.

pure_callback is for functions without side effects: jit may drop a call whose results nothing
reads. io_callback is for effects (logging, reading a sensor): jit keeps every call, in order.
Neither has a derivative (a rule that raises); give one with fg.custom_jvp or fg.custom_vjp."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import numpy as fnp
from .array import ArrayBase
from .ops.core import ShapedArray
from .ops.host_callback import host_callback_p, io_callback_p, pure_callback_p
from .ops.prng import bitcast_p
from .trace import bind
from .tree import tree_flatten

__all__ = ["io_callback", "pure_callback"]

_VMAP_METHODS = (None, "sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args, sharding=None,
                  vmap_method: str | None = None, **kwargs) -> Any:
    """callback(*args, **kwargs) on NumPy values, its results (a pytree shaped like
    result_shape_dtypes: ShapeDtypeStructs or arrays) as arrays. Under vmap, vmap_method says how the
    callback takes a batch: 'sequential' once per member; 'expand_dims' once, with a leading batch
    axis on the batched arguments and one of size 1 on the others; 'broadcast_all' once, every
    argument broadcast to the batch. `sharding` is accepted for JAX's signature (one device)."""
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of {_VMAP_METHODS}, got {vmap_method!r}")
    return _call(pure_callback_p, "pure_callback", callback, result_shape_dtypes, args, kwargs, vmap_method)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args, sharding=None, ordered: bool = False,
                **kwargs) -> Any:
    """callback(*args, **kwargs) for its effects and results: every call runs, in program order
    (ordered is accepted for JAX's signature; funcgrad keeps the order always). Under vmap, an
    unordered callback runs once per member; an ordered one raises, as JAX's."""
    return _call(io_callback_p, "io_callback", callback, result_shape_dtypes, args, kwargs,
                 None if ordered else "sequential")


def _declares(x) -> bool:
    """A leaf of result_shape_dtypes: a ShapeDtypeStruct (a named tuple, not a node here) or an array."""
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _is_value(x) -> bool:
    return isinstance(x, (ArrayBase, np.ndarray, np.generic, bool, int, float, complex))


def _call(prim, name: str, callback, result_shape_dtypes, args: tuple, kwargs: dict, vmap_method):
    leaves, structure = tree_flatten((args, kwargs))
    positions = [i for i, leaf in enumerate(leaves) if _is_value(leaf)]
    declared, out_structure = tree_flatten(result_shape_dtypes, is_leaf=_declares)
    for i, d in enumerate(declared):
        if not _declares(d):
            raise TypeError(f"{name}: result_shape_dtypes leaf {i} is a {type(d).__name__}, not something with a "
                            f"shape and dtype (fg.ShapeDtypeStruct(shape, dtype) or an array)")
    results = tuple(ShapedArray(d.shape, d.dtype) for d in declared)

    def call(*values):
        filled = list(leaves)
        for i, value in zip(positions, values):
            filled[i] = value
        call_args, call_kwargs = structure.unflatten(filled)
        out_leaves, got = tree_flatten(callback(*call_args, **call_kwargs))
        if got != out_structure:
            raise ValueError(f"{name}: the callback's results do not have result_shape_dtypes' structure: "
                             f"{out_structure.difference(got)}")
        return out_leaves[0] if len(results) == 1 else tuple(out_leaves)

    arrays = [fnp.asarray(leaves[i]) for i in positions]
    if not results:  # effects only (io_callback(f, None, x)): debug.callback's ordered primitive runs it
        host_callback_p(*arrays, callback=call)
        return out_structure.unflatten([])
    packed = prim(*arrays, callback=call, results=results, lead=0, vmap_method=vmap_method, name=name)
    return out_structure.unflatten([packed] if len(results) == 1 else _unpacked(packed, results))


def _unpacked(packed, results: tuple) -> list:
    """The declared arrays back from their bytes, packed in turn along the last axis."""
    out, start = [], 0
    for r in results:
        nbytes = int(np.prod(r.shape, dtype=np.int64)) * r.dtype.itemsize
        values = bind(bitcast_p, packed[..., start:start + nbytes], dtype=r.dtype)
        out.append(fnp.reshape(values, tuple(packed.shape[:-1]) + r.shape))
        start += nbytes
    return out

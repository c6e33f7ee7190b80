"""Python functions called with the concrete values where the program runs (eagerly at once, inside
jit at each call): host_callback observes (jax.debug.print and jax.debug.callback: ordered, its token
read by nothing, once per member under vmap); pure_callback and io_callback compute results of
declared shapes and dtypes (jax.pure_callback, jax.experimental.io_callback).

A primitive returns one array, so a callback of several results returns them packed as the bytes
of each in turn along a last axis (per member of a batch: leading axes are batch axes), which
callback.py views back as the declared arrays. Neither is differentiable: JAX's rule, a callback is
opaque, and a zero derivative would be silently wrong, so its rules raise (custom_jvp/custom_vjp
around the callback give it one). Under vmap without a vmap_method (or for an ordered io_callback)
the batch rule raises NotImplementedError, JAX's exception type and meaning: how to batch an opaque
function is the caller's statement to make, not something funcgrad can guess."""
from __future__ import annotations

import numpy as np

from .core import Primitive, ShapedArray
from .layout import batch_first, reshape_p
from .shape import concatenate_p


def _impl(*values, callback):
    callback(*(np.asarray(v) for v in values))
    return np.zeros((), np.bool_)


def _shape(*avals, callback):
    return ShapedArray((), np.bool_)


def _batch(size, prim, vals, dims, *, callback):
    """Each member's values in turn, as JAX's debug callbacks run under vmap."""
    firsts = [v if d is None else batch_first(v, d, size) for v, d in zip(vals, dims)]
    for i in range(size):
        prim(*(v if d is None else v[i] for v, d in zip(firsts, dims)), callback=callback)
    return np.zeros((), np.bool_), None


host_callback_p = Primitive("host_callback", _impl, shape_rule=_shape, batch_rule=_batch, cuda="through_host",
                            fresh=True, ordered=True, differentiable=False)


# ---- callbacks with results -----------------------------------------------------------------------
def packed_bytes(results: tuple, lead: int) -> int:
    """Bytes per batch member of the packed results, whose first `lead` axes are batch axes."""
    return sum(int(np.prod(r.shape[lead:], dtype=np.int64)) * r.dtype.itemsize for r in results)


def _checked(value, declared: ShapedArray, i: int, name: str) -> np.ndarray:
    """The callback's result i as declared: a new array (it may return an argument, which jit's
    buffers hold), its dtype cast as JAX casts it; a shape other than the declared one raises."""
    value = np.asarray(value)
    if value.shape != declared.shape:
        raise ValueError(f"{name}: the callback's result {i} has shape {value.shape}, declared {declared.shape} "
                         f"in result_shape_dtypes")
    return np.array(value, dtype=declared.dtype, order="C", copy=True)


def _results_impl(*values, callback, results, lead, vmap_method, name):
    """callback(*values) checked against the declared results: the array, or their bytes packed. The
    callback gets copies: it may keep or change them, and jit reuses its buffers."""
    out = callback(*(np.array(v) for v in values))
    if len(results) == 1:
        return _checked(out, results[0], 0, name)
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        got = f"{len(out)} results" if isinstance(out, (tuple, list)) else f"a {type(out).__name__}"
        raise ValueError(f"{name}: the callback returned {got}, result_shape_dtypes declares {len(results)} results")
    batch = results[0].shape[:lead]
    parts = [_checked(o, r, i, name).reshape(batch + (-1,)).view(np.uint8)
             for i, (o, r) in enumerate(zip(out, results))]
    return np.concatenate(parts, axis=-1) if parts else np.zeros(batch + (0,), np.uint8)


def _results_shape(*avals, callback, results, lead, vmap_method, name):
    if len(results) == 1:
        return results[0]
    return ShapedArray(results[0].shape[:lead] + (packed_bytes(results, lead),), np.uint8)


def _batch_results(size, prim, vals, dims, *, callback, results, lead, vmap_method, name):
    """vmap_method (JAX's): 'sequential' calls the callback per member and stacks; 'expand_dims'
    calls it once with a leading batch axis on batched arguments (and one of size 1 on the others),
    'broadcast_all' with every argument broadcast to the batch; the callback returns results with
    that leading axis."""
    params = dict(callback=callback, vmap_method=vmap_method, name=name)
    if vmap_method in ("sequential", "sequential_unrolled"):
        firsts = [v if d is None else batch_first(v, d, size) for v, d in zip(vals, dims)]
        members = [prim(*(v if d is None else v[i] for v, d in zip(firsts, dims)), results=results, lead=lead,
                        **params) for i in range(size)]
        return concatenate_p(*(_with_unit_axis(m) for m in members), axis=0), 0
    if vmap_method in ("expand_dims", "broadcast_all"):
        if vmap_method == "expand_dims":
            args = [_with_unit_axis(v) if d is None else batch_first(v, d, size) for v, d in zip(vals, dims)]
        else:
            args = [batch_first(v, d, size) for v, d in zip(vals, dims)]
        batched = tuple(ShapedArray((size,) + r.shape, r.dtype) for r in results)
        return prim(*args, results=batched, lead=lead + 1, **params), 0
    if name == "io_callback":
        raise NotImplementedError("an ordered io_callback cannot run under vmap: its members' calls have no order "
                                  "(JAX's rule); pass ordered=False to call it once per member")
    raise NotImplementedError(
        f"{name} under vmap needs vmap_method= one of 'sequential', 'sequential_unrolled', 'expand_dims' or "
        f"'broadcast_all' (how the callback takes a batch), got {vmap_method!r}")


def _with_unit_axis(x):
    return reshape_p(x, shape=(1,) + tuple(x.shape))


def _not_differentiable(i, *args, name, **params):
    raise ValueError(f"{name} callbacks have no derivative: wrap the function that calls it in fg.custom_jvp or "
                     f"fg.custom_vjp to give it one (JAX: 'Pure callbacks do not support JVP')")


pure_callback_p = Primitive("pure_callback", _results_impl, shape_rule=_results_shape, batch_rule=_batch_results,
                            cuda="through_host", fresh=True)
io_callback_p = Primitive("io_callback", _results_impl, shape_rule=_results_shape, batch_rule=_batch_results,
                          cuda="through_host", fresh=True, ordered=True)
for _prim in (pure_callback_p, io_callback_p):
    _prim.vjp_argnum = _prim.jvp_argnum = _not_differentiable

"""host_callback: a Python function called with the concrete values where the program runs
(eagerly at once, inside jit at each call, once per member under vmap), for jax.debug.print and
jax.debug.callback. Ordered, so jit keeps it in place; it returns a token nothing reads, and no
derivative flows through it (it observes, it computes nothing)."""
from __future__ import annotations

import numpy as np

from .core import Primitive, ShapedArray
from .layout import batch_first


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

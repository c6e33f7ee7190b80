"""Random bits as primitives, so sampling traces under jit like any other operation."""
from __future__ import annotations

import numpy as np

from ..cpu.threefry import threefry2x32
from .core import Primitive


def _threefry_impl(key, x0, x1):
    key = np.asarray(key)
    if key.ndim > 1:  # a batch of keys (vmap): each row encrypts the counters that broadcast with it
        key = key.reshape(key.shape[:-1] + (1,) + key.shape[-1:])
    y0, y1 = threefry2x32(key, np.asarray(x0, np.uint32), np.asarray(x1, np.uint32))
    return np.stack([y0, y1], axis=-1)


# threefry2x32(key (..., 2), x0 (n,), x1 (n,)) -> (..., n, 2): the encrypted counter pairs.
threefry2x32_p = Primitive("threefry2x32", _threefry_impl, differentiable=False)
bitcast_p = Primitive("bitcast", lambda x, dtype: np.asarray(x).view(dtype), differentiable=False)
argsort_p = Primitive("argsort", lambda x, axis: np.argsort(x, axis=axis, kind="stable"), differentiable=False)

"""Special functions NumPy lacks, compiled once with numba and cached on disk."""
from __future__ import annotations

import math
from functools import cache

import numpy as np


@cache
def _erf_kernel():
    from numba import vectorize  # numba's first import costs ~0.3 s: pay it only when used

    @vectorize(["float32(float32)", "float64(float64)"], cache=True)
    def erf(x):
        return math.erf(x)

    return erf


def erf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype in (np.float32, np.float64):
        return _erf_kernel()(x)
    return _erf_kernel()(x.astype(np.float32)).astype(x.dtype)

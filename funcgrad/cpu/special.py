"""Special functions NumPy lacks (libm's erf, erfc and lgamma), compiled once with numba and cached on
disk."""
from __future__ import annotations

import math
from functools import cache

import numpy as np


@cache
def _kernels() -> dict:
    from numba import vectorize  # numba's first import costs ~0.3 s: pay it only when used
    signatures = ["float32(float32)", "float64(float64)"]

    @vectorize(signatures, cache=True)
    def erf(x):
        return math.erf(x)

    @vectorize(signatures, cache=True)
    def erfc(x):
        return math.erfc(x)

    @vectorize(signatures, cache=True)
    def lgamma(x):
        return math.lgamma(x)

    return {"erf": erf, "erfc": erfc, "lgamma": lgamma}


def _libm(name: str, x) -> np.ndarray:
    x = np.asarray(x)
    with np.errstate(divide="ignore"):  # lgamma's poles are inf, quietly (as PyTorch's and JAX's)
        if x.dtype in (np.float32, np.float64):
            return _kernels()[name](x)
        return _kernels()[name](x.astype(np.float32)).astype(x.dtype)


def erf(x) -> np.ndarray:
    return _libm("erf", x)


def erfc(x) -> np.ndarray:
    return _libm("erfc", x)


def lgamma(x) -> np.ndarray:
    return _libm("lgamma", x)

"""The incomplete gamma family (funcgrad/ops/incomplete_gamma.py) compiled by numba for the CPU: a
ufunc for the primitives' implementations, and the scalar function itself for fused kernels, which
call it as `sp.incomplete_gamma(a, x, mode)`."""
from __future__ import annotations

import numpy as np
from numba import njit, vectorize

from ..ops.incomplete_gamma import incomplete_gamma as _python

incomplete_gamma = njit(cache=True, error_model="numpy")(_python)


@vectorize(["float64(float64, float64, int64)"], cache=True)
def _ufunc(a, x, mode):
    return incomplete_gamma(a, x, mode)


def evaluate(mode: int, a, x) -> np.ndarray:
    """Mode `mode` of incomplete_gamma over broadcast a and x, in their common dtype."""
    dtype = np.result_type(a, x)  # computed in float64 (float16 and bfloat16 operands too)
    return np.asarray(_ufunc(np.asarray(a, np.float64), np.asarray(x, np.float64), mode), dtype)

"""The scalar functions that need a loop (ops/incomplete_gamma.py, incomplete_beta.py,
exponential_integral.py) compiled
by numba for the CPU: ufuncs for the primitives' implementations, and the functions themselves for
fused kernels, which call them as `sp.incomplete_gamma(a, x, mode)` (ops/scalar.py's LOOPS)."""
from __future__ import annotations

import numpy as np
from numba import njit, vectorize

from ..ops import exponential_integral as _exponential
from ..ops import incomplete_beta as _beta
from ..ops import incomplete_gamma as _gamma
from ..ops.scalar import LOOPS

incomplete_gamma = njit(cache=True, error_model="numpy")(_gamma.incomplete_gamma)
incomplete_beta = njit(cache=True, error_model="numpy")(_beta.incomplete_beta)
exponential_integral = njit(cache=True, error_model="numpy")(_exponential.exponential_integral)


@vectorize(["float64(float64, float64, int64)"], cache=True)
def _incomplete_gamma(a, x, mode):
    return incomplete_gamma(a, x, mode)


@vectorize(["float64(float64, float64, float64)"], cache=True)
def _incomplete_beta(a, b, x):
    return incomplete_beta(a, b, x)


@vectorize(["float64(float64, float64, int64)"], cache=True)
def _exponential_integral(n, x, mode):
    return exponential_integral(n, x, mode)


_UFUNCS = {"incomplete_gamma": _incomplete_gamma, "incomplete_beta": _incomplete_beta,
           "exponential_integral": _exponential_integral}


def evaluate(name: str, *operands) -> np.ndarray:
    """LOOPS[name] elementwise over the broadcast operands, computed in float64 and returned in
    their common dtype (float16 and bfloat16 operands too)."""
    function, before, after = LOOPS[name]
    dtype = np.result_type(*operands)
    return np.asarray(_UFUNCS[function](*before, *(np.asarray(o, np.float64) for o in operands), *after), dtype)

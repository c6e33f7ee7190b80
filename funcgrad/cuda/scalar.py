"""Device-side scalar helpers every kernel shares: strided addressing, half-precision widening and
rounding, and the math functions under one name on the GPU and in the simulator.

On a GPU numba compiles `math.exp` and friends to libdevice. The simulator runs kernels as Python
on NumPy scalars, where `math.log(0.0)` raises instead of returning -inf, so there the same names
are NumPy's ufuncs: the kernels' source is identical and so are their numerics at the edges.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ..ops import exponential_integral as _exponential
from ..ops import incomplete_beta as _beta
from ..ops import incomplete_gamma as _gamma
from .runtime import SIMULATOR, cuda


@cuda.jit(device=True)
def element(i, shape, strides, offset):
    """Storage index of element i (row-major over shape, i < its size) of a strided view. The
    outermost index needs no remainder (i < size), so an operand collapsed to one dimension (any
    contiguous one) costs a multiply-add, no 64-bit division."""
    for d in range(len(shape) - 1, 0, -1):
        offset += (i % shape[d]) * strides[d]
        i //= shape[d]
    for d in range(min(len(shape), 1)):
        offset += i * strides[d]
    return offset


_MATH = ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "tanh", "sinh",
         "cosh", "atan", "asin", "acos", "asinh", "acosh", "atanh", "erf", "floor", "ceil", "trunc",
         "atan2", "isnan", "isinf", "isfinite", "fabs", "lgamma", "erfc")
_NUMPY_NAME = {"atan": "arctan", "asin": "arcsin", "acos": "arccos", "asinh": "arcsinh", "acosh": "arccosh",
               "atanh": "arctanh", "atan2": "arctan2"}
_LIBM_ONLY = ("erf", "erfc", "lgamma")  # NumPy has no ufunc for these

if SIMULATOR:
    def _libm(fn):
        return lambda x: type(x)(fn(x))

    MATH = {name: (_libm(getattr(math, name)) if name in _LIBM_ONLY else getattr(np, _NUMPY_NAME.get(name, name)))
            for name in _MATH}

    rint32 = rint64 = np.rint

    @cuda.jit(device=True)
    def bf16_to_f32(bits):
        return np.array(np.uint32(bits) << np.uint32(16), np.uint32).view(np.float32)[()]

    @cuda.jit(device=True)
    def f32_to_bf16(x):
        return np.array(np.float32(x)).astype(ml_dtypes.bfloat16).view(np.uint16)[()]
else:
    from numba import int32, uint16, uint32
    from numba.cuda import libdevice

    MATH = {name: getattr(math, name) for name in _MATH}

    rint32, rint64 = libdevice.rintf, libdevice.rint  # round half to even, as NumPy

    @cuda.jit(device=True)
    def bf16_to_f32(bits):
        return libdevice.int_as_float(int32(uint32(bits) << 16))

    @cuda.jit(device=True)
    def f32_to_bf16(x):
        if x != x:
            return uint16(0x7FC0)
        u = uint32(libdevice.float_as_int(x))
        return uint16((u + uint32(0x7FFF) + ((u >> 16) & uint32(1))) >> 16)  # round to nearest even

# complex operands: cmath on a GPU, NumPy's ufuncs in the simulator; kernels call scalar.c_exp(z), ...
_CMATH = ("exp", "log", "log10", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "atan", "asin", "acos",
          "asinh", "acosh", "atanh", "isnan", "isinf", "isfinite")
if SIMULATOR:
    CMATH = {f"c_{name}": MATH[name] for name in _CMATH}
else:
    import cmath
    CMATH = {f"c_{name}": getattr(cmath, name) for name in _CMATH}

globals().update(MATH)  # kernels call them as scalar.exp(x), scalar.atan2(y, x), ...
globals().update(CMATH)

# the loop functions (ops/scalar.py's LOOPS): kernels call scalar.incomplete_gamma(a, x, mode), ...
incomplete_gamma = cuda.jit(device=True)(_gamma.incomplete_gamma)
incomplete_beta = cuda.jit(device=True)(_beta.incomplete_beta)
exponential_integral = cuda.jit(device=True)(_exponential.exponential_integral)

"""float32 exp, tanh and erf for numba kernels, without libm calls, so loops vectorise.

numba has no vector math library here (its SVML needs a patched LLVM that the pip wheels lack), so
np.exp in a kernel is a scalar libm call per element, several times NumPy's vectorised cost. These
are the polynomial and rational forms XLA and Eigen use. `exp`, `tanh` and `erf` pick the float32
form for a float32 argument and the libm function for any other type; fused kernels (cpu/fusion.py)
and the row kernels (cpu/rows.py) call them. Importing this imports numba.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload


@njit(inline="always", error_model="numpy")
def exp32(x):
    """Cephes' expf: n = round(x / ln 2), a degree-6 polynomial on the remainder, times 2**n made
    from its bits (in two halves, so results near overflow and in the subnormal range come out
    right). Within 1.01 ulp of the correctly rounded exp; inf, -inf and NaN as exp."""
    xc = np.float32(min(max(x, np.float32(-104.0)), np.float32(89.0)))
    n = np.float32(np.floor(xc * np.float32(1.44269504088896341) + np.float32(0.5)))
    r = xc - n * np.float32(0.693359375)
    r = r - n * np.float32(-2.12194440e-4)
    p = np.float32(1.9875691500e-4) * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * (r * r) + r + np.float32(1.0)
    k = np.int32(n)
    half = k >> 1
    y = p * np.int32((half + 127) << 23).view(np.float32) * np.int32((k - half + 127) << 23).view(np.float32)
    return x if x != x else y


@njit(inline="always", error_model="numpy")
def tanh32(x):
    """Eigen's and XLA's rational tanh, within a few ulp; beyond +-7.905 it saturates to +-1."""
    small = abs(x) < np.float32(0.0004)
    big = abs(x) >= np.float32(7.90531110763549805)
    x = np.float32(min(max(x, np.float32(-7.90531110763549805)), np.float32(7.90531110763549805)))
    x2 = x * x
    p = x2 * np.float32(-2.76076847742355e-16) + np.float32(2.00018790482477e-13)
    p = x2 * p + np.float32(-8.60467152213735e-11)
    p = x2 * p + np.float32(5.12229709037114e-08)
    p = x2 * p + np.float32(1.48572235717979e-05)
    p = x2 * p + np.float32(6.37261928875436e-04)
    p = x2 * p + np.float32(4.89352455891786e-03)
    q = x2 * np.float32(1.19825839466702e-06) + np.float32(1.18534705686654e-04)
    q = x2 * q + np.float32(2.26843463243900e-03)
    q = x2 * q + np.float32(4.89352518554385e-03)
    r = np.float32(1.0) if x > 0 else np.float32(-1.0)
    return x if small else (r if big else np.float32(x * p / q))


@njit(inline="always", error_model="numpy")
def erf32(x):
    """x * P(x^2) / Q(x^2) on [-4, 4] (Eigen's and XLA's), saturating beyond; no libm call, so it
    vectorises. Within 5 ulp of the correctly rounded erf, largest near |x| = 3.9."""
    x = np.float32(min(max(x, np.float32(-4.0)), np.float32(4.0)))
    x2 = x * x
    p = x2 * np.float32(-2.72614225801306e-10) + np.float32(2.77068142495902e-08)
    p = x2 * p + np.float32(-2.10102402082508e-06)
    p = x2 * p + np.float32(-5.69250639462346e-05)
    p = x2 * p + np.float32(-7.34990630326855e-04)
    p = x2 * p + np.float32(-2.95459980854025e-03)
    p = x2 * p + np.float32(-1.60960333262415e-02)
    q = x2 * np.float32(-1.45660718464996e-05) + np.float32(-2.13374055278905e-04)
    q = x2 * q + np.float32(-1.68282697438203e-03)
    q = x2 * q + np.float32(-7.37332916720468e-03)
    q = x2 * q + np.float32(-1.42647390514189e-02)
    return np.float32(x * p / q)


# ---- what kernels call: the float32 form for float32, libm for the rest ------------------------------
def exp(x):
    return np.exp(x)


def tanh(x):
    return np.tanh(x)


def erf(x):
    return math.erf(x)


def _by_type(fast, other):
    def choose(x):
        return (lambda x: fast(x)) if x == types.float32 else (lambda x: other(x))
    return choose


overload(exp)(_by_type(exp32, np.exp))
overload(tanh)(_by_type(tanh32, np.tanh))
overload(erf)(_by_type(erf32, math.erf))

"""The modified Bessel functions of the first kind, orders 0 and 1, composed from primitives (so
every transform and backend applies): NumPy's i0, and the scaled forms scipy.special's i0e, i1e, i0
and i1 are built on. Up to |x| = 30 the power series sum_k (x/2)^(2k+n) / (k! (k+n)!), whose
positive terms keep full relative precision (50 terms); above, the asymptotic expansion
e^x / sqrt(2 pi x) sum_k (-1)^k prod_j (4n^2 - (2j-1)^2) / (k! (8x)^k) (30 terms), both within a few
ulp in float64."""
from __future__ import annotations

import math

from . import _base as fnp

__all__ = ["i0"]

SERIES_LIMIT = 30.0
SERIES_TERMS, ASYMPTOTIC_TERMS = 50, 30


def scaled_bessel_i(x, order: int):
    """exp(-|x|) I_order(x) for order 0 or 1. I_1 is odd: its series starts from the signed x / 2,
    so its derivative at 0 is 1/2 (a sign times I_1(|x|) would have a zero one there)."""
    x = fnp._float_arg(x)
    ax = fnp.abs(x)
    small = ax <= SERIES_LIMIT
    half = fnp.where(small, ax, 1.0) / 2
    quarter_square = half * half
    term = fnp.where(small, x, 1.0) / 2 if order else fnp.ones_like(half)
    total = term
    for k in range(1, SERIES_TERMS + 1):
        term = term * quarter_square / (k * (k + order))
        total = total + term
    series = total * fnp.exp(-2 * half)
    big = fnp.where(small, 2 * SERIES_LIMIT, ax)
    mu = 4 * order * order
    term = fnp.ones_like(big)
    total = term
    for k in range(1, ASYMPTOTIC_TERMS + 1):
        term = term * (-(mu - (2 * k - 1) ** 2)) / (k * 8 * big)
        total = total + term
    asymptotic = total / fnp.sqrt(2 * math.pi * big)
    return fnp.where(small, series, fnp.sign(x) * asymptotic if order else asymptotic)


def i0(x):
    """The modified Bessel function of the first kind of order 0 (np.i0): inf beyond ~713."""
    x = fnp._float_arg(x)
    return scaled_bessel_i(x, 0) * fnp.exp(fnp.abs(x))

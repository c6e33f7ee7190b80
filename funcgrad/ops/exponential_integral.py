"""The exponential integrals E_n(x) = int_1^inf e^(-x t) / t^n dt (n = 0, 1, 2, ...) and
Ei(x) = -PV int_-x^inf e^-t / t dt, as one scalar function of Python's `math` that both backends
compile (as ops/incomplete_gamma.py). Numerical Recipes' methods in float64: for E_n the power
series (with digamma's term at i = n - 1) up to x = 1 and Lentz's continued fraction above; for Ei
the power series up to x = 36 (-log of the tolerance) and the asymptotic series above, and
Ei(x) = -E_1(-x) below 0. SciPy's edge values: E_n(0) = inf for n <= 1 and 1 / (n - 1) above, NaN
for x < 0 or a negative or fractional n; Ei(0) = -inf."""
from __future__ import annotations

import math

EXPN, EXPI = range(2)
MAX_TERMS = 1000
EPS = 2.0 ** -53
TINY = 1e-300
EULER = 0.5772156649015329


def exponential_integral(n, x, mode):
    """E_n(x) (mode EXPN) or Ei(x) (mode EXPI, n unused)."""
    n, x = float(n), float(x)
    if x != x or n != n:
        return math.nan
    if mode == EXPI:
        if x == 0.0:
            return -math.inf
        if x > 0.0:
            if math.isinf(x):
                return math.inf
            if x <= 36.0:  # sum_k x^k / (k k!) + log x + gamma
                total, term = 0.0, 1.0
                for k in range(1, MAX_TERMS):
                    term *= x / k
                    total += term / k
                    if term / k < EPS * total:
                        break
                return total + math.log(x) + EULER
            total, term = 1.0, 1.0  # e^x / x sum_k k! / x^k, stopped at its smallest term
            for k in range(1, MAX_TERMS):
                previous = term
                term *= k / x
                if term < EPS:
                    break
                if term < previous:
                    total += term
                else:
                    total -= previous
                    break
            return math.exp(x) * total / x if x < 709.0 else math.inf
        n, x = 1.0, -x  # Ei(x) = -E_1(-x)
        sign = -1.0
    else:
        sign = 1.0
        if x < 0.0 or n < 0.0 or n != math.floor(n):
            return math.nan
    if x == 0.0:
        return sign * (math.inf if n <= 1.0 else 1.0 / (n - 1.0))
    if math.isinf(x):
        return 0.0
    if n == 0.0:
        return sign * math.exp(-x) / x
    if x > 1.0:  # Lentz's continued fraction of e^x E_n(x)
        b = x + n
        c = 1.0 / TINY
        d = 1.0 / b
        h = d
        for i in range(1, MAX_TERMS):
            a = -i * (n - 1.0 + i)
            b += 2.0
            d = 1.0 / (a * d + b)
            c = b + a / c
            step = c * d
            h *= step
            if abs(step - 1.0) <= EPS:
                return sign * h * math.exp(-x)
        return math.nan
    total = 1.0 / (n - 1.0) if n != 1.0 else -math.log(x) - EULER
    factor = 1.0
    for i in range(1, MAX_TERMS):
        factor *= -x / i
        if i != n - 1.0:
            step = -factor / (i - n + 1.0)
        else:  # the term where the series meets digamma(n)
            psi = -EULER
            for j in range(1, i + 1):
                psi += 1.0 / j
            step = factor * (-math.log(x) + psi)
        total += step
        if abs(step) < abs(total) * EPS:
            return sign * total
    return math.nan

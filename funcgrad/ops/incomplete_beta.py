"""The regularized incomplete beta function I_x(a, b) = B(x; a, b) / B(a, b), as one scalar function
of Python's `math` that both backends compile (as ops/incomplete_gamma.py): the CDF of the beta
distribution, and through it those of Student's t, F and the binomial.

Legendre's continued fraction by the modified Lentz method (Numerical Recipes' betacf), on x when
x < (a + 1) / (a + b + 2) and on 1 - x with a and b swapped otherwise, so it converges in
O(sqrt(max(a, b))) terms; computed in float64. Values at the edges are SciPy's: NaN for a, b < 0,
x outside [0, 1] or a NaN; I_0 = 0 and I_1 = 1; a = 0 gives 1 and b = 0 gives 0 inside; an
infinite a gives 0 and an infinite b gives 1 (both infinite, or both 0: NaN). A fraction that has
not converged in MAX_TERMS terms (a, b above ~1e7) gives NaN.
"""
from __future__ import annotations

import math

MAX_TERMS = 20000
EPS = 2.0 ** -52
TINY = 1e-300  # Lentz's guard against a zero denominator


def incomplete_beta(a, b, x):
    """I_x(a, b)."""
    a, b, x = float(a), float(b), float(x)
    if a != a or b != b or x != x or a < 0.0 or b < 0.0 or x < 0.0 or x > 1.0:
        return math.nan
    if (a == 0.0 and b == 0.0) or (math.isinf(a) and math.isinf(b)):
        return math.nan
    if x == 0.0 or x == 1.0:
        return x
    if a == 0.0 or math.isinf(b):
        return 1.0
    if b == 0.0 or math.isinf(a):
        return 0.0
    flip = x >= (a + 1.0) / (a + b + 2.0)
    if flip:
        a, b, x = b, a, 1.0 - x
    if a < 20.0 or b < 20.0:  # log(x^a (1 - x)^b / B(a, b))
        log_front = a * math.log(x) + b * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    else:  # the same without cancelling lgamma's ~ (a + b) log(a + b) terms: Stirling's series for
        # each lgamma (as in ops/incomplete_gamma.py: numba compiles each loop function alone, so they
        # share no helper), around p = a / (a + b)
        correction = 0.0
        for k in range(3):
            y = a + b if k == 0 else (a if k == 1 else b)
            w = 1.0 / (y * y)
            term = (1.0 / 12 - w * (1.0 / 360 - w * (1.0 / 1260 - w * (1.0 / 1680 - w / 1188.0)))) / y
            correction += term if k == 0 else -term
        p, q = a / (a + b), b / (a + b)
        log_front = (a * math.log1p((x - p) / p) + b * math.log1p((p - x) / q)
                     + 0.5 * math.log(a * b / (a + b) / (2.0 * math.pi)) + correction)
    # the continued fraction 1 / (1 + d1 / (1 + d2 / (1 + ...))), d_2m+1 = -(a + m)(a + b + m) x /
    # ((a + 2m)(a + 2m + 1)), d_2m = m (b - m) x / ((a + 2m - 1)(a + 2m))
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > TINY else TINY)
    value = d
    converged = False
    for m in range(1, MAX_TERMS + 1):
        for odd in range(2):
            if odd == 0:
                step = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
            else:
                step = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
            d = 1.0 + step * d
            d = 1.0 / (d if abs(d) > TINY else TINY)
            c = 1.0 + step / c
            c = c if abs(c) > TINY else TINY
            value *= c * d
        if abs(c * d - 1.0) <= EPS:
            converged = True
            break
    if not converged:
        return math.nan
    part = math.exp(log_front) * value / a
    return 1.0 - part if flip else part

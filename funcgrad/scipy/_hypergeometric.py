"""Kummer's confluent hypergeometric function 1F1(a; b; x) (scipy.special.hyp1f1), for real
arguments, in float64: Kummer's transformation 1F1(a; b; x) = e^x 1F1(b - a; b; -x) makes x >= 0,
where the Taylor series has positive terms when a > 0 (no cancellation), and past x = 100 the
asymptotic expansion takes over. Composed of funcgrad operations, so derivatives in a, b and x
follow (those of the converged series), and jit and vmap too.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..ops import special as S
from ..trace import bind

__all__ = ["hyp1f1"]

_SERIES_TERMS = 320  # at x < 100 the terms peak near k = x and have fallen below 1e-17 of the sum by here
_ASYMPTOTIC_TERMS = 60
_SWITCH = 100.0


def _series(a, b, x):
    total, term = fnp.ones_like(x), fnp.ones_like(x)
    for k in range(_SERIES_TERMS):
        term = term * (a + k) / (b + k) * x / (k + 1)
        total = total + term
    return total


def _gamma_sign(v):
    return fnp.where((v > 0) | (fnp.floor(v) % 2 == 0), 1.0, -1.0)


def _asymptotic(a, b, x):
    """Gamma(b) / Gamma(a) e^x x^(a - b) sum_k (b - a)_k (1 - a)_k / k! x^-k, for large x > 0."""
    total, term = fnp.ones_like(x), fnp.ones_like(x)
    for k in range(_ASYMPTOTIC_TERMS):
        term = term * (b - a + k) * (1 - a + k) / ((k + 1) * x)
        total = total + term
    log_scale = bind(S.lgamma_p, b) - bind(S.lgamma_p, a) + x + (a - b) * fnp.log(x)
    return _gamma_sign(b) * _gamma_sign(a) * fnp.exp(log_scale) * total


def _hyp1f1_64(a, b, x):
    kummer = x < 0
    a_, x_ = fnp.where(kummer, b - a, a), fnp.abs(x)
    terminating = (a_ <= 0) & (a_ == fnp.round(a_))  # a polynomial: the series ends by itself
    small = terminating | (x_ < _SWITCH)
    value = fnp.where(small, _series(a_, b, fnp.where(small, x_, 0.0)),
                      _asymptotic(a_, b, fnp.where(small, _SWITCH, x_)))
    value = fnp.where(kummer, fnp.exp(x) * value, value)
    value = fnp.where(a == 0, 1.0, fnp.where(a == b, fnp.exp(x), value))
    pole = (b <= 0) & (b == fnp.round(b)) & ~((a <= 0) & (a == fnp.round(a)) & (a > b))
    return fnp.where(pole, np.inf, value)


def hyp1f1(a, b, x):
    """scipy.special.hyp1f1 for real a, b, x: sum_k (a)_k / (b)_k x^k / k!; inf at b = 0, -1, ...
    (unless a is a non-positive integer above b, where the series ends first)."""
    a, b, x = fnp._common(tuple(fnp._float_arg(v) for v in (a, b, x)))
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"hyp1f1 takes real arguments, got {x.dtype}")
    wide = [fnp.astype(v, np.float64) for v in (a, b, x)]
    return fnp.astype(_hyp1f1_64(*wide), x.dtype)

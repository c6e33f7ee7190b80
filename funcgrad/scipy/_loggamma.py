"""loggamma: the principal branch of log Gamma (scipy.special.loggamma), analytic off the negative
real line, composed of funcgrad operations so that jit, vmap and derivatives follow.

A real argument gives gammaln where x >= 0 (inf at 0) and NaN below (SciPy's; JAX's is NaN at 0 too). A complex z is
taken to the upper half-plane (log Gamma(conj z) = conj log Gamma(z); a -0 imaginary part is the
cut's lower side), then:

- Re z < 0.1: the reflection log Gamma(z) = log pi - log sin(pi z) - log Gamma(1 - z), with
  log sin(pi z) = -i pi z + log(1 - exp(2 pi i z)) - log 2 + i pi / 2, the branch of it that is
  analytic in the upper half-plane (|exp(2 pi i z)| <= 1 keeps 1 - exp(...) off the cut). It agrees
  with the principal log Gamma at z = 1/2, so everywhere above the line, and on the line from above.
- Re z > 7 or |Im z| > 7: Stirling's series, 8 terms (the first left out is below 1e-15 there).
- |z - 1| < 0.2, |z - 2| < 0.2: the Taylor series of log Gamma(1 + e) (zeta values), which keeps the
  relative accuracy next to the zeros at 1 and 2 that a difference of larger logarithms loses.
- otherwise the recurrence log Gamma(z) = log Gamma(z + n) - sum_k log(z + k) up to Re z > 7: the
  principal branch satisfies it term by term (every z + k is in the right half-plane).

Complex64 arguments compute in complex128. At 0, -1, -2, ... and at infinities the value is NaN (SciPy's).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..ops import elementwise as E
from ..ops import special as S
from ..trace import bind
from ._bernoulli import bernoulli_numbers

__all__ = ["loggamma"]

_BERNOULLI_EVEN = bernoulli_numbers(16)[2::2]  # B_2, B_4, ..., B_16
_STIRLING = tuple(float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI_EVEN, 1))
_LARGE = 7.0  # Re z or |Im z| beyond which Stirling's series is used
_TAYLOR_RADIUS, _TAYLOR_TERMS = 0.2, 26  # 0.2^26 / 26 < 1e-19
_EULER_GAMMA = 0.57721566490153286061


@functools.cache
def _zeta_values() -> tuple:
    """zeta(2) .. zeta(_TAYLOR_TERMS) in float64 by Euler-Maclaurin after 10 terms of the sum."""
    values = []
    n = 10
    for s in range(2, _TAYLOR_TERMS + 1):
        total = sum(k ** -s for k in range(1, n)) + n ** (1 - s) / (s - 1) + 0.5 * n ** -s
        rising = s
        for j, b in enumerate(_BERNOULLI_EVEN, 1):
            total += float(b) / math.factorial(2 * j) * rising * n ** (-s - 2 * j + 1)
            rising *= (s + 2 * j - 1) * (s + 2 * j)
        values.append(total)
    return tuple(values)


def _stirling(z):
    series = fnp.zeros_like(z)
    inverse_square = 1 / (z * z)
    for c in reversed(_STIRLING):
        series = (series + c) * inverse_square
    return (z - 0.5) * fnp.log(z) - z + 0.5 * math.log(2 * math.pi) + series * z


def _taylor_at_one(e):
    """log Gamma(1 + e) = -gamma e + sum_{k >= 2} (-1)^k zeta(k) e^k / k."""
    out = fnp.zeros_like(e)
    for k, zeta in reversed(list(enumerate(_zeta_values(), 2))):
        out = (out + (-1) ** k * zeta / k) * e
    return (out - _EULER_GAMMA) * e


def _right(z):
    """log Gamma(z) for Re z >= 0.1, Im z >= 0."""
    x, y = fnp.real(z), fnp.imag(z)
    large = (x > _LARGE) | (fnp.abs(y) > _LARGE)
    near_one, near_two = fnp.abs(z - 1) < _TAYLOR_RADIUS, fnp.abs(z - 2) < _TAYLOR_RADIUS
    shifts = fnp.where(large, 0.0, fnp.ceil(_LARGE - x))  # at most 7: x >= 0.1
    logs = fnp.zeros_like(z)
    for k in range(int(_LARGE)):
        logs = logs + fnp.where(k < shifts, fnp.log(fnp.where(k < shifts, z + k, 1.0)), 0.0)
    recurrence = _stirling(z + shifts) - logs
    e = fnp.where(near_one, z - 1, fnp.where(near_two, z - 2, 0.0))
    taylor = _taylor_at_one(e) + fnp.where(near_two, fnp.log1p(e), 0.0)
    return fnp.where(near_one | near_two, taylor, recurrence)


def _log_sin_pi(z):
    """The branch of log sin(pi z) analytic in the upper half-plane. 1 - exp(2 pi i z) is -expm1 (it
    is -2 pi i z next to 0), taken at Re z mod 1 (exact), so large |Re z| loses nothing to the
    argument's reduction."""
    reduced = bind(E.complex_p, -2 * math.pi * fnp.imag(z), 2 * math.pi * fnp.fmod(fnp.real(z), 1.0))
    return -1j * math.pi * z + fnp.log(-fnp.expm1(reduced)) + complex(-math.log(2), math.pi / 2)


def _complex_loggamma(z):
    x = fnp.real(z)
    undefined = ((fnp.imag(z) == 0) & (x <= 0) & (fnp.floor(x) == x)) | ~fnp.isfinite(z)  # poles, inf, NaN
    lower = fnp.signbit(fnp.imag(z))
    upper = fnp.where(undefined, 0.5, fnp.where(lower, fnp.conj(z), z))
    reflect = fnp.real(upper) < 0.1
    mirrored = fnp.where(reflect, 1 - upper, upper)
    right = _right(mirrored)
    safe = fnp.where(reflect, upper, 0.5)
    value = fnp.where(reflect, math.log(math.pi) - _log_sin_pi(safe) - right, right)
    value = fnp.where(lower, fnp.conj(value), value)
    return fnp.where(undefined, complex(math.nan, math.nan), value)


def loggamma(x):
    """The principal branch of log Gamma (scipy.special.loggamma): gammaln's value for x >= 0 and NaN
    for negative reals; complex for a complex x, continuous off the negative real line."""
    x = fnp._float_arg(x)
    if not dtypes.is_complex(x.dtype):
        return fnp.where(x >= 0, bind(S.lgamma_p, x), math.nan)
    return fnp.astype(_complex_loggamma(fnp.astype(x, np.complex128)), x.dtype)

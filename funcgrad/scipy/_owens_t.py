"""Owen's T function T(h, a) = 1 / (2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx
(scipy.special.owens_t), composed of funcgrad operations so that jit and vmap follow.

T is even in h and odd in a. For |a| <= 1, with x = a t and b = |h| a,
T = a exp(-h^2 / 2) / (2 pi) int_0^1 exp(-b^2 t^2 / 2) / (1 + a^2 t^2) dt: the integrand is smooth and
at most 1, so Gauss-Legendre quadrature on [0, min(1, 9 / b)] (beyond it exp(-b^2 t^2 / 2) < 3e-18 of
its peak) gives T to a few units of rounding relative to itself, also where exp(-h^2 / 2) makes it
tiny. For |a| > 1, Owen's identity T(h, a) = (Phi(h) Q(a h) + Phi(a h) Q(h)) / 2 - T(a h, 1 / a)
(h >= 0, Q = 1 - Phi from erfc, so the tails keep their digits) brings it back to |a| < 1.
Computed in float64 and returned in the arguments' dtype; derivatives are exact (custom_jvp):
dT/dh = -phi(h) erf(a h / sqrt 2) / 2, dT/da = exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2)).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..custom import custom_jvp
from ..ops import elementwise as E
from ..ops import special as S
from ..trace import bind

__all__ = ["owens_t"]

_NODES = 64  # Gauss-Legendre nodes: exp(-s^2 / 2) on [0, 9] to float64 rounding
_REACH = 9.0  # b t beyond which the Gaussian factor is below 3e-18


@functools.cache
def _rule() -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on [0, 1]."""
    x, w = np.polynomial.legendre.leggauss(_NODES)
    return (x + 1) / 2, w / 2


def _upper_tail(x):
    return 0.5 * bind(S.erfc_p, x / math.sqrt(2))


def _small_slope(h, a):
    """T(h, a) for h >= 0, 0 <= a <= 1."""
    nodes, weights = _rule()
    b = h * a
    reach = fnp.minimum(1.0, _REACH / fnp.maximum(b, 1e-300))
    t = fnp.expand_dims(reach, -1) * nodes
    a2 = fnp.expand_dims(a * a, -1)
    integrand = fnp.exp(-0.5 * fnp.expand_dims(b * b, -1) * t * t) / (1 + a2 * t * t)
    return a * fnp.exp(-0.5 * h * h) / (2 * math.pi) * reach * fnp.sum(integrand * weights, axis=-1)


def _owens_t64(h, a):
    sign, far = fnp.sign(a), fnp.isinf(h)  # T(+-inf, a) = 0
    h, a = fnp.where(far, 0.0, fnp.abs(h)), fnp.abs(a)
    steep = a > 1
    inverse = fnp.where(steep, 1 / fnp.where(steep, a, 1.0), 0.0)
    ah = fnp.where(steep & (h > 0), h * a, 0.0)  # inf * 0 kept out: T(0, a) is atan(a) / 2 pi below
    tails = 0.5 * ((1 - _upper_tail(h)) * _upper_tail(ah) + (1 - _upper_tail(ah)) * _upper_tail(h))
    # one quadrature for every element: T(a h, 1 / a) where |a| > 1, T(h, a) elsewhere (T(inf, 0) = 0: the
    # reflection of an infinite a is kept from inf * 0)
    slope = _small_slope(fnp.where(steep, fnp.where(inverse == 0, 0.0, ah), h), fnp.where(steep, inverse, a))
    value = fnp.where(steep, tails - slope, slope)
    value = fnp.where(h == 0, fnp.arctan(a) / (2 * math.pi), value)
    return fnp.where(far, 0.0, sign * value)


@custom_jvp
def _owens_t(h, a):
    return fnp.astype(_owens_t64(fnp.astype(h, np.float64), fnp.astype(a, np.float64)), h.dtype)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    (h, a), (dh, da) = primals, tangents
    density = fnp.exp(-0.5 * h * h) / math.sqrt(2 * math.pi)
    slope_h = -0.5 * density * bind(E.erf_p, a * h / math.sqrt(2))
    slope_a = fnp.exp(-0.5 * h * h * (1 + a * a)) / (2 * math.pi * (1 + a * a))
    return _owens_t(h, a), dh * slope_h + da * slope_a


def owens_t(h, a):
    """Owen's T function (scipy.special.owens_t): the probability that X > h and 0 < Y < a X for
    independent standard normals, as an integral; real arguments, broadcast."""
    h, a = fnp._float_args(h, a)
    if dtypes.is_complex(h.dtype):
        raise TypeError(f"owens_t takes real arguments, got {h.dtype}")
    h, a = fnp.broadcast_arrays(h, a)
    return _owens_t(h, a)

"""Special functions defined by integrals or recurrences (scipy.special's spence, sici, fresnel,
and jax.scipy.special's bessel_jn), composed of funcgrad operations so that jit and vmap follow.

Each integral is evaluated in float64 by a power series near zero and by a continued fraction
(modified Lentz, a fixed number of steps, enough at the smallest argument it is used for) beyond:
full float64 accuracy without approximation tables. Their derivatives are the integrands, exactly
(custom_jvp). spence uses Cephes' rational approximation on [0.5, 1.5] and its reflections.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..custom import custom_jvp

__all__ = ["spence", "sici", "fresnel", "bessel_jn"]

_CF_STEPS = 100  # Lentz steps: converged to float64 at the smallest argument each fraction serves (x = 2, 1.5)


def _float(x, name: str):
    x = fnp._float_arg(x)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"{name} takes real arguments, got {x.dtype}")
    return x


def _with_derivative(evaluate, slope):
    """x -> evaluate(x) computed in float64 and returned in x's dtype, whose derivative is slope(x)
    (one per output): the exact integrand, not the derivative of the approximation."""
    def in_float64(x):
        out = evaluate(fnp.astype(x, np.float64))
        return tuple(fnp.astype(o, x.dtype) for o in out) if isinstance(out, tuple) else fnp.astype(out, x.dtype)
    fn = custom_jvp(in_float64)

    @fn.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        slopes = slope(x)
        tangent = tuple(t * fnp.astype(s, x.dtype) for s in slopes) if isinstance(slopes, tuple) else \
            t * fnp.astype(slopes, x.dtype)
        return fn(x), tangent
    return fn


# ---- spence: the dilogarithm of scipy, int_1^x log(t) / (1 - t) dt ----------------------------------
_SPENCE_P = (4.65128586073990045278e-5, 7.31589045238094711071e-3, 1.33847639578309018650e-1,
             8.79691311754530315341e-1, 2.71149851196553469920e0, 4.25697156008121755724e0,
             3.29771340985225106936e0, 1.00000000000000000126e0)
_SPENCE_Q = (6.90990488912553276999e-4, 2.54043763932544379113e-2, 2.82974860602568089943e-1,
             1.41172597751831069617e0, 3.63800533345137075418e0, 5.03278880143316990390e0,
             3.54771340985225096217e0, 9.99999999999999998740e-1)


def _polyval(coefficients, x):
    out = fnp.zeros_like(x) + coefficients[0]
    for c in coefficients[1:]:
        out = out * x + c
    return out


def _spence64(x):
    safe = fnp.where((x > 0) & fnp.isfinite(x), x, 1.0)
    inverted = safe > 2.0
    y = fnp.where(inverted, 1.0 / safe, safe)  # spence(x) = -log(x)^2 / 2 - spence(1 / x)
    reflect_high, reflect_low = y > 1.5, y < 0.5
    w = fnp.where(reflect_high, 1.0 / y - 1.0, fnp.where(reflect_low, -y, y - 1.0))
    value = -w * _polyval(_SPENCE_P, w) / _polyval(_SPENCE_Q, w)
    # x < 1/2: Euler's reflection, spence(x) = pi^2 / 6 - log(x) log(1 - x) - spence(1 - x)
    value = fnp.where(reflect_low, math.pi ** 2 / 6 - fnp.log(y) * fnp.log1p(-y) - value, value)
    value = fnp.where(inverted | reflect_high, -0.5 * fnp.log(y) ** 2 - value, value)
    value = fnp.where(x == 0, math.pi ** 2 / 6, value)
    return fnp.where((x < 0) | ~fnp.isfinite(x), np.nan, value)  # NaN at inf too, as scipy


def _spence_slope(x):
    apart = fnp.where(x == 1, 2.0, x)
    return fnp.where(x == 1, -1.0, fnp.log(apart) / (1 - apart))  # the integrand; its limit -1 at x = 1


_spence = _with_derivative(_spence64, _spence_slope)


def spence(x):
    """scipy.special.spence: int_1^x log(t) / (1 - t) dt for x >= 0 (NaN below)."""
    return _spence(_float(x, "spence"))


# ---- sici: the sine and cosine integrals --------------------------------------------------------------
def _sici64(x):
    t = fnp.abs(x)
    small = fnp.where(t <= 2.0, t, 1.0)
    # series: Si = sum (-1)^k t^(2k+1) / ((2k+1)(2k+1)!), Ci = gamma + log t + sum (-1)^k t^(2k) / (2k (2k)!)
    si_series, ci_series, term = fnp.zeros_like(small), fnp.zeros_like(small), small
    for k in range(1, 30):
        si_series = si_series + term / (2 * k - 1)
        term = term * (-small * small) / ((2 * k) * (2 * k + 1))
    term = -small * small / 2
    for k in range(1, 30):
        ci_series = ci_series + term / (2 * k)
        term = term * (-small * small) / ((2 * k + 1) * (2 * k + 2))
    ci_series = np.euler_gamma + fnp.log(small) + ci_series
    # beyond 2: E1(i t) by its continued fraction, -Ci(t) + i (Si(t) - pi / 2) = e^(-i t) h
    large = fnp.astype(fnp.where(t > 2.0, t, 4.0), np.complex128)
    b = 1.0 + 1j * large
    c = fnp.full_like(b, 1e300)
    d = 1.0 / b
    h = d
    for i in range(2, _CF_STEPS):
        a = -(i - 1.0) ** 2
        b = b + 2.0
        d = 1.0 / (a * d + b)
        c = b + a / c
        h = h * (c * d)
    h = fnp.exp(-1j * large) * h
    si_cf, ci_cf = math.pi / 2 + fnp.imag(h), -fnp.real(h)
    si = fnp.where(t <= 2.0, si_series, si_cf)
    ci = fnp.where(t <= 2.0, ci_series, ci_cf)
    si = fnp.where(fnp.isinf(t), math.pi / 2, si)
    ci = fnp.where(fnp.isinf(t), 0.0, fnp.where(t == 0, -np.inf, ci))
    return fnp.sign(x) * si, fnp.where(fnp.isnan(x) | (x == -np.inf), np.nan, ci)  # scipy's NaN at -inf


def _sici_slopes(x):
    nonzero = fnp.where(x == 0, 1.0, x)
    return fnp.where(x == 0, 1.0, fnp.sin(nonzero) / nonzero), fnp.cos(x) / fnp.abs(nonzero)  # sin(x)/x is 1 at 0


_sici = _with_derivative(_sici64, _sici_slopes)


def sici(x):
    """scipy.special.sici: (Si(x), Ci(x)), Si = int_0^x sin(t)/t dt, Ci = gamma + log|x| + int_0^|x|
    (cos(t) - 1)/t dt (scipy's real part for negative x)."""
    return _sici(_float(x, "sici"))


# ---- fresnel: S(x) = int_0^x sin(pi t^2 / 2) dt, C(x) = int_0^x cos(pi t^2 / 2) dt ----------------------
def _fresnel64(x):
    t = fnp.abs(x)
    small = fnp.where(t <= 1.5, t, 1.0)
    z = (math.pi / 2) * small * small
    s_series, c_series = fnp.zeros_like(small), fnp.zeros_like(small)
    term = small  # z^n t / n!, n = 0, 1, ...: even n feed C, odd n feed S, alternating in sign
    for n in range(0, 60):
        sign = -1.0 if (n // 2) % 2 else 1.0
        if n % 2:
            s_series = s_series + sign * term / (2 * n + 1)
        else:
            c_series = c_series + sign * term / (2 * n + 1)
        term = term * z / (n + 1)
    # beyond 1.5: erfc's continued fraction, C + i S = (1 + i)/2 (1 - e^(i pi t^2 / 2) (t - i t) h)
    large = fnp.astype(fnp.where(t > 1.5, t, 2.0), np.complex128)
    pix2 = math.pi * large * large
    b = 1.0 - 1j * pix2
    c = fnp.full_like(b, 1e300)
    d = 1.0 / b
    h = d
    n = -1.0
    for _ in range(2, _CF_STEPS):
        n += 2.0
        a = -n * (n + 1.0)
        b = b + 4.0
        d = 1.0 / (a * d + b)
        c = b + a / c
        h = h * (c * d)
    h = (large - 1j * large) * h
    cs = (0.5 + 0.5j) * (1.0 - fnp.exp(0.5j * pix2) * h)
    s = fnp.where(t <= 1.5, s_series, fnp.imag(cs))
    c = fnp.where(t <= 1.5, c_series, fnp.real(cs))
    s, c = fnp.where(fnp.isinf(t), 0.5, s), fnp.where(fnp.isinf(t), 0.5, c)
    return fnp.sign(x) * s, fnp.sign(x) * c


def _fresnel_slopes(x):
    phase = (math.pi / 2) * x * x
    return fnp.sin(phase), fnp.cos(phase)


_fresnel = _with_derivative(_fresnel64, _fresnel_slopes)


def fresnel(x):
    """scipy.special.fresnel: (S(x), C(x)), the Fresnel integrals of sin and cos(pi t^2 / 2). Past
    |x| ~ 1e7 the phase pi x^2 / 2 has no float64 value: both are 0.5 +- 1/(pi x) with a phase no
    implementation resolves (scipy's and these differ there by ~1e-8)."""
    return _fresnel(_float(x, "fresnel"))


# ---- bessel_jn: J_0 .. J_v by Miller's backward recurrence --------------------------------------------
def bessel_jn(z, *, v: int, n_iter: int = 50):
    """jax.scipy.special.bessel_jn: (v + 1, *z.shape), J_0(z) .. J_v(z) for real z, by the backward
    recurrence J_(k-1) = 2k/z J_k - J_(k+1) from k = n_iter, normalised by J_0 + 2 (J_2 + J_4 + ...)
    = 1 (n_iter as JAX's: larger for larger |z|)."""
    if not (isinstance(v, (int, np.integer)) and v >= 0) or not (isinstance(n_iter, (int, np.integer)) and n_iter > v):
        raise TypeError(f"bessel_jn needs integers 0 <= v < n_iter, got v={v!r}, n_iter={n_iter!r}")
    z = _float(z, "bessel_jn")
    previous, current = fnp.zeros_like(z), fnp.full_like(z, 1e-16)
    values = {}
    normaliser = fnp.zeros_like(z)
    for k in range(int(n_iter), -1, -1):  # current is f_(k+1) on entry, the recurrence's next f_k
        previous, current = current, 2.0 * (k + 1.0) * current / z - previous
        values[k] = current
        if k % 2 == 0:
            normaliser = normaliser + 2.0 * current
    normaliser = normaliser - values[0]  # J_0 counted once
    return fnp.stack([values[k] / normaliser for k in range(int(v) + 1)])

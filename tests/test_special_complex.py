"""wofz, dawsn, complex erfcx and loggamma against series summed in 50-digit decimals or in complex
arithmetic, asymptotic expansions, closed forms (|Gamma| on the lines Re z = 0, 1/2, 1), their
identities across the formulas' branches, a few SciPy values written out, and derivatives by finite
differences."""
import cmath
import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import special as S

from .helpers import assert_close

RNG = np.random.default_rng(0)


def _dawson_series(x: float) -> float:
    """sum_n (-1)^n 2^n x^(2n+1) / (2n+1)!!, in 50-digit decimals (its terms reach e^(x^2))."""
    getcontext().prec = 50
    x = Decimal(x)
    term, total, n = x, x, 0
    while abs(term) > Decimal(10) ** -40 * abs(total):
        n += 1
        term = -term * 2 * x * x / (2 * n + 1)
        total += term
    return float(total)


def _faddeeva_series(z: complex) -> complex:
    """exp(-z^2) (1 - erf(-iz)) with erf's Taylor series in complex128 (|z| <= 2.5: 1e-12)."""
    u = -1j * z
    term, total, n = u, u, 0
    while abs(term) > 1e-18 * max(abs(total), 1e-300) or n < 5:
        n += 1
        term = -term * u * u / n
        total += term / (2 * n + 1)
    return cmath.exp(-z * z) * (1 - 2 / math.sqrt(math.pi) * total)


def test_dawsn_against_its_series_asymptotics_and_ode():
    x = np.concatenate([RNG.uniform(-5, 5, 40), [1e-8, -3e-5, 0.0]])
    assert_close(S.dawsn(x), [_dawson_series(v) for v in x], rtol=1e-13, atol=0)
    large = 10 ** RNG.uniform(2, 150, 20)
    series = sum(math.prod(range(1, 2 * k, 2)) * (0.5 / large / large) ** k for k in range(5)) / (2 * large)
    assert_close(S.dawsn(large), series, rtol=1e-15)
    assert_close(S.dawsn(-large), -series, rtol=1e-15)
    assert np.array_equal(np.asarray(S.dawsn(np.array([np.inf, -np.inf]))), [0.0, 0.0])
    assert np.isnan(np.asarray(S.dawsn(np.nan)))
    assert S.dawsn(np.float32(1.0)).dtype == fnp.float32
    fg.check_grads(S.dawsn, (np.array([-2.0, 0.3, 1.5]),), order=2)
    assert_close(fg.vmap(fg.grad(S.dawsn))(x), 1 - 2 * x * np.array([_dawson_series(v) for v in x]), rtol=1e-12)
    with pytest.raises(TypeError, match="dawsn takes real arguments"):
        S.dawsn(np.array([1j]))


def test_wofz_against_the_erf_series_and_across_the_real_line():
    z = RNG.uniform(-2, 2, 30) + 1j * RNG.uniform(-1.5, 1.5, 30)
    assert_close(S.wofz(z), [_faddeeva_series(v) for v in z], rtol=1e-11)
    x = RNG.uniform(-30, 30, 40)  # on the line: exp(-x^2) exactly, and 2 / sqrt(pi) dawsn
    w = np.asarray(S.wofz(x))
    assert w.dtype == np.complex128
    assert_close(w.real, np.exp(-x * x), rtol=1e-15, atol=0)
    assert_close(w.imag, 2 / math.sqrt(math.pi) * np.asarray(S.dawsn(x)), rtol=1e-15)
    far = 10 ** RNG.uniform(3, 100, 20) * np.exp(1j * RNG.uniform(0.1, 3.0, 20))  # upper half-plane
    assert_close(S.wofz(far), 1j / (math.sqrt(math.pi) * far) * (1 + 1 / (2 * far * far)), rtol=1e-13)
    below = z - 2j  # w(z) = 2 exp(-z^2) - w(-z) joins the lower half-plane to the upper
    assert_close(S.wofz(below), 2 * np.exp(-below * below) - np.asarray(S.wofz(-below)), rtol=1e-12)
    assert_close(S.wofz(np.array([0.5 + 1j, -3 - 0.25j])),  # SciPy's values
                 [0.39123402145213615 + 0.12720241088464812j, -0.019373630131790155 - 0.19916015896435796j], rtol=1e-13)
    assert S.wofz(np.float32(1.0)).dtype == fnp.complex64
    assert np.isnan(np.asarray(S.wofz(complex(math.nan, 0)))).all()
    assert np.asarray(S.wofz(np.array([math.inf, -math.inf]))).tolist() == [0j, 0j]
    for point in (0.7 + 0.4j, -1.2 - 0.3j):  # w' = 2i / sqrt(pi) - 2 z w, against central differences
        h = 1e-6
        slope = (complex(S.wofz(np.complex128(point + h))) - complex(S.wofz(np.complex128(point - h)))) / (2 * h)
        real_grad = complex(fg.grad(lambda v: fnp.real(S.wofz(v)))(np.complex128(point)))
        assert_close(real_grad, np.conj(slope), rtol=1e-7)


def test_erfcx_of_a_complex_argument_is_w_of_iz():
    z = RNG.uniform(-2, 2, 10) + 1j * RNG.uniform(-2, 2, 10)
    assert_close(S.erfcx(z), [_faddeeva_series(1j * v) for v in z], rtol=1e-11)
    real = RNG.uniform(-3, 20, 10)
    assert_close(S.erfcx(real.astype(complex)), np.asarray(S.erfcx(real)), rtol=1e-13)


def test_loggamma_on_the_real_line_and_its_closed_forms():
    x = 10 ** RNG.uniform(-5, 5, 40)
    assert_close(S.loggamma(x), [math.lgamma(v) for v in x], rtol=1e-14)
    real = np.asarray(S.loggamma(np.array([0.0, -2.5, -1.0, math.nan])))
    assert real[0] == math.inf
    assert np.isnan(real[1:]).all()
    assert_close(S.loggamma(x.astype(complex)), [math.lgamma(v) for v in x], rtol=1e-13)
    y = RNG.uniform(0.01, 30, 20)  # |Gamma(iy)|^2, |Gamma(1/2 + iy)|^2, |Gamma(1 + iy)|^2
    for shift, modulus_squared in ((0, np.pi / (y * np.sinh(np.pi * y))), (0.5, np.pi / np.cosh(np.pi * y)),
                                   (1, np.pi * y / np.sinh(np.pi * y))):
        assert_close(2 * np.asarray(S.loggamma(shift + 1j * y)).real, np.log(modulus_squared), rtol=1e-12, atol=1e-13)
    # on the cut, from above: log |Gamma(x)| - i pi (n + 1) for x in (-n - 1, -n); from below conjugate
    cut = np.array([-0.5, -2.5, -7.25, -40.5])
    top = np.asarray(S.loggamma(cut + 0j))
    assert_close(top.real, [math.lgamma(v) for v in cut], rtol=1e-12)
    assert_close(top.imag, -np.pi * np.ceil(-cut), rtol=1e-14)
    assert_close(S.loggamma(np.conj(cut + 0j)), np.conj(top), rtol=1e-14)  # imaginary part -0
    assert_close(S.loggamma(np.array([-2.5 + 0j, 0.5 + 2j, -30 + 0.1j])),  # SciPy's values
                 [-0.05624371649767279 - 9.42477796076938j, -2.222655864053256 - 0.5925369819770339j,
                  -72.37188289751427 - 95.47679860877219j], rtol=1e-12)
    poles = np.asarray(S.loggamma(np.array([0j, -1 + 0j, -6 + 0j])))
    assert np.isnan(poles.real).all()


def test_loggamma_identities_across_its_branches():
    z = RNG.uniform(-20, 20, 300) + 1j * RNG.uniform(-12, 12, 300)  # reflection, recurrence, Taylor, Stirling
    z = np.concatenate([z, 1 + 0.15 * np.exp(2j * np.pi * RNG.uniform(size=20)), [2 + 1e-9j, 1 - 1e-9j]])
    value = np.asarray(S.loggamma(z))
    # the principal branch satisfies log Gamma(z + 1) = log Gamma(z) + log z exactly (no 2 pi i jumps)
    assert_close(S.loggamma(z + 1), value + np.log(z), rtol=1e-12, atol=1e-12)
    assert_close(S.loggamma(np.conj(z)), np.conj(value), rtol=1e-14)
    e = np.array([1e-9 + 1e-9j, -3e-7j])  # next to the zeros at 1 and 2: relative accuracy kept
    assert_close(S.loggamma(1 + e), -0.5772156649015329 * e + np.pi ** 2 / 12 * e * e, rtol=1e-9)
    assert_close(S.loggamma(2 + e), (1 - 0.5772156649015329) * e + (np.pi ** 2 / 12 - 0.5) * e * e, rtol=1e-9)
    assert S.loggamma(np.complex64(2 + 1j)).dtype == fnp.complex64
    jitted = fg.jit(S.loggamma)(z)
    assert_close(jitted, value, rtol=1e-14)
    point, h = -2.3 + 0.7j, 1e-6  # the derivative is digamma: against central differences
    slope = (complex(S.loggamma(np.complex128(point + h))) - complex(S.loggamma(np.complex128(point - h)))) / (2 * h)
    grad = fg.grad(lambda v: fnp.real(S.loggamma(v)))(np.complex128(point))
    assert_close(complex(grad), np.conj(slope), rtol=1e-7)
    assert_close(fg.grad(S.loggamma)(np.array(3.0)), 1.5 - 0.5772156649015329, rtol=1e-12)


def test_sph_harm_y_closed_forms_orthonormality_and_signatures():
    theta, phi = RNG.uniform(0, np.pi, 20), RNG.uniform(0, 2 * np.pi, 20)
    s, c, e = np.sin(theta), np.cos(theta), np.exp(1j * phi)
    assert_close(S.sph_harm_y(0, 0, theta, phi), np.full(20, 0.5 / math.sqrt(math.pi)), rtol=1e-15)
    assert_close(S.sph_harm_y(1, 0, theta, phi), 0.5 * math.sqrt(3 / math.pi) * c, rtol=1e-14, atol=1e-15)
    assert_close(S.sph_harm_y(1, 1, theta, phi), -0.5 * math.sqrt(3 / (2 * math.pi)) * s * e, rtol=1e-14)
    assert_close(S.sph_harm_y(1, -1, theta, phi), 0.5 * math.sqrt(3 / (2 * math.pi)) * s / e, rtol=1e-14)
    assert_close(S.sph_harm_y(2, 2, theta, phi), 0.25 * math.sqrt(15 / (2 * math.pi)) * s * s * e * e, rtol=1e-14)
    assert_close(S.sph_harm_y(3, 4, theta, phi), np.zeros(20), atol=0)  # |m| > n
    x, w = np.polynomial.legendre.leggauss(40)  # the sphere: Gauss-Legendre in cos(theta), uniform in phi
    grid_theta, grid_phi = np.meshgrid(np.arccos(x), np.arange(64) * 2 * np.pi / 64, indexing="ij")
    area = np.outer(w, np.full(64, 2 * np.pi / 64))
    pairs = [(0, 0), (3, -2), (3, 2), (7, 5), (12, -1), (12, 0)]
    values = [np.asarray(S.sph_harm_y(n, m, grid_theta, grid_phi)) for n, m in pairs]
    gram = np.array([[np.sum(u * np.conj(v) * area) for v in values] for u in values])
    assert_close(gram, np.eye(len(pairs)), atol=1e-13)
    assert S.sph_harm_y(2, 1, np.float32(0.3), np.float32(0.2)).dtype == fnp.complex64
    jitted = fg.jit(lambda t: S.sph_harm_y(np.array([3, 5]), np.array([1, -4]), t, 0.5, n_max=5))(np.array([0.4, 2.0]))
    assert_close(jitted, [complex(S.sph_harm_y(3, 1, 0.4, 0.5)), complex(S.sph_harm_y(5, -4, 2.0, 0.5))], rtol=1e-14)
    point, h = 0.4, 1e-6  # d/dtheta against central differences
    slope = (complex(S.sph_harm_y(3, 2, np.float64(point + h), 0.5)) -
             complex(S.sph_harm_y(3, 2, np.float64(point - h), 0.5))) / (2 * h)
    assert_close(fg.grad(lambda t: fnp.real(S.sph_harm_y(3, 2, t, 0.5)))(np.float64(point)), slope.real, rtol=1e-7)
    with pytest.raises(ValueError, match="diff_n=1"):
        S.sph_harm_y(2, 1, 0.3, 0.2, diff_n=1)
    with pytest.raises(fg.errors.ConcretizationError, match="pass n_max under jit"):
        fg.jit(lambda n: S.sph_harm_y(n, 1, 0.3, 0.2))(np.array(3))

"""funcgrad.scipy.special against Python's math and statistics modules, closed forms (digamma at
the integers and at 1/2, zeta values), the functions' identities (recurrence, reflection) across
the formula's branches, and a few SciPy values written out; gradients by finite differences."""
import math
from statistics import NormalDist

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.scipy import special as S

from .helpers import assert_close

RNG = np.random.default_rng(0)
EULER = 0.5772156649015329
X = np.concatenate([RNG.uniform(-8, 8, 200), 10 ** RNG.uniform(-3, 5, 50)])
X = X[np.abs(X - np.round(X)) > 1e-3]  # away from the poles


def test_gammaln_gamma_and_beta_are_libms():
    assert_close(S.gammaln(X), [math.lgamma(v) for v in X], rtol=1e-14)
    small = X[np.abs(X) < 100]
    assert_close(S.gamma(small), [math.gamma(v) for v in small], rtol=1e-12)
    a, b = RNG.uniform(0.1, 5, 20), RNG.uniform(0.1, 5, 20)
    assert_close(S.betaln(a, b), [math.lgamma(p) + math.lgamma(q) - math.lgamma(p + q) for p, q in zip(a, b)],
                 rtol=1e-13)
    assert_close(S.multigammaln(a + 2, 3), [3 / 2 * math.log(math.pi) + sum(math.lgamma(p + 2 - j / 2) for j in range(3))
                                            for p in a], rtol=1e-13)
    assert np.array_equal(np.asarray(S.gammaln(np.array([0.0, -2.0, np.inf]))), [np.inf] * 3)
    assert np.asarray(S.gamma(np.array([-0.0]))) == -np.inf and np.isnan(np.asarray(S.gamma(np.array([-3.0]))))


def test_polygamma_closed_forms_and_identities():
    zeta3, zeta4 = 1.2020569031595942, math.pi ** 4 / 90
    assert_close(S.digamma(np.array([1.0, 0.5, 5.0])), [-EULER, -EULER - 2 * math.log(2), 1 + 1 / 2 + 1 / 3 + 1 / 4 - EULER],
                 rtol=1e-14)
    assert_close(S.polygamma(1, np.array([1.0, 0.5])), [math.pi ** 2 / 6, math.pi ** 2 / 2], rtol=1e-13)
    assert_close(S.polygamma(2, np.array([1.0])), [-2 * zeta3], rtol=1e-13)
    assert_close(S.polygamma(3, np.array([1.0])), [6 * zeta4], rtol=1e-13)
    x = X[np.abs(X) > 0.1]  # (near 0 the identity cancels terms of 1 / x^(n+1))
    for n in range(4):  # psi^(n)(x + 1) = psi^(n)(x) + (-1)^n n! / x^(n+1), across the reflection and shift
        step = (-1) ** n * math.factorial(n) / x ** (n + 1)
        assert_close(S.polygamma(n, x + 1), np.asarray(S.polygamma(n, x)) + step, rtol=1e-9, atol=1e-11)
    assert_close(np.asarray(S.digamma(1 - X)) - np.asarray(S.digamma(X)), math.pi / np.tan(math.pi * X), rtol=1e-9)
    edges = np.asarray(S.digamma(np.array([0.0, -0.0, -2.0, np.inf, np.nan])))  # PyTorch's
    assert edges[0] == -np.inf and edges[1] == np.inf and np.isnan(edges[2]) and edges[3] == np.inf and np.isnan(edges[4])
    with pytest.raises(ValueError, match="non-negative int"):
        S.polygamma(1.5, X)
    # an array of orders broadcasts against x (SciPy's and JAX's), each order as its scalar call
    orders, points = np.array([[0], [1], [3]]), np.array([0.3, 1.5, 4.0])
    by_order = np.stack([np.asarray(S.polygamma(int(n), points)) for n in (0, 1, 3)])
    assert_close(S.polygamma(orders, points), by_order, rtol=1e-15)
    assert_close(S.polygamma(np.int64(1), points), by_order[1], rtol=1e-15)
    with pytest.raises(ValueError, match="non-negative integers"):
        S.polygamma(np.array([1, -1]), points[:2])


def test_derivatives_of_every_order():
    x = np.array([0.3, 2.5, -1.5, 7.0])
    fg.check_grads(S.gammaln, (x,), order=2)
    fg.check_grads(lambda v: S.polygamma(1, v), (x,), order=2)
    assert_close(fg.grad(lambda v: S.gammaln(v).sum())(x), S.digamma(x), rtol=1e-14)
    assert_close(fg.grad(lambda v: fg.grad(lambda u: S.gammaln(u).sum())(v).sum())(x), S.polygamma(1, x), rtol=1e-14)
    fg.check_grads(S.erfc, (x,), order=2)
    fg.check_grads(S.erfinv, (np.array([-0.9, -0.3, 0.0, 0.2, 0.95]),), order=2)
    fg.check_grads(S.log_ndtr, (np.array([-30.0, -5.0, 0.5, 9.0]),), order=1)


def test_erfinv_and_sinc_differentiate_at_zero_to_every_order():
    """erfinv' = sqrt(pi) / 2 exp(erfinv^2), sqrt(pi) / 2 at 0 (autodiff through its Newton start
    gave NaN there); sinc's derivatives at 0 are its Maclaurin series' (the where-guarded quotient
    gave a zero second derivative, not -pi^2 / 3)."""
    zero = np.float64(0.0)
    d_erfinv = fg.grad(lambda v: S.erfinv(v))
    assert_close(d_erfinv(zero), math.sqrt(math.pi) / 2, rtol=1e-15)
    assert_close(fg.grad(d_erfinv)(zero), 0.0, atol=1e-15)
    assert_close(fg.grad(fg.grad(d_erfinv))(zero), math.pi ** 1.5 / 4, rtol=1e-14)  # 2 erfinv'(0)^3
    sinc = lambda v: fnp.sinc(v)  # noqa: E731
    derivatives = [sinc]
    for _ in range(4):
        derivatives.append(fg.grad(derivatives[-1]))
    maclaurin = [1.0, 0.0, -math.pi ** 2 / 3, 0.0, math.pi ** 4 / 5]
    assert_close([float(d(zero)) for d in derivatives], maclaurin, rtol=1e-14)
    x = np.array([0.0, 0.5, -1.5])
    fg.check_grads(lambda v: fnp.sinc(v), (x[1:],), order=2)
    assert_close(fg.vmap(derivatives[2])(x)[1:], fg.vmap(fg.hessian(lambda v: fnp.sinc(v)))(x)[1:], rtol=1e-14)


def test_error_functions_and_normal_quantiles():
    assert_close(S.erfc(X / 10), [math.erfc(v / 10) for v in X], rtol=1e-14)
    assert float(S.erfc(np.array(27.0))) == math.erfc(27.0) > 0  # where 1 - erf is 0
    y = np.concatenate([RNG.uniform(-1, 1, 100), [1 - 1e-15, -1 + 1e-15, 0.0]])
    assert_close(S.erf(S.erfinv(y)), y, rtol=1e-14, atol=1e-16)
    assert_close(S.erfinv(np.array([1 - 1e-15])), [5.675915739744712], rtol=1e-12)  # SciPy's value
    edges = np.asarray(S.erfinv(np.array([1.0, -1.0, 1.5])))
    assert edges[0] == np.inf and edges[1] == -np.inf and np.isnan(edges[2])
    p = np.concatenate([RNG.uniform(0, 1, 100), [1e-300, 1e-20, 1 - 1e-12]])
    assert_close(S.ndtri(p), [NormalDist().inv_cdf(v) for v in p], rtol=1e-9)
    assert_close(S.ndtr(X / 4), [NormalDist().cdf(v / 4) for v in X], rtol=1e-12, atol=1e-300)
    tails = np.array([-40.0, -25.0, 8.0, -3.0])
    assert_close(S.log_ndtr(tails), [-804.6084420137539, -316.63940800802027, -6.220960574271742e-16,
                                     math.log(NormalDist().cdf(-3.0))], rtol=1e-12)  # SciPy's values


def test_log_space_helpers():
    p = RNG.uniform(0.01, 0.99, 20)
    assert_close(S.logit(p), np.log(p / (1 - p)), rtol=1e-12)
    assert_close(S.expit(S.logit(p)), p, rtol=1e-12)
    assert np.array_equal(np.asarray(S.xlogy(np.array([0.0, 0.0, 2.0]), np.array([0.0, -1.0, 3.0]))),
                          [0.0, 0.0, 2 * math.log(3)])
    assert_close(S.xlog1py(np.array([0.0, 2.0]), np.array([-1.0, 0.5])), [0.0, 2 * math.log1p(0.5)])
    assert_close(S.entr(np.array([-1.0, 0.0, 0.5])), [-np.inf, 0.0, -0.5 * math.log(0.5)])
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    total = (b * np.exp(a)).sum(1)
    value, sign = S.logsumexp(a, 1, b=b, return_sign=True)
    assert_close(value, np.log(np.abs(total)), rtol=1e-12)
    assert np.array_equal(np.asarray(sign), np.sign(total))
    assert_close(S.logsumexp(a, 0, b=np.abs(b)), np.log((np.abs(b) * np.exp(a)).sum(0)), rtol=1e-12)
    assert np.isnan(np.asarray(S.logsumexp(np.zeros(2), b=np.array([1.0, -2.0]))))
    assert_close(lax.lgamma(X), S.gammaln(X))
    assert_close(lax.erf_inv(p), S.erfinv(p))


def test_exponential_integrals():
    x = 10 ** RNG.uniform(-4, 2.5, 60)
    e1 = np.asarray(S.exp1(x))
    for n in range(1, 6):  # n E_(n+1)(x) = e^-x - x E_n(x)
        assert_close(n * np.asarray(S.expn(np.float64(n + 1), x)), np.exp(-x) - x * np.asarray(S.expn(np.float64(n), x)),
                     rtol=1e-11, atol=1e-300)
    assert_close(S.expn(np.float64(1.0), x), e1, rtol=1e-15)
    assert_close(S.expn(np.float64(0.0), x), np.exp(-x) / x, rtol=1e-14)
    # SciPy's values, and Ei's series at 1: gamma + sum 1 / (k k!)
    assert_close(S.exp1(np.array([1.0, 5.0])), [0.21938393439552029, 0.0011482955912753257], rtol=1e-14, atol=0)
    assert_close(S.expi(np.float64(1.0)), EULER + sum(1 / (k * math.factorial(k)) for k in range(1, 30)), rtol=1e-14)
    assert_close(S.expi(np.float64(-2.0)), -np.asarray(S.exp1(np.float64(2.0))), rtol=1e-15)
    assert_close(S.expi(np.float64(50.0)), 1.0585636897131690e20, rtol=1e-13)
    assert_close(S.expn(np.array([0.0, 1.0, 2.0, 3.0, 2.5, -1.0]), np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0])),
                 [np.inf, np.inf, 1.0, 0.5, np.nan, np.nan])  # SciPy's edges
    assert_close(fg.vmap(fg.grad(S.expi))(x), np.exp(x) / x, rtol=1e-13)
    assert_close(fg.vmap(fg.grad(lambda v: S.expn(np.float64(3.0), v)))(x), -np.asarray(S.expn(np.float64(2.0), x)),
                 rtol=1e-15)
    with pytest.raises(TypeError, match="expn is not differentiable with respect to argument 0"):
        fg.grad(lambda n: S.expn(n, 1.0))(2.0)


def test_zeta_and_the_gamma_helpers():
    pi = math.pi
    assert_close(S.zeta(np.array([2.0, 4.0, 0.0, -1.0, -2.0, 0.5])),
                 [pi ** 2 / 6, pi ** 4 / 90, -0.5, -1 / 12, 0.0, -1.4603545088095868], rtol=1e-12, atol=1e-300)
    s = RNG.uniform(1.1, 20, 30)
    riemann = np.asarray(S.zeta(s))
    assert_close(S.zeta(s, 0.5), (2 ** s - 1) * riemann, rtol=1e-12)  # zeta(s, 1/2) = (2^s - 1) zeta(s)
    q = 10 ** RNG.uniform(-2, 2, 30)
    assert_close(S.zeta(np.float64(2.0), q), S.polygamma(1, q), rtol=1e-12)  # = trigamma
    assert_close(S.zeta(np.array([1.0, 0.5]), 2.0), [np.inf, np.nan])
    assert_close(S.bernoulli(8), [1, -1 / 2, 1 / 6, 0, -1 / 30, 0, 1 / 42, 0, -1 / 30], rtol=1e-7)
    x = np.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 4.0, 7.3])
    assert_close(S.gammasgn(x), [math.copysign(1, math.gamma(v)) for v in x])
    assert_close(S.rgamma(np.append(x, [0.0, -3.0])), [1 / math.gamma(v) for v in x] + [0.0, 0.0], rtol=1e-13)
    assert_close(S.factorial(np.array([0.0, 5.0, 2.5, -1.0])), [1, 120, math.gamma(3.5), 0], rtol=1e-13)
    z, m = RNG.uniform(0.1, 5, 20), RNG.uniform(-0.05, 3, 20)
    assert_close(S.poch(z, m), [math.gamma(a + b) / math.gamma(a) for a, b in zip(z, m)], rtol=1e-12)
    assert_close(S.poch(np.array([-3.0, -3.0, 2.0]), np.array([2.0, 1.5, 0.0])), [6.0, 0.0, 1.0])  # (-3)(-2); pole / finite
    p, r = np.array([0.0, 0.5, 1.0, -1.0]), np.array([2.0, 0.25, 0.0, 1.0])
    assert_close(S.rel_entr(p, r), [0.0, 0.5 * math.log(2), np.inf, np.inf])
    assert_close(S.kl_div(p, r), [2.0, 0.5 * math.log(2) - 0.25, np.inf, np.inf])
    a = RNG.normal(size=(3, 4))
    assert_close(S.softmax(a, axis=1), np.exp(a) / np.exp(a).sum(1, keepdims=True), rtol=1e-14)
    assert_close(S.log_softmax(a), a - np.log(np.exp(a).sum()), rtol=1e-14)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_exponential_integrals_on_the_device_equal_the_cpu():
    x = np.array([0.3, 1.0, 2.5, 40.0, -1.5])
    for fn in (S.expi, S.exp1, lambda v: S.expn(np.float64(3.0), v)):
        cpu, gpu = fn(x), fn(fg.device_put(fg.asarray(x), "cuda"))
        assert gpu.device == "cuda:0"
        assert_close(gpu.numpy(), cpu.numpy(), rtol=1e-13)


def test_comb_boxcox_and_erfcx():
    n, k = RNG.integers(0, 60, 40).astype(np.float64), RNG.integers(0, 40, 40).astype(np.float64)
    assert_close(S.comb(n, k), [float(math.comb(int(a), int(b))) for a, b in zip(n, k)], rtol=1e-12)
    assert_close(S.comb(5, 3, repetition=True), math.comb(7, 3))
    assert_close(S.comb(np.array([3.0, -1.0, 4.0]), np.array([5.0, 1.0, -2.0])), [0, 0, 0])  # SciPy's zeros
    x, lam = np.exp(RNG.uniform(-3, 3, 30)), RNG.uniform(-2, 2, 30)
    assert_close(S.boxcox(x, lam), (x ** lam - 1) / lam, rtol=1e-10)
    assert_close(S.boxcox(x, 0.0), np.log(x), rtol=1e-14)
    assert_close(S.boxcox1p(np.float64(1e-10), 0.5), 1e-10, rtol=1e-9)  # no cancellation near 0
    moderate = RNG.uniform(-5, 20, 40)
    assert_close(S.erfcx(moderate), [math.exp(v * v) * math.erfc(v) for v in moderate], rtol=1e-13)
    assert_close(S.erfcx(np.array([30.0, 100.0])), [0.018795888861416754, 0.005641613782989433], rtol=1e-14)
    assert_close(S.erfcx(np.array([np.inf, -np.inf])), [0.0, np.inf])


def _simpson(f, upper, panels: int = 20000):
    """int_0^upper f by Simpson's rule, for each upper limit."""
    t = np.linspace(0.0, 1.0, panels + 1)[:, None] * upper
    weights = np.ones(panels + 1)
    weights[1:-1:2], weights[2:-1:2] = 4, 2
    return (weights[:, None] * f(t)).sum(0) * upper / (3 * panels)


def test_spence_sici_fresnel_against_closed_forms_quadrature_and_their_integrands():
    assert_close(S.spence(np.array([0.5, 2.0, 1.0, 0.0])),
                 [np.pi ** 2 / 12 - np.log(2) ** 2 / 2, -np.pi ** 2 / 12, 0.0, np.pi ** 2 / 6], rtol=1e-14, atol=1e-15)
    assert np.isnan(np.asarray(S.spence(np.array([-1.0, np.inf, np.nan])))).all()
    x = np.array([0.3, 1.0, 1.99, 2.01, 3.0, 10.0, 40.0])
    si_quad = _simpson(lambda t: np.sinc(t / np.pi), x)
    si, ci = S.sici(x)
    assert_close(si, si_quad, rtol=1e-9, atol=1e-9)
    assert_close(S.sici(np.array([1.0, 10.0]))[1], [0.33740392290096816, -0.04545643300445537], rtol=1e-13)
    assert_close(S.sici(-x)[0], -np.asarray(si))
    fx = np.array([0.5, 1.0, 1.49, 1.51, 2.0, 5.0])
    s_quad, c_quad = (_simpson(lambda t, f=f: f(np.pi * t ** 2 / 2), fx) for f in (np.sin, np.cos))
    s, c = S.fresnel(fx)
    assert_close(s, s_quad, rtol=1e-9, atol=1e-10)
    assert_close(c, c_quad, rtol=1e-9, atol=1e-10)
    # the derivatives are the integrands
    with np.errstate(invalid="ignore"):
        integrand = np.where(x == 1, -1.0, np.log(x) / (1 - x))  # its limit -1 at x = 1
    assert_close(fg.vmap(fg.grad(S.spence))(x), integrand, rtol=1e-12)
    assert_close(fg.vmap(fg.grad(lambda v: S.sici(v)[1]))(x), np.cos(x) / x, rtol=1e-12)
    assert_close(fg.vmap(fg.grad(lambda v: S.fresnel(v)[0]))(fx), np.sin(np.pi * fx ** 2 / 2), rtol=1e-12)
    edges = S.sici(np.array([0.0, np.inf, -np.inf, np.nan]))
    np.testing.assert_array_equal(edges[0], [0.0, np.pi / 2, -np.pi / 2, np.nan])
    np.testing.assert_array_equal(edges[1], [-np.inf, 0.0, np.nan, np.nan])


def test_bessel_jn_against_the_power_series():
    z = np.array([-1.5, 0.3, 1.0, 4.0, 9.0])
    got = np.asarray(S.bessel_jn(z, v=3))
    assert got.shape == (4, 5)
    for n in range(4):
        series = sum((-1) ** k * (z / 2) ** (2 * k + n) / (math.factorial(k) * math.factorial(k + n))
                     for k in range(40))
        assert_close(got[n], series, rtol=1e-12, atol=1e-14)
    with pytest.raises(TypeError, match="integers 0 <= v < n_iter"):
        S.bessel_jn(z, v=1.5)


def test_hyp1f1_against_closed_forms_and_its_derivative():
    x = np.array([-120.0, -30.0, -2.5, -0.1, 0.3, 4.0, 60.0, 150.0])
    assert_close(S.hyp1f1(1.0, 2.0, x), np.expm1(x) / x, rtol=1e-12)  # (e^x - 1) / x
    assert_close(S.hyp1f1(2.5, 2.5, x), np.exp(x), rtol=1e-12)
    t = np.array([0.2, 1.0, 3.0, 7.0])  # erf: 1F1(1/2; 3/2; -t^2) = sqrt(pi) erf(t) / (2 t)
    erf = np.array([math.erf(v) for v in t])
    assert_close(S.hyp1f1(0.5, 1.5, -t ** 2), np.sqrt(np.pi) * erf / (2 * t), rtol=1e-12)
    assert_close(S.hyp1f1(-2.0, 1.0, x), (x ** 2 - 4 * x + 2) / 2, rtol=1e-12)  # the Laguerre polynomial L_2
    assert np.isinf(np.asarray(S.hyp1f1(1.0, -2.0, 0.5)))
    small = x[np.abs(x) < 100]
    derivative = (small * np.exp(small) - np.expm1(small)) / small ** 2
    assert_close(fg.vmap(fg.grad(lambda v: S.hyp1f1(1.0, 2.0, v)))(small), derivative, rtol=1e-10)


def test_softmax_over_any_axes_and_a_slice_holding_inf():
    a = np.array([[1.0, 2.0], [3.0, np.inf], [-np.inf, 0.0]])
    rows = np.asarray(S.softmax(a, axis=1))
    assert_close(rows[0], np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum(), rtol=1e-15)
    assert np.isnan(rows[1]).all() and rows[2].tolist() == [0.0, 1.0]  # SciPy's: inf - inf is NaN throughout
    b = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert_close(S.softmax(b), np.exp(b) / np.exp(b).sum(), rtol=1e-15)
    fg.check_grads(lambda v: S.softmax(v, axis=0), (b,), order=2)


def test_owens_t_against_closed_forms_quadrature_and_its_derivatives():
    h = np.concatenate([RNG.uniform(-8, 8, 30), [0.0, 1e-8]])
    normal = NormalDist()
    upper = np.array([normal.cdf(-abs(v)) for v in h])
    assert_close(S.owens_t(h, np.ones_like(h)), 0.5 * (1 - upper) * upper, rtol=1e-13)  # T(h, 1)
    assert_close(S.owens_t(h, np.full_like(h, np.inf)), np.where(h == 0, 0.25, 0.5 * upper), rtol=1e-13)
    a = RNG.uniform(-20, 20, 10)
    assert_close(S.owens_t(np.zeros(10), a), np.arctan(a) / (2 * np.pi), rtol=1e-14)  # T(0, a)
    for hv, av in [(0.5, 0.3), (2.0, 5.0), (-1.5, -0.7), (6.0, 1e-5)]:  # the defining integral
        x = np.linspace(0, av, 200001)
        integrand = np.exp(-hv * hv * (1 + x * x) / 2) / (1 + x * x) / (2 * np.pi)
        assert_close(S.owens_t(hv, av), np.trapezoid(integrand, x), rtol=1e-9)
    assert_close(S.owens_t(np.array([0.5, 2.0, -1.5]), np.array([0.3, 5.0, -0.7])),  # SciPy's values
                 [0.040786707344250106, 0.011375065974089608, -0.02709148046414578], rtol=1e-13)
    assert S.owens_t(40.0, 2.0) == 0.0
    assert S.owens_t(np.inf, 1.0) == 0.0
    fg.check_grads(S.owens_t, (np.array([0.7, -1.2, 3.0]), np.array([1.7, 0.4, -0.9])), order=1)
    assert S.owens_t(np.float32(1.0), np.float32(0.5)).dtype == fnp.float32

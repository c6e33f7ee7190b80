"""The incomplete gamma family (scipy.special.gammainc/gammaincc, lax.igamma_grad_a and
random_gamma_grad) against closed forms (Erlang's sum, erf at a = 1/2, the recurrence in a), mpmath
values at 40 digits written out, and finite differences; and jax.random's gamma family and binomial
counts against their distributions (closed-form CDFs, moments, exact probabilities) and the
reparameterisation gradient's expectations."""
import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import lax
from funcgrad import random as R
from funcgrad.scipy import special as S

from .helpers import assert_close

RNG = np.random.default_rng(0)
# (a, x, P, Q, dP/da, dz/da) by mpmath (40 digits; the derivatives by its numerical differentiation)
MPMATH = [(0.25, 0.01, 0.34818645276048405, 0.65181354723951595, -1.5264876040592775, 0.17677355740880704),
          (0.25, 3.0, 0.99498910405129169, 0.0050108959487083081, -0.027841007106276594, 4.6215792321404362),
          (7.5, 2.0, 0.0022626558470830793, 0.99773734415291692, -0.0032124391978050599, 0.49075159653574811),
          (7.5, 30.0, 0.99999974779149213, 2.5220850786961437e-7, -3.7693657214561496e-7, 1.8877626573208406),
          (150.0, 140.0, 0.20954362391860707, 0.79045637608139293, -0.023793726651202103, 0.96697394060659943),
          (150.0, 170.0, 0.94436556868980671, 0.055634431310193294, -0.0089826187114896682, 1.0650690275239851),
          (1e-3, 1e-5, 0.98912304469578267, 0.010876955304217331, -10.818398299086339, 0.10937472778081825),
          (0.17176190589510998, 107.97500974612107, 1.0, 4.8744129147765174e-50, -5.283108866363888e-49,
           10.756685790092926)]


def _np(x):
    return np.asarray(x)


def test_values_against_mpmath_across_series_and_continued_fraction():
    a, x, p, q, dp, dz = map(np.array, zip(*MPMATH))
    assert_close(S.gammainc(a, x), p, rtol=2e-14, atol=0)
    assert_close(S.gammaincc(a, x), q, rtol=2e-13, atol=0)
    assert_close(lax.igamma_grad_a(a, x), dp, rtol=1e-12, atol=0)
    assert_close(lax.random_gamma_grad(a, x), dz, rtol=1e-12, atol=0)
    # large a, where lgamma(a) ~ a log a would cancel: Stirling's form keeps full precision
    assert_close(S.gammainc(np.array([1e4, 1e4]), np.array([1e4, 1.03e4])), [0.5013298083399552, 0.99852950510361432],
                 rtol=1e-14, atol=0)
    assert_close(S.gammaincc(np.float64(1e4), np.float64(1.03e4)), 0.0014704948963856813, rtol=1e-12, atol=0)


def test_closed_forms_and_identities():
    x = 10 ** RNG.uniform(-3, 2, 60)
    for n in (1, 2, 5, 12):  # Erlang: Q(n, x) = e^-x sum_{k<n} x^k / k!
        erlang = [math.exp(-v) * sum(v ** k / math.factorial(k) for k in range(n)) for v in x]
        assert_close(S.gammaincc(float(n), x), erlang, rtol=1e-12, atol=1e-300)
    assert_close(S.gammainc(0.5, x), [math.erf(math.sqrt(v)) for v in x], rtol=1e-13)
    a = 10 ** RNG.uniform(-2, 2, 60)
    # P(a + 1, x) = P(a, x) - x^a e^-x / Gamma(a + 1), and P + Q = 1
    step = np.exp(a * np.log(x) - x - np.array([math.lgamma(v + 1) for v in a]))
    assert_close(S.gammainc(a + 1, x), _np(S.gammainc(a, x)) - step, rtol=1e-10, atol=1e-14)
    assert_close(_np(S.gammainc(a, x)) + _np(S.gammaincc(a, x)), np.ones(60), rtol=1e-14)


def test_edge_values_are_scipys_and_pytorchs():
    inf, nan = math.inf, math.nan
    a = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 2.0, -1.0, 1.0, inf, inf, nan, 3.0])
    x = np.array([0.0, 1.0, inf, 0.0, inf, -1.0, 1.0, nan, 1.0, inf, 1.0, 1e300])
    want_p = [nan, 1, 1, 0, 1, nan, nan, nan, 0, nan, nan, 1]
    assert_close(S.gammainc(a, x), want_p)
    assert_close(S.gammaincc(a, x), [nan, 0, 0, 1, 0, nan, nan, nan, 1, nan, nan, 0])
    assert_close(lax.igamma_grad_a(np.array([1.0, 2.0, 3.0]), np.array([0.0, inf, 1e300])), [0, 0, 0])


def _fd(fn, v, h):
    return (fn(v + h) - fn(v - h)) / (2 * h)


def test_derivatives_against_finite_differences():
    a = 10 ** RNG.uniform(-1.5, 2, 40)
    x = a * 10 ** RNG.uniform(-0.7, 0.7, 40)  # both sides of the series / continued fraction switch
    h = 1e-6 * a
    p = _np(S.gammainc(a, x))  # differences of the smaller of P and Q = 1 - P, which keep their digits
    dp_da = np.where(p < 0.5, _fd(lambda t: _np(S.gammainc(t, x)), a, h), -_fd(lambda t: _np(S.gammaincc(t, x)), a, h))
    assert_close(lax.igamma_grad_a(a, x), dp_da, rtol=2e-7, atol=1e-12)
    assert_close(fg.vmap(fg.grad(lambda t, v: S.gammainc(t, v)))(a, x), dp_da, rtol=2e-7, atol=1e-12)
    density = np.exp((a - 1) * np.log(x) - x - np.array([math.lgamma(v) for v in a]))
    assert_close(fg.vmap(fg.grad(lambda v, t: S.gammainc(t, v)))(x, a), density, rtol=1e-11)
    assert_close(fg.vmap(fg.grad(lambda v, t: S.gammaincc(t, v)))(x, a), -density, rtol=1e-11)
    # the sample gradient is the implicit one: P(a, z(a)) fixed, so dz/da = -P_a / P_x
    assert_close(lax.random_gamma_grad(a, x), -dp_da / density, rtol=2e-7, atol=1e-12)
    # second derivatives in x and the mixed one (d/dx of dP/da = d/da of the density)
    d2 = fg.vmap(fg.grad(fg.grad(lambda v, t: S.gammainc(t, v))))(x, a)
    assert_close(d2, density * ((a - 1) / x - 1), rtol=1e-9)
    mixed = fg.vmap(fg.grad(lambda v, t: fg.grad(lambda s: S.gammainc(s, v))(t)))(x, a)
    dens_da = _fd(lambda t: np.exp((t - 1) * np.log(x) - x - np.array([math.lgamma(v) for v in t])), a, h)
    assert_close(mixed, dens_da, rtol=1e-6, atol=1e-12)
    _, tangent = fg.jvp(lambda t: S.gammaincc(t, x), (fg.asarray(a),), (fg.asarray(np.ones(40)),))
    assert_close(tangent, -dp_da, rtol=2e-7, atol=1e-12)


def test_a_second_derivative_in_a_raises_instead_of_cutting():
    with pytest.raises(TypeError, match="igamma_grad_a is not differentiable with respect to argument 0"):
        fg.grad(fg.grad(lambda a: S.gammainc(a, 1.5)))(2.0)
    with pytest.raises(TypeError, match="random_gamma_grad is not differentiable"):
        fg.grad(lambda a: lax.random_gamma_grad(a, 1.5))(2.0)
    with pytest.raises(TypeError, match="needs floating-point operands, got operand 0 of int64"):
        fg.ops.special.igamma_p(np.arange(3), np.ones(3))


def test_dtypes_jit_and_underflowed_samples():
    a, x = RNG.uniform(0.1, 20, 50), RNG.uniform(0.01, 30, 50)
    exact = _np(S.gammainc(a, x))
    single = S.gammainc(a.astype(np.float32), x.astype(np.float32))
    assert single.dtype == np.float32
    assert_close(single, exact.astype(np.float32), rtol=2e-6, atol=1e-6)  # float64 inside, rounded once
    assert S.gammainc(2, np.arange(3)).dtype == np.float32  # integers: the default float
    fused = fg.jit(lambda s, v: S.gammainc(s, v) * 2.0 + lax.igamma_grad_a(s, v))(a, x)
    assert_close(fused, 2 * exact + _np(lax.igamma_grad_a(a, x)), rtol=1e-14)
    # d log z / da from log z alone, where z itself underflows (a << 1)
    from funcgrad.ops import special as ops
    log_z = np.array([-1500.0, -3.0])
    got = _np(fg.ops.core.registry["random_gamma_grad_log"](np.array([1e-3, 1e-3]), log_z))
    assert np.isfinite(got).all()
    assert_close(got[1], _np(lax.random_gamma_grad(np.float64(1e-3), np.exp(-3.0))) / np.exp(-3.0), rtol=1e-12)
    assert_close(got[0], -(log_z[0] - _np(S.digamma(np.float64(1.0 + 1e-3)))) / 1e-3, rtol=1e-12)  # the series' first term
    assert ops.random_gamma_grad_log_p.name == "random_gamma_grad_log"


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_device_kernels_equal_the_cpu():
    a = np.array([0.5, 2.0, 3.0, 1e-3, 0.0, -1.0, 50.0, 150.0])
    x = np.array([0.3, 2.5, 10.0, 1e-5, 1.0, 1.0, 49.0, 170.0])
    for fn in (S.gammainc, S.gammaincc, lax.igamma_grad_a, lax.random_gamma_grad):
        for dtype in (np.float64, np.float32):
            cpu = fn(a.astype(dtype), x.astype(dtype))
            gpu = fn(fg.device_put(fg.asarray(a.astype(dtype)), "cuda"), fg.device_put(fg.asarray(x.astype(dtype)), "cuda"))
            assert gpu.device == "cuda:0" and gpu.dtype == cpu.dtype
            assert_close(gpu.numpy(), cpu.numpy(), rtol=1e-12)


# ---- the samplers -------------------------------------------------------------------------------------
def _ks(samples, cdf) -> float:
    """Kolmogorov-Smirnov distance of the samples from a CDF."""
    s = np.sort(np.asarray(samples, np.float64).ravel())
    n = len(s)
    c = cdf(s)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


def _erlang_cdf(n):
    return lambda v: 1 - np.exp(-v) * sum(v ** k / math.factorial(k) for k in range(n))


N = 20000
KS_BOUND = 1.63 / math.sqrt(N)  # the 1% critical value


def test_gamma_samples_follow_the_distribution():
    key = R.key(0)
    for a, cdf in ((1.0, _erlang_cdf(1)), (3.0, _erlang_cdf(3)),
                   (0.5, lambda v: np.array([math.erf(math.sqrt(t)) for t in v]))):
        z = R.gamma(key, a, (N,), dtype=np.float64)
        assert _ks(z, cdf) < KS_BOUND, a
    many = np.asarray(R.gamma(R.key(1), np.array([0.05, 0.7, 4.0, 200.0]), (N, 4)))
    assert_close(many.mean(0), [0.05, 0.7, 4.0, 200.0], rtol=0.06)
    assert_close(many.var(0), [0.05, 0.7, 4.0, 200.0], rtol=0.12)
    assert R.gamma(key, 2.0, (3,)).dtype == np.float32 and R.gamma(key, 2.0, (3,), np.float16).dtype == np.float16
    edge = np.asarray(R.gamma(key, np.array([0.0, -1.0, math.nan])))
    assert edge[0] == 0 and np.isnan(edge[1:]).all()


def test_jit_draws_the_same_samples_and_loggamma_keeps_tiny_shapes():
    key = R.key(3)
    a = np.array([0.3, 1.0, 2.5, 9.0])
    eager = R.gamma(key, a, (50, 4), np.float64)
    assert_close(fg.jit(lambda k, s: R.gamma(k, s, (50, 4), np.float64))(key, a), eager, rtol=1e-12)
    log_z = np.asarray(R.loggamma(key, 1e-3, (N,), np.float64))
    assert np.isfinite(log_z).all() and (np.exp(log_z) == 0).mean() > 0.4  # the samples underflow, their logs do not
    assert_close(np.mean(log_z), _np(S.digamma(1e-3)), rtol=0.03)  # E[log z] = digamma(a)
    assert_close(np.exp(np.asarray(R.loggamma(key, 2.0, (5,), np.float64))), R.gamma(key, 2.0, (5,), np.float64),
                 rtol=1e-14)


def test_reparameterisation_gradients_have_the_right_expectations():
    key = R.key(4)
    for a in (0.3, 2.0, 7.0):  # d/da E[z] = 1 and d/da E[z^2] = d/da (a^2 + a) = 2a + 1
        assert_close(fg.grad(lambda s: R.gamma(key, s, (N,), np.float64).mean())(a), 1.0, rtol=0.02)
        assert_close(fg.grad(lambda s: (R.gamma(key, s, (N,), np.float64) ** 2).mean())(a), 2 * a + 1, rtol=0.04)
    # E[log z] = digamma(a): its derivative trigamma(a), through loggamma's log-space rule
    assert_close(fg.grad(lambda s: R.loggamma(key, s, (N,), np.float64).mean())(0.01), _np(S.polygamma(1, 0.01)),
                 rtol=0.03)
    # beta's mean a / (a + b): d/da = b / (a + b)^2
    assert_close(fg.grad(lambda s: R.beta(key, s, 3.0, (N,), np.float64).mean())(2.0), 3 / 25, rtol=0.05)
    sample_grad = fg.jvp(lambda s: R.gamma(key, s, (3,), np.float64), (fg.asarray(2.0),), (fg.asarray(1.0),))
    z = np.asarray(R.gamma(key, 2.0, (3,), np.float64))
    assert_close(sample_grad[1], lax.random_gamma_grad(2.0, z), rtol=1e-14)
    with pytest.raises(TypeError, match="not differentiable"):
        fg.grad(fg.grad(lambda s: R.gamma(key, s, (3,), np.float64).sum()))(2.0)


def test_beta_dirichlet_chisquare_t_and_f():
    key = R.key(5)
    b = np.asarray(R.beta(key, 2.0, 5.0, (N,), np.float64))
    assert_close([b.mean(), b.var()], [2 / 7, 10 / (49 * 8)], rtol=0.05)
    assert _ks(R.beta(key, 1.0, 3.0, (N,), np.float64), lambda v: 1 - (1 - v) ** 3) < KS_BOUND
    tiny = np.asarray(R.beta(key, 1e-3, 1e-3, (1000,), np.float64))
    assert np.isfinite(tiny).all() and ((tiny < 1e-6) | (tiny > 1 - 1e-6)).mean() > 0.9  # mass at 0 and 1
    alpha = np.array([0.5, 2.0, 5.0])
    d = np.asarray(R.dirichlet(key, alpha, (N,), np.float64))
    assert d.shape == (N, 3) and np.allclose(d.sum(-1), 1)
    assert_close(d.mean(0), alpha / 7.5, rtol=0.05)
    assert R.dirichlet(key, np.ones((4, 3))).shape == (4, 3)
    c = np.asarray(R.chisquare(key, 4.0, (N,), np.float64))
    assert _ks(c, lambda v: _erlang_cdf(2)(v / 2)) < KS_BOUND  # chi2(4) = 2 Gamma(2)
    t5 = np.asarray(R.t(key, 5.0, (N,), np.float64))
    assert_close([np.mean(t5), np.var(t5)], [0.0, 5 / 3], atol=0.05, rtol=0.1)
    f = np.asarray(R.f(key, 4.0, 10.0, (N,), np.float64))
    assert_close(np.mean(f), 10 / 8, rtol=0.05)


def test_binomial_and_multinomial_counts():
    key = R.key(6)
    n = np.array([7.0, 7.0, 40.0, 1000.0, 1000.0, 5.0, 5.0])
    p = np.array([0.3, 0.9, 0.5, 0.02, 0.7, 0.0, 1.0])
    draws = np.asarray(R.binomial(key, n, p, (N, 7), np.float64))
    assert (draws == np.round(draws)).all() and (draws >= 0).all() and (draws <= n).all()
    assert_close(draws.mean(0), n * p, rtol=0.02, atol=0.02)
    assert_close(draws.var(0), n * p * (1 - p), rtol=0.06, atol=0.02)
    for column, (k, q) in enumerate(zip(n[:3], p[:3])):  # exact probabilities, inversion and BTRS
        exact = np.array([math.comb(int(k), j) * q ** j * (1 - q) ** (k - j) for j in range(int(k) + 1)])
        freq = np.bincount(draws[:, column].astype(int), minlength=int(k) + 1) / N
        assert np.abs(freq - exact).max() < 0.012, (k, q)
    assert np.isnan(np.asarray(R.binomial(key, np.array([-1.0, 5.0]), np.array([0.5, 1.5])))).all()
    counts = np.asarray(R.multinomial(key, 20.0, np.array([0.1, 0.2, 0.7]), shape=(N,), dtype=np.float64))
    assert counts.shape == (N, 3) and (counts.sum(-1) == 20).all()
    assert_close(counts.mean(0), [2.0, 4.0, 14.0], rtol=0.03)
    assert_close(np.cov(counts.T)[0, 1], -20 * 0.1 * 0.2, rtol=0.1)


def test_wrong_inputs_name_what_was_wrong():
    key = R.key(0)
    with pytest.raises(ValueError, match="alpha needs at least one axis"):
        R.dirichlet(key, 1.0)
    with pytest.raises(ValueError, match=r"does not broadcast to the sample shape \(3,\)"):
        R.gamma(key, np.ones(4), (3,))
    with pytest.raises(ValueError, match="does not broadcast"):
        R.dirichlet(key, np.ones((4, 3)), (5,))
    with pytest.raises(TypeError, match="floating-point"):
        R.gamma(key, 2.0, (3,), np.int32)
    with pytest.raises(ValueError, match="p needs at least one axis"):
        R.multinomial(key, 5.0, 0.5)


def test_generalized_normal_ball_and_key_helpers():
    key = R.key(8)
    for p, variance in ((2.0, 0.5), (1.0, 2.0), (4.0, math.gamma(3 / 4) / math.gamma(1 / 4))):
        samples = np.asarray(R.generalized_normal(key, p, (N,), np.float64))
        assert_close(samples.var(), variance, rtol=0.05)  # Gamma(3/p) / Gamma(1/p)
        assert abs(samples.mean()) < 0.03
    for d, p in ((3, 2.0), (2, 1.0)):
        points = np.asarray(R.ball(key, d, p, (N,), np.float64))
        norms = (np.abs(points) ** p).sum(-1) ** (1 / p)
        assert points.shape == (N, d) and norms.max() <= 1
        assert _ks(norms, lambda r: r ** d) < KS_BOUND  # uniform in the ball: P(|x| < r) = r^d
    assert np.array_equal(np.asarray(R.key_data(key)), np.asarray(key))
    assert np.array_equal(np.asarray(R.wrap_key_data(np.asarray(key))), np.asarray(key))
    assert R.key_impl(key) == "threefry2x32" and np.array_equal(np.asarray(R.clone(key)), np.asarray(key))
    with pytest.raises(TypeError, match="expected PRNG keys"):
        R.wrap_key_data(np.arange(3))
    with pytest.raises(ValueError, match="d must be a positive int"):
        R.ball(key, 0)

"""funcgrad.scipy.stats and scipy.special.betainc against independent references: Python's
statistics.NormalDist and math, closed forms (Erlang and binomial sums for integer shapes, the
distributions' own formulas), NumPy's linear algebra, quadrature of the densities, and a few SciPy
values written out for deep tails; gradients by finite differences."""
import math
from statistics import NormalDist

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import lax
from funcgrad.scipy import special as S
from funcgrad.scipy import stats

from .helpers import assert_close

RNG = np.random.default_rng(0)
STD = NormalDist()
X = np.concatenate([RNG.normal(0, 3, 40), [0.0, 1e-300, -7.5, 12.0]])


def _each(fn, *arrays):
    return np.array([fn(*v) for v in zip(*np.broadcast_arrays(*arrays))])


def test_betainc_against_binomial_sums_and_its_edges():
    x = RNG.uniform(0, 1, 30)
    for a, b in ((1, 1), (2, 3), (5, 2), (7, 9)):  # I_x(a, b) = P(Binomial(a + b - 1, x) >= a)
        n = a + b - 1
        want = [sum(math.comb(n, j) * v ** j * (1 - v) ** (n - j) for j in range(a, n + 1)) for v in x]
        assert_close(S.betainc(float(a), float(b), x), want, rtol=1e-13, atol=1e-15)
    assert_close(S.betainc(0.5, 0.5, x), 2 / math.pi * np.arcsin(np.sqrt(x)), rtol=1e-13)  # the arcsine law
    inf, nan = math.inf, math.nan
    a = np.array([0.0, 0.0, 2.0, 2.0, 0.0, 2.0, 2.0, inf, 2.0, inf, 2.0, 2.0, -1.0, 2.0])
    b = np.array([2.0, 2.0, 0.0, 0.0, 0.0, 3.0, 3.0, 2.0, inf, inf, 3.0, 3.0, 2.0, 3.0])
    v = np.array([0.5, 0.0, 0.5, 1.0, 0.5, 0.0, 1.0, 0.5, 0.5, 0.5, -0.1, 1.1, 0.5, nan])
    assert_close(S.betainc(a, b, v), [1, 0, 0, 1, nan, 0, 1, 0, 1, nan, nan, nan, nan, nan])  # SciPy's
    # a = b = 1e4, where lgamma's terms would cancel: the symmetric point and SciPy's tail value
    assert_close(S.betainc(np.float64(1e4), np.float64(1e4), np.array([0.5, 0.49])),
                 [0.5, 0.0023370593301101496], rtol=1e-12, atol=0)
    assert_close(fg.vmap(fg.grad(lambda t: S.betainc(np.float64(2.0), np.float64(3.0), t)))(x), 12 * x * (1 - x) ** 2,
                 rtol=1e-12)
    with pytest.raises(TypeError, match="betainc is not differentiable with respect to argument 0"):
        fg.grad(lambda t: S.betainc(t, 3.0, 0.4))(2.0)
    assert_close(lax.betainc(np.float64(2.0), np.float64(3.0), 0.4), 0.5248, rtol=1e-14)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_betainc_on_the_device_equals_the_cpu():
    a, b, x = np.array([0.5, 2.0, 30.0, 1e-3]), np.array([0.5, 3.0, 25.0, 2.0]), np.array([0.3, 0.4, 0.6, 0.9])
    cpu = S.betainc(a, b, x)
    gpu = S.betainc(*(fg.device_put(fg.asarray(v), "cuda") for v in (a, b, x)))
    assert gpu.device == "cuda:0"
    assert_close(gpu.numpy(), cpu.numpy(), rtol=1e-13)


def test_norm_is_pythons_normal_distribution():
    loc, scale = 1.5, 2.5
    dist = NormalDist(loc, scale)
    assert_close(stats.norm.pdf(X, loc, scale), [dist.pdf(v) for v in X], rtol=1e-13)
    assert_close(stats.norm.logpdf(X, loc=loc, scale=scale), [math.log(dist.pdf(v)) for v in X], rtol=1e-13)
    assert_close(stats.norm.cdf(X, loc, scale), [dist.cdf(v) for v in X], rtol=1e-12, atol=1e-16)
    assert_close(stats.norm.sf(X, loc, scale), [dist.cdf(2 * loc - v) for v in X], rtol=1e-12, atol=1e-16)
    q = RNG.uniform(0.001, 0.999, 30)
    assert_close(stats.norm.ppf(q, loc, scale), [dist.inv_cdf(v) for v in q], rtol=1e-12)
    assert_close(stats.norm.isf(q, loc, scale), [dist.inv_cdf(1 - v) for v in q], rtol=1e-9)
    assert_close(stats.norm.logcdf(np.float64(-40.0)), -804.6084420137539, rtol=1e-13)  # SciPy, where cdf underflows
    assert stats.norm.logpdf(np.float32(0.5)).dtype == np.float32


def test_location_scale_families_are_their_formulas():
    y = np.linspace(-6, 6, 41)
    checks = {
        "expon": (lambda v: math.exp(-v) if v >= 0 else 0.0, lambda v: -math.expm1(-v) if v > 0 else 0.0),
        "laplace": (lambda v: 0.5 * math.exp(-abs(v)), lambda v: 0.5 * math.exp(v) if v < 0 else 1 - 0.5 * math.exp(-v)),
        "logistic": (lambda v: math.exp(-v) / (1 + math.exp(-v)) ** 2, lambda v: 1 / (1 + math.exp(-v))),
        "cauchy": (lambda v: 1 / (math.pi * (1 + v * v)), lambda v: 0.5 + math.atan(v) / math.pi),
        "uniform": (lambda v: 1.0 if 0 <= v <= 1 else 0.0, lambda v: min(max(v, 0.0), 1.0)),
        "gumbel_r": (lambda v: math.exp(-(v + math.exp(-v))), lambda v: math.exp(-math.exp(-v))),
        "gumbel_l": (lambda v: math.exp(v - math.exp(v)), lambda v: -math.expm1(-math.exp(v))),
    }
    loc, scale = -0.5, 1.7
    for name, (pdf, cdf) in checks.items():
        dist = getattr(stats, name)
        x = loc + scale * y
        assert_close(dist.pdf(x, loc=loc, scale=scale), [pdf(v) / scale for v in y], rtol=1e-12, atol=1e-300)
        assert_close(dist.cdf(x, loc=loc, scale=scale), [cdf(v) for v in y], rtol=1e-12, atol=1e-300)
        if hasattr(dist, "ppf"):
            q = np.array([0.01, 0.3, 0.5, 0.9])
            assert_close(dist.cdf(dist.ppf(q, loc=loc, scale=scale), loc=loc, scale=scale), q, rtol=1e-12)
    assert_close(stats.pareto.pdf(np.array([0.5, 1.0, 3.0]), 2.5), [0, 2.5, 2.5 * 3.0 ** -3.5], rtol=1e-13)
    assert_close(stats.pareto.sf(np.array([0.5, 3.0]), 2.5), [1, 3.0 ** -2.5], rtol=1e-13)
    c = 0.6
    assert_close(stats.wrapcauchy.pdf(np.array([0.5, 3.0]), c),
                 [(1 - c * c) / (2 * math.pi * (1 + c * c - 2 * c * math.cos(v))) for v in (0.5, 3.0)], rtol=1e-13)
    assert_close(stats.gennorm.pdf(y, 2.0), [math.exp(-v * v) / math.sqrt(math.pi) for v in y], rtol=1e-12, atol=1e-300)
    assert_close(stats.gennorm.cdf(y, 1.0), stats.laplace.cdf(y), rtol=1e-12)
    # the Cauchy quantile at 1e-300 keeps its magnitude (SciPy's value)
    assert_close(stats.cauchy.ppf(np.float64(1e-300)), -3.183098861837907e+299, rtol=1e-13)


def test_gamma_chi2_beta_and_t_cdfs():
    x = np.abs(X) + 0.01
    for n in (1, 3, 6):  # Erlang: the upper tail e^-x sum_{k<n} x^k / k!
        erlang = [math.exp(-v) * sum(v ** k / math.factorial(k) for k in range(n)) for v in x]
        assert_close(stats.gamma.sf(x, float(n)), erlang, rtol=1e-12, atol=1e-300)
        assert_close(stats.chi2.sf(2 * x, 2.0 * n), erlang, rtol=1e-12, atol=1e-300)
        assert_close(np.asarray(stats.gamma.cdf(x, float(n))) + erlang, np.ones(len(x)), rtol=1e-14)
    assert_close(stats.gamma.pdf(x, 3.0, scale=2.0), x ** 2 * np.exp(-x / 2) / 16, rtol=1e-12)
    u = RNG.uniform(0, 1, 20)
    assert_close(stats.beta.cdf(u, 2.0, 3.0), [6 * v ** 2 * (1 - v) ** 2 + 4 * v ** 3 * (1 - v) + v ** 4 for v in u],
                 rtol=1e-12)
    assert_close(stats.beta.pdf(u, 2.0, 3.0), 12 * u * (1 - u) ** 2, rtol=1e-12)
    assert_close(stats.t.cdf(X, 2.0), [0.5 + v / (2 * math.sqrt(2 + v * v)) for v in X], rtol=1e-12, atol=1e-300)
    assert_close(stats.t.cdf(X, 1.0), stats.cauchy.cdf(X), rtol=1e-12)
    assert_close(stats.t.pdf(X, 1.0), stats.cauchy.pdf(X), rtol=1e-12)
    # deep tails, from the complement (SciPy's values)
    assert_close(stats.chi2.logsf(2.532236041735776, np.float64(11.566310348274904), loc=1.9266627091351407,
                                  scale=3.62785194040084), -1.120378922516184e-09, rtol=1e-10)
    assert_close(stats.beta.logsf(0.05, np.float64(10.9), 0.17), -1.719033263154007e-16, rtol=1e-8)
    assert_close(stats.gamma.logcdf(np.float64(1e-3), 7.0), -56.88032330786368, rtol=1e-13)
    assert_close(stats.t.cdf(np.float64(-30.0), 3.5), 1.1968065997811304e-05, rtol=1e-11)


def test_truncnorm_keeps_far_tails():
    a, b = -1.0, 2.0
    mass = STD.cdf(b) - STD.cdf(a)
    y = np.linspace(-1.5, 2.5, 17)
    want = [0.0 if v < a else 1.0 if v > b else (STD.cdf(v) - STD.cdf(a)) / mass for v in y]
    assert_close(stats.truncnorm.cdf(y, a, b), want, rtol=1e-12, atol=1e-15)
    assert_close(stats.truncnorm.pdf(y, a, b), [STD.pdf(v) / mass if a <= v <= b else 0.0 for v in y], rtol=1e-12)
    # both bounds 40 standard deviations out: finite, as SciPy's
    assert_close(stats.truncnorm.logpdf(np.float64(40.5), 40.0, 41.0), -16.435496519450794, rtol=1e-12)
    assert_close(stats.truncnorm.logcdf(np.float64(40.5), 40.0, 41.0), -1.7965328377866144e-09, rtol=1e-8)


def test_discrete_masses_and_cdfs():
    k = np.arange(-1.0, 14.0)
    n, p = 12.0, 0.35
    binom = [math.comb(12, int(j)) * p ** j * (1 - p) ** (12 - j) if 0 <= j <= 12 else 0.0 for j in k]
    assert_close(stats.binom.pmf(k, n, p), binom, rtol=1e-12, atol=1e-300)
    assert_close(stats.binom.cdf(k, n, p), np.cumsum(binom), rtol=1e-12, atol=1e-300)
    mu = 3.7
    poisson = [math.exp(-mu) * mu ** j / math.factorial(int(j)) if j >= 0 else 0.0 for j in k]
    assert_close(stats.poisson.pmf(k, mu), poisson, rtol=1e-12, atol=1e-300)
    assert_close(stats.poisson.cdf(k + 0.5, mu), np.cumsum(poisson), rtol=1e-12, atol=1e-300)  # floor(k)
    geom = [(1 - p) ** (j - 1) * p if j >= 1 else 0.0 for j in k]
    assert_close(stats.geom.pmf(k, p), geom, rtol=1e-12, atol=1e-300)
    assert_close(stats.geom.cdf(k, p), np.cumsum(geom), rtol=1e-12, atol=1e-300)
    nb = [math.comb(int(j) + 2, int(j)) * p ** 3 * (1 - p) ** j if j >= 0 else 0.0 for j in k]
    assert_close(stats.nbinom.pmf(k, 3.0, p), nb, rtol=1e-12, atol=1e-300)
    assert_close(stats.nbinom.cdf(k, 3.0, p), np.cumsum(nb), rtol=1e-12, atol=1e-300)
    a, b = 2.5, 1.5
    bb = [math.comb(12, int(j)) * math.exp(math.lgamma(j + a) + math.lgamma(12 - j + b) - math.lgamma(12 + a + b)
                                           - math.lgamma(a) - math.lgamma(b) + math.lgamma(a + b))
          if 0 <= j <= 12 else 0.0 for j in k]
    assert_close(stats.betabinom.pmf(k, n, a, b), bb, rtol=1e-11, atol=1e-300)
    assert_close(stats.bernoulli.pmf(np.array([0.0, 1.0, 2.0]), 0.3), [0.7, 0.3, 0.0], rtol=1e-14)
    assert_close(stats.bernoulli.ppf(np.array([0.0, 0.5, 0.8]), 0.3), [-1, 0, 1])  # SciPy's, -1 at q = 0
    assert_close(stats.poisson.logpmf(np.array([2.5, -1.0]), 3.0), [-np.inf, -np.inf])  # not a count
    assert_close(stats.poisson.pmf(np.float64(4.0), 3.0, loc=2.0), math.exp(-3) * 4.5, rtol=1e-13)


def test_invalid_parameters_give_nan_and_nan_propagates():
    assert np.isnan(np.asarray(stats.norm.logpdf(1.0, scale=-1.0)))
    assert np.isnan(np.asarray(stats.gamma.cdf(1.0, -2.0)))
    assert np.isnan(np.asarray(stats.beta.pdf(0.5, 0.0, 1.0)))
    assert np.isnan(np.asarray(stats.binom.pmf(2.0, 5.5, 0.3)))  # n must be an integer
    assert np.isnan(np.asarray(stats.norm.ppf(1.5)))
    for fn in (stats.expon.logpdf, stats.uniform.cdf, stats.pareto.sf, stats.poisson.logpmf, stats.binom.cdf):
        args = (3.0,) if fn in (stats.pareto.sf, stats.poisson.logpmf) else (5.0, 0.5) if fn is stats.binom.cdf else ()
        assert np.isnan(np.asarray(fn(np.float64(np.nan), *args))), fn


def test_multivariate_normal_dirichlet_and_multinomial():
    d = 3
    a = RNG.normal(size=(d, d))
    cov = a @ a.T + 0.3 * np.eye(d)
    mean = RNG.normal(size=d)
    x = RNG.normal(size=(5, d))
    diff = x - mean
    want = -0.5 * (d * math.log(2 * math.pi) + np.linalg.slogdet(cov)[1]
                   + np.einsum("ni,ij,nj->n", diff, np.linalg.inv(cov), diff))
    assert_close(stats.multivariate_normal.logpdf(x, mean, cov), want, rtol=1e-12)
    for allow in (False, True):
        assert_close(stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=allow), want, rtol=1e-10)
    diag = np.array([1.0, 2.0, 0.5])
    assert_close(stats.multivariate_normal.logpdf(x, mean, diag), stats.multivariate_normal.logpdf(x, mean, np.diag(diag)),
                 rtol=1e-13)
    # a singular covariance: the pseudo-inverse and pseudo-determinant on its range, -inf off it
    singular = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    on, off = np.array([0.7, 0.7, 0.4]), np.array([0.7, 1.7, 0.4])
    pdet = 2.0 * 2.0  # the nonzero eigenvalues
    maha = on @ np.linalg.pinv(singular) @ on
    assert_close(stats.multivariate_normal.logpdf(on, np.zeros(3), singular, allow_singular=True),
                 -0.5 * (2 * math.log(2 * math.pi) + math.log(pdet) + maha), rtol=1e-12)
    assert np.asarray(stats.multivariate_normal.logpdf(off, np.zeros(3), singular, allow_singular=True)) == -np.inf
    with pytest.raises(ValueError, match="does not match a mean of 3 entries"):
        stats.multivariate_normal.logpdf(x, mean, np.eye(2))
    points = np.array([0.1, 0.2, -1.5])  # a scalar mean: the one-dimensional normal, elementwise
    assert_close(stats.multivariate_normal.logpdf(points, 0.3, 2.0),
                 [math.log(NormalDist(0.3, math.sqrt(2.0)).pdf(v)) for v in points], rtol=1e-13)
    alpha = np.array([0.5, 2.0, 3.0])
    point = np.array([0.2, 0.3, 0.5])
    log_norm = sum(math.lgamma(v) for v in alpha) - math.lgamma(alpha.sum())
    assert_close(stats.dirichlet.logpdf(point, alpha), sum((alpha - 1) * np.log(point)) - log_norm, rtol=1e-13)
    assert np.asarray(stats.dirichlet.logpdf(np.array([0.2, 0.3, 0.6]), alpha)) == -np.inf  # off the simplex
    with pytest.raises(ValueError, match=r"x must be \(K,\) or \(K, N\)"):
        stats.dirichlet.logpdf(np.ones((2, 3)), alpha)
    counts = np.array([[2.0, 3.0, 5.0], [2.0, 3.0, 4.0]])
    probs = np.array([0.2, 0.3, 0.5])
    want = math.factorial(10) / (2 * 6 * 120) * 0.2 ** 2 * 0.3 ** 3 * 0.5 ** 5
    assert_close(stats.multinomial.pmf(counts, 10.0, probs), [want, 0.0], rtol=1e-12)


def test_gradients_jit_and_vmap():
    x = np.array([-1.2, 0.3, 2.5])
    # d/dx log cdf = pdf / cdf; d/dloc logpdf = (x - loc) / scale^2
    assert_close(fg.vmap(fg.grad(lambda v: stats.norm.logcdf(v)))(x), stats.norm.pdf(x) / stats.norm.cdf(x), rtol=1e-12)
    assert_close(fg.grad(lambda m: stats.norm.logpdf(x, m, 2.0).sum())(np.float64(0.5)), np.sum(x - 0.5) / 4, rtol=1e-13)
    # the gamma CDF in its shape (lax.igamma_grad_a), against central differences
    h = 1e-6
    fd = (np.asarray(stats.gamma.cdf(1.7, np.float64(2.5 + h))) - np.asarray(stats.gamma.cdf(1.7, np.float64(2.5 - h)))) / (2 * h)
    assert_close(fg.grad(lambda s: stats.gamma.cdf(1.7, s))(np.float64(2.5)), fd, rtol=1e-7)
    jitted = fg.jit(lambda v, s: stats.t.logpdf(v, s) + stats.beta.cdf(v * v / 10, 2.0, s))
    assert_close(jitted(x, np.float64(4.0)), np.asarray(stats.t.logpdf(x, 4.0)) + np.asarray(stats.beta.cdf(x * x / 10, 2.0, 4.0)),
                 rtol=1e-12)
    # the density integrates to the CDF (trapezoids on a fine grid)
    grid = np.linspace(0, 6, 60001)
    density = np.asarray(stats.gamma.pdf(grid, 2.3, scale=0.7))
    assert_close(np.trapezoid(density, grid), stats.gamma.cdf(6.0, 2.3, scale=0.7), rtol=1e-8)


def test_bessel_functions_against_their_series_and_numpy():
    x = np.concatenate([np.linspace(-45, 45, 181), [1e-300, 29.9999, 30.0, 30.0001, 700.0]])

    def scaled(v, n):  # exp(-|v|) I_n(v) = (1 / pi) int_0^pi e^(v cos t - |v|) cos(n t) dt, by trapezoids (a
        t = np.linspace(0, math.pi, 4001)  # periodic integrand: they converge exponentially)
        f = np.exp(v * np.cos(t) - abs(v)) * np.cos(n * t)
        return (f.sum() - (f[0] + f[-1]) / 2) * (t[1] - t[0]) / math.pi
    small = x[np.abs(x) <= 45]
    assert_close(S.i0e(small), [scaled(v, 0) for v in small], rtol=1e-13)
    assert_close(S.i1e(small), [scaled(v, 1) for v in small], rtol=1e-13, atol=1e-300)
    assert_close(S.i1(small), [scaled(v, 1) * math.exp(abs(v)) for v in small], rtol=1e-13, atol=1e-300)
    assert_close(fg.numpy.i0(x), np.i0(x), rtol=2e-14)  # NumPy's own, to 700
    assert_close(S.i0e(np.array([1e6])), [1 / math.sqrt(2 * math.pi * 1e6) * (1 + 1 / 8e6)], rtol=1e-14)
    assert_close(fg.vmap(fg.grad(S.i0))(small), S.i1(small), rtol=1e-13, atol=1e-300)  # I0' = I1


def test_vonmises():
    x = np.linspace(-math.pi, math.pi, 13)
    kappa = 2.5
    i0 = math.fsum((kappa / 2) ** (2 * k) / math.factorial(k) ** 2 for k in range(60))
    want = [math.exp(kappa * math.cos(v - 0.3)) / (2 * math.pi * i0) for v in x]
    assert_close(stats.vonmises.pdf(x, kappa, loc=0.3), want, rtol=1e-13)
    assert_close(stats.vonmises.logpdf(np.float64(0.0), 1e4), 0.5 * math.log(1e4 / (2 * math.pi)), rtol=1e-4)
    assert np.isnan(np.asarray(stats.vonmises.logpdf(0.0, -1.0)))


def _ranks(row, method):
    """Ranks by their definition: counts of smaller and not larger values."""
    below = np.array([(row < v).sum() for v in row])
    not_above = np.array([(row <= v).sum() for v in row])
    distinct = np.unique(row)
    return {"min": below + 1, "max": not_above, "average": (below + 1 + not_above) / 2,
            "dense": np.searchsorted(distinct, row) + 1,
            "ordinal": np.argsort(np.argsort(row, kind="stable"), kind="stable") + 1}[method]


def test_rankdata_mode_and_sem():
    a = RNG.integers(0, 5, (4, 7)).astype(np.float64)
    for method in ("average", "min", "max", "dense", "ordinal"):
        got = np.asarray(stats.rankdata(a, method, axis=1))
        assert_close(got, np.stack([_ranks(row, method) for row in a]))
        assert_close(stats.rankdata(a, method), _ranks(a.ravel(), method).reshape(-1))
    # integers rank to integers except by average; floats to floats (NaN is possible: JAX's choice)
    assert stats.rankdata(a.astype(int), "dense").dtype.kind == "i" and stats.rankdata(a).dtype == np.float64
    with_nan = a.copy()
    with_nan[1, 2] = np.nan
    propagated = np.asarray(stats.rankdata(with_nan, axis=1))
    assert np.isnan(propagated[1]).all() and not np.isnan(propagated[[0, 2, 3]]).any()
    omitted = np.asarray(stats.rankdata(with_nan, axis=1, nan_policy="omit"))
    kept = np.delete(with_nan[1], 2)
    assert np.isnan(omitted[1, 2]) and np.allclose(np.delete(omitted[1], 2), _ranks(kept, "average"))
    with pytest.raises(ValueError, match="contains NaN"):
        stats.rankdata(with_nan, nan_policy="raise")
    b = np.array([[1, 2, 2, 3], [4, 4, 1, 1], [0, 5, 5, 5]])
    result = stats.mode(b, axis=1)
    assert_close(result.mode, [2, 1, 5])  # the smallest of the tied values
    assert_close(result.count, [2, 2, 3])
    assert stats.mode(b, axis=None, keepdims=True).mode.shape == (1, 1)
    nan_mode = stats.mode(np.array([1.0, np.nan, np.nan, 2.0]))
    assert np.isnan(np.asarray(nan_mode.mode)) and int(nan_mode.count) == 2  # SciPy's propagation
    assert float(stats.mode(np.array([1.0, 2.0, 2.0, np.nan]), nan_policy="omit").mode) == 2.0
    assert_close(stats.sem(a, axis=1), a.std(axis=1, ddof=1) / math.sqrt(7), rtol=1e-13)
    omit = np.asarray(stats.sem(with_nan, axis=1, nan_policy="omit"))
    assert_close(omit[1], kept.std(ddof=1) / math.sqrt(6), rtol=1e-13)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_distributions_run_on_the_device_with_host_parameters():
    x = np.array([0.3, 1.2, 2.5])
    on_device = fg.device_put(fg.asarray(x), "cuda")
    for fn in (lambda v: stats.gamma.cdf(v, 2.5, scale=1.5), lambda v: stats.t.cdf(v, 3.0),
               lambda v: stats.truncnorm.logcdf(v, -1.0, 2.0), lambda v: stats.vonmises.logpdf(v, np.float64(2.0)),
               lambda v: S.zeta(v + 1.5, 2.0)):
        cpu, gpu = fn(x), fn(on_device)
        assert gpu.device == "cuda:0"
        assert_close(gpu.numpy(), cpu.numpy(), rtol=1e-13)


def test_gaussian_kde_is_its_mixture():
    data = RNG.normal(size=(2, 40))
    weights = RNG.uniform(0.1, 1, 40)
    kde = stats.gaussian_kde(data, weights=weights)
    w = weights / weights.sum()
    neff = 1 / np.sum(w ** 2)
    factor = neff ** (-1 / 6)  # Scott's, d = 2
    cov = np.cov(data, aweights=w) * factor ** 2
    assert_close(kde.factor, factor, rtol=1e-13)
    assert_close(kde.covariance, cov, rtol=1e-12)
    points = RNG.normal(size=(2, 6))
    inv, det = np.linalg.inv(cov), np.linalg.det(2 * np.pi * cov)
    want = [sum(wi * np.exp(-0.5 * (p - x) @ inv @ (p - x)) / np.sqrt(det) for wi, x in zip(w, data.T)) for p in points.T]
    assert_close(kde(points), want, rtol=1e-12)
    assert_close(kde.logpdf(points), np.log(want), rtol=1e-12)
    one = stats.gaussian_kde(data[0], bw_method="silverman")
    sigma = math.sqrt(np.var(data[0], ddof=1)) * (40 * 3 / 4) ** (-1 / 5)
    assert_close(one.integrate_box_1d(-0.5, 1.0),
                 np.mean([NormalDist(x, sigma).cdf(1.0) - NormalDist(x, sigma).cdf(-0.5) for x in data[0]]), rtol=1e-12)
    total = cov + np.eye(2)  # the mixture against N(0, I): each component's N(x; 0, cov + I)
    assert_close(kde.integrate_gaussian(np.zeros(2), np.eye(2)),
                 sum(wi * np.exp(-0.5 * x @ np.linalg.inv(total) @ x) / np.sqrt(np.linalg.det(2 * np.pi * total))
                     for wi, x in zip(w, data.T)), rtol=1e-12)
    draws = np.asarray(one.resample(fg.random.key(0), (20000,)))
    assert draws.shape == (1, 20000)
    assert_close(draws.var(), np.var(data[0]) + sigma ** 2, rtol=0.05)
    with pytest.raises(ValueError, match="bw_method must be"):
        stats.gaussian_kde(data, bw_method="wide")

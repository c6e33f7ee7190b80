"""funcgrad.distributions against closed forms (densities and entropies written with math), Monte
Carlo (moments of samples, KL divergences as E_p[log p - log q]) and the reparameterisation
gradients' expectations; shapes, pytrees under jit, and PyTorch's validation errors."""
import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import distributions as D

from .helpers import assert_close

RNG = np.random.default_rng(0)
KEY = fg.random.key(0)
N = 40000


def _f64(*values):
    return [np.asarray(v, np.float64) for v in values]


def test_densities_entropies_and_moments_are_their_formulas():
    loc, scale = _f64([0.3, -1.0], [0.5, 2.0])
    x = np.array([[0.1, 2.0], [-0.4, -3.0]])
    normal = D.Normal(loc, scale)
    assert_close(normal.log_prob(x), -0.5 * ((x - loc) / scale) ** 2 - np.log(scale) - 0.5 * math.log(2 * math.pi),
                 rtol=1e-13)
    assert_close(normal.entropy(), 0.5 * np.log(2 * math.pi * math.e * scale ** 2), rtol=1e-13)
    assert_close(normal.icdf(normal.cdf(x)), x, rtol=1e-10)
    rate = np.float64(1.7)
    expo = D.Exponential(rate)
    assert_close(expo.log_prob(np.abs(x)), np.log(rate) - rate * np.abs(x), rtol=1e-13)
    assert_close(expo.entropy(), 1 - math.log(rate), rtol=1e-13)
    a, b = np.float64(2.5), np.float64(1.5)
    gamma = D.Gamma(a, b)
    v = np.abs(x) + 0.1
    assert_close(gamma.log_prob(v), a * math.log(b) + (a - 1) * np.log(v) - b * v - math.lgamma(a), rtol=1e-13)
    beta = D.Beta(a, b)
    u = np.array([0.2, 0.7])
    assert_close(beta.log_prob(u), (a - 1) * np.log(u) + (b - 1) * np.log1p(-u) - (math.lgamma(a) + math.lgamma(b)
                                                                                  - math.lgamma(a + b)), rtol=1e-13)
    assert_close([beta.mean, beta.variance], [a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))], rtol=1e-13)
    p = np.float64(0.3)
    bern = D.Bernoulli(probs=p)
    assert_close(bern.log_prob(np.array([0.0, 1.0])), [math.log(0.7), math.log(0.3)], rtol=1e-12)
    assert_close(bern.entropy(), -(0.3 * math.log(0.3) + 0.7 * math.log(0.7)), rtol=1e-12)
    cat = D.Categorical(probs=np.array([0.2, 0.0, 0.8]))
    assert_close(cat.log_prob(np.array([0, 2])), [math.log(0.2), math.log(0.8)], rtol=1e-12)
    assert_close(cat.entropy(), -(0.2 * math.log(0.2) + 0.8 * math.log(0.8)), rtol=1e-12)  # 0 log 0 = 0
    pois = D.Poisson(np.float64(3.5))
    assert_close(pois.log_prob(np.array([0.0, 4.0])), [-3.5, 4 * math.log(3.5) - 3.5 - math.log(24)], rtol=1e-13)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    mvn = D.MultivariateNormal(np.zeros(2), cov)
    y = np.array([0.5, -1.0])
    assert_close(mvn.log_prob(y), -0.5 * (y @ np.linalg.solve(cov, y) + np.log(np.linalg.det(2 * math.pi * cov))),
                 rtol=1e-13)
    assert_close(mvn.entropy(), 0.5 * np.log(np.linalg.det(2 * math.pi * math.e * cov)), rtol=1e-13)
    # each of the three matrices is a field whichever was given (precision_matrix was None)
    for given in ({"covariance_matrix": cov}, {"precision_matrix": np.linalg.inv(cov)},
                  {"scale_tril": np.linalg.cholesky(cov)}):
        batched = D.MultivariateNormal(np.zeros((4, 2)), **given)
        assert_close(batched.precision_matrix, np.linalg.inv(cov), rtol=1e-13)
        assert_close(batched.covariance_matrix, cov, rtol=1e-13)
        assert_close(batched.scale_tril, np.linalg.cholesky(cov), rtol=1e-13)
        assert batched.batch_shape == (4,)
        wishart = D.Wishart(np.array([3.0, 4.5]), **given)
        assert_close(wishart.precision_matrix, np.linalg.inv(cov), rtol=1e-13)
        assert wishart.batch_shape == (2,)


def test_samples_have_their_moments_and_shapes():
    cases = [(D.Normal(_f64(1.5)[0], _f64(2.0)[0]), 1.5, 4.0), (D.Uniform(_f64(-1.0)[0], _f64(3.0)[0]), 1.0, 16 / 12),
             (D.Exponential(_f64(2.0)[0]), 0.5, 0.25), (D.Laplace(_f64(0.5)[0], _f64(1.0)[0]), 0.5, 2.0),
             (D.Gamma(_f64(3.0)[0], _f64(2.0)[0]), 1.5, 0.75), (D.Beta(_f64(2.0)[0], _f64(5.0)[0]), 2 / 7, 10 / 392),
             (D.Poisson(_f64(4.0)[0]), 4.0, 4.0), (D.Bernoulli(probs=_f64(0.3)[0]), 0.3, 0.21)]
    for dist, mean, variance in cases:
        draws = np.asarray(dist.sample(KEY, (N,)))
        assert_close([draws.mean(), draws.var()], [mean, variance], rtol=0.05, atol=0.01)
        assert_close([dist.mean, dist.variance], [mean, variance], rtol=1e-12)
    assert D.Normal(np.zeros(3), 1.0).sample(KEY, (2, 5)).shape == (2, 5, 3)
    assert D.Dirichlet(np.ones((2, 4))).sample(KEY, (5,)).shape == (5, 2, 4)
    assert D.MultivariateNormal(np.zeros(3), np.eye(3)).rsample(KEY, (7,)).shape == (7, 3)
    labels = np.asarray(D.Categorical(probs=np.array([0.1, 0.6, 0.3])).sample(KEY, (N,)))
    assert_close(np.bincount(labels, minlength=3) / N, [0.1, 0.6, 0.3], atol=0.01)
    draws = np.asarray(D.MultivariateNormal(np.array([1.0, -1.0]), np.array([[2.0, 0.6], [0.6, 1.0]])).sample(KEY, (N,)))
    assert_close(np.cov(draws.T), [[2.0, 0.6], [0.6, 1.0]], atol=0.06)


def test_rsample_differentiates_and_sample_does_not():
    loc = np.float64(0.3)
    assert_close(fg.grad(lambda m: D.Normal(m, 2.0).rsample(KEY, (100,)).mean())(loc), 1.0, rtol=1e-12)
    assert fg.grad(lambda m: D.Normal(m, 2.0).sample(KEY, (100,)).mean())(loc) == 0
    # d/da E[Gamma(a, rate)] = 1 / rate, through the implicit reparameterisation
    assert_close(fg.grad(lambda a: D.Gamma(a, 2.0).rsample(KEY, (N,)).mean())(np.float64(3.0)), 0.5, rtol=0.03)
    with pytest.raises(TypeError, match="no reparameterised sampler"):
        D.Bernoulli(probs=0.5).rsample(KEY)
    dist = D.Normal(np.zeros(2), np.ones(2))
    assert_close(fg.jit(lambda d, x: d.log_prob(x))(dist, np.ones(2)), [-0.5 - 0.5 * math.log(2 * math.pi)] * 2,
                 rtol=1e-6)


def test_kl_divergences_are_expectations_of_log_ratios():
    pairs = [(D.Normal(_f64(0.3)[0], _f64(1.2)[0]), D.Normal(_f64(-0.5)[0], _f64(2.0)[0])),
             (D.Exponential(_f64(1.5)[0]), D.Exponential(_f64(0.7)[0])),
             (D.Laplace(_f64(0.2)[0], _f64(1.0)[0]), D.Laplace(_f64(-0.4)[0], _f64(1.5)[0])),
             (D.Gamma(_f64(2.0)[0], _f64(1.0)[0]), D.Gamma(_f64(3.0)[0], _f64(2.0)[0])),
             (D.Beta(_f64(2.0)[0], _f64(3.0)[0]), D.Beta(_f64(1.5)[0], _f64(1.5)[0])),
             (D.Dirichlet(np.array([1.0, 2.0, 3.0])), D.Dirichlet(np.array([2.0, 2.0, 2.0]))),
             (D.Poisson(_f64(3.0)[0]), D.Poisson(_f64(5.0)[0])),
             (D.MultivariateNormal(np.zeros(2), np.array([[1.0, 0.3], [0.3, 2.0]])),
              D.MultivariateNormal(np.ones(2), np.eye(2) * 1.5))]
    for p, q in pairs:
        draws = p.sample(KEY, (N,))
        estimate = float(np.mean(np.asarray(p.log_prob(draws)) - np.asarray(q.log_prob(draws))))
        assert_close(D.kl_divergence(p, q), estimate, rtol=0.06, atol=0.01)
    bern_p, bern_q = D.Bernoulli(probs=_f64(0.3)[0]), D.Bernoulli(probs=_f64(0.6)[0])
    assert_close(D.kl_divergence(bern_p, bern_q), 0.3 * math.log(0.5) + 0.7 * math.log(0.7 / 0.4), rtol=1e-6)
    cat_p, cat_q = D.Categorical(probs=np.array([0.2, 0.8])), D.Categorical(probs=np.array([0.5, 0.5]))
    assert_close(D.kl_divergence(cat_p, cat_q), 0.2 * math.log(0.4) + 0.8 * math.log(1.6), rtol=1e-12)
    uniform = D.kl_divergence(D.Uniform(_f64(0.0)[0], _f64(1.0)[0]), D.Uniform(_f64(-1.0)[0], _f64(3.0)[0]))
    assert_close(uniform, math.log(4), rtol=1e-13)
    with pytest.raises(TypeError, match=r"no closed-form KL divergence is registered for Cauchy \|\| Normal"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))  # neither PyTorch nor funcgrad has this pair
    with pytest.raises(NotImplementedError):  # what PyTorch raises, and code falling back to samples catches
        D.kl_divergence(D.Weibull(1.0, 2.0), D.Weibull(1.5, 2.0))  # different transforms: no closed form


def test_kl_divergences_of_subclasses_and_transformed_families():
    """A rule serves its types' subclasses (Chi2 is a gamma, as PyTorch's), and one bijection applied to
    both sides leaves KL unchanged (LogNormal, InverseGamma, HalfCauchy, LogisticNormal)."""
    def by_quadrature(p, q, low, high):  # the integral of p log(p / q) over x = e^t, on a fine grid of t
        t = np.linspace(math.log(low), math.log(high), 400001)
        log_p, log_q = np.asarray(p.log_prob(np.exp(t))), np.asarray(q.log_prob(np.exp(t)))
        return float(np.sum(np.exp(log_p + t) * (log_p - log_q)) * (t[1] - t[0]))
    chi2, gamma = D.Chi2(_f64(3.0)[0]), D.Gamma(_f64(2.0)[0], _f64(0.8)[0])
    assert_close(D.kl_divergence(chi2, gamma), by_quadrature(chi2, gamma, 1e-12, 200), rtol=1e-5)
    assert_close(D.kl_divergence(gamma, D.Chi2(_f64(5.0)[0])), by_quadrature(gamma, D.Chi2(_f64(5.0)[0]), 1e-12, 200),
                 rtol=1e-5)
    normal = D.Normal(_f64(0.5)[0], _f64(2.0)[0])
    assert_close(D.kl_divergence(chi2, normal), by_quadrature(chi2, normal, 1e-12, 200), rtol=1e-5)
    (m1, s1), (m2, s2) = (0.3, 0.5), (-0.2, 0.9)
    assert_close(D.kl_divergence(D.LogNormal(_f64(m1)[0], _f64(s1)[0]), D.LogNormal(_f64(m2)[0], _f64(s2)[0])),
                 math.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5, rtol=1e-13)
    inverse_p, inverse_q = D.InverseGamma(_f64(3.0)[0], _f64(2.0)[0]), D.InverseGamma(_f64(2.0)[0], _f64(1.0)[0])
    assert_close(D.kl_divergence(inverse_p, inverse_q), by_quadrature(inverse_p, inverse_q, 1e-4, 1e9), rtol=1e-5)
    half_p, half_q = D.HalfCauchy(_f64(1.0)[0]), D.HalfCauchy(_f64(2.5)[0])
    assert_close(D.kl_divergence(half_p, half_q), math.log((1.0 + 2.5) ** 2 / (4 * 1.0 * 2.5)), rtol=1e-12)
    simplex_p = D.LogisticNormal(np.array([0.1, -0.3]), np.array([1.0, 0.5]))
    simplex_q = D.LogisticNormal(np.array([0.0, 0.2]), np.array([0.7, 0.9]))
    per_axis = np.log(np.array([0.7, 0.9]) / np.array([1.0, 0.5])) + (np.array([1.0, 0.5]) ** 2 + np.array(
        [0.1, -0.5]) ** 2) / (2 * np.array([0.7, 0.9]) ** 2) - 0.5
    assert_close(D.kl_divergence(simplex_p, simplex_q), per_axis.sum(), rtol=1e-12)  # one event: summed

    class Shifted(D.Normal):
        """A user's subclass takes its parent's rule."""
    assert_close(D.kl_divergence(Shifted(_f64(0.0)[0], _f64(1.0)[0]), D.Normal(_f64(1.0)[0], _f64(1.0)[0])), 0.5,
                 rtol=1e-13)


def test_validation_errors_name_what_was_wrong():
    with pytest.raises(ValueError, match="Normal: scale must be positive"):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match=r"outside the support \(Boolean\(\)\)"):
        D.Bernoulli(probs=0.3).log_prob(0.5)
    with pytest.raises(ValueError, match="exactly one of probs and logits"):
        D.Categorical()
    with pytest.raises(ValueError, match=r"outside the support \(IntegerInterval\(lower_bound=0, upper_bound=2\)\)"):
        D.Categorical(logits=np.zeros(3)).log_prob(3)
    with pytest.raises(ValueError, match="exactly one of covariance_matrix"):
        D.MultivariateNormal(np.zeros(2))
    assert np.isneginf(np.asarray(D.Uniform(0.0, 1.0, validate_args=False).log_prob(2.0)))
    # a Python number takes the parameters' precision (weak, as elsewhere): float64 here, exact
    value = D.Normal(np.float64(0.0), np.float64(1.0)).log_prob(0.3)
    assert value.dtype == np.float64
    assert_close(value, -0.5 * 0.3 ** 2 - 0.5 * math.log(2 * math.pi), rtol=1e-14, atol=0)


def test_the_other_families():
    x = np.array([0.3, 1.7, 4.0])
    cauchy = D.Cauchy(np.float64(0.5), np.float64(2.0))
    assert_close(cauchy.log_prob(x), -np.log(np.pi * 2.0 * (1 + ((x - 0.5) / 2.0) ** 2)), rtol=1e-13)
    assert_close(cauchy.icdf(cauchy.cdf(x)), x, rtol=1e-12)
    assert np.isnan(np.asarray(cauchy.mean)) and np.isinf(np.asarray(cauchy.variance))
    lognormal = D.LogNormal(np.float64(0.2), np.float64(0.7))
    assert_close(lognormal.log_prob(x), -np.log(x * 0.7 * math.sqrt(2 * math.pi)) - (np.log(x) - 0.2) ** 2 / 0.98,
                 rtol=1e-13)
    assert_close(lognormal.mean, math.exp(0.2 + 0.245), rtol=1e-13)
    half = D.HalfNormal(np.float64(1.5))
    assert_close(half.log_prob(x), np.log(2) - 0.5 * (x / 1.5) ** 2 - np.log(1.5 * math.sqrt(2 * math.pi)), rtol=1e-13)
    assert_close(half.icdf(half.cdf(x)), x, rtol=1e-10)
    student = D.StudentT(np.float64(5.0), np.float64(1.0), np.float64(2.0))
    y = (x - 1.0) / 2.0
    const = math.lgamma(3.0) - math.lgamma(2.5) - 0.5 * math.log(5 * math.pi) - math.log(2.0)
    assert_close(student.log_prob(x), const - 3.0 * np.log1p(y * y / 5), rtol=1e-13)
    assert_close([student.mean, student.variance], [1.0, 4.0 * 5 / 3], rtol=1e-13)
    assert np.isnan(np.asarray(D.StudentT(np.float64(0.8)).mean))
    chi2 = D.Chi2(np.float64(4.0))
    assert_close(chi2.log_prob(x), np.log(x / 4) - x / 2, rtol=1e-13)  # x e^(-x/2) / 4
    assert_close(chi2.sample(KEY, (N,)).mean(), 4.0, rtol=0.03)
    binom = D.Binomial(np.float64(6.0), probs=np.float64(0.3))
    k = np.arange(7.0)
    pmf = np.array([math.comb(6, int(j)) * 0.3 ** j * 0.7 ** (6 - j) for j in k])
    assert_close(binom.log_prob(k), np.log(pmf), rtol=1e-6)
    assert_close(binom.entropy(), -np.sum(pmf * np.log(pmf)), rtol=1e-6)
    assert_close(binom.sample(KEY, (N,)).mean(), 1.8, rtol=0.03)
    geom = D.Geometric(probs=np.float64(0.25))
    assert_close(geom.log_prob(np.array([0.0, 3.0])), [math.log(0.25), 3 * math.log(0.75) + math.log(0.25)], rtol=1e-6)
    assert_close([geom.mean, geom.variance], [3.0, 12.0], rtol=1e-6)
    assert_close(np.asarray(geom.sample(KEY, (N,))).mean(), 3.0, rtol=0.05)
    multi = D.Multinomial(10, probs=np.array([0.2, 0.3, 0.5]))
    want = math.log(math.factorial(10) / (2 * 6 * 120)) + 2 * math.log(0.2) + 3 * math.log(0.3) + 5 * math.log(0.5)
    assert_close(multi.log_prob(np.array([2.0, 3.0, 5.0])), want, rtol=1e-12)
    counts = np.asarray(multi.sample(KEY, (N,)))
    assert (counts.sum(-1) == 10).all() and np.allclose(counts.mean(0), [2, 3, 5], rtol=0.03)
    with pytest.raises(ValueError, match="counts summing to total_count"):
        multi.log_prob(np.array([2.0, 3.0, 4.0]))


def test_independent_and_mixtures():
    loc, scale = RNG.normal(size=(2, 3)), RNG.uniform(0.5, 2, (2, 3))
    diag = D.Independent(D.Normal(loc, scale), 1)
    assert diag.batch_shape == (2,) and diag.event_shape == (3,)
    x = RNG.normal(size=(5, 2, 3))
    full = D.MultivariateNormal(loc, np.stack([np.diag(s ** 2) for s in scale]))
    assert_close(diag.log_prob(x), full.log_prob(x), rtol=1e-12)  # a diagonal Normal is one event
    assert_close(diag.entropy(), full.entropy(), rtol=1e-12)
    other = D.Independent(D.Normal(loc[::-1], scale), 1)
    assert_close(D.kl_divergence(diag, other), np.asarray(D.kl_divergence(D.Normal(loc, scale),
                                                                         D.Normal(loc[::-1], scale))).sum(-1),
                 rtol=1e-12)
    logits, means, scales = RNG.normal(size=4), RNG.normal(size=4), RNG.uniform(0.5, 2, 4)
    mixture = D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(means, scales))
    w = np.exp(logits) / np.exp(logits).sum()
    y = np.linspace(-3, 3, 7)
    density = [sum(wk * math.exp(-0.5 * ((v - m) / s) ** 2) / (s * math.sqrt(2 * math.pi))
                   for wk, m, s in zip(w, means, scales)) for v in y]
    assert_close(mixture.log_prob(y), np.log(density), rtol=1e-12)
    assert_close(mixture.mean, np.sum(w * means), rtol=1e-12)
    assert_close(mixture.variance, np.sum(w * (scales ** 2 + means ** 2)) - np.sum(w * means) ** 2, rtol=1e-12)
    draws = np.asarray(mixture.sample(KEY, (N,)))
    assert_close([draws.mean(), draws.var()], [mixture.mean, mixture.variance], rtol=0.05, atol=0.02)
    with pytest.raises(ValueError, match="last batch axis must hold the mixture's 4 categories"):
        D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(np.zeros(3), 1.0))

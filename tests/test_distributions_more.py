"""The transformed and further families of funcgrad.distributions (Gumbel, HalfCauchy, Weibull,
Pareto, InverseGamma, Kumaraswamy, VonMises, FisherSnedecor, GeneralizedPareto, ContinuousBernoulli,
LowRankMultivariateNormal, NegativeBinomial, OneHotCategorical, the relaxed families, LogisticNormal,
TransformedDistribution and its transforms) and every family's mode: densities against their formulas,
normalisation, cdf, entropy and moments by quadrature on a fine grid, samples' moments, KL
divergences against Monte Carlo, reparameterised gradients against finite differences."""
import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import distributions as D
from funcgrad.distributions import transforms as T

from .helpers import assert_close

KEY = fg.random.key(0)
N = 40000
EULER = 0.5772156649015329
F = np.float64  # parameters in float64 (a Python float is float32, as in PyTorch)


def _grid(low, high, n=400001):
    return np.linspace(low, high, n)


def _integral(values, grid):
    return np.trapezoid(values, grid, axis=0)


UNIVARIATE = {  # a distribution, the interval holding (nearly) all its mass, the density written out
    "gumbel": (D.Gumbel(F(0.5), F(2.0)), (-12.0, 60.0),
               lambda x: np.exp(-(x - 0.5) / 2 - np.exp(-(x - 0.5) / 2)) / 2),
    "half_cauchy": (D.HalfCauchy(F(1.5)), (0.0, 1e5), lambda x: 2 / (math.pi * 1.5 * (1 + (x / 1.5) ** 2))),
    "weibull": (D.Weibull(F(2.0), F(1.5)), (0.0, 40.0),
                lambda x: 1.5 / 2.0 * (x / 2.0) ** 0.5 * np.exp(-(x / 2.0) ** 1.5)),
    "pareto": (D.Pareto(F(1.0), F(3.5)), (1.0, 2e3), lambda x: 3.5 / x ** 4.5),
    "inverse_gamma": (D.InverseGamma(F(3.5), F(2.0)), (1e-6, 2e3),
                      lambda x: 2.0 ** 3.5 / math.gamma(3.5) * x ** -4.5 * np.exp(-2.0 / x)),
    "kumaraswamy": (D.Kumaraswamy(F(2.0), F(3.0)), (0.0, 1.0), lambda x: 6 * x * (1 - x ** 2) ** 2),
    "von_mises": (D.VonMises(F(0.4), F(3.0)), (-math.pi, math.pi),
                  lambda x: np.exp(3.0 * np.cos(x - 0.4)) / (2 * math.pi * np.i0(3.0))),
    "fisher": (D.FisherSnedecor(F(6.0), F(9.0)), (1e-9, 4e3),
               lambda x: (math.gamma(7.5) / (math.gamma(3) * math.gamma(4.5)) * (6 / 9) ** 3 * x ** 2
                          * (1 + 6 / 9 * x) ** -7.5)),
    "gen_pareto_positive": (D.GeneralizedPareto(F(1.0), F(2.0), F(0.2)), (1.0, 1e6),
                            lambda x: (1 + 0.2 * (x - 1) / 2) ** (-1 / 0.2 - 1) / 2),
    "gen_pareto_negative": (D.GeneralizedPareto(F(1.0), F(2.0), F(-0.4)), (1.0, 6.0 - 1e-12),
                            lambda x: (1 - 0.4 * (x - 1) / 2) ** (1 / 0.4 - 1) / 2),
    "continuous_bernoulli": (D.ContinuousBernoulli(probs=F(0.2)), (0.0, 1.0),
                             lambda x: 2 * np.arctanh(0.6) / 0.6 * 0.2 ** x * 0.8 ** (1 - x)),
}


@pytest.mark.parametrize("name", sorted(UNIVARIATE))
def test_univariate_densities_cdfs_moments_and_entropies(name):
    dist, (low, high), density = UNIVARIATE[name]
    grid = _grid(low, high) if high < 1e3 else np.concatenate([_grid(low, low + 50, 400001), np.geomspace(
        low + 50.1, high, 200001)])
    inner = grid[1:-1]  # the ends may be singular (Pareto, the edge of a bounded support)
    with np.errstate(divide="ignore"):
        expected = np.log(density(inner))
    finite = np.isfinite(expected)  # where the written-out density underflows, log_prob still has a value
    assert finite.mean() > 0.99
    assert_close(dist.log_prob(inner[finite]), expected[finite], rtol=1e-10, atol=1e-12)
    p = np.exp(dist.log_prob(inner).numpy())
    assert abs(_integral(p, inner) - 1) < 2e-3
    probe = inner[len(inner) // 7]
    if hasattr(dist, "cdf"):
        below = inner <= probe
        assert_close(dist.cdf(probe), _integral(p[below], inner[below]), atol=2e-3)
    if hasattr(dist, "icdf") and name not in ("inverse_gamma", "fisher"):  # their bases have no icdf
        assert_close(dist.icdf(dist.cdf(probe)), probe, rtol=1e-8)
    if hasattr(dist, "entropy") and name not in ("half_cauchy", "pareto"):  # heavy tails: quadrature too slow
        assert_close(dist.entropy(), -_integral(p * np.log(np.maximum(p, 1e-300)), inner), atol=3e-3)
    if name not in ("half_cauchy", "von_mises"):  # no finite mean; a circular one
        samples = dist.sample(KEY, (N,)).numpy()
        mean, std = float(dist.mean), float(dist.stddev)
        if np.isfinite(std):
            assert abs(samples.mean() - mean) < 5 * std / math.sqrt(N)
            assert abs(samples.var() - std ** 2) < 0.1 * std ** 2


def test_modes_are_the_densities_maxima():
    """The mode of every family with one, against the argmax of its density on a grid (or of its
    pmf over counts), and PyTorch's NaN where the maximum is not one point."""
    continuous = [(D.Normal(0.3, 2.0), (-5, 5)), (D.Laplace(-0.2, 1.0), (-5, 5)), (D.Cauchy(1.0, 0.5), (-5, 5)),
                  (D.StudentT(3.0, 0.5, 2.0), (-5, 5)), (D.LogNormal(0.2, 0.5), (1e-3, 5)),
                  (D.Gamma(3.0, 2.0), (1e-3, 5)), (D.Chi2(5.0), (1e-3, 10)), (D.Beta(2.0, 5.0), (1e-3, 1 - 1e-3)),
                  (D.Gumbel(0.5, 2.0), (-5, 5)), (D.Weibull(2.0, 1.5), (1e-3, 5)),
                  (D.InverseGamma(3.5, 2.0), (1e-3, 5)),
                  (D.Kumaraswamy(2.0, 3.0), (1e-3, 1 - 1e-3)), (D.VonMises(0.4, 3.0), (-3, 3)),
                  (D.FisherSnedecor(6.0, 9.0), (1e-3, 5)), (D.HalfNormal(1.0), (0.0, 5)), (D.Exponential(2.0), (0, 5)),
                  (D.HalfCauchy(1.0), (0.0, 5)), (D.Pareto(1.0, 2.0), (1.0, 5)), (D.GeneralizedPareto(1.0, 2.0, 0.2),
                                                                                   (1.0, 5))]
    for dist, (low, high) in continuous:
        grid = _grid(low, high, 200001)
        assert_close(dist.mode, grid[np.argmax(dist.log_prob(grid).numpy())], atol=1e-4)
    for dist, top in [(D.Poisson(3.7), 20), (D.Binomial(10.0, probs=0.33), 10), (D.Geometric(probs=0.3), 20),
                      (D.NegativeBinomial(4.0, probs=0.6), 40)]:
        counts = np.arange(top + 1.0)
        assert float(dist.mode) == counts[np.argmax(dist.log_prob(counts).numpy())]
    assert np.isnan(float(D.Uniform(0.0, 1.0).mode)) and np.isnan(float(D.Bernoulli(probs=0.5).mode))
    assert float(D.Bernoulli(probs=0.7).mode) == 1.0 and float(D.Categorical(probs=np.array([0.2, 0.5, 0.3])).mode) == 1
    assert np.isnan(float(D.Kumaraswamy(0.5, 3.0).mode)) and np.isnan(float(D.FisherSnedecor(1.5, 9.0).mode))
    assert_close(D.Dirichlet(np.array([3.0, 2.0, 5.0])).mode, np.array([2.0, 1.0, 4.0]) / 7)
    assert_close(D.Dirichlet(np.array([0.5, 2.0, 3.0])).mode, np.array([0.0, 1.0, 2.0]) / 3)
    assert_close(D.Dirichlet(np.array([0.5, 0.2, 0.3])).mode, np.array([1.0, 0.0, 0.0]))  # all below 1: a corner
    assert_close(D.Beta(0.5, 0.7).mode, 1.0)
    assert np.isnan(np.asarray(D.Dirichlet(np.array([1.0, 1.0, 0.5])).mode)).all()  # none above 1, one at 1: no mode
    assert np.isnan(float(D.Beta(1.0, 1.0).mode))  # uniform (PyTorch: NaN; it was 0, and [0, 0] off the simplex)
    assert_close(D.OneHotCategorical(probs=np.array([0.2, 0.5, 0.3])).mode, np.array([0.0, 1.0, 0.0]))
    mvn = D.MultivariateNormal(np.array([1.0, 2.0]), np.eye(2))
    assert_close(D.Independent(D.Normal(np.array([1.0, 2.0]), 1.0), 1).mode, mvn.mode)


def test_discrete_families_are_their_formulas():
    n, p = 3.5, 0.4  # a non-integer count: the Gamma-Poisson mixture
    nb = D.NegativeBinomial(n, probs=p)
    k = np.arange(6.0)
    pmf = np.array([math.gamma(n + j) / (math.gamma(n) * math.factorial(int(j))) * (1 - p) ** n * p ** j for j in k])
    assert_close(nb.log_prob(k), np.log(pmf), rtol=1e-12)
    assert_close([nb.mean, nb.variance], [n * p / (1 - p), n * p / (1 - p) ** 2], rtol=1e-12)
    samples = nb.sample(KEY, (N,)).numpy()
    assert abs(samples.mean() - n * p / (1 - p)) < 5 * math.sqrt(n * p) / (1 - p) / math.sqrt(N)
    probs = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    one_hot = D.OneHotCategorical(probs=probs)
    assert one_hot.event_shape == (3,) and one_hot.batch_shape == (2,)
    assert_close(one_hot.log_prob(np.eye(3)[[1, 0]]), np.log([0.5, 0.6]), rtol=1e-12)
    draws = one_hot.sample(KEY, (N,)).numpy()
    assert set(np.unique(draws)) == {0.0, 1.0} and (draws.sum(-1) == 1).all()
    assert np.abs(draws.mean(0) - probs).max() < 0.01
    with pytest.raises(ValueError, match=r"support \(OneHot\(\)\)"):
        one_hot.log_prob(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    straight = D.OneHotCategoricalStraightThrough(probs=probs[0])
    grad = fg.grad(lambda q: fnp.sum(D.OneHotCategoricalStraightThrough(probs=q).rsample(KEY) * np.arange(3.0)))(
        probs[0])
    weights = np.arange(3.0)  # straight through: d(sample)/d(probs) is that of the normalised probs
    assert_close(grad, weights - weights @ probs[0], rtol=1e-12)
    assert straight.has_rsample
    multinomial = D.Multinomial(4, probs=probs[0])
    outcomes = [np.array([a, b, 4 - a - b], float) for a in range(5) for b in range(5 - a)]
    log_p = multinomial.log_prob(np.stack(outcomes)).numpy()
    assert_close(multinomial.entropy(), -np.sum(np.exp(log_p) * log_p), rtol=1e-12)  # the sum over the support


def test_continuous_bernoulli_near_one_half_and_its_normaliser():
    """Within lims of 1/2 the closed forms cancel: PyTorch's Taylor expansions take over and agree
    with the closed form just outside."""
    x = np.linspace(0, 1, 5)
    for p in (0.4995, 0.5005, 0.5015):  # two inside lims (Taylor), one outside (closed form)
        log_norm = math.log(2 * math.atanh(1 - 2 * p) / (1 - 2 * p))
        assert_close(D.ContinuousBernoulli(probs=F(p)).log_prob(x), x * math.log(p) + (1 - x) * math.log(1 - p)
                     + log_norm, rtol=1e-9, atol=1e-12)
    half = D.ContinuousBernoulli(probs=F(0.5))
    assert_close(half.log_prob(x), np.zeros(5), atol=1e-12)  # uniform
    assert_close([half.mean, half.variance], [0.5, 1 / 12], rtol=1e-12)
    dist = D.ContinuousBernoulli(logits=np.array([-2.0, 1.5]))
    u = np.array([[0.1, 0.7], [0.9, 0.2]])
    assert_close(dist.cdf(dist.icdf(u)), u, rtol=1e-10)


def test_low_rank_normal_equals_the_dense_normal():
    rng = np.random.default_rng(1)
    loc, factor, diag = rng.standard_normal((2, 4)), rng.standard_normal((4, 2)), rng.random(4) + 0.5
    low_rank = D.LowRankMultivariateNormal(loc, factor, diag)
    cov = factor @ factor.T + np.diag(diag)
    dense = D.MultivariateNormal(loc, cov)
    x = rng.standard_normal((3, 2, 4))
    assert_close(low_rank.log_prob(x), dense.log_prob(x), rtol=1e-12)
    assert_close(low_rank.entropy(), dense.entropy(), rtol=1e-12)
    assert_close(low_rank.covariance_matrix, np.broadcast_to(cov, (2, 4, 4)), rtol=1e-12)
    assert_close(low_rank.variance, np.broadcast_to(np.diag(cov), (2, 4)), rtol=1e-12)
    samples = low_rank.sample(KEY, (N,)).numpy()[:, 0]
    assert np.abs(np.cov(samples.T) - cov).max() < 0.12
    assert_close(D.kl_divergence(low_rank, dense), np.zeros(2), atol=1e-10)
    with pytest.raises(ValueError, match="cov_diag must be positive"):
        D.LowRankMultivariateNormal(loc, factor, -diag)
    with pytest.raises(ValueError, match="4 coordinates"):
        D.LowRankMultivariateNormal(loc, factor[:3], diag)


def test_relaxed_families_and_logistic_normal_are_changes_of_variables():
    temperature, p = 1.5, 0.3  # above 1 the density is bounded, so the grid integrates it
    relaxed = D.RelaxedBernoulli(F(temperature), probs=F(p))
    x = _grid(1e-9, 1 - 1e-9, 200001)
    log_density = relaxed.log_prob(x).numpy()
    assert abs(_integral(np.exp(log_density), x) - 1) < 1e-3
    a, t = p / (1 - p), temperature  # the binary Concrete density (Maddison et al.)
    formula = t * a * x ** (-t - 1) * (1 - x) ** (-t - 1) / (a * x ** -t + (1 - x) ** -t) ** 2
    assert_close(log_density, np.log(formula), rtol=1e-9, atol=1e-9)
    logits = np.array([0.2, -0.5, 1.0])
    concrete = D.RelaxedOneHotCategorical(F(0.5), logits=logits)
    y = np.array([0.2, 0.3, 0.5])
    k, t, probs = 3, 0.5, np.exp(logits) / np.exp(logits).sum()
    formula = (math.lgamma(k) + (k - 1) * math.log(t) + np.sum(np.log(probs) - (t + 1) * np.log(y))
               - k * np.log(np.sum(probs * y ** -t)))  # the Concrete density (Maddison et al.)
    assert_close(concrete.log_prob(y), formula, rtol=1e-10)
    draws = concrete.sample(KEY, (N,)).numpy()
    assert_close(draws.sum(-1), np.ones(N), rtol=1e-12)
    assert np.abs(draws.argmax(-1)[:, None] == np.arange(3)).mean(0).round(1).tolist() == np.round(probs, 1).tolist()
    loc, scale = np.array([0.1, -0.3]), np.array([0.5, 0.8])
    logistic = D.LogisticNormal(loc, scale)
    assert logistic.event_shape == (3,) and logistic.batch_shape == ()
    z = np.array([0.2, 0.5, 0.3])
    offsets = np.log([2.0, 1.0])
    stick = np.array([z[0], z[1] / (1 - z[0])])
    normal_x = np.log(stick) - np.log1p(-stick) + offsets
    jacobian = np.sum(np.log(stick * (1 - stick))) + np.log(1 - z[0])  # log |dy / dx|, triangular
    normal = np.sum(-0.5 * ((normal_x - loc) / scale) ** 2 - np.log(scale) - 0.5 * math.log(2 * math.pi))
    assert_close(logistic.log_prob(z), normal - jacobian, rtol=1e-10)


TRANSFORMS = [T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform(), T.SoftplusTransform(),
              T.AffineTransform(np.array([0.5, -1.0, 2.0]), np.array([2.0, -0.5, 3.0])), T.PowerTransform(2.5),
              T.ComposeTransform([T.AffineTransform(0.1, 0.7), T.TanhTransform()])]


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: type(t).__name__)
def test_transforms_invert_and_their_log_det_is_the_derivative(transform):
    x = np.array([0.3, 1.1, 2.0]) if isinstance(transform, T.PowerTransform) else np.array([-1.2, 0.3, 1.5])
    y = transform(x)
    assert_close(transform.inv(y), x, rtol=1e-10)
    assert_close(transform.inv.inv(x), y, rtol=1e-12)
    h = 1e-6
    slope = (transform(x + h).numpy() - transform(x - h).numpy()) / (2 * h)
    assert_close(transform.log_abs_det_jacobian(x, y), np.log(np.abs(slope)), atol=1e-7)
    assert_close(transform.inv.log_abs_det_jacobian(y, x), -np.log(np.abs(slope)), atol=1e-7)


def test_vector_transforms():
    x = np.array([[0.3, -0.2, 1.0], [0.0, 0.0, 0.0]])
    stick = T.StickBreakingTransform()
    y = stick(x)
    assert y.shape == (2, 4) and stick.forward_shape((2, 3)) == (2, 4)
    assert_close(y.numpy().sum(-1), np.ones(2), rtol=1e-12)
    assert_close(y[1], np.full(4, 0.25), rtol=1e-12)  # 0 maps to the simplex's centre
    assert_close(stick.inv(y), x, rtol=1e-10)
    jac = fg.jacfwd(lambda v: stick(v)[:3])(x[0]).numpy()
    assert_close(stick.log_abs_det_jacobian(x[0], y[0]), np.log(abs(np.linalg.det(jac))), rtol=1e-10)
    reshape = T.ReshapeTransform((6,), (2, 3))
    assert reshape(np.arange(12.0).reshape(2, 6)).shape == (2, 2, 3)
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((6,), (4,))
    independent = T.IndependentTransform(T.ExpTransform(), 1)
    assert_close(independent.log_abs_det_jacobian(x, independent(x)), x.sum(-1), rtol=1e-12)
    cholesky = T.LowerCholeskyTransform()
    m = np.array([[0.5, 9.0], [1.5, -0.2]])
    assert_close(cholesky(m), np.array([[math.exp(0.5), 0.0], [1.5, math.exp(-0.2)]]), rtol=1e-12)
    assert_close(T.SoftmaxTransform()(x[0]), np.exp(x[0]) / np.exp(x[0]).sum(), rtol=1e-12)
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)


def test_transformed_distribution_is_the_change_of_variables():
    loc, scale = np.array([0.5, -1.0, 2.0]), np.array([2.0, 0.5, 3.0])
    base = D.Normal(0.0, 1.0)  # broadcast by the transform: each element drawn independently
    affine = D.TransformedDistribution(base, T.AffineTransform(loc, scale))
    x = np.array([[0.1, 0.2, 0.3], [2.0, -1.0, 5.0]])
    assert affine.batch_shape == (3,) and affine.event_shape == ()
    assert_close(affine.log_prob(x), D.Normal(loc, scale).log_prob(x), rtol=1e-12)
    assert_close(affine.cdf(x), D.Normal(loc, scale).cdf(x), rtol=1e-12)
    draws = affine.sample(KEY, (N,)).numpy()
    assert np.abs(np.corrcoef(draws.T) - np.eye(3)).max() < 0.03 and np.abs(draws.mean(0) - loc).max() < 0.05
    squashed = D.TransformedDistribution(D.Normal(0.2, 0.7), [T.TanhTransform(), T.AffineTransform(1.0, -2.0)])
    y = np.array([-0.5, 1.0, 2.5])
    u = (y - 1.0) / -2.0
    expected = (-0.5 * ((np.arctanh(u) - 0.2) / 0.7) ** 2 - math.log(0.7) - 0.5 * math.log(2 * math.pi)
                - np.log(1 - u ** 2) - math.log(2.0))
    assert_close(squashed.log_prob(y), expected, rtol=1e-10)
    assert_close(squashed.cdf(y), 1 - D.Normal(0.2, 0.7).cdf(np.arctanh(u)).numpy(), rtol=1e-10)  # decreasing
    assert_close(squashed.icdf(squashed.cdf(y)), y, rtol=1e-9)
    assert D.TransformedDistribution(D.Normal(loc, scale), [T.StickBreakingTransform()]).event_shape == (4,)
    log_normal = D.TransformedDistribution(D.Normal(0.3, 0.5), T.ExpTransform())
    assert_close(log_normal.log_prob(np.array([0.5, 2.0])), D.LogNormal(0.3, 0.5).log_prob(np.array([0.5, 2.0])),
                 rtol=1e-12)
    with pytest.raises(TypeError, match="a Transform or a list"):
        D.TransformedDistribution(base, [np.exp])
    grads = fg.grad(lambda m: fnp.mean(D.TransformedDistribution(D.Normal(m, 1.0), T.ExpTransform()).rsample(
        KEY, (N,))))(np.float64(0.3))
    assert abs(float(grads) - math.exp(0.3 + 0.5)) < 0.05  # d/dm E[exp(X)] = E[exp(X)]


def test_kl_divergences_equal_monte_carlo():
    pairs = [(D.Gumbel(0.5, 2.0), D.Gumbel(-0.3, 1.2)), (D.Pareto(1.0, 3.0), D.Pareto(0.5, 2.0)),
             (D.HalfNormal(1.0), D.HalfNormal(2.0)), (D.Cauchy(0.0, 1.0), D.Cauchy(1.0, 2.0)),
             (D.Geometric(probs=0.3), D.Geometric(probs=0.6)), (D.Binomial(6.0, probs=0.3), D.Binomial(6.0, probs=0.5)),
             (D.OneHotCategorical(probs=np.array([0.2, 0.5, 0.3])),
              D.OneHotCategorical(probs=np.array([0.4, 0.4, 0.2]))),
             (D.ContinuousBernoulli(probs=0.2), D.ContinuousBernoulli(probs=0.7)),
             (D.TransformedDistribution(D.Normal(0.0, 1.0), T.ExpTransform()),
              D.TransformedDistribution(D.Normal(0.5, 2.0), T.ExpTransform()))]
    for p, q in pairs:
        x = p.sample(KEY, (4 * N,))
        log_ratio = p.log_prob(x).numpy() - q.log_prob(x).numpy()
        assert abs(float(D.kl_divergence(p, q)) - log_ratio.mean()) < 5 * log_ratio.std() / math.sqrt(4 * N) + 1e-9
    assert float(D.kl_divergence(D.Pareto(0.5, 3.0), D.Pareto(1.0, 2.0))) == math.inf  # p has mass below 1
    assert float(D.kl_divergence(D.Binomial(8.0, probs=0.3), D.Binomial(6.0, probs=0.5))) == math.inf
    with pytest.raises(ValueError, match="q.total_count above"):
        D.kl_divergence(D.Binomial(5.0, probs=0.3), D.Binomial(6.0, probs=0.5))


def test_reparameterised_draws_differentiate_and_families_trace():
    def mean_draw(params):
        concentration, scale = params
        return fnp.mean(D.Weibull(scale, concentration).rsample(KEY, (1000,)))
    params = (np.float64(1.5), np.float64(2.0))
    grads = fg.grad(mean_draw)(params)
    h = 1e-6
    for i in range(2):
        up, down = list(params), list(params)
        up[i], down[i] = up[i] + h, down[i] - h
        assert_close(grads[i], (float(mean_draw(tuple(up))) - float(mean_draw(tuple(down)))) / (2 * h), rtol=1e-6)
    log_prob = fg.jit(lambda loc, x: D.Gumbel(loc, 2.0).log_prob(x))
    assert_close(log_prob(np.float64(0.5), np.array([0.1, 3.0])), D.Gumbel(0.5, 2.0).log_prob(np.array([0.1, 3.0])))
    batched = fg.vmap(lambda k: D.VonMises(0.3, 2.0).log_prob(k))(np.array([0.1, 0.2]))
    assert batched.shape == (2,)
    angles = fg.jit(lambda k: D.VonMises(np.array([0.3, 3.0]), np.array([2.0, 50.0])).sample(k, (2000,)))(KEY)
    a = angles.numpy()
    assert (np.abs(a) <= math.pi).all()
    assert_close(np.arctan2(np.sin(a).mean(0), np.cos(a).mean(0)), [0.3, 3.0], atol=0.06)


def test_parameters_are_checked():
    for make, message in [(lambda: D.Gumbel(0.0, -1.0), "scale must be positive"),
                          (lambda: D.Weibull(1.0, 0.0), "positive"), (lambda: D.VonMises(0.0, -2.0), "concentration"),
                          (lambda: D.FisherSnedecor(-1.0, 2.0), "df1 must be positive"),
                          (lambda: D.NegativeBinomial(2.0, probs=1.0), r"\[0, 1\)"),
                          (lambda: D.Pareto(1.0, 2.0).log_prob(0.5), r"GreaterThanEq\(lower_bound=1.0\)")]:
        with pytest.raises(ValueError, match=message):
            make()
    with pytest.raises(TypeError, match="broadcast its parameters"):
        D.Dirichlet(np.ones(3)).expand((2,))
    assert D.Normal(0.0, 1.0).expand((2, 3)).batch_shape == (2, 3)

"""CorrCholeskyTransform, PositiveDefiniteTransform, CatTransform, StackTransform and LKJCholesky:
maps into their constraints that invert, Jacobians against finite differences, per-slice results
against the slices' own transforms, and the LKJ density's normalisation and moments."""
import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import distributions as D
from funcgrad.distributions import constraints as C

from .helpers import assert_close

RNG = np.random.default_rng(8)


def test_vec_to_tril_matrix_fills_rows_in_order_and_back():
    m = np.asarray(D.vec_to_tril_matrix(np.arange(1.0, 4.0), diag=-1))
    assert_close(m, [[0, 0, 0], [1, 0, 0], [2, 3, 0]])
    assert_close(D.tril_matrix_to_vec(m, diag=-1), [1.0, 2.0, 3.0])
    assert_close(D.vec_to_tril_matrix(np.arange(1.0, 7.0)), [[1, 0, 0], [2, 3, 0], [4, 5, 6]])
    with pytest.raises(ValueError, match="4 values"):
        D.vec_to_tril_matrix(np.ones(4), diag=-1)


def test_corr_cholesky_lands_on_unit_rows_inverts_and_its_jacobian_is_the_volume_change():
    t = D.CorrCholeskyTransform()
    x = RNG.standard_normal((4, 6))
    y = np.asarray(t(x))
    assert y.shape == (4, 4, 4) and np.all(np.asarray(C.corr_cholesky.check(fnp.asarray(y))))
    assert_close(t.inv(y), x, rtol=1e-9, atol=1e-9)
    # log |det| of the map from x to the strictly lower entries of y, by central differences
    x0 = x[0]
    jacobian = np.zeros((6, 6))
    for j in range(6):
        step = np.zeros(6)
        step[j] = 1e-6
        jacobian[:, j] = (np.asarray(D.tril_matrix_to_vec(t(x0 + step), -1))
                          - np.asarray(D.tril_matrix_to_vec(t(x0 - step), -1))) / 2e-6
    assert_close(t.log_abs_det_jacobian(x0, t(x0)), np.linalg.slogdet(jacobian)[1], rtol=1e-6)
    assert t.forward_shape((2, 10)) == (2, 5, 5) and t.inverse_shape((5, 5)) == (10,)
    with pytest.raises(ValueError, match="D \\(D - 1\\) / 2"):
        t.forward_shape((4,))


def test_positive_definite_transform_is_l_l_transposed():
    x = RNG.standard_normal((2, 3, 3))
    y = np.asarray(D.PositiveDefiniteTransform()(x))
    lower = np.tril(x, -1) + np.exp(np.diagonal(x, 0, -2, -1))[..., None] * np.eye(3)
    assert_close(y, lower @ np.swapaxes(lower, -1, -2), rtol=1e-12)
    assert np.all(np.asarray(C.positive_definite.check(fnp.asarray(y))))
    assert_close(D.PositiveDefiniteTransform().inv(y), np.tril(x, -1) + np.diagonal(x, 0, -2, -1)[..., None]
                 * np.eye(3), rtol=1e-10, atol=1e-12)
    assert isinstance(D.transform_to(C.positive_definite), D.PositiveDefiniteTransform)
    assert isinstance(D.transform_to(C.positive_semidefinite), D.PositiveDefiniteTransform)  # onto it too


def test_cat_and_stack_apply_each_transform_to_its_slice():
    x = RNG.standard_normal((2, 3))
    cat = D.CatTransform([D.ExpTransform(), D.SigmoidTransform()], dim=1, lengths=[2, 1])
    expected = np.concatenate([np.exp(x[:, :2]), 1 / (1 + np.exp(-x[:, 2:]))], axis=1)
    assert_close(cat(x), expected, rtol=1e-12)
    assert_close(cat.inv(expected), x, rtol=1e-10)
    assert_close(cat.log_abs_det_jacobian(x, expected),
                 np.concatenate([x[:, :2], np.log(expected[:, 2:] * (1 - expected[:, 2:]))], axis=1), rtol=1e-10)
    assert np.asarray(cat.codomain.check(fnp.asarray(expected))).all()
    stack = D.StackTransform([D.ExpTransform(), D.AffineTransform(1.0, 2.0)], dim=0)
    y = np.asarray(stack(x[:2]))
    assert_close(y, [np.exp(x[0]), 1 + 2 * x[1]], rtol=1e-12)
    assert_close(stack.inv(y), x[:2], rtol=1e-10)
    constraint = C.stack([C.positive, C.real], 0)
    assert np.asarray(constraint.check(fnp.asarray(y))).all()
    assert np.asarray(D.biject_to(constraint)(x[:2])).shape == (2, 3)
    with pytest.raises(ValueError, match="lengths"):
        cat(np.ones((2, 4)))


@pytest.mark.parametrize("eta", [1.0, 3.0])
def test_lkj_cholesky_density_integrates_to_one_in_two_dimensions(eta):
    r = np.linspace(-1, 1, 200001)[1:-1]
    L = np.zeros((len(r), 2, 2))
    L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1.0, r, np.sqrt(1 - r * r)
    density = np.exp(np.asarray(D.LKJCholesky(2, np.float64(eta)).log_prob(L)))
    assert abs(np.trapezoid(density, r) - 1) < 1e-4
    # the density of the correlation is (1 - r^2)^(eta - 1) / B(eta, eta) / 2^(2 eta - 1)
    beta = math.gamma(eta) ** 2 / math.gamma(2 * eta)
    assert_close(density, (1 - r * r) ** (eta - 1) / beta / 2 ** (2 * eta - 1), rtol=1e-9)


def test_lkj_cholesky_samples_are_correlation_factors_with_the_lkj_marginals():
    dim, eta, n = 3, 0.5, 20000
    samples = np.asarray(D.LKJCholesky(dim, eta).sample(fg.random.key(0), (n,)), np.float64)
    assert samples.shape == (n, dim, dim)
    assert np.all(np.asarray(C.corr_cholesky.check(fnp.asarray(samples, np.float32))))
    correlations = samples @ np.swapaxes(samples, -1, -2)
    # each correlation is 2 Beta(eta - 1 + dim / 2, same) - 1: uniform on (-1, 1) here, E r^2 = 1/3 (torch
    # 2.13's sampler gives 0.375 for the pairs of the last row)
    for i, j in [(1, 0), (2, 0), (2, 1)]:
        r = correlations[:, i, j]
        assert abs(r.mean()) < 4 * math.sqrt(1 / 3 / n)
        assert abs((r * r).mean() - 1 / 3) < 4 * math.sqrt((1 / 5 - 1 / 9) / n)
    expanded = D.LKJCholesky(dim, eta).expand((4,))
    assert expanded.batch_shape == (4,) and expanded.sample(fg.random.key(1)).shape == (4, dim, dim)
    with pytest.raises(ValueError, match="dim must be an integer of at least 2"):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match="concentration must be positive"):
        D.LKJCholesky(3, -1.0)


def _wishart_log_density(x, df, cov):
    p = cov.shape[-1]
    log_gamma_p = p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(df / 2 - i / 2) for i in range(p))
    return ((df - p - 1) / 2 * np.linalg.slogdet(x)[1] - np.trace(np.linalg.solve(cov, x), axis1=-2, axis2=-1) / 2
            - df * p / 2 * math.log(2) - df / 2 * np.linalg.slogdet(cov)[1] - log_gamma_p)


@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_density_moments_and_bartlett_samples(given):
    a = RNG.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    matrix = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov), "scale_tril": np.linalg.cholesky(cov)}
    dist = D.Wishart(np.float64(5.0), **{given: matrix[given]})
    assert_close(dist.covariance_matrix, cov, rtol=1e-10)
    x = np.asarray(dist.sample(fg.random.key(0), (20000,)))
    assert x.shape == (20000, 3, 3) and np.all(np.asarray(C.positive_definite.check(fnp.asarray(x[:50]))))
    assert_close(dist.log_prob(x[:5]), _wishart_log_density(x[:5], 5.0, cov), rtol=1e-10)
    assert_close(dist.mean, 5 * cov, rtol=1e-12)
    assert_close(dist.variance, 5 * (cov ** 2 + np.outer(np.diag(cov), np.diag(cov))), rtol=1e-12)
    assert_close(dist.mode, (5 - 3 - 1) * cov, rtol=1e-12)
    standard_error = np.sqrt(np.asarray(dist.variance) / len(x))
    assert np.all(np.abs(x.mean(0) - 5 * cov) < 5 * standard_error)
    log_p = np.asarray(dist.log_prob(x))
    assert abs(float(dist.entropy()) + log_p.mean()) < 5 * log_p.std() / math.sqrt(len(x))


def test_wishart_checks_df_and_differentiates_its_samples():
    with pytest.raises(ValueError, match="df must be greater than dim - 1 = 2"):
        D.Wishart(2.0, covariance_matrix=np.eye(3))
    with pytest.raises(ValueError, match="exactly one"):
        D.Wishart(4.0)
    # d/d sigma of a draw: the draw is L A A^T L^T, linear in the covariance for a 1 x 1 matrix
    draw = D.Wishart(4.0, covariance_matrix=np.array([[2.0]])).rsample(fg.random.key(3))
    grad = fg.grad(lambda c: fnp.sum(D.Wishart(4.0, covariance_matrix=c).rsample(fg.random.key(3))))(
        np.array([[2.0]]))
    assert_close(grad, np.asarray(draw) / 2.0, rtol=1e-6)

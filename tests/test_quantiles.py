"""fnp's quantiles (quantile, percentile, nanquantile, nanpercentile, median) against NumPy: every
method, weights, empty inputs and float64 q. (Moved from test_numpy_composed.py, which had passed 600
lines.)"""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf",
                                    "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
                                    "hazen", "weibull", "median_unbiased", "normal_unbiased"])
def test_every_numpy_quantile_method_agrees_with_numpy(method):
    """NumPy's thirteen methods (Hyndman and Fan's nine and four of its own), at every 1/40 for
    1 to 7 values, where the discontinuous ones jump, and ignoring NaN."""
    rng = np.random.default_rng(3)
    qs = np.linspace(0, 1, 41)
    for n in (1, 2, 3, 4, 7):
        x = rng.standard_normal(n)
        np.testing.assert_allclose(fnp.quantile(x, qs, method=method), np.quantile(x, qs, method=method),
                                   rtol=1e-12, atol=1e-12)
        with_nan = np.concatenate([x, [np.nan, np.nan]])
        np.testing.assert_allclose(fnp.nanquantile(with_nan, qs, method=method),
                                   np.nanquantile(with_nan, qs, method=method), rtol=1e-12, atol=1e-12)
    m = rng.standard_normal((3, 6))
    np.testing.assert_allclose(fnp.percentile(m, [10, 93], axis=1, method=method),
                               np.percentile(m, [10, 93], axis=1, method=method), rtol=1e-12, atol=1e-12)
    fg.check_grads(lambda v: fnp.quantile(v, [0.15, 0.6], axis=1, method=method), (m,), order=1)


def test_weighted_quantiles_agree_with_numpy():
    """NumPy 2's weights (inverted_cdf only): whole and 1-D weights, over an axis and all of them, q
    on the weights' steps (0.3 of ten equal weights: float64 shares, as NumPy compares), zero
    weights first and inside, NaN ignored by nanquantile; gradients reach the chosen values."""
    rng = np.random.default_rng(4)
    x = np.round(rng.standard_normal((3, 10)), 1)
    w = rng.integers(0, 4, (3, 10)).astype(float)
    w[:, 0] = 0.0
    qs = [0.0, 0.1, 0.3, 0.5, 0.7, 0.999, 1.0]
    for weights, axis in ((w, 1), (w, None), (w[0], 1), (w[:, 0] + 1.0, 0), (np.ones((3, 10)), 1)):
        for f, nf in ((fnp.quantile, np.quantile), (fnp.percentile, np.percentile)):
            q = qs if f is fnp.quantile else [100 * v for v in qs]
            np.testing.assert_array_equal(f(x, q, axis=axis, weights=weights, method="inverted_cdf", keepdims=True),
                                          nf(x, q, axis=axis, weights=weights, method="inverted_cdf", keepdims=True))
    with_nan = x.copy()
    with_nan[1, 3] = np.nan
    np.testing.assert_array_equal(fnp.nanquantile(with_nan, qs, axis=1, weights=w + 1, method="inverted_cdf"),
                                  np.nanquantile(with_nan, qs, axis=1, weights=w + 1, method="inverted_cdf"))
    grad = np.asarray(fg.grad(lambda v: fnp.sum(fnp.quantile(v, 0.5, axis=1, weights=w + 1, method="inverted_cdf")))(x))
    chosen = np.quantile(x, 0.5, axis=1, weights=w + 1, method="inverted_cdf")
    np.testing.assert_array_equal(grad.sum(1), [1, 1, 1])
    np.testing.assert_array_equal(x[grad == 1], chosen)
    for bad, message in ((dict(weights=w), "only method 'inverted_cdf'"),
                         (dict(weights=-w, method="inverted_cdf"), "non-negative and finite"),
                         (dict(weights=w * 0, method="inverted_cdf"), "all zero"),
                         (dict(weights=w[0, :3], method="inverted_cdf"), "weights of shape")):
        with pytest.raises((ValueError, fg.ShapeError), match=message):
            fnp.quantile(x, 0.5, axis=1, **bad)


def test_quantiles_of_nothing_are_nan():
    """NumPy's median of an empty array is nan (its quantile raises IndexError); jax.numpy gives nan."""
    assert np.isnan(float(fnp.median(fnp.zeros(0))))
    assert np.isnan(fnp.quantile(fnp.zeros((2, 0)), 0.5, axis=1).numpy()).all()
    assert fnp.quantile(fnp.zeros((2, 0)), [0.1, 0.5], axis=1, keepdims=True).shape == (2, 2, 1)
    assert np.isnan(float(fnp.nanmedian(fnp.zeros(0))))
    assert fnp.median(fnp.zeros((0, 3)), axis=0).shape == (3,)
    assert fnp.median(fnp.zeros((0, 3)), axis=-1).shape == (0,)  # no rows: no medians, not a reshape error
    assert fnp.nanquantile(fnp.zeros((2, 0, 3)), [0.2, 0.5], axis=2, keepdims=True).shape == (2, 2, 0, 1)


def test_quantiles_of_float64_take_q_in_float64():
    # q = 0.3 once went through float32 (0.30000001192...), moving float64 quantiles by ~1e-8
    x = RNG.standard_normal(101)
    for q in (0.3, [0.1, 0.77]):
        assert np.abs(np.asarray(fnp.quantile(x, q)) - np.quantile(x, q)).max() < 1e-15
        percent = np.multiply(q, 100)
        assert np.abs(np.asarray(fnp.percentile(x, percent)) - np.percentile(x, percent)).max() < 1e-15
    x[3] = np.nan
    assert np.abs(np.asarray(fnp.nanpercentile(x, 33.3)) - np.nanpercentile(x, 33.3)) < 1e-15

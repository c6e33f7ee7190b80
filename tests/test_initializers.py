"""jax.nn.initializers' builders: fans read from JAX's (..., in, out) kernels, the variance each
mode and distribution gives (moments of large draws), orthogonality; and jax.nn's log1mexp,
logmeanexp, sparse_sigmoid against their formulas."""
import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import nn
from funcgrad.nn import initializers as I

from .helpers import assert_close

KEY = fg.random.key(0)


@pytest.mark.parametrize("name, scale, mode, bounded", [
    ("glorot_uniform", 1.0, "avg", True), ("glorot_normal", 1.0, "avg", False), ("lecun_uniform", 1.0, "in", True),
    ("lecun_normal", 1.0, "in", False), ("he_uniform", 2.0, "in", True), ("he_normal", 2.0, "in", False)])
def test_variance_scaling_builders(name, scale, mode, bounded):
    shape = (3, 3, 64, 128)  # HWIO: fan_in 9 * 64, fan_out 9 * 128
    fan = {"in": 9 * 64, "avg": 9 * (64 + 128) / 2}[mode]
    w = np.asarray(getattr(I, name)()(KEY, shape, fg.float64))
    assert w.shape == shape and abs(w.std() / math.sqrt(scale / fan) - 1) < 0.01
    if bounded:
        assert np.abs(w).max() <= math.sqrt(3 * scale / fan)
    else:  # the normal truncated at 2 standard deviations, rescaled to the variance
        assert np.abs(w).max() <= 2 * math.sqrt(scale / fan) / 0.87962566103423978


def test_axes_modes_and_the_simple_builders():
    for mode, n in [("fan_in", 50), ("fan_out", 600), ("fan_avg", 325), ("fan_geo_avg", math.sqrt(50 * 600))]:
        w = np.asarray(I.variance_scaling(2.0, mode, "normal", in_axis=0, out_axis=(1, 2))(KEY, (50, 20, 30),
                                                                                             fg.float64))
        assert abs(w.std() / math.sqrt(2.0 / n) - 1) < 0.01, mode
    with pytest.raises(ValueError, match="invalid mode"):
        I.variance_scaling(1.0, "fan_sum", "normal")
    with pytest.raises(ValueError, match="rank >= 2"):
        I.lecun_normal()(KEY, (5,))
    u = np.asarray(I.uniform(0.5)(KEY, (10_000,)))
    assert 0 <= u.min() and u.max() < 0.5  # JAX's uniform: [0, scale)
    assert_close(I.constant(3.0)(KEY, (2, 2)), np.full((2, 2), 3.0))
    assert I.zeros(KEY, (2,)).dtype == np.float32 and np.asarray(I.ones(KEY, (2,), fg.float64)).sum() == 2
    t = np.asarray(I.truncated_normal(1.0, lower=-1.0, upper=1.0)(KEY, (10_000,)))
    assert np.abs(t).max() <= 1.0


def test_orthogonal_and_delta_orthogonal():
    q = np.asarray(I.orthogonal(2.0)(KEY, (4, 5, 6), fg.float64)).reshape(20, 6)
    assert_close(q.T @ q, 4 * np.eye(6), atol=1e-12)  # orthogonal columns, scaled by 2
    rows = np.asarray(I.orthogonal(column_axis=0)(KEY, (3, 8), fg.float64))
    assert_close(rows @ rows.T, np.eye(3), atol=1e-12)
    d = np.asarray(I.delta_orthogonal()(KEY, (3, 3, 4, 4), fg.float64))
    assert_close(d[1, 1].T @ d[1, 1], np.eye(4), atol=1e-12)
    assert np.abs(d).sum() == pytest.approx(np.abs(d[1, 1]).sum())  # zero away from the centre


def test_jax_nn_extras():
    x = np.array([1e-8, 0.5, 1.0, 50.0])
    assert_close(nn.log1mexp(x), [math.log(-math.expm1(-v)) for v in x], rtol=1e-14)
    a = np.array([[1.0, 2.0], [3.0, -np.inf]])
    assert_close(nn.logmeanexp(a, axis=1), np.log(np.exp(a).mean(1)), rtol=1e-14)
    assert_close(nn.logmeanexp(a, axis=1, where=np.array([[True, False], [True, True]])),
                 [1.0, np.log(np.exp(3.0) / 2)], rtol=1e-14)
    assert_close(nn.sparse_sigmoid(np.array([-2.0, -0.5, 0.5, 2.0])), [0.0, 0.25, 0.75, 1.0])
    assert_close(nn.identity(x), x)

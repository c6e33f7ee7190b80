"""nn.utils.weight_norm and spectral_norm: the wrapped layer computes with g v / |v| and with
W / sigma (a NumPy power iteration), gradients against finite differences, u and v as state
recorded in training mode (eagerly and under jit), PyTorch's state_dict names, and the removals."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn

from .helpers import assert_close

X = np.random.default_rng(4).standard_normal((3, 5))


def _linear(dtype=np.float64):
    return nn.Linear(5, 4, key=fg.random.key(0), dtype=dtype)


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_splits_length_and_direction(dim):
    layer = _linear()
    wrapped = nn.utils.weight_norm(layer, dim=dim)
    w = np.asarray(layer.weight)
    axes = None if dim in (None, -1) else tuple(i for i in range(2) if i != dim)  # -1: the whole tensor, as PyTorch
    assert_close(wrapped.weight_g, np.sqrt((w * w).sum(axis=axes, keepdims=axes is not None)))
    assert_close(wrapped(X), layer(X), rtol=1e-12)  # g starts as |v|: the same layer
    g = np.asarray(wrapped.weight_g) * 1.5
    moved = wrapped.replace(weight_g=fnp.asarray(g))
    v = np.asarray(wrapped.weight_v)
    assert_close(moved(X), X @ (g * v / np.sqrt((v * v).sum(axis=axes, keepdims=axes is not None))).T
                 + np.asarray(layer.bias), rtol=1e-12)
    assert [n for n, _ in wrapped.named_parameters(pytorch_names=True)] == ["bias", "weight_g", "weight_v"]


def test_weight_norm_gradients_match_finite_differences():
    wrapped = nn.utils.weight_norm(_linear())

    def loss(m):
        return fnp.sum(fnp.tanh(m(X)))
    grads = fg.grad(loss)(wrapped)
    for name in ("weight_g", "weight_v"):
        value = np.asarray(getattr(wrapped, name))
        numeric = np.zeros_like(value)
        for i in np.ndindex(value.shape):
            for sign in (1, -1):
                bumped = value.copy()
                bumped[i] += sign * 1e-6
                numeric[i] += sign * float(loss(wrapped.replace(**{name: fnp.asarray(bumped)}))) / 2e-6
        assert_close(getattr(grads, name), numeric, rtol=1e-6, atol=1e-8)
    # the direction's gradient is orthogonal to it, row by row (the length takes the radial part)
    assert_close(np.sum(np.asarray(grads.weight_v) * np.asarray(wrapped.weight_v), axis=1), np.zeros(4), atol=1e-12)


def _power_iteration(w_matrix, u, v, steps):
    for _ in range(steps):
        v = w_matrix.T @ u
        v = v / np.linalg.norm(v)
        u = w_matrix @ v
        u = u / np.linalg.norm(u)
    return u, v


@pytest.mark.parametrize("jit", [False, True])
def test_spectral_norm_divides_by_the_power_iterations_sigma_and_records_u_and_v(jit):
    layer = nn.Conv2d(2, 3, 3, key=fg.random.key(1), dtype=np.float64)
    wrapped = nn.utils.spectral_norm(layer, n_power_iterations=3, key=fg.random.key(2))
    x = np.random.default_rng(5).standard_normal((2, 2, 5, 5))
    w = np.asarray(wrapped.weight_orig)
    matrix = w.reshape(3, -1)
    u, v = _power_iteration(matrix, np.asarray(wrapped.weight_u), np.asarray(wrapped.weight_v), 3)
    sigma = u @ matrix @ v

    def train_step(m, x):
        with nn.collect_state(m) as state:
            y = m(x, key=fg.random.key(3))  # a key: training mode
        return y, state.updates()
    y, updates = (fg.jit(train_step) if jit else train_step)(wrapped, x)
    assert_close(y, layer.replace(weight=fnp.asarray(w / sigma))(x), rtol=1e-10)
    trained = nn.apply_state(wrapped, updates)
    assert_close(trained.weight_u, u, rtol=1e-10)
    assert_close(trained.weight_v, v, rtol=1e-10)
    # evaluation mode: the stored u and v, no iteration
    eval_sigma = np.asarray(trained.weight_u) @ matrix @ np.asarray(trained.weight_v)
    assert_close(trained(x), layer.replace(weight=fnp.asarray(w / eval_sigma))(x), rtol=1e-10)
    # many iterations converge to the largest singular value
    u_far, v_far = _power_iteration(matrix, u, v, 200)
    assert abs(np.linalg.svd(matrix, compute_uv=False)[0] - u_far @ matrix @ v_far) < 1e-8
    with pytest.raises(RuntimeError, match="collect_state"):
        wrapped(x, key=fg.random.key(3))  # training mode without a place for its new state


def test_spectral_norm_gradient_flows_through_sigma_not_u_and_v():
    wrapped = nn.utils.spectral_norm(_linear(), key=fg.random.key(4))

    def loss(m):
        with nn.collect_state(m):
            return fnp.sum(m(X, key=fg.random.key(0)) ** 2)
    grads = fg.grad(loss)(wrapped)
    assert_close(grads.weight_u, np.zeros(4))
    assert_close(grads.weight_v, np.zeros(5))
    w = np.asarray(wrapped.weight_orig)
    u, v = _power_iteration(w, np.asarray(wrapped.weight_u), np.asarray(wrapped.weight_v), 1)

    def reference(w):
        return np.sum((X @ (w / (u @ w @ v)).T + np.asarray(wrapped.module.bias)) ** 2)
    numeric = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        for sign in (1, -1):
            bumped = w.copy()
            bumped[i] += sign * 1e-6
            numeric[i] += sign * reference(bumped) / 2e-6
    assert_close(grads.weight_orig, numeric, rtol=1e-6, atol=1e-8)


def test_names_defaults_and_removal():
    conv_t = nn.ConvTranspose2d(2, 3, 3, key=fg.random.key(0))
    wrapped = nn.utils.spectral_norm(conv_t, key=fg.random.key(1))
    assert wrapped.dim == 1 and wrapped.weight_u.shape == (3,)  # transposed convolutions: their output axis
    assert [n for n, _ in wrapped.named_parameters(pytorch_names=True)] == ["bias", "weight_orig", "weight_u",
                                                                             "weight_v"]
    plain = nn.utils.remove_spectral_norm(wrapped)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    assert_close(plain(x), wrapped(x), rtol=1e-6)
    layer = _linear()
    assert_close(nn.utils.remove_weight_norm(nn.utils.weight_norm(layer)).weight, layer.weight, rtol=1e-12)
    assert nn.utils.parametrizations.weight_norm is nn.utils.weight_norm
    with pytest.raises(ValueError, match="no array parameter 'kernel'"):
        nn.utils.weight_norm(layer, name="kernel")
    with pytest.raises(ValueError, match="dim 2 is out of range"):
        nn.utils.weight_norm(layer, dim=2)
    with pytest.raises(ValueError, match="not a weight_norm wrapper"):
        nn.utils.remove_weight_norm(layer)

"""optim.losses (optax.losses) against NumPy written from each loss's definition, their masks (where),
axes and edge values, and gradients by finite differences. (In the benchmark venv the same 60 cases
equal optax 0.2's values and gradients within 1e-10.)"""
import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import optim

from .helpers import assert_close

RNG = np.random.default_rng(0)
P, T = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))


def _log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def test_regression_losses():
    e = P - T
    assert_close(optim.squared_error(P, T), e ** 2, rtol=1e-14)
    assert_close(optim.l2_loss(P), 0.5 * P ** 2, rtol=1e-14)
    delta = 0.3
    assert_close(optim.huber_loss(P, T, delta=delta),
                 np.where(np.abs(e) <= delta, 0.5 * e ** 2, delta * (np.abs(e) - 0.5 * delta)), rtol=1e-14)
    assert_close(optim.log_cosh(P, T), np.log(np.cosh(e)), rtol=1e-12)
    assert_close(optim.log_cosh(np.array([800.0])), [800 - math.log(2)], rtol=1e-15)  # cosh overflows
    cosine = (P * T).sum(-1) / np.linalg.norm(P, axis=-1) / np.linalg.norm(T, axis=-1)
    assert_close(optim.cosine_similarity(P, T), cosine, rtol=1e-13)
    assert_close(optim.cosine_distance(P, T), 1 - cosine, rtol=1e-13)
    mask = RNG.uniform(size=(4, 5)) > 0.3
    masked = [(P[i][mask[i]] @ T[i][mask[i]]) / np.linalg.norm(P[i][mask[i]]) / np.linalg.norm(T[i][mask[i]])
              for i in range(4)]
    assert_close(optim.cosine_similarity(P, T, where=mask), masked, rtol=1e-13)
    assert_close(optim.cosine_similarity(np.zeros((1, 3)), np.ones((1, 3)), epsilon=1e-12), [0.0], atol=0)
    with pytest.raises(fg.ShapeError, match=r"predictions \(4, 5\) and targets \(5,\) must have the same shape"):
        optim.squared_error(P, T[0])
    with pytest.raises(TypeError, match="predictions must be floating point, got int64"):
        optim.l2_loss(np.arange(3))


def test_cross_entropies_with_masks_axes_and_integer_labels():
    labels = RNG.dirichlet(np.ones(5), 4)
    assert_close(optim.softmax_cross_entropy(P, labels), -(labels * _log_softmax(P)).sum(-1), rtol=1e-13)
    assert_close(optim.softmax_cross_entropy(P, labels, axis=0), -(labels * _log_softmax(P, 0)).sum(0), rtol=1e-13)
    mask = RNG.uniform(size=(4, 5)) > 0.3
    mask[:, 0] = True
    expected = [-(labels[i][mask[i]] * _log_softmax(P[i][mask[i]])).sum() for i in range(4)]
    assert_close(optim.softmax_cross_entropy(P, labels, where=mask), expected, rtol=1e-13)
    classes = RNG.integers(0, 5, 4)
    nll = -_log_softmax(P)[np.arange(4), classes]
    assert_close(optim.softmax_cross_entropy_with_integer_labels(P, classes), nll, rtol=1e-13)
    mask[1] = False  # an all-masked row is 0
    expected = [0.0 if not mask[i].any() else np.log(np.exp(P[i][mask[i]]).sum()) - P[i, classes[i]] for i in range(4)]
    assert_close(optim.softmax_cross_entropy_with_integer_labels(P, classes, where=mask), expected, rtol=1e-13)
    cube, flat_classes = RNG.standard_normal((3, 4, 5)), RNG.integers(0, 20, 3)
    flat = cube.reshape(3, 20)
    assert_close(optim.softmax_cross_entropy_with_integer_labels(cube, flat_classes, axis=(1, 2)),
                 -_log_softmax(flat)[np.arange(3), flat_classes], rtol=1e-13)
    with pytest.raises(TypeError, match="labels must be integers, got float64"):
        optim.softmax_cross_entropy_with_integer_labels(P, labels)
    with pytest.raises(fg.ShapeError, match=r"labels of shape \(5,\) for logits of shape \(4, 5\)"):
        optim.softmax_cross_entropy_with_integer_labels(P, np.arange(5))
    logits = P.copy()
    logits[0, 1] = -np.inf
    zeroed = labels.copy()
    zeroed[0, 1] = 0.0
    safe = optim.safe_softmax_cross_entropy(logits, zeroed)
    assert np.isfinite(np.asarray(safe)).all()
    kept = np.arange(5) != 1
    assert_close(safe[0], -(zeroed[0][kept] * _log_softmax(P[0][kept])).sum(), rtol=1e-13)
    grad = fg.grad(lambda x: optim.safe_softmax_cross_entropy(x, zeroed).sum())(logits)
    assert np.isfinite(np.asarray(grad)).all()
    poly = optim.poly_loss_cross_entropy(P, labels, epsilon=0.5)
    assert_close(poly, -(labels * _log_softmax(P)).sum(-1) + 0.5 * (labels * (1 - np.exp(_log_softmax(P)))).sum(-1),
                 rtol=1e-13)
    fg.check_grads(lambda x: optim.softmax_cross_entropy_with_integer_labels(x, classes), (P,), order=1)


def test_binary_margin_and_divergence_losses():
    binary = RNG.integers(0, 2, (4, 5)).astype(float)
    p = 1 / (1 + np.exp(-P))
    bce = -(binary * np.log(p) + (1 - binary) * np.log(1 - p))
    assert_close(optim.sigmoid_binary_cross_entropy(P, binary), bce, rtol=1e-12)
    assert_close(optim.sigmoid_binary_cross_entropy(np.array([40.0]), np.array([0.0])), [40.0], rtol=1e-15)
    p_t = np.where(binary == 1, p, 1 - p)
    assert_close(optim.sigmoid_focal_loss(P, binary, alpha=0.25, gamma=2.0),
                 np.where(binary == 1, 0.25, 0.75) * (1 - p_t) ** 2 * bce, rtol=1e-11)
    signs = np.sign(T)
    assert_close(optim.hinge_loss(P, signs), np.maximum(0, 1 - P * signs), rtol=0)
    assert_close(optim.perceptron_loss(P, signs), np.maximum(0, -P * signs), rtol=0)
    classes = RNG.integers(0, 5, 4)
    own = P[np.arange(4), classes]
    assert_close(optim.multiclass_hinge_loss(P, classes), (P + 1 - np.eye(5)[classes]).max(-1) - own, rtol=1e-14)
    assert_close(optim.multiclass_perceptron_loss(P, classes), P.max(-1) - own, rtol=1e-14)
    targets = RNG.dirichlet(np.ones(5), 4)
    targets[0, 2] = 0.0  # 0 log 0 = 0
    log_q = _log_softmax(T)
    kl = (targets * (np.log(np.where(targets > 0, targets, 1)) - log_q)).sum(-1)
    assert_close(optim.kl_divergence(log_q, targets), kl, rtol=1e-13)
    assert_close(optim.kl_divergence_with_log_targets(log_q, _log_softmax(P)),
                 (np.exp(_log_softmax(P)) * (_log_softmax(P) - log_q)).sum(-1), rtol=1e-13)
    assert_close(optim.generalized_kl_divergence(log_q, 2 * targets),
                 (2 * targets * (np.log(np.where(targets > 0, 2 * targets, 1)) - log_q)).sum(-1)
                 + (np.exp(log_q) - 2 * targets).sum(-1), rtol=1e-13)
    assert_close(optim.smooth_labels(np.eye(5)[classes], 0.1), 0.9 * np.eye(5)[classes] + 0.02, rtol=1e-15)


def test_metric_learning_losses():
    a, p, n = RNG.standard_normal((3, 4, 6))
    distance = lambda x, y: (((x - y) ** 2).sum(-1) + 1e-6) ** 0.5  # noqa: E731
    assert_close(optim.triplet_margin_loss(a, p, n), np.maximum(distance(a, p) - distance(a, n) + 1.0, 0), rtol=1e-13)
    x, labels, tau = RNG.standard_normal((6, 3)), np.array([0, 0, 1, 1, 2, 2]), 0.5
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    s = unit @ unit.T / tau
    terms = []
    for i in range(6):
        for j in range(6):
            if i != j and labels[i] == labels[j]:
                negatives = np.exp(s[i][labels != labels[i]]).sum()
                terms.append(-(s[i, j] - np.log(negatives + np.exp(s[i, j]))))
    assert_close(optim.ntxent(x, labels, temperature=tau), np.mean(terms), rtol=1e-12)
    with pytest.raises(fg.ShapeError, match="found 5 for labels and 6 for embeddings"):
        optim.ntxent(x, labels[:5])

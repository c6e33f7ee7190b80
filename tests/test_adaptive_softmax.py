"""nn.AdaptiveLogSoftmaxWithLoss against a NumPy transcription of the two-level softmax: each
target's log-probability, the loss, the full log-probabilities (a distribution over the classes),
predict, gradients against finite differences, PyTorch's parameter names and the errors."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn

from .helpers import assert_close

X = np.random.default_rng(2).standard_normal((7, 8))
Y = np.array([0, 2, 3, 5, 6, 8, 9])


def _model(head_bias=False):
    return nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=head_bias, key=fg.random.key(1),
                                         dtype=np.float64)


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _reference_log_prob(m, x):
    head = x @ np.asarray(m.head.weight).T + (0 if m.head.bias is None else np.asarray(m.head.bias))
    head = _log_softmax(head)
    parts = [head[:, :3]]
    for i, tail in enumerate(m.tail.layers):
        hidden = x @ np.asarray(tail.layers[0].weight).T
        parts.append(head[:, 3 + i:4 + i] + _log_softmax(hidden @ np.asarray(tail.layers[1].weight).T))
    return np.concatenate(parts, axis=1)


@pytest.mark.parametrize("head_bias", [False, True])
def test_outputs_are_the_two_level_softmax(head_bias):
    m = _model(head_bias)
    full = _reference_log_prob(m, X)
    assert_close(m.log_prob(X), full, rtol=1e-12)
    assert_close(np.exp(full).sum(1), np.ones(7), rtol=1e-12)
    out = m(X, Y)
    assert_close(out.output, full[np.arange(7), Y], rtol=1e-12)
    assert_close(out.loss, -full[np.arange(7), Y].mean(), rtol=1e-12)
    assert_close(m.predict(X), full.argmax(1))
    single = m(X[0], Y[0])
    assert single.output.shape == () and abs(float(single.output) - full[0, Y[0]]) < 1e-12
    assert_close(fg.jit(lambda m, x, y: m(x, y).loss)(m, X, Y), out.loss, rtol=1e-12)


def test_gradients_match_finite_differences():
    m = _model()
    grads = fg.grad(lambda m: m(X, Y).loss)(m)
    w = np.asarray(m.tail.layers[1].layers[0].weight)
    numeric = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        for sign in (1, -1):
            bumped = w.copy()
            bumped[i] += sign * 1e-6
            tail = m.tail.layers[1].replace(layers=[m.tail.layers[1].layers[0].replace(weight=fnp.asarray(bumped)),
                                                    m.tail.layers[1].layers[1]])
            moved = m.replace(tail=m.tail.replace(layers=[m.tail.layers[0], tail]))
            numeric[i] += sign * float(moved(X, Y).loss) / 2e-6
    assert_close(grads.tail.layers[1].layers[0].weight, numeric, rtol=1e-6, atol=1e-9)


def test_names_and_errors():
    m = _model(head_bias=True)
    assert [n for n, _ in m.named_parameters(pytorch_names=True)] == [
        "head.weight", "head.bias", "tail.0.0.weight", "tail.0.1.weight", "tail.1.0.weight", "tail.1.1.weight"]
    assert m.tail.layers[0].layers[0].weight.shape == (4, 8) and m.tail.layers[1].layers[0].weight.shape == (2, 8)
    with pytest.raises(IndexError, match=r"should be in \[0, 9\]"):
        m(X, np.array([0, 1, 2, 3, 4, 5, 10]))
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3], key=fg.random.key(0))
    with pytest.raises(ValueError, match="same batch size"):
        m(X, Y[:3])

"""pick / unpick (each row's entry at its label, and the transpose) and the cross-entropy built
on them: values against NumPy, derivatives to second order against finite differences, errors,
jit, vmap and the CUDA implementation."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.ops import reductions as R
from funcgrad.trace import bind

from .helpers import assert_close

RNG = np.random.default_rng(0)


def pick(x, labels):
    return bind(R.pick_p, fnp.asarray(x), fnp.asarray(labels))


def unpick(g, labels, classes):
    return bind(R.unpick_p, fnp.asarray(g), fnp.asarray(labels), classes=classes)


def test_pick_and_unpick_match_numpy_on_any_leading_shape():
    x = RNG.standard_normal((2, 3, 5))
    labels = np.array([[4, 0, 2], [1, 1, 3]])
    want = np.take_along_axis(x, labels[..., None], -1)[..., 0]
    assert_close(pick(x, labels), want, rtol=0)
    g = RNG.standard_normal((2, 3))
    one_hot = np.zeros((2, 3, 5))
    for i in range(2):
        for j in range(3):
            one_hot[i, j, labels[i, j]] = g[i, j]
    assert_close(unpick(g, labels, 5), one_hot, rtol=0)
    assert_close(pick(x[0, 0], np.array(4)), x[0, 0, 4], rtol=0)  # one row: 0-d label
    assert pick(np.zeros((0, 5)), np.zeros(0, np.int64)).shape == (0,)
    half = x.astype(fg.bfloat16)  # a dtype numba has no type for goes through NumPy
    assert_close(pick(half, labels), want.astype(fg.bfloat16), rtol=0)
    assert_close(unpick(g.astype(np.float16), labels, 5), one_hot.astype(np.float16), rtol=0)


def test_pick_rejects_labels_out_of_range_or_of_the_wrong_shape():
    x = np.zeros((3, 4))
    with pytest.raises(IndexError, match=r"labels span \[0, 4\] for 4 classes"):
        pick(x, np.array([0, 4, 1]))
    with pytest.raises(IndexError, match=r"labels span \[-1, 1\]"):
        pick(x, np.array([0, -1, 1]))  # never a wrapped read
    with pytest.raises(ValueError, match=r"labels of shape \(2,\) do not match the leading axes \(3,\)"):
        pick(x, np.array([0, 1]))
    with pytest.raises(IndexError, match="label out of range"):
        fg.jit(lambda a, y: nn.cross_entropy(a, y))(np.zeros((2, 3), np.float32), np.array([0, 3]))


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_derivatives_to_second_order(smoothing):
    logits = RNG.standard_normal((4, 3))
    labels = np.array([2, 0, -100, 1])
    fg.check_grads(lambda z: nn.cross_entropy(z, labels, label_smoothing=smoothing), (logits,), order=2)
    fg.check_grads(lambda x: pick(x, labels[[0, 1, 3, 1]]) * 1.5, (logits,), order=2)
    grad = fg.grad(lambda z: nn.cross_entropy(z, labels))(logits)
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    want = p - np.eye(3)[np.where(labels < 0, 0, labels)]
    want[2] = 0  # the ignored example
    assert_close(grad, want / 3, rtol=1e-12)  # softmax - one_hot, over the 3 counted examples


def test_pick_under_jit_and_vmap_matches_a_loop():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    labels = RNG.integers(0, 5, (3, 4))
    want = np.stack([np.take_along_axis(x[i], labels[i][:, None], -1)[:, 0] for i in range(3)])
    assert_close(fg.vmap(pick)(x, labels), want, rtol=0)
    assert_close(fg.vmap(pick, in_axes=(0, None))(x, labels[0]),
                 np.stack([np.take_along_axis(x[i], labels[0][:, None], -1)[:, 0] for i in range(3)]), rtol=0)
    assert_close(fg.jit(pick)(x, labels), np.take_along_axis(x, labels[..., None], -1)[..., 0], rtol=0)
    g = RNG.standard_normal((3, 4)).astype(np.float32)
    assert_close(fg.vmap(lambda a, y: unpick(a, y, 5))(g, labels), np.asarray(unpick(g, labels, 5)), rtol=0)
    per_example = fg.vmap(fg.grad(lambda z, y: nn.cross_entropy(z[None], y[None])))(x[0], labels[0])
    looped = np.stack([np.asarray(fg.grad(lambda z: nn.cross_entropy(z[None], labels[0][i:i + 1]))(x[0, i]))
                       for i in range(4)])
    assert_close(per_example, looped, rtol=1e-6)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_pick_unpick_and_cross_entropy_gradient_on_the_device():
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    labels = np.array([2, 0, 1, 1, -100])
    cpu = fg.value_and_grad(lambda z: nn.cross_entropy(z, labels))(x)
    gx, glabels = fg.device_put(fg.asarray(x), "cuda"), fg.device_put(fg.asarray(labels), "cuda")
    value, grad = fg.value_and_grad(lambda z: nn.cross_entropy(z, glabels))(gx)
    assert grad.device == "cuda:0"
    assert_close(value.numpy(), cpu[0], rtol=1e-6)
    assert_close(grad.numpy(), cpu[1], rtol=1e-5, atol=1e-7)
    rows = fg.device_put(fg.asarray(np.array([0, 2, 1, 1, 0])), "cuda")
    assert_close(pick(gx, rows).numpy(), x[np.arange(5), [0, 2, 1, 1, 0]], rtol=0)

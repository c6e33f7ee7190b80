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


def _log_softmax(x, axis):
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 4), (5,)])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_class_weights_follow_pytorchs_formula(shape, smoothing):
    # PyTorch: loss_i = (1 - s) w[y_i] nll_i + s/C sum_c w_c nll_ic, 0 where y_i is ignored; the mean
    # divides by the counted labels' weights (a NumPy transcription, per example)
    classes = 5
    weight = RNG.uniform(0.1, 2.0, classes)
    logits = RNG.standard_normal(shape)
    labels = RNG.integers(0, classes, shape[:1] + shape[2:] if len(shape) > 1 else ())
    if labels.ndim:
        labels.flat[0] = -100
    axis = 1 if len(shape) > 1 else 0
    nll_all = -_log_softmax(logits, axis)  # per class
    safe = np.where(labels == -100, 0, labels)
    nll = np.squeeze(np.take_along_axis(nll_all, np.expand_dims(safe, axis), axis), axis)
    along_classes = weight.reshape((-1,) + (1,) * (len(shape) - 2)) if len(shape) > 1 else weight
    smooth = (nll_all * along_classes).mean(axis)
    per = np.where(labels == -100, 0.0, (1 - smoothing) * weight[safe] * nll + smoothing * smooth)
    counted = np.where(labels == -100, 0.0, weight[safe]).sum()
    for reduction, want in (("none", per), ("sum", per.sum()), ("mean", per.sum() / counted)):
        got = nn.cross_entropy(logits, labels, weight=weight, reduction=reduction, label_smoothing=smoothing)
        assert_close(got, want, rtol=1e-12)
        if not smoothing:
            log_probs = _log_softmax(logits, axis)
            assert_close(nn.nll_loss(log_probs, labels, weight, reduction=reduction), want, rtol=1e-12)
    criterion = nn.CrossEntropyLoss(weight, label_smoothing=smoothing)  # PyTorch's positional weight
    assert_close(criterion(logits, labels), per.sum() / counted, rtol=1e-12)
    fg.check_grads(lambda z: nn.cross_entropy(z, labels, weight=weight, label_smoothing=smoothing), (logits,), order=2)


def test_class_weights_with_class_probabilities_average_over_examples():
    logits, probs = RNG.standard_normal((4, 3)), RNG.dirichlet(np.ones(3), size=4)
    weight = np.array([0.5, 2.0, 1.0])
    smoothed = probs * 0.8 + 0.2 / 3
    per = -(smoothed * weight * _log_softmax(logits, 1)).sum(1)
    assert_close(nn.cross_entropy(logits, probs, weight=weight, label_smoothing=0.2), per.mean(), rtol=1e-12)
    assert_close(nn.cross_entropy(logits, probs, weight=weight, reduction="none"),
                 -(probs * weight * _log_softmax(logits, 1)).sum(1), rtol=1e-12)


def test_class_weights_under_jit_and_every_label_ignored():
    logits = RNG.standard_normal((4, 3)).astype(np.float32)
    labels, weight = np.array([2, 0, 1, 1]), np.array([0.5, 2.0, 1.0], np.float32)
    loss = lambda z, y: nn.cross_entropy(z, y, weight=weight)  # noqa: E731
    assert_close(fg.jit(loss)(logits, labels), loss(logits, labels), rtol=1e-6)
    assert_close(fg.jit(fg.grad(loss))(logits, labels), fg.grad(loss)(logits, labels), rtol=1e-6)
    assert np.isnan(float(loss(logits, np.full(4, -100))))  # 0 / 0, as PyTorch


def test_class_weights_refuse_a_wrong_shape_or_reduction_in_their_place():
    logits, labels = RNG.standard_normal((4, 3)), np.array([2, 0, 1, 1])
    with pytest.raises(fg.ShapeError, match=r"weight of shape \(4,\) must hold one weight per class, shape \(3,\)"):
        nn.cross_entropy(logits, labels, weight=np.ones(4))
    with pytest.raises(fg.ShapeError, match=r"nll_loss: weight of shape \(1, 3\)"):
        nn.nll_loss(logits, labels, weight=np.ones((1, 3)))
    with pytest.raises(TypeError, match=r"pass reduction by name \(reduction='sum'\)"):
        nn.cross_entropy(logits, labels, "sum")  # PyTorch's third argument is weight
    with pytest.raises(TypeError, match="CrossEntropyLoss: .*'wieght'"):
        nn.CrossEntropyLoss(wieght=np.ones(3))

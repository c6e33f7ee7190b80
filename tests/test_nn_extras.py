"""Activations, norms and losses beyond the basics, against NumPy transcriptions of PyTorch's formulas."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.nn import functional as F

from .helpers import assert_close

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6, 3)) * 3
P, Q = X.reshape(4, -1)[:, :5], X.reshape(4, -1)[:, 5:10]


def _softplus(v):
    return np.logaddexp(0, v)


ACTIVATIONS = {
    "leaky_relu": (lambda v: nn.leaky_relu(v, 0.2), lambda v: np.where(v >= 0, v, 0.2 * v)),
    "elu": (lambda v: nn.elu(v, 0.7), lambda v: np.where(v > 0, v, 0.7 * np.expm1(v))),
    "celu": (lambda v: nn.celu(v, 0.7), lambda v: np.where(v > 0, v, 0.7 * np.expm1(v / 0.7))),
    "selu": (nn.selu, lambda v: 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 * np.expm1(v))),
    "hardtanh": (lambda v: nn.hardtanh(v, -2, 1.5), lambda v: np.clip(v, -2, 1.5)),
    "relu6": (nn.relu6, lambda v: np.clip(v, 0, 6)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda v: np.clip(v + 3, 0, 6) / 6),
    "hard_swish": (nn.hard_swish, lambda v: v * np.clip(v + 3, 0, 6) / 6),
    "log_sigmoid": (lambda v: nn.log_sigmoid(v * 10), lambda v: -_softplus(-v * 10)),
    "mish": (nn.mish, lambda v: v * np.tanh(_softplus(v))),
    "softsign": (nn.softsign, lambda v: v / (1 + np.abs(v))),
    "normalize": (lambda v: nn.normalize(v, 1.0, axis=2), lambda v: v / np.maximum(np.abs(v).sum(2, keepdims=True), 1e-12)),
    "cosine_similarity": (lambda v: nn.cosine_similarity(v, v[::-1]),
                          lambda v: (v * v[::-1]).sum(1) / np.sqrt((v * v).sum(1) * (v[::-1] ** 2).sum(1))),
    "rms_norm": (lambda v: nn.rms_norm(v, (6, 3)),
                 lambda v: v / np.sqrt((v * v).mean(axis=(1, 2), keepdims=True) + np.finfo(np.float64).eps)),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_values_and_gradients(name):
    ours, reference = ACTIVATIONS[name]
    assert_close(ours(X), reference(X), rtol=1e-12, atol=1e-12)
    fg.check_grads(lambda v: ours(v), (X + 0.01,), order=1)  # off the kinks at 0


def test_group_norm_matches_the_definition():
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    grouped = X.reshape(4, 3, -1)
    expected = ((grouped - grouped.mean(2, keepdims=True)) / np.sqrt(grouped.var(2, keepdims=True) + 1e-5)).reshape(X.shape)
    assert_close(nn.group_norm(X, 3, w, b), expected * w[:, None] + b[:, None], rtol=1e-10)
    layer = nn.GroupNorm(3, 6)
    assert_close(layer(X), expected, rtol=1e-10)
    fg.check_grads(lambda v: nn.group_norm(v, 2, w, b), (X,), order=1)
    with pytest.raises(fg.ShapeError, match="4 groups do not divide"):
        nn.group_norm(X, 4)


def test_losses_match_pytorch_definitions():
    delta = 0.8
    d = np.abs(P - Q)
    assert_close(nn.huber_loss(P, Q, delta=delta), np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)).mean())
    assert_close(nn.smooth_l1_loss(P, Q, beta=0.5, reduction="sum"), np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25).sum())
    log_p = P - np.log(np.exp(P).sum(1, keepdims=True))
    target = np.exp(Q) / np.exp(Q).sum(1, keepdims=True)
    target[0, 0] = 0.0
    pointwise = np.where(target > 0, target * (np.log(np.where(target > 0, target, 1)) - log_p), 0)
    assert_close(nn.kl_div(log_p, target), pointwise.mean())
    assert_close(nn.kl_div(log_p, target, reduction="batchmean"), pointwise.sum() / 4)
    assert_close(nn.kl_div(log_p, np.log(target + 1e-3), log_target=True),
                 ((target + 1e-3) * (np.log(target + 1e-3) - log_p)).mean())
    probs = 1 / (1 + np.exp(-P))
    probs[0, 0] = 0.0
    y = (Q > 0).astype(np.float64)
    bce = -(y * np.maximum(np.log(np.where(probs > 0, probs, 1e-300)), -100) + (1 - y) * np.log1p(-probs))
    with np.errstate(divide="ignore"):
        assert_close(nn.binary_cross_entropy(probs, y, weight=np.abs(Q)), (bce * np.abs(Q)).mean())
    smoothed = target * 0.9 + 0.1 / 5
    assert_close(nn.cross_entropy(P, target, label_smoothing=0.1), -(smoothed * log_p).sum(1).mean())
    with pytest.raises(fg.ShapeError, match="must have the logits' shape"):
        nn.cross_entropy(P, target[:, :3])


def test_new_layers_compose():
    key = fg.random.key(0)
    model = nn.Sequential([nn.Linear(3, 8, key=key), nn.RMSNorm(8), nn.LeakyReLU(0.1), nn.Identity(), nn.ELU(),
                           nn.SiLU(), nn.Mish(), nn.Softplus(), nn.Linear(8, 2, key=key)])
    grads = fg.grad(lambda m: fg.numpy.sum(m(X[0]) ** 2))(model)
    assert len(fg.tree_leaves(grads)) == len(fg.tree_leaves(model)) == 5


def _conv1d_reference(x, w, b, stride, padding, dilation):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    k = w.shape[-1]
    length = (x.shape[-1] - dilation * (k - 1) - 1) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], length))
    for t in range(length):
        window = x[:, :, t * stride:t * stride + dilation * (k - 1) + 1:dilation]  # (N, C, k)
        out[:, :, t] = np.einsum("nck,ock->no", window, w)
    return out + b[None, :, None]


def test_conv1d_and_1d_pools_match_loops():
    x, w, b = RNG.standard_normal((2, 4, 11)), RNG.standard_normal((6, 4, 3)), RNG.standard_normal(6)
    for stride, padding, dilation in [(1, 0, 1), (2, 1, 1), (1, 2, 2)]:
        assert_close(nn.conv1d(x, w, b, stride, padding, dilation), _conv1d_reference(x, w, b, stride, padding, dilation),
                     rtol=1e-12)
    assert nn.conv1d(x, w, b, padding="same").shape == (2, 6, 11)
    fg.check_grads(lambda xx, ww: nn.conv1d(xx, ww, b, 2, 1), (x, w), order=1)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1)), constant_values=-np.inf)
    expected = np.stack([padded[:, :, t * 2:t * 2 + 3].max(-1) for t in range(6)], -1)
    assert_close(nn.max_pool1d(x, 3, 2, 1), expected)
    assert_close(nn.avg_pool1d(x, 2), x[:, :, :10].reshape(2, 4, 5, 2).mean(-1))
    layer = nn.Conv1d(4, 8, 3, padding=1, key=fg.random.key(0))
    assert layer(x.astype(np.float32)).shape == (2, 8, 11) and nn.MaxPool1d(2)(x).shape == (2, 4, 5)
    with pytest.raises(fg.ShapeError, match=r"\(N, C, L\)"):
        nn.conv1d(np.ones(5), w)


def test_module_introspection_and_functional_replace():
    key = fg.random.key(0)
    model = nn.Sequential([nn.Linear(2, 3, key=key), nn.relu, nn.Sequential([nn.Linear(3, 1, key=key)])])
    assert [name for name, _ in model.named_modules()] == ["", "layers.0", "layers.2", "layers.2.layers.0"]
    assert len(model.children()) == 2 and len(model.modules()) == 4
    first = model.layers[0]
    no_bias = first.replace(bias=None)
    assert no_bias.bias is None and first.bias is not None and no_bias.weight is first.weight
    assert len(fg.tree_leaves(no_bias)) == 1
    with pytest.raises(AttributeError, match="has no attributes \\['colour'\\]"):
        first.replace(colour=1)


def _conv_transpose_reference(x, w, stride, padding, output_padding, dilation=1):
    n, cin, h, wd = x.shape
    span = dilation * (w.shape[-1] - 1) + 1
    grown = (h - 1) * stride + span + output_padding, (wd - 1) * stride + span + output_padding
    full = np.zeros((n, w.shape[1]) + grown)
    for i in range(h):
        for j in range(wd):  # each input pixel scatters a weighted (dilated) kernel
            full[:, :, i * stride:i * stride + span:dilation, j * stride:j * stride + span:dilation] += \
                np.einsum("nc,cokl->nokl", x[:, :, i, j], w)
    return full[:, :, padding:full.shape[2] - padding, padding:full.shape[3] - padding]


def test_conv_transpose_adaptive_pool_and_interpolate():
    x = RNG.standard_normal((2, 3, 4, 5))
    w = RNG.standard_normal((3, 2, 3, 3))
    for stride, padding, extra in [(1, 0, 0), (2, 1, 1), (3, 0, 2)]:
        got = nn.conv_transpose2d(x, w, None, stride, padding, extra)
        expected = _conv_transpose_reference(x, w, stride, padding, extra)
        assert got.shape == expected.shape
        assert_close(got, expected, rtol=1e-10, atol=1e-12)
    fg.check_grads(lambda xx, ww: nn.conv_transpose2d(xx, ww, None, 2, 1), (x, w), order=1)
    # output_padding may reach the dilation, past the stride (PyTorch's rule): an internal shape error before
    assert_close(nn.conv_transpose2d(x, w, None, 1, 1, 1, 1, 2), _conv_transpose_reference(x, w, 1, 1, 1, 2))
    pooled = nn.adaptive_avg_pool2d(x, (2, 3))
    for i, (r0, r1) in enumerate([(0, 2), (2, 4)]):
        for j, (c0, c1) in enumerate([(0, 2), (1, 4), (3, 5)]):
            assert_close(pooled[:, :, i, j], x[:, :, r0:r1, c0:c1].mean(axis=(2, 3)))
    kept_rows = nn.adaptive_avg_pool2d(x, (None, 3))  # None keeps that side, as PyTorch
    assert kept_rows.shape[2:] == (x.shape[2], 3)
    assert_close(kept_rows, nn.adaptive_avg_pool2d(x, (x.shape[2], 3)))
    with pytest.raises(ValueError, match="output_size"):
        nn.adaptive_avg_pool2d(x, (1, 2, 3))
    assert_close(nn.interpolate(x, scale_factor=2), x.repeat(2, axis=2).repeat(2, axis=3))
    small = RNG.standard_normal((1, 1, 2, 2))
    up = np.asarray(nn.interpolate(small, size=(3, 3), mode="bilinear", align_corners=True))
    assert_close(up[0, 0, 1, 1], small.mean())
    assert_close(up[0, 0, 0, 2], small[0, 0, 0, 1])
    fg.check_grads(lambda v: nn.interpolate(v, size=(5, 7), mode="bilinear"), (x,), order=1)
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        nn.interpolate(x)


def test_regression_losses_take_pytorchs_elementwise_weight():
    """torch 2's weight= of mse_loss and l1_loss: a weighted mean divides by the weights' sum; its
    huber_loss divides the weighted sum by the element count instead, and so does this one."""
    x, y, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), RNG.uniform(0, 2, (3, 4))
    d = np.abs(x - y)
    elements = {"mse_loss": d ** 2, "l1_loss": d, "huber_loss": np.where(d < 1, 0.5 * d * d, d - 0.5)}
    for name, loss in elements.items():
        f = getattr(nn.functional, name)
        assert_close(f(x, y, reduction="none", weight=w), loss * w)
        assert_close(f(x, y, reduction="sum", weight=w), (loss * w).sum())
        mean = (loss * w).sum() / (w.size if name == "huber_loss" else w.sum())
        assert_close(f(x, y, weight=w), mean)
        fg.check_grads(lambda v: f(v, y, weight=w), (x,), order=1)
    with pytest.raises(fg.ShapeError, match="does not broadcast"):
        nn.functional.mse_loss(x, y, weight=np.ones((3, 5)))


def test_loss_objects_call_their_functions_with_their_options():
    labels = np.array([0, 2, 1, 4])
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1, reduction="sum")
    assert_close(criterion(P, labels), nn.cross_entropy(P, labels, label_smoothing=0.1, reduction="sum"))
    assert_close(nn.MSELoss()(P, Q), ((P - Q) ** 2).mean())
    assert_close(nn.HuberLoss(delta=0.5)(P, Q), nn.huber_loss(P, Q, delta=0.5))
    assert_close(nn.BCEWithLogitsLoss(pos_weight=2.0)(P, Q > 0), nn.binary_cross_entropy_with_logits(P, Q > 0, pos_weight=2.0))
    assert "label_smoothing=0.1" in repr(criterion)


@pytest.mark.parametrize("stride, dilation", [((1, 1), (1, 1)), ((2, 1), (1, 2)), ((2, 2), (2, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_col2im_adds_every_window_back(stride, dilation, dtype):
    # the numba kernel (float32/64) and the NumPy slices (other dtypes) against a plain loop
    from funcgrad.ops import conv
    kh, kw, h, w = 3, 2, 9, 8
    ho, wo = conv.output_size(h, kh, stride[0], dilation[0]), conv.output_size(w, kw, stride[1], dilation[1])
    cols = RNG.standard_normal((2, 3, ho, wo, kh, kw)).astype(dtype)
    want = np.zeros((2, 3, h, w))
    for y in range(ho):
        for x in range(wo):
            for i in range(kh):
                for j in range(kw):
                    want[:, :, y * stride[0] + i * dilation[0], x * stride[1] + j * dilation[1]] += cols[:, :, y, x, i, j]
    got = conv._col2im_impl(cols, (2, 3, h, w), (kh, kw), stride, dilation)
    assert got.dtype == dtype
    assert_close(got, want, rtol=1e-3 if dtype == np.float16 else 1e-6, atol=1e-2 if dtype == np.float16 else 1e-6)
    transposed = np.ascontiguousarray(cols.transpose(0, 2, 3, 1, 4, 5)).transpose(0, 3, 1, 2, 4, 5)  # strided input
    assert_close(conv._col2im_impl(transposed, (2, 3, h, w), (kh, kw), stride, dilation), got, rtol=0, atol=0)
    # the layout an einsum over the channels leaves: window offsets outside the batch in memory
    offsets_outside = np.ascontiguousarray(cols.transpose(1, 4, 5, 0, 2, 3)).transpose(3, 0, 4, 5, 1, 2)
    assert_close(conv._col2im_impl(offsets_outside, (2, 3, h, w), (kh, kw), stride, dilation), got, rtol=0, atol=0)


def test_top_k_matches_numpy_and_is_differentiable():
    x = np.array([[3.0, 1.0, 3.0, 2.0], [0.0, 5.0, 4.0, 5.0]])
    values, indices = fg.lax.top_k(fnp.asarray(x), 3)
    assert indices.tolist() == [[0, 2, 3], [1, 3, 2]]  # largest first, equal values in index order
    assert values.tolist() == [[3.0, 3.0, 2.0], [5.0, 5.0, 4.0]]
    g = fg.grad(lambda v: fnp.sum(fg.lax.top_k(v, 2)[0] * fnp.asarray([1.0, 2.0])))(fnp.asarray(x[0]))
    assert g.tolist() == [1.0, 0.0, 2.0, 0.0]
    with pytest.raises(ValueError, match="k = 5"):
        fg.lax.top_k(fnp.asarray(x), 5)


def test_load_state_dict_whose_result_is_dropped_raises():
    model = nn.MLP(2, [3], 1, key=fg.random.key(0))
    state = {k: v * 0 for k, v in model.state_dict().items()}
    with pytest.raises(TypeError, match=r"model = model.load_state_dict"):
        model.load_state_dict(state)
    loaded = model.load_state_dict(state)
    assert float(fnp.sum(fnp.abs(loaded.linears[0].weight))) == 0.0


def test_binary_cross_entropy_weights_broadcast_to_the_input_and_no_further():
    y = (Q > 0).astype(np.float64)
    log_sig, log_not = -_softplus(-P), -_softplus(P)
    per = -(y * log_sig + (1 - y) * log_not)
    for weight in (np.abs(Q), np.abs(Q[0]), 2.5):  # per element, per class, one number
        assert_close(nn.binary_cross_entropy_with_logits(P, y, weight), (per * weight).mean())
        assert_close(nn.BCEWithLogitsLoss(weight, reduction="sum")(P, y), (per * weight).sum())
    pos = np.abs(Q[1]) + 0.5
    assert_close(nn.binary_cross_entropy_with_logits(P, y, np.abs(Q), pos_weight=pos, reduction="none"),
                 -(pos * y * log_sig + (1 - y) * log_not) * np.abs(Q))
    with pytest.raises(fg.ShapeError, match=r"weight of shape \(4, 1, 5\) does not broadcast to the input's shape "
                                            r"\(4, 5\)"):
        nn.binary_cross_entropy_with_logits(P, y, np.ones((4, 1, 5)))  # would average a (4, 4, 5) broadcast
    with pytest.raises(fg.ShapeError, match=r"pos_weight of shape \(3,\)"):
        nn.binary_cross_entropy_with_logits(P, y, pos_weight=np.ones(3))
    with pytest.raises(fg.ShapeError, match=r"binary_cross_entropy: weight of shape \(2, 4, 5\)"):
        nn.binary_cross_entropy(1 / (1 + np.exp(-P)), y, np.ones((2, 4, 5)))
    with pytest.raises(TypeError, match="pass reduction by name"):
        nn.binary_cross_entropy_with_logits(P, y, "sum")


def test_pad_reads_widths_from_the_last_axis_as_pytorch():
    x = RNG.standard_normal((2, 3, 4, 5))
    numpy_modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    for mode, np_mode in numpy_modes.items():
        want = np.pad(x, ((0, 0), (0, 0), (3, 0), (1, 2)), mode=np_mode)  # (1, 2) is the last axis's
        assert_close(nn.functional.pad(x, (1, 2, 3, 0), mode), want)
        fg.check_grads(lambda v: nn.functional.pad(v, (1, 2, 3, 0), mode), (x,), order=1)
    assert_close(nn.functional.pad(x, (1, 1), value=-2.0), np.pad(x, ((0, 0),) * 3 + ((1, 1),), constant_values=-2.0))
    assert_close(nn.functional.pad(x, (-1, 2, 0, -2)), np.pad(x[:, :, :2, 1:], ((0, 0),) * 3 + ((0, 2),)))  # crops
    with pytest.raises(ValueError, match=r"reflect widths \(5, 0\) of axis 3 must be below its size 5"):
        nn.functional.pad(x, (5, 0), "reflect")
    with pytest.raises(ValueError, match="3 widths do not pair up"):
        nn.functional.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="mode must be one of"):
        nn.functional.pad(x, (1, 1), "edge")
    assert nn.functional.pad(x, (-5, 0)).shape == (2, 3, 4, 0)  # cropping everything leaves an empty axis
    with pytest.raises(ValueError, match=r"widths \(-4, -2\) crop more than the 5 entries of axis 3"):
        nn.functional.pad(x, (-4, -2))  # PyTorch raises too; it gave an empty axis


def test_negative_pad_widths_crop_in_every_mode_in_pytorchs_order():
    """PyTorch crops then wraps (circular), but reflects and replicates the whole axis, then crops:
    reflecting 11 entries of a 12-entry axis whose last one is cropped reaches that last one."""
    x = RNG.standard_normal((2, 3, 5, 12))
    axis = ((0, 0),) * 2
    cases = {  # (widths, mode): NumPy's padding of the right slice, or of the whole axis then sliced
        ((-1, 2, 2, -1), "circular"): np.pad(x[:, :, :4, 1:], axis + ((2, 0), (0, 2)), mode="wrap"),
        ((3, -2), "circular"): np.pad(x[..., :10], axis + ((0, 0), (3, 0)), mode="wrap"),
        ((11, -1), "reflect"): np.pad(x, axis + ((0, 0), (11, 0)), mode="reflect")[..., :-1],
        ((-1, 2, 2, -1), "reflect"): np.pad(x, axis + ((2, 0), (0, 2)), mode="reflect")[:, :, :-1, 1:],
        ((-2, 3), "replicate"): np.pad(x, axis + ((0, 0), (0, 3)), mode="edge")[..., 2:],
    }
    for (widths, mode), want in cases.items():
        assert_close(nn.functional.pad(x, widths, mode), want)
        fg.check_grads(lambda v: nn.functional.pad(v, widths, mode), (x,), order=1)
    assert_close(nn.CircularPad1d((-1, 2))(x[0]), np.pad(x[0, :, :, 1:], ((0, 0), (0, 0), (0, 2)), mode="wrap"))
    with pytest.raises(ValueError, match=r"circular widths \(-3, 10\) of axis 3 must be at most its size 9 after "
                                         r"cropping \(of 12\)"):
        nn.functional.pad(x, (-3, 10), "circular")


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes_convolve_the_padded_input(mode):
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    x = RNG.standard_normal((2, 3, 6, 7))
    conv = nn.Conv2d(3, 4, 3, padding=(2, 1), dilation=(2, 1), padding_mode=mode, key=fg.random.key(0),
                     dtype=np.float64)
    want = nn.conv2d(np.pad(x, ((0, 0), (0, 0), (2, 2), (1, 1)), mode=np_mode), conv.weight, conv.bias, dilation=(2, 1))
    assert_close(conv(x), want)
    same = nn.Conv2d(3, 4, (2, 3), padding="same", padding_mode=mode, key=fg.random.key(0), dtype=np.float64)
    assert_close(same(x), nn.conv2d(np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 1)), mode=np_mode), same.weight, same.bias))
    line = nn.Conv1d(3, 4, 3, padding=2, padding_mode=mode, key=fg.random.key(1), dtype=np.float64)
    assert_close(line(x[:, :, 0]), nn.conv1d(np.pad(x[:, :, 0], ((0, 0), (0, 0), (2, 2)), mode=np_mode), line.weight,
                                             line.bias))
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="same", key=fg.random.key(0))


def test_gelu_takes_pytorchs_approximate_names_and_refuses_others():
    x = RNG.standard_normal(5)
    assert_close(nn.gelu(x, approximate="none"), nn.gelu(x))
    assert_close(nn.gelu(x, approximate="tanh"), nn.gelu(x, approximate=True))
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        nn.gelu(x, approximate="exact")  # was the tanh formula, silently


KINKS = np.array([-3.0, -1.0, 0.0, 1.0, 3.0, 6.0])
SLOPES_AT_KINKS = {  # PyTorch's backward formulas (aten's *_backward) at the kinks themselves
    "leaky_relu": (lambda v: nn.leaky_relu(v, 0.2), [0.2, 0.2, 0.2, 1, 1, 1]),  # x > 0 ? 1 : slope
    "elu": (lambda v: nn.elu(v, 2.0), [2 * np.exp(-3), 2 * np.exp(-1), 2.0, 1, 1, 1]),  # x <= 0: alpha e^x
    "celu": (lambda v: nn.celu(v, 2.0), [np.exp(-1.5), np.exp(-0.5), 1.0, 1, 1, 1]),
    "hardtanh": (nn.hardtanh, [0, 0, 1, 0, 0, 0]),  # min < x < max ? 1 : 0
    "relu6": (nn.relu6, [0, 0, 0, 1, 1, 0]),
    "hardsigmoid": (nn.hardsigmoid, [0, 1 / 6, 1 / 6, 1 / 6, 0, 0]),  # -3 < x < 3 ? 1/6 : 0
    "hardswish": (nn.hardswish, [0, 1 / 6, 0.5, 5 / 6, 1, 1]),  # x <= -3: 0, x < 3: x/3 + 1/2, else 1
}


@pytest.mark.parametrize("name", sorted(SLOPES_AT_KINKS))
def test_slopes_at_kinks_are_pytorchs(name):
    fn, want = SLOPES_AT_KINKS[name]
    assert_close(fg.grad(lambda v: fnp.sum(fn(v)))(KINKS), want)
    assert_close(fg.jit(fg.grad(lambda v: fnp.sum(fn(v))))(KINKS), want)


def test_cosine_similarity_clamps_each_norm_alone():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    cosine = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    assert_close(nn.cosine_similarity(a * 1e-5, b * 1e-5), cosine)  # norms' product 1e-10 < eps, each norm not
    zero = np.zeros((1, 4))
    assert_close(nn.cosine_similarity(zero, b[:1]), [0.0])
    fg.check_grads(lambda u: nn.cosine_similarity(u, b), (a,), order=2)


def _attention_reference(q, k, v, allowed=None, bias=None):
    """softmax(q k^T / sqrt(H) + bias) v over JAX's (B, T, N, H) layout, key heads repeated."""
    group = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, group, axis=2), np.repeat(v, group, axis=2)
    scores = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    top = np.max(scores, -1, keepdims=True)
    weights = np.exp(scores - np.where(np.isfinite(top), top, 0))
    total = weights.sum(-1, keepdims=True)
    weights = np.where(total > 0, weights / np.where(total > 0, total, 1), 0)
    return np.einsum("bnts,bsnh->btnh", weights, v)


def test_jax_dot_product_attention():
    rng = np.random.default_rng(0)
    b, t, s, n, heads_kv, h = 2, 5, 7, 4, 2, 3
    q, k, v = rng.normal(size=(b, t, n, h)), rng.normal(size=(b, s, heads_kv, h)), rng.normal(size=(b, s, heads_kv, h))
    bias, mask = rng.normal(size=(1, n, t, s)), rng.random((b, 1, t, s)) > 0.2
    assert_close(nn.dot_product_attention(q, k, v), _attention_reference(q, k, v), rtol=1e-12, atol=1e-12)
    assert_close(nn.dot_product_attention(q, k, v, bias, mask), _attention_reference(q, k, v, mask, bias), rtol=1e-12,
                 atol=1e-12)
    lengths_q, lengths_kv = np.array([5, 3]), np.array([4, 7])
    allowed = (np.arange(t)[None, None, :, None] < lengths_q[:, None, None, None]) & \
        (np.arange(s)[None, None, None, :] < lengths_kv[:, None, None, None])
    got = np.asarray(nn.dot_product_attention(q, k, v, query_seq_lengths=lengths_q, key_value_seq_lengths=lengths_kv))
    assert_close(got, _attention_reference(q, k, v, allowed), rtol=1e-12, atol=1e-12)
    assert (got[1, 3:] == 0).all()  # padded queries attend to nothing: 0
    square_k, square_v = rng.normal(size=(b, t, heads_kv, h)), rng.normal(size=(b, t, heads_kv, h))
    causal = np.tril(np.ones((t, t), bool))
    assert_close(nn.dot_product_attention(q, square_k, square_v, is_causal=True),
                 _attention_reference(q, square_k, square_v, causal), rtol=1e-12, atol=1e-12)
    offset = np.arange(t)[None, :] - np.arange(t)[:, None]
    assert_close(nn.dot_product_attention(q, square_k, square_v, local_window_size=(1, 2)),
                 _attention_reference(q, square_k, square_v, (offset >= -1) & (offset <= 2)), rtol=1e-12, atol=1e-12)
    out, lse = nn.dot_product_attention(q, k, v, bias, return_residual=True)
    scores = np.einsum("btnh,bsnh->bnts", q, np.repeat(k, 2, axis=2)) / np.sqrt(h) + bias
    assert_close(lse, np.log(np.exp(scores).sum(-1)).transpose(0, 2, 1), rtol=1e-12)
    assert_close(nn.dot_product_attention(q[0], k[0], v[0]), _attention_reference(q, k, v)[0], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="multiple of key's 3"):
        nn.dot_product_attention(q, rng.normal(size=(b, s, 3, h)), rng.normal(size=(b, s, 3, h)))


def test_jax_nn_softmax_where_one_hot_axis_and_logsumexp_weights():
    """jax.nn's forms: where= leaves entries out of a softmax (0; -inf in log space; a slice with
    none left is all 0), one_hot's axis, logsumexp's b (values: jax.nn's)."""
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    keep = np.array([[True, False, True], [False, False, False]])
    e = np.exp([1.0, 3.0])
    assert_close(nn.softmax(x, where=keep), [[e[0] / e.sum(), 0, e[1] / e.sum()], [0, 0, 0]], rtol=1e-12)
    logs = np.asarray(nn.log_softmax(x, where=keep))
    assert_close(logs[0, [0, 2]], np.log(e / e.sum()), rtol=1e-12)
    assert logs[0, 1] == -np.inf and (logs[1] == -np.inf).all()
    grad = fg.grad(lambda t: nn.softmax(t, where=keep)[0, 0])(x)
    p = e[0] / e.sum()
    assert_close(grad, [[p * (1 - p), 0, -p * (1 - p)], [0, 0, 0]], rtol=1e-12)  # finite beside the empty row
    assert_close(nn.one_hot(np.array([0, 2, 1]), 3, axis=0), np.eye(3)[[0, 2, 1]].T)
    b = np.array([[1.0, 0.5, 2.0], [0.0, 1.0, 1.0]])
    assert_close(nn.logsumexp(x, axis=1, b=b), np.log((b * np.exp(x)).sum(1)), rtol=1e-12)


def test_volume_padding_layers_and_the_with_indices_forms():
    x = np.arange(36.0).reshape(1, 2, 3, 3, 2)

    def np_pad(pads, mode, **kw):  # torch's (left, right, top, bottom, front, back) as np.pad's widths
        widths = [(0, 0), (0, 0), (pads[4], pads[5]), (pads[2], pads[3]), (pads[0], pads[1])]
        return np.pad(x, widths, mode, **kw)
    assert_close(nn.ReflectionPad3d((1, 1, 0, 2, 1, 0))(x), np_pad((1, 1, 0, 2, 1, 0), "reflect"))
    assert_close(nn.ReplicationPad3d(1)(x), np_pad((1,) * 6, "edge"))
    assert_close(nn.CircularPad3d((0, 1, 1, 0, 1, 1))(x), np_pad((0, 1, 1, 0, 1, 1), "wrap"))
    assert_close(nn.ConstantPad3d((1, 0, 0, 0, 0, 1), 3.5)(x),
                 np_pad((1, 0, 0, 0, 0, 1), "constant", constant_values=3.5))
    assert_close(nn.ZeroPad3d((0, 0, 1, 0, 0, 0))(x), np_pad((0, 0, 1, 0, 0, 0), "constant"))
    with pytest.raises(ValueError, match=r"6 ints \(left, right, top, bottom, front, back\)"):
        nn.ZeroPad3d((1, 2))
    values, indices = F.max_pool2d_with_indices(np.arange(16.0).reshape(1, 1, 4, 4)[..., ::-1], 2)
    np.testing.assert_array_equal(np.asarray(values).ravel(), [7, 5, 15, 13])
    np.testing.assert_array_equal(np.asarray(indices).ravel(), [4, 6, 12, 14])  # torch 2.13's
    values, indices = F.adaptive_max_pool1d_with_indices(np.array([[[3.0, 1, 4, 1, 5, 9]]]), 2)
    np.testing.assert_array_equal(np.asarray(indices).ravel(), [2, 5])


def test_conv_tbc_is_conv1d_in_time_batch_channel_layout():
    rng = np.random.default_rng(9)
    x, w, b = rng.standard_normal((7, 2, 3)), rng.standard_normal((3, 3, 4)), rng.standard_normal(4)
    for pad in (0, 2):
        padded = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
        expected = np.stack([sum(padded[t + k] @ w[k] for k in range(3)) + b for t in range(len(padded) - 2)])
        assert_close(F.conv_tbc(x, w, b, pad), expected)
    with pytest.raises(fg.errors.ShapeError, match=r"conv_tbc expects input \(T, B, in\)"):
        F.conv_tbc(x, w[:, :2], b)


def test_parameter_list_and_dict_hold_arrays_under_pytorchs_names():
    class Holder(nn.Module):
        def __init__(self):
            self.scales = nn.ParameterList([np.ones(2), np.zeros(3)])
            self.table = nn.ParameterDict({"b": np.ones(2), "a": np.zeros(1)})

    holder = Holder()
    assert [n for n, _ in holder.named_parameters(pytorch_names=True)] == ["scales.0", "scales.1", "table.a",
                                                                           "table.b"]
    assert len(holder.scales) == 2 and holder.scales[1].shape == (3,) and isinstance(holder.scales[:1],
                                                                                      nn.ParameterList)
    loaded = holder.load_state_dict({"scales.0": np.full(2, 5.0), "scales.1": np.zeros(3), "table.a": np.ones(1),
                                     "table.b": np.ones(2)})
    np.testing.assert_array_equal(loaded.scales[0], [5.0, 5.0])
    grads = fg.grad(lambda m: fnp.sum(m.scales[0] * 3) + fnp.sum(m.table["a"]))(holder)
    np.testing.assert_array_equal(grads.scales[0], [3.0, 3.0])
    assert nn.NLLLoss2d is nn.NLLLoss

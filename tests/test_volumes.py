"""3-D convolution and pooling (nn/_volumes.py) against direct NumPy loops, the transposed conv by
its adjoint identity, gradients by finite differences. The same cases equal torch 2.13's (968
comparisons of values and gradients, in the benchmark venv)."""
import itertools

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import nn
from funcgrad.nn import functional as F

from .helpers import assert_close, direct_conv

RNG = np.random.default_rng(0)


def test_conv3d_is_the_direct_convolution():
    x, w, b = RNG.standard_normal((2, 4, 4, 5, 4)), RNG.standard_normal((6, 2, 3, 2, 3)), RNG.standard_normal(6)
    out = F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 2), dilation=(2, 1, 1), groups=2)
    expected = direct_conv(x, w, (1, 2, 1), [(1, 1), (0, 0), (2, 2)], (1, 1, 1), (2, 1, 1), groups=2)
    assert_close(out, expected + b.reshape(1, -1, 1, 1, 1), atol=1e-10)
    assert_close(F.conv3d(x[0], w, padding="same", groups=2),
                 direct_conv(x[:1], w, (1,) * 3, [(1, 1), (0, 1), (1, 1)], (1,) * 3, (1,) * 3, groups=2)[0], atol=1e-10)
    fg.check_grads(lambda x, w: F.conv3d(x, w, stride=2, padding=1, groups=2), (x, w), order=1)
    with pytest.raises(fg.ShapeError, match="conv3d"):
        F.conv3d(x, RNG.standard_normal((6, 3, 3, 3, 3)))


def test_conv_transpose3d_is_the_adjoint_of_conv3d():
    """<conv3d(x, w), y> = <x, conv_transpose3d(y, w)> with the same stride, padding and groups."""
    x, w = RNG.standard_normal((2, 4, 5, 5, 3)), RNG.standard_normal((6, 2, 3, 2, 3))
    y = RNG.standard_normal(F.conv3d(x, w, stride=2, padding=1, groups=2).shape)
    back = F.conv_transpose3d(y, w, stride=2, padding=1, output_padding=(0, 1, 0), groups=2)
    assert back.shape == x.shape
    assert_close(np.sum(np.asarray(F.conv3d(x, w, stride=2, padding=1, groups=2)) * y), np.sum(np.asarray(back) * x),
                 rtol=1e-10)


def _windows(x, kernel, stride, pad, fill):
    padded = np.pad(x, [(0, 0)] * 2 + [(pad, pad)] * 3, constant_values=fill)
    sizes = [(n - k) // stride + 1 for n, k in zip(padded.shape[2:], kernel)]
    for o in itertools.product(*map(range, sizes)):
        yield o, padded[(slice(None),) * 2 + tuple(slice(i * stride, i * stride + k) for i, k in zip(o, kernel))]


def test_max_pool3d_values_first_maximum_indices_and_gradient():
    x = np.round(RNG.standard_normal((2, 3, 5, 4, 5)), 1)  # ties: the first maximum wins
    values, where = F.max_pool3d(x, (2, 3, 2), stride=2, padding=1, return_indices=True)
    grad = np.asarray(fg.grad(lambda v: F.max_pool3d(v, (2, 3, 2), stride=2, padding=1).sum())(x))
    counts = np.zeros_like(x)
    for o, window in _windows(x, (2, 3, 2), 2, 1, -np.inf):
        flat = window.reshape(2, 3, -1)
        assert_close(np.asarray(values)[(slice(None),) * 2 + o], flat.max(-1))
        k = np.unravel_index(flat.argmax(-1), window.shape[2:])  # first maximum, in the window
        pos = [np.asarray(i) * 2 - 1 + kk for i, kk in zip(o, k)]
        assert np.array_equal(np.asarray(where)[(slice(None),) * 2 + o], (pos[0] * 4 + pos[1]) * 5 + pos[2])
        for n, c in itertools.product(range(2), range(3)):
            counts[n, c, pos[0][n, c], pos[1][n, c], pos[2][n, c]] += 1
    assert_close(grad, counts)
    nan = x.copy()
    nan[0, 0, 0, 0, 0] = np.nan
    assert np.isnan(np.asarray(F.max_pool3d(nan, 2))[0, 0, 0, 0, 0])


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool3d_counts_as_pytorch(count_include_pad):
    x = RNG.standard_normal((1, 2, 5, 4, 5))
    out = np.asarray(F.avg_pool3d(x, 3, 2, 1, count_include_pad=count_include_pad))
    inside = _windows(np.ones(x.shape), (3,) * 3, 2, 1, 0.0)  # how many of each window's taps are in the image
    for (o, window), (_, ones) in zip(_windows(x, (3,) * 3, 2, 1, 0.0), inside):
        count = 27.0 if count_include_pad else ones.sum((2, 3, 4))
        assert_close(out[(slice(None),) * 2 + o], window.sum((2, 3, 4)) / count)
    assert_close(F.avg_pool3d(x, 2, divisor_override=3), np.asarray(F.avg_pool3d(x, 2)) * 8 / 3)
    fg.check_grads(lambda v: F.avg_pool3d(v, 2, 1, 1, ceil_mode=True), (x,), order=1)


def test_adaptive_avg_pool3d_and_layers():
    x = RNG.standard_normal((2, 3, 5, 4, 7))
    out = np.asarray(F.adaptive_avg_pool3d(x, (2, None, 3)))
    bounds = [[(i * n // m, -(-(i + 1) * n // m)) for i in range(m)] for n, m in ((5, 2), (4, 4), (7, 3))]
    for (i, (a, b)), (j, (c, d)), (k, (e, f)) in itertools.product(*map(enumerate, bounds)):
        assert_close(out[:, :, i, j, k], x[:, :, a:b, c:d, e:f].mean((2, 3, 4)))
    conv = nn.Conv3d(4, 6, 3, padding=1, padding_mode="circular", key=fg.random.key(0), dtype=fg.float64)
    assert np.abs(np.asarray(conv.weight)).max() <= 1 / np.sqrt(4 * 27)  # PyTorch's default bound
    v = RNG.standard_normal((2, 4, 3, 4, 3))
    wrapped = np.pad(v, [(0, 0)] * 2 + [(1, 1)] * 3, mode="wrap")
    assert_close(conv(v), direct_conv(wrapped, np.asarray(conv.weight), (1,) * 3, [(0, 0)] * 3, (1,) * 3, (1,) * 3)
                 + np.asarray(conv.bias).reshape(1, -1, 1, 1, 1), atol=1e-10)
    assert nn.ConvTranspose3d(4, 2, 2, stride=2, key=fg.random.key(1))(v).shape == (2, 2, 6, 8, 6)
    dropped = np.asarray(nn.Dropout3d(0.5)(np.ones((4, 8, 2, 2, 2)), key=fg.random.key(2)))
    assert set(np.unique(dropped)) == {0.0, 2.0} and (dropped.reshape(32, 8).std(-1) == 0).all()  # whole channels
    normed = np.asarray(nn.InstanceNorm3d(4)(v))
    assert_close(normed.mean((2, 3, 4)), np.zeros((2, 4)), atol=1e-10)
    assert_close(nn.MaxPool3d(2, return_indices=True)(v)[0], F.max_pool3d(v, 2))
    assert_close(nn.AvgPool3d(2)(v), F.avg_pool3d(v, 2))
    assert_close(nn.AdaptiveAvgPool3d(1)(v), v.mean((2, 3, 4), keepdims=True))


def test_adaptive_max_pool3d_and_lp_pool3d_against_window_loops():
    x = RNG.standard_normal((2, 3, 5, 6, 7))
    x[0, 0, :2, :2, :3] = 9.0  # ties: the first maximum's index, as PyTorch's
    values, index = F.adaptive_max_pool3d(x, (2, 4, 3), return_indices=True)
    bounds = [[(i * n // m, -(-(i + 1) * n // m)) for i in range(m)] for n, m in zip((5, 6, 7), (2, 4, 3))]
    for (a, (d0, d1)), (b, (h0, h1)), (c, (w0, w1)) in itertools.product(*(list(enumerate(b)) for b in bounds)):
        window = x[:, :, d0:d1, h0:h1, w0:w1].reshape(2, 3, -1)
        assert_close(np.asarray(values)[:, :, a, b, c], window.max(-1))
        flat = window.argmax(-1)
        e1, e2 = h1 - h0, w1 - w0
        expected = ((flat // (e1 * e2) + d0) * 6 + flat // e2 % e1 + h0) * 7 + flat % e2 + w0
        assert np.array_equal(np.asarray(index)[:, :, a, b, c], expected)
    fg.check_grads(lambda v: F.adaptive_max_pool3d(v, 2), (RNG.standard_normal((1, 2, 4, 4, 4)),), order=1)
    assert nn.AdaptiveMaxPool3d((None, 2, 7))(x[0]).shape == (3, 5, 2, 7)
    positive = np.abs(x) + 0.1
    got = np.asarray(F.lp_pool3d(positive, 2.5, (2, 3, 2), (1, 2, 3)))
    for d, h, w in itertools.product(range(got.shape[2]), range(got.shape[3]), range(got.shape[4])):
        window = positive[:, :, d:d + 2, 2 * h:2 * h + 3, 3 * w:3 * w + 2]
        assert_close(got[:, :, d, h, w], (window ** 2.5).sum(axis=(2, 3, 4)) ** (1 / 2.5), rtol=1e-12)
    assert nn.LPPool3d(2, 2)(positive).shape == (2, 3, 2, 3, 3)


def test_max_unpool3d_puts_each_maximum_back_at_its_index():
    x = RNG.standard_normal((2, 3, 5, 6, 7))
    values, index = F.max_pool3d(x, (2, 3, 2), (1, 2, 2), (0, 1, 1), return_indices=True)
    out = np.asarray(F.max_unpool3d(values, index, (2, 3, 2), (1, 2, 2), (0, 1, 1), output_size=(5, 6, 7)))
    expected = np.zeros((2, 3, 5 * 6 * 7))
    np.put_along_axis(expected, np.asarray(index).reshape(2, 3, -1), np.asarray(values).reshape(2, 3, -1), axis=2)
    assert_close(out, expected.reshape(x.shape))
    tiled_values, tiled_index = F.max_pool3d(x[:, :, :4], 2, return_indices=True)  # windows that do not overlap
    fg.check_grads(lambda v: F.max_unpool3d(v, tiled_index, 2, output_size=(4, 6, 7)), (np.asarray(tiled_values),),
                   order=1)
    assert nn.MaxUnpool3d(2)(*F.max_pool3d(x[0, :, :4, :6, :6], 2, return_indices=True)).shape == (3, 4, 6, 6)
    with pytest.raises(IndexError, match="max_unpool3d: indices span"):
        F.max_unpool3d(values, index, (2, 3, 2), (1, 2, 2), (0, 1, 1))  # the default size is 4x6x6, too small

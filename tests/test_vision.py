"""Spatial sampling and the image layers around it (nn/_vision.py), against NumPy loops over
PyTorch's documented formulas and finite differences."""
import itertools
import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.nn import functional as F

from .helpers import assert_close

RNG = np.random.default_rng(0)


def _unnormalize(c, size, align_corners):
    return (c + 1) / 2 * (size - 1) if align_corners else ((c + 1) * size - 1) / 2


def _reflect(c, low2, high2):
    if low2 == high2:
        return 0.0
    low, span = low2 / 2, (high2 - low2) / 2
    c = abs(c - low)
    extra, flips = math.fmod(c, span), math.floor(c / span)
    return extra + low if flips % 2 == 0 else span - extra + low


def _source(c, size, padding_mode, align_corners):
    c = _unnormalize(c, size, align_corners)
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
    if padding_mode != "zeros":
        c = min(max(c, 0), size - 1)
    return c


def _grid_sample_loop(x, grid, mode, padding_mode, align_corners):
    """One output pixel at a time: PyTorch's GridSampler for 4-D input, bilinear and nearest."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, i, j in itertools.product(range(n), range(grid.shape[1]), range(grid.shape[2])):
        sx = _source(grid[b, i, j, 0], w, padding_mode, align_corners)
        sy = _source(grid[b, i, j, 1], h, padding_mode, align_corners)
        if mode == "nearest":
            taps = [(round(sy), round(sx), 1.0)]  # Python's round: half to even, as nearbyint
        else:
            y0, x0 = math.floor(sy), math.floor(sx)
            taps = [(y0 + dy, x0 + dx, (1 - abs(sy - y0 - dy)) * (1 - abs(sx - x0 - dx)))
                    for dy, dx in itertools.product((0, 1), repeat=2)]
        for y, xx, wt in taps:
            if 0 <= y < h and 0 <= xx < w:
                out[b, :, i, j] += wt * x[b, :, y, xx]
    return out


def test_affine_grid_is_theta_times_normalised_pixel_centres():
    theta = RNG.standard_normal((2, 2, 3))
    for align_corners in (False, True):
        grid = np.asarray(F.affine_grid(theta, (2, 1, 3, 4), align_corners))
        xs = np.linspace(-1, 1, 4) * (1 if align_corners else 3 / 4)
        ys = np.linspace(-1, 1, 3) * (1 if align_corners else 2 / 3)
        for b, i, j in itertools.product(range(2), range(3), range(4)):
            assert_close(grid[b, i, j], theta[b] @ np.array([xs[j], ys[i], 1.0]), atol=1e-12)
    assert F.affine_grid(RNG.standard_normal((1, 3, 4)), (1, 2, 2, 3, 4)).shape == (1, 2, 3, 4, 3)
    with pytest.raises(fg.ShapeError, match=r"theta of shape \(N, 2, 3\)"):
        F.affine_grid(theta, (2, 1, 3, 4, 5))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_follows_pytorchs_sampler(mode, padding_mode, align_corners):
    x = RNG.standard_normal((2, 3, 4, 5))
    grid = RNG.uniform(-1.7, 1.7, (2, 3, 4, 2))  # in and outside the image
    assert_close(F.grid_sample(x, grid, mode, padding_mode, align_corners),
                 _grid_sample_loop(x, grid, mode, padding_mode, align_corners), atol=1e-12)


def test_grid_sample_identity_grid_and_gradients():
    x = RNG.standard_normal((1, 2, 4, 5))
    identity = F.affine_grid(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]), (1, 2, 4, 5))
    for mode in ("bilinear", "nearest", "bicubic"):
        assert_close(F.grid_sample(x, identity, mode), x, atol=1e-12)
    grid = RNG.uniform(-0.9, 0.9, (1, 3, 2, 2))
    fg.check_grads(lambda x, g: F.grid_sample(x, g, "bilinear", "border"), (x, grid), order=1)
    fg.check_grads(lambda x, g: F.grid_sample(x, g, "bicubic", "zeros"), (x, grid), order=1)
    volume = RNG.standard_normal((1, 2, 3, 4, 5))
    fg.check_grads(lambda v, g: F.grid_sample(v, g), (volume, RNG.uniform(-0.9, 0.9, (1, 2, 2, 2, 3))), order=1)
    with pytest.raises(ValueError, match="padding_mode must be"):
        F.grid_sample(x, grid, padding_mode="wrap")


def test_local_response_norm_sums_neighbouring_channels():
    x = RNG.standard_normal((2, 6, 3, 2))
    size, alpha, beta, k = 3, 0.1, 0.75, 2.0
    expected = np.empty_like(x)
    for ch in range(6):
        lo, hi = max(ch - size // 2, 0), min(ch + (size - 1) // 2, 5)
        expected[:, ch] = x[:, ch] / (k + alpha / size * (x[:, lo:hi + 1] ** 2).sum(1)) ** beta
    assert_close(F.local_response_norm(x, size, alpha, beta, k), expected, atol=1e-12)
    fg.check_grads(lambda x: F.local_response_norm(x, 4), (x,), order=1)
    with pytest.raises(fg.ShapeError, match="3 or more dimensions"):
        F.local_response_norm(np.ones((2, 3)), 2)


def test_lp_pool_is_the_p_norm_of_each_window():
    x = np.abs(RNG.standard_normal((1, 2, 4, 6))) + 0.1
    windows = x.reshape(1, 2, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5)  # 2x2 windows
    assert_close(F.lp_pool2d(x, 3.0, 2), (windows ** 3).sum((-1, -2)) ** (1 / 3), atol=1e-12)
    assert_close(F.lp_pool1d(x[0], 2.0, 3), np.sqrt((x[0].reshape(2, 4, 2, 3) ** 2).sum(-1)), atol=1e-12)
    fg.check_grads(lambda x: F.lp_pool2d(x, 2.0, (2, 3), 1), (x,), order=1)


def test_channel_shuffle_and_adaptive_max_pool1d():
    x = np.arange(2 * 6 * 2, dtype=float).reshape(2, 6, 2)
    assert_close(F.channel_shuffle(x, 2), x[:, [0, 3, 1, 4, 2, 5]])
    y = RNG.standard_normal((2, 3, 10))
    values, where = F.adaptive_max_pool1d(y, 4, return_indices=True)
    bounds = [(i * 10 // 4, -(-(i + 1) * 10 // 4)) for i in range(4)]  # PyTorch's floor / ceil windows
    assert_close(values, np.stack([y[..., a:b].max(-1) for a, b in bounds], -1))
    assert np.array_equal(np.asarray(where), np.stack([y[..., a:b].argmax(-1) + a for a, b in bounds], -1))


def test_max_unpool_places_each_max_once_and_passes_its_gradient():
    x = RNG.standard_normal((2, 3, 6, 5))
    values, where = F.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(IndexError, match="outside the output planes"):
        F.max_unpool2d(values, where, 2)  # a 6x4 plane cannot hold indices into 6x5
    out = np.asarray(F.max_unpool2d(values, where, 2, output_size=(6, 5)))
    plane = out.reshape(2, 3, -1)
    expected = np.zeros_like(plane)
    np.put_along_axis(expected, np.asarray(where).reshape(2, 3, -1), np.asarray(values).reshape(2, 3, -1), -1)
    assert out.shape == (2, 3, 6, 5) and np.array_equal(plane, expected)
    # overlapping windows choose one maximum twice: it is placed once (not added), and each choice
    # gets its position's gradient, as PyTorch's max_unpool
    values, where = F.max_pool2d(x, 3, 1, 1, return_indices=True)
    idx = np.asarray(where).reshape(2, 3, -1)
    assert max(len(np.unique(row)) < len(row) for row in idx.reshape(6, -1))
    out = np.asarray(F.max_unpool2d(values, where, 3, 1, 1)).reshape(2, 3, -1)
    assert_close(np.take_along_axis(out, idx, -1), np.asarray(values).reshape(2, 3, -1))
    cotangent = RNG.standard_normal((2, 3, 6, 5))
    grad = fg.grad(lambda v: (F.max_unpool2d(v, where, 3, 1, 1) * cotangent).sum())(values)
    assert_close(np.asarray(grad).reshape(2, 3, -1), np.take_along_axis(cotangent.reshape(2, 3, -1), idx, -1))
    with pytest.raises(ValueError, match="output_size"):
        F.max_unpool2d(values, where, 3, 1, 1, output_size=(9, 9))
    v1, w1 = F.max_pool1d(x[:, :, 0], 2, return_indices=True)
    assert_close(nn.MaxUnpool1d(2)(v1, w1)[..., np.asarray(w1)[0, 0]][0, 0], np.asarray(v1)[0, 0])


def test_image_layers():
    x = RNG.standard_normal((2, 4, 3, 3))
    e = np.exp(x - x.max(1, keepdims=True))
    assert_close(nn.Softmax2d()(x), e / e.sum(1, keepdims=True), atol=1e-12)
    assert_close(nn.UpsamplingBilinear2d(scale_factor=2)(x), F.interpolate(x, scale_factor=2, mode="bilinear",
                                                                         align_corners=True))
    assert_close(nn.UpsamplingNearest2d(size=(6, 6))(x), np.repeat(np.repeat(x, 2, 2), 2, 3))
    assert_close(nn.LocalResponseNorm(2)(x), F.local_response_norm(x, 2))
    assert_close(nn.LPPool2d(2, 3)(np.abs(x)), F.lp_pool2d(np.abs(x), 2, 3))
    assert_close(nn.ChannelShuffle(2)(x), F.channel_shuffle(x, 2))


def _fractional_reference(x, pool, out, samples):
    """Window loops with PyTorch's interval rule written out in float32 arithmetic."""
    def starts(u, size, n, k):
        if n == 1:
            return [size - k]
        alpha = np.float32(size - k) / np.float32(n - 1)
        return [int(np.float32(i + u) * alpha) - int(u * alpha) for i in range(n - 1)] + [size - k]
    batch, channels = x.shape[:2]
    values, indices = np.zeros((batch, channels) + out), np.zeros((batch, channels) + out, np.int64)
    spatial = x.shape[2:]
    order = (1, 0) if len(out) == 2 else (0, 1, 2)
    for b, c in np.ndindex(batch, channels):
        per_axis = [starts(samples[b, c, order[a]], spatial[a], out[a], pool[a]) for a in range(len(out))]
        for o in np.ndindex(*out):
            best, where = -np.inf, None
            for tap in np.ndindex(*pool):
                point = tuple(per_axis[a][o[a]] + tap[a] for a in range(len(out)))
                if x[(b, c) + point] > best:
                    best, where = x[(b, c) + point], np.ravel_multi_index(point, spatial)
            values[(b, c) + o], indices[(b, c) + o] = best, where
    return values, indices


@pytest.mark.parametrize("shape,pool,kw", [((2, 3, 7, 9), (2, 3), {"output_size": (4, 3)}),
                                           ((2, 3, 7, 9), 3, {"output_ratio": 0.5}),
                                           ((1, 2, 6, 6), 2, {"output_size": 3}),
                                           ((1, 2, 5, 6, 7), (1, 2, 3), {"output_size": (3, 4, 2)})])
def test_fractional_max_pool_against_window_loops(shape, pool, kw):
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(0, 4, shape).astype(np.float32) + rng.random(shape).astype(np.float32) * (len(shape) == 4)
    samples = rng.random(shape[:2] + (len(shape) - 2,)).astype(np.float32)
    fn = F.fractional_max_pool2d if len(shape) == 4 else F.fractional_max_pool3d
    values, indices = fn(x, pool, return_indices=True, _random_samples=samples, **kw)
    dims = len(shape) - 2
    out = tuple(values.shape[2:])
    ref_values, ref_indices = _fractional_reference(x, (pool,) * dims if isinstance(pool, int) else pool, out, samples)
    assert_close(values, ref_values)
    np.testing.assert_array_equal(indices, ref_indices)
    weights = np.arange(values.size, dtype=np.float32).reshape(values.shape)  # each window's weight, at its maximum
    grad = fg.grad(lambda z: fnp.sum(fn(z, pool, _random_samples=samples, **kw) * weights))(x)
    expected = np.zeros(x.size, np.float32).reshape(shape[:2] + (-1,))
    np.add.at(expected, (np.arange(shape[0])[:, None, None], np.arange(shape[1])[None, :, None],
                         ref_indices.reshape(shape[:2] + (-1,))), weights.reshape(shape[:2] + (-1,)))
    assert_close(grad, expected.reshape(shape))


def test_fractional_max_pool_draws_from_its_key_and_checks_sizes():
    x = np.random.default_rng(1).standard_normal((1, 2, 8, 8)).astype(np.float32)
    layer = nn.FractionalMaxPool2d(2, output_size=5)
    a, b = layer(x, key=fg.random.key(0)), layer(x, key=fg.random.key(0))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (1, 2, 5, 5)
    with pytest.raises(ValueError, match="places its windows at random: pass key="):
        layer(x)
    with pytest.raises(ValueError, match="does not fit input size 8"):
        F.fractional_max_pool2d(x, 3, output_size=7, key=fg.random.key(0))
    with pytest.raises(ValueError, match="exactly one of output_size and output_ratio"):
        F.fractional_max_pool2d(x, 3, key=fg.random.key(0))

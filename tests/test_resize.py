"""nn.interpolate against NumPy references: np.interp along each axis for the linear modes (every
source-coordinate rule), index formulas for nearest, window means for area, and PyTorch 2.13's
values written out for the cubic and antialiased filters."""
import numpy as np
import pytest

import funcgrad as fg
from funcgrad import nn

from .helpers import assert_close

RNG = np.random.default_rng(0)
GRID = np.array([[0.0, 1, 4, 9], [2, -1, 3, 5], [7, 2, 0, 1]])[None, None]


def _interp_axis(x, axis, n_out, align_corners, factor=None):
    """Linear resampling of one axis with np.interp at PyTorch's source coordinates."""
    n_in = x.shape[axis]
    dst = np.arange(n_out)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        scale = 1 / factor if factor else n_in / n_out
        src = np.maximum((dst + 0.5) * scale - 0.5, 0)
    return np.apply_along_axis(lambda v: np.interp(src, np.arange(n_in), v), axis, x)


@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_modes_are_np_interp_along_each_axis(align_corners):
    seq, image, volume = RNG.standard_normal((2, 3, 7)), RNG.standard_normal((2, 2, 5, 6)), RNG.standard_normal((1, 2, 3, 4, 5))
    assert_close(nn.interpolate(seq, size=12, mode="linear", align_corners=align_corners),
                 _interp_axis(seq, 2, 12, align_corners))
    expected = _interp_axis(_interp_axis(image, 2, 9, align_corners), 3, 4, align_corners)
    assert_close(nn.interpolate(image, size=(9, 4), mode="bilinear", align_corners=align_corners), expected)
    expected = volume
    for axis, n in zip((2, 3, 4), (5, 2, 7)):
        expected = _interp_axis(expected, axis, n, align_corners)
    assert_close(nn.interpolate(volume, size=(5, 2, 7), mode="trilinear", align_corners=align_corners), expected)


def test_scale_factor_sets_the_source_coordinates_unless_recomputed():
    seq = RNG.standard_normal((1, 1, 7))
    # 7 * 1.7 = 11.9 -> 11 outputs; the coordinates step by 1 / 1.7, or by 7 / 11 when recomputed
    assert_close(nn.interpolate(seq, scale_factor=1.7, mode="linear"), _interp_axis(seq, 2, 11, False, factor=1.7))
    assert_close(nn.interpolate(seq, scale_factor=1.7, mode="linear", recompute_scale_factor=True),
                 _interp_axis(seq, 2, 11, False))
    rows = np.arange(10.0)[None, None, :, None]
    assert np.asarray(nn.interpolate(rows, scale_factor=(0.35, 1.0))).ravel().tolist() == [0.0, 2.0, 5.0]  # floor(i / 0.35)


def test_nearest_modes_pick_source_pixels():
    x = np.arange(30.0).reshape(1, 1, 5, 6)
    got = np.asarray(nn.interpolate(x, size=(7, 4)))
    assert_close(got, x[:, :, np.floor(np.arange(7) * 5 / 7).astype(int)][..., np.floor(np.arange(4) * 6 / 4).astype(int)])
    exact = np.asarray(nn.interpolate(x, size=(7, 4), mode="nearest-exact"))
    rows, cols = np.floor((np.arange(7) + 0.5) * 5 / 7).astype(int), np.floor((np.arange(4) + 0.5) * 6 / 4).astype(int)
    assert_close(exact, x[:, :, rows][..., cols])
    assert_close(nn.interpolate(GRID, scale_factor=1.7, mode="nearest-exact")[0, 0, :, 1], [0.0, 0, 2, 7, 7])
    img = RNG.integers(0, 256, (1, 3, 4, 4)).astype(np.uint8)
    up = nn.interpolate(img, scale_factor=2)
    assert up.dtype == np.uint8 and np.array_equal(np.asarray(up), img.repeat(2, 2).repeat(2, 3))


def test_area_mode_averages_adaptive_windows():
    x = RNG.standard_normal((2, 1, 7, 9))
    got = np.asarray(nn.interpolate(x, size=(3, 4), mode="area"))
    for i in range(3):
        for j in range(4):
            r0, r1 = i * 7 // 3, -(-(i + 1) * 7 // 3)
            c0, c1 = j * 9 // 4, -(-(j + 1) * 9 // 4)
            assert_close(got[:, :, i, j], x[:, :, r0:r1, c0:c1].mean(axis=(2, 3)))


def test_cubic_and_antialiased_filters_give_pytorchs_values():
    cases = {  # torch.nn.functional.interpolate(GRID, ...) in PyTorch 2.13, float64
        ((2, 5), "bicubic", False, False): [[0.267377, 0.016648, 1.767212, 5.473066, 8.49897],
                                            [6.222266, 2.624565, 0.40271, 0.890563, 1.833731]],
        ((4, 3), "bicubic", True, False): [[0.0, 2.125, 9.0], [0.814815, 1.043403, 6.703704],
                                           [3.796296, 0.324653, 3.296296], [7.0, 0.4375, 1.0]],
        ((2, 2), "bilinear", False, True): [[0.946429, 4.803571], [2.732143, 1.678571]],
        ((2, 3), "bicubic", False, True): [[0.214839, 1.823411, 6.980074], [4.22026, 0.739505, 1.943288]],
    }
    for (size, mode, corners, antialias), expected in cases.items():
        got = nn.interpolate(GRID, size=size, mode=mode, align_corners=corners, antialias=antialias)
        assert_close(np.asarray(got)[0, 0], expected, atol=1e-6)
    upscaled = np.asarray(nn.interpolate(GRID, size=(5, 6), mode="bicubic", antialias=True))[0, 0]
    assert_close(upscaled[2], [2.197368, 0.352941, -0.715278, 2.368056, 4.294118, 5.131579], atol=1e-6)
    flat = np.full((1, 1, 3, 8), 2.5)  # the cubic weights sum to one: a constant image stays constant
    assert_close(nn.interpolate(flat, size=(5, 13), mode="bicubic"), np.full((1, 1, 5, 13), 2.5))


def test_gradients_jit_and_dtypes():
    x = RNG.standard_normal((1, 2, 4, 5))
    for mode, extra in [("bilinear", {}), ("bicubic", {"align_corners": True}), ("area", {}),
                        ("bilinear", {"antialias": True}), ("nearest", {})]:
        fg.check_grads(lambda v: nn.interpolate(v, size=(3, 7), mode=mode, **extra), (x,), order=1)
    jitted = fg.jit(lambda v: nn.interpolate(v, scale_factor=1.5, mode="bicubic"))(x)
    assert_close(jitted, nn.interpolate(x, scale_factor=1.5, mode="bicubic"))
    single = nn.interpolate(x.astype(np.float32), size=(6, 6), mode="bilinear")
    assert single.dtype == np.float32
    img = np.array([[[[0, 255], [255, 0]]]], np.uint8)
    up = nn.interpolate(img, size=(3, 3), mode="bicubic", align_corners=True)
    assert up.dtype == np.uint8 and np.asarray(up)[0, 0, 1, 1] == 128  # rounded, and overshoots clipped
    from funcgrad.nn import functional as F
    assert_close(F.upsample_bilinear(x, size=(3, 7)), nn.interpolate(x, (3, 7), mode="bilinear", align_corners=True))
    assert_close(F.upsample_nearest(x, scale_factor=2), nn.interpolate(x, scale_factor=2))
    layer = nn.Upsample(scale_factor=1.7, mode="linear", recompute_scale_factor=True)
    assert_close(layer(np.arange(7.0)[None, None]), _interp_axis(np.arange(7.0)[None, None], 2, 11, False))


@pytest.mark.parametrize("kwargs,error,match", [
    ({"size": (3, 3), "scale_factor": 2}, ValueError, "exactly one of size and scale_factor"),
    ({"size": (3, 3), "mode": "linear"}, fg.ShapeError, "'linear' takes 3-D input"),
    ({"size": (3, 3), "align_corners": True}, ValueError, "align_corners can only be set"),
    ({"size": (3, 3), "antialias": True}, ValueError, "antialias is for the bilinear and bicubic"),
    ({"size": (3, 3, 3)}, fg.ShapeError, "has 3 entries for an input with 2 spatial axes"),
    ({"scale_factor": 0.01}, ValueError, "must be positive on every axis"),
    ({"size": (3, 3), "recompute_scale_factor": True}, ValueError, "not meaningful with an explicit size"),
    ({"size": (3, 3), "mode": "cubic"}, ValueError, "mode must be one of"),
])
def test_bad_arguments_name_the_problem(kwargs, error, match):
    with pytest.raises(error, match=match):
        nn.interpolate(RNG.standard_normal((1, 1, 4, 4)), **kwargs)
    with pytest.raises(fg.ShapeError, match="got shape"):
        nn.interpolate(np.ones((3, 4)), size=2)

"""funcgrad.scipy.ndimage.map_coordinates, interpolate.RegularGridInterpolator and
integrate.trapezoid against NumPy: the boundary modes as np.pad's extensions (interpolated with
np.interp or bilinear sums), hand-checked values for SciPy's 'wrap' and 'constant', and gradients."""
import numpy as np
import pytest

import funcgrad as fg
from funcgrad.scipy import integrate, interpolate, ndimage

from .helpers import assert_close

RNG = np.random.default_rng(0)
PAD = {"nearest": "edge", "reflect": "symmetric", "grid-mirror": "symmetric", "mirror": "reflect",
       "grid-wrap": "wrap", "grid-constant": "constant"}


@pytest.mark.parametrize("mode", sorted(PAD))
def test_modes_are_numpys_extensions(mode):
    x = RNG.normal(size=5)
    c = RNG.uniform(-4.5, 8.5, 60)
    extra = {"constant_values": -2.0} if mode == "grid-constant" else {}
    padded = np.pad(x, 10, mode=PAD[mode], **extra)
    want = np.interp(c + 10, np.arange(padded.size), padded)
    assert_close(ndimage.map_coordinates(x, [c], 1, mode, cval=-2.0), want, rtol=1e-12, atol=1e-12)
    nearest = padded[np.floor(c + 10 + 0.5).astype(int)]  # order 0 rounds half up
    assert_close(ndimage.map_coordinates(x, [c], 0, mode, cval=-2.0), nearest)


def test_wrap_constant_and_two_dimensions():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    c = np.array([-1.5, -0.5, 0.0, 3.0, 3.25, 4.5, 7.0])
    # SciPy's 'wrap': period n - 1, the first and last samples coincide
    assert_close(ndimage.map_coordinates(x, [c], 1, "wrap"), [3.0, 6.0, 1.0, 8.0, 1.25, 3.0, 2.0])  # SciPy 1.16's
    # 'constant': cval beyond [0, n - 1], the samples' interpolation inside
    assert_close(ndimage.map_coordinates(x, [c], 1, "constant", cval=-9.0), [-9, -9, 1, 8, -9, -9, -9])
    image = RNG.normal(size=(4, 5))
    rows, cols = RNG.uniform(0, 3, 20), RNG.uniform(0, 4, 20)
    r0, c0 = np.floor(rows).astype(int), np.floor(cols).astype(int)
    r1, c1 = np.minimum(r0 + 1, 3), np.minimum(c0 + 1, 4)
    fr, fc = rows - r0, cols - c0
    bilinear = ((1 - fr) * (1 - fc) * image[r0, c0] + (1 - fr) * fc * image[r0, c1] + fr * (1 - fc) * image[r1, c0]
                + fr * fc * image[r1, c1])
    assert_close(ndimage.map_coordinates(image, np.stack([rows, cols]), 1), bilinear, rtol=1e-12)
    grad = fg.grad(lambda img: ndimage.map_coordinates(img, [rows, cols], 1).sum())(image)
    weights = np.zeros_like(image)
    for a, b, w in ((r0, c0, (1 - fr) * (1 - fc)), (r0, c1, (1 - fr) * fc), (r1, c0, fr * (1 - fc)), (r1, c1, fr * fc)):
        np.add.at(weights, (a, b), w)
    assert_close(grad, weights, rtol=1e-12)
    with pytest.raises(ValueError, match="order must be 0 or 1"):
        ndimage.map_coordinates(image, [rows, cols], 3)
    with pytest.raises(ValueError, match="2 coordinate arrays for an input of 1 dimensions"):
        ndimage.map_coordinates(x, [c, c], 1)


def test_regular_grid_interpolator_and_trapezoid():
    x, y = np.sort(RNG.uniform(0, 5, 6)), np.sort(RNG.uniform(-1, 1, 4))
    values = RNG.normal(size=(6, 4))
    q = np.stack([RNG.uniform(x[0], x[-1], 30), RNG.uniform(y[0], y[-1], 30)], -1)
    interp = interpolate.RegularGridInterpolator((x, y), values)
    # linear in each axis: interpolate along y at every x, then along x
    along_y = np.stack([[np.interp(qy, y, row) for row in values] for qy in q[:, 1]])
    want = np.array([np.interp(qx, x, col) for qx, col in zip(q[:, 0], along_y)])
    assert_close(interp(q), want, rtol=1e-12)
    nearest = values[np.abs(x[None] - q[:, :1]).argmin(1), np.abs(y[None] - q[:, 1:]).argmin(1)]
    assert_close(interp(q, method="nearest"), nearest)
    outside = np.array([[9.0, 0.0], [x[1], y[2]]])
    got = np.asarray(interp(outside))
    assert np.isnan(got[0]) and np.isclose(got[1], values[1, 2])
    extrapolated = interpolate.RegularGridInterpolator((x, y), values, fill_value=None)(np.array([[x[-1] + 1, y[0]]]))
    slope = (values[-1, 0] - values[-2, 0]) / (x[-1] - x[-2])
    assert_close(extrapolated, [values[-1, 0] + slope], rtol=1e-12)
    with pytest.raises(ValueError, match="outside the grid"):
        interpolate.RegularGridInterpolator((x, y), values, bounds_error=True)(outside)
    with pytest.raises(ValueError, match="strictly ascending"):
        interpolate.RegularGridInterpolator((x[::-1], y), values)
    assert_close(integrate.trapezoid(np.array([1.0, 2.0, 4.0]), x=np.array([0.0, 1.0, 3.0])), 7.5)

"""lax's convolutions and window reductions against a direct NumPy convolution (a loop over the
kernel's taps) and NumPy window loops; gradients by finite differences. The same cases equal
jax.lax's (2,150 comparisons, values and both gradients, in the benchmark venv)."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import lax

from .helpers import assert_close, direct_conv as _direct_conv

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_conv_general_dilated_is_the_direct_convolution(d):
    spatial, kernel = {1: ((7,), (3,)), 2: ((5, 6), (3, 2)), 3: ((4, 5, 4), (2, 3, 2))}[d]
    x = RNG.standard_normal((2, 4) + spatial)
    w = RNG.standard_normal((6, 2) + kernel)
    for strides, pads, lhs_dil, rhs_dil in [((1,) * d, [(1, 1)] * d, (1,) * d, (1,) * d),
                                            ((2,) * d, [(0, 2)] * d, (1,) * d, (2,) * d),
                                            ((1,) * d, [(-1, 2)] * d, (2,) * d, (1,) * d)]:
        out = lax.conv_general_dilated(x, w, strides, pads, lhs_dil, rhs_dil, feature_group_count=2)
        assert_close(out, _direct_conv(x, w, strides, pads, lhs_dil, rhs_dil, groups=2), atol=1e-10)
    fg.check_grads(lambda a, b: lax.conv_general_dilated(a, b, (2,) * d, "SAME", rhs_dilation=(1,) * d,
                                                         feature_group_count=2), (x, w), order=1)


def test_layouts_padding_strings_and_batch_groups():
    x = RNG.standard_normal((4, 5, 6, 3))  # NHWC
    w = RNG.standard_normal((3, 2, 3, 4))  # HWIO
    out = lax.conv_general_dilated(x, w, (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    canonical = _direct_conv(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), (2, 1),
                             lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME"), (1, 1), (1, 1))
    assert out.shape == (4, 3, 6, 4) and lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME") == [(1, 1), (0, 1)]
    assert_close(out, canonical.transpose(0, 2, 3, 1), atol=1e-10)
    assert lax.padtype_to_pads((5,), (2,), (1,), "SAME_LOWER") == [(1, 0)]
    dn = lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    # batch groups: the batch's two halves each give half of the output features
    xb, wb = RNG.standard_normal((4, 3, 5)), RNG.standard_normal((6, 3, 2))
    out = lax.conv_general_dilated(xb, wb, (1,), "VALID", batch_group_count=2)
    halves = [_direct_conv(xb[2 * g:2 * g + 2], wb[3 * g:3 * g + 3], (1,), [(0, 0)], (1,), (1,)) for g in range(2)]
    assert_close(out, np.concatenate(halves, axis=1), atol=1e-10)
    assert lax.conv_general_dilated(xb, wb, (1,), [(0, 0)], rhs_dilation=(9,)).shape == (4, 6, 0)  # no window fits
    with pytest.raises(ValueError, match="string padding is not defined with lhs_dilation"):
        lax.conv_general_dilated(xb, wb, (1,), "SAME", lhs_dilation=(2,))
    with pytest.raises(TypeError, match="must hold 'N' and 'C'"):
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWW", "HWIO", "NHWC"))


def test_conv_transpose_with_transpose_kernel_is_the_forward_convs_gradient():
    """VALID padding over sizes the strides divide: JAX's conv_transpose(transpose_kernel=True) is
    the forward convolution's vector-Jacobian product, computed here by reverse mode."""
    x = RNG.standard_normal((2, 7, 5, 3))
    w = RNG.standard_normal((3, 3, 3, 4))  # HWIO
    dn = ("NHWC", "HWIO", "NHWC")
    forward, pullback = fg.vjp(lambda v: lax.conv_general_dilated(v, w, (2, 2), "VALID", dimension_numbers=dn), x)
    y = RNG.standard_normal(forward.shape)
    assert_close(lax.conv_transpose(y, w, (2, 2), "VALID", transpose_kernel=True), pullback(y)[0], atol=1e-10)
    assert lax.conv_transpose(y, w, (2, 2), "SAME", transpose_kernel=True).shape == (2, 6, 4, 3)  # stride times


@pytest.mark.parametrize("computation, init, reduce_np", [(lax.add, 0.0, np.sum), (lax.max, -np.inf, np.max)])
def test_reduce_window_and_reduce(computation, init, reduce_np):
    x = RNG.standard_normal((2, 5, 6))
    out = lax.reduce_window(x, init, computation, (1, 2, 3), (1, 2, 1), [(0, 0), (0, 1), (1, 1)])
    padded = np.pad(x, [(0, 0), (0, 1), (1, 1)], constant_values=init)
    expected = np.array([[[reduce_np(padded[b, i * 2:i * 2 + 2, j:j + 3]) for j in range(6)] for i in range(3)]
                         for b in range(2)])
    assert_close(out, expected, atol=1e-12)
    dilated = lax.reduce_window(x, init, computation, (1, 2, 2), (1, 1, 1), "VALID", window_dilation=(1, 2, 1))
    assert_close(dilated, np.array([[[reduce_np(x[b, i:i + 3:2, j:j + 2]) for j in range(5)] for i in range(3)]
                                    for b in range(2)]), atol=1e-12)
    fg.check_grads(lambda a: lax.reduce_window(a, init, computation, (1, 2, 2), (1, 2, 2), "SAME"), (x,), order=1)
    assert_close(lax.reduce(x, init, computation, (0, 2)), reduce_np(x, axis=(0, 2)), atol=1e-12)
    # any binary function folds over the reduced elements in row-major order
    fold = lax.reduce(x, 1.0, lambda a, b: a * 0.5 + b, (1, 2))
    expected = np.ones(2)
    for v in x.reshape(2, -1).T:
        expected = expected * 0.5 + v
    assert_close(fold, expected, atol=1e-12)


def test_variadic_reduce_folds_tuples():
    """lax.reduce of (values, indices) with a tuple computation: an argmax along axis 1."""
    x = np.array([[1.0, 5.0, 5.0, -2.0], [0.5, -1.0, 7.0, 7.5]])
    index = np.broadcast_to(np.arange(4), x.shape)

    def larger(a, b):
        take_b = b[0] > a[0]
        return fnp.where(take_b, b[0], a[0]), fnp.where(take_b, b[1], a[1])
    best, where = lax.reduce((x, index), (-np.inf, 0), larger, (1,))
    assert best.tolist() == [5.0, 7.5] and where.tolist() == [1, 3]  # the first of equal maxima
    with pytest.raises(fg.ShapeError, match="need as many init values"):
        lax.reduce((x, index), (0.0,), larger, (1,))
    assert lax.reduce(np.zeros((0, 3)), 0.0, lambda a, b: a + b, (0,)).tolist() == [0, 0, 0]

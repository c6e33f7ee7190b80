"""torch.nn's 3-D layers over (N, C, D, H, W) volumes (video, medical images): conv3d and
conv_transpose3d (lax.conv_general_dilated's 3-D path: 2-D convolutions summed over the depth
taps), max and average pooling with PyTorch's ceil_mode, count_include_pad and first-maximum
indices (the windows' taps as strided slices), adaptive average pooling, channel dropout, and
their layers."""
from __future__ import annotations

import itertools

import numpy as np

from .. import errors as fg_errors
from .. import lax
from .. import numpy as fnp
from ..ops import conv as C
from . import _convolution as Cv
from ._functional import _channel_bias
from ._pixels import AdaptiveMaxPool2d, Dropout1d, InstanceNorm1d, _channel_dropout, _Fixed
from ._vision import _lp_pooled
from .layers import _Conv, _ConvTranspose

__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
           "lp_pool3d", "dropout3d"]
LAYERS = ["Conv3d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool3d",
          "Dropout3d", "InstanceNorm3d"]


def _volume(x, fname: str):
    """x as a batch (N, C, D, H, W), and whether it came unbatched (C, D, H, W)."""
    x = fnp.asarray(x)
    if x.ndim not in (4, 5):
        raise fg_errors.ShapeError(f"{fname} expects (N, C, D, H, W) or (C, D, H, W) input, got shape {x.shape}")
    return (x, False) if x.ndim == 5 else (fnp.expand_dims(x, 0), True)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """3-D cross-correlation as torch.nn.functional.conv3d: x (N, C, D, H, W), weight
    (O, C/groups, kd, kh, kw); padding an int, a triple, "valid" or "same" (stride 1)."""
    x, unbatched = _volume(x, "conv3d")
    weight = fnp._arrays(x, weight)[1]
    if weight.ndim != 5 or x.shape[1] != weight.shape[1] * groups or weight.shape[0] % groups:
        raise fg_errors.ShapeError(f"conv3d: input {x.shape} with groups={groups} needs a weight (O, "
                                   f"{x.shape[1] // max(groups, 1)}, kd, kh, kw) with O divisible by groups, got "
                                   f"{weight.shape}")
    stride, dilation = Cv._ints(stride, 3, "stride"), Cv._ints(dilation, 3, "dilation")
    sides = Cv._conv_sides(padding, weight.shape[2:], stride, dilation)
    out = lax.conv_general_dilated(x, weight, stride, sides, rhs_dilation=dilation, feature_group_count=groups)
    if bias is not None:
        out = out + _channel_bias(bias, out, "conv3d")
    return out[0] if unbatched else out


def conv_transpose3d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """torch.nn.functional.conv_transpose3d: weight (in, out/groups, kd, kh, kw)."""
    x, unbatched = _volume(x, "conv_transpose3d")
    out = Cv.transposed_conv(conv3d, x, weight, bias, stride, padding, output_padding, groups, dilation,
                             "conv_transpose3d")
    return out[0] if unbatched else out


def _taps(x, kernel, stride, sides, dilation, fill: float):
    """(N, C, Do, Ho, Wo, K): the K taps of every window of x padded by sides with fill."""
    if any(lo or hi for lo, hi in sides):
        x = fnp.pad(x, ((0, 0), (0, 0)) + tuple(sides), constant_values=fill)
    out = C.window_output_hw(x.shape[2:], kernel, stride, ((0, 0),) * 3, dilation, "pool3d")
    taps = [x[(slice(None), slice(None)) + tuple(slice(k * dl, k * dl + (m - 1) * s + 1, s)
                                                 for k, dl, s, m in zip(offsets, dilation, stride, out))]
            for offsets in itertools.product(*(range(k) for k in kernel))]
    return fnp.stack(taps, axis=-1)


def max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """Max over 3-D windows (padding never wins), as torch.nn.functional.max_pool3d: the gradient
    goes to each window's first maximum, a NaN is its window's maximum, and return_indices gives
    each maximum's flat position in its (D, H, W) volume."""
    x, unbatched = _volume(fnp._float_arg(x), "max_pool3d")
    kernel, stride, padding, dilation = Cv._pool_args(kernel_size, stride, padding, dilation, 3)
    sides = Cv._pool_sides(x.shape[2:], kernel, stride, padding, dilation, ceil_mode, "max_pool3d")
    windows = _taps(x, kernel, stride, sides, dilation, -np.inf)
    first = fnp.argmax(windows, axis=-1)  # NumPy's: the first maximum, or the first NaN
    out = fnp.take_along_axis(windows, fnp.expand_dims(first, -1), axis=-1)[..., 0]
    if not return_indices:
        return out[0] if unbatched else out
    # the tap's position: per axis (output index * stride - low padding + tap * dilation)
    position = None
    taps = np.array(list(itertools.product(*(range(k) for k in kernel))))  # (K, 3)
    for axis, (size, s, (lo, _), dl) in enumerate(zip(x.shape[2:], stride, sides, dilation)):
        starts = np.arange(out.shape[2 + axis]) * s - lo
        starts = starts.reshape((-1,) + (1,) * (2 - axis))
        along = fnp.asarray(taps[:, axis] * dl, device=x.device)[first] + starts
        position = along if position is None else position * size + along
    return (out[0], position[0]) if unbatched else (out, position)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None):
    """Mean over 3-D windows, as torch.nn.functional.avg_pool3d (count_include_pad,
    divisor_override and ceil_mode's windows as avg_pool2d's)."""
    x, unbatched = _volume(fnp._float_arg(x), "avg_pool3d")
    kernel, stride, padding, dilation = Cv._pool_args(kernel_size, stride, padding, 1, 3)
    sides = Cv._pool_sides(x.shape[2:], kernel, stride, padding, dilation, ceil_mode, "avg_pool3d")
    total = fnp.sum(_taps(x, kernel, stride, sides, dilation, 0.0), axis=-1)
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, int) or divisor_override <= 0:
            raise ValueError(f"avg_pool3d: divisor_override must be a positive int, got {divisor_override!r}")
        out = total / divisor_override
    else:
        counts = [Cv._window_counts(n, size, k, s, lo, count_include_pad)
                  for n, size, k, s, (lo, _) in zip(total.shape[2:], x.shape[2:], kernel, stride, sides)]
        divisor = np.einsum("i,j,k->ijk", *counts).astype(total.dtype)
        out = total / fnp._placed(fnp.asarray(divisor), x.device)
    return out[0] if unbatched else out


def adaptive_avg_pool3d(x, output_size):
    """Mean over PyTorch's adaptive windows of each axis (an int, a triple, None keeping the
    input's size): the box mean taken one axis at a time, as it factorises."""
    x, unbatched = _volume(fnp._float_arg(x), "adaptive_avg_pool3d")
    sizes = _adaptive_sizes(x, output_size, "adaptive_avg_pool3d")
    for axis, out in zip((2, 3, 4), sizes):
        cells = [fnp.mean(x[(slice(None),) * axis + (slice(lo, hi),)], axis=axis, keepdims=True)
                 for lo, hi in Cv._adaptive_bounds(x.shape[axis], out)]
        x = fnp.concatenate(cells, axis=axis)
    return x[0] if unbatched else x


def _adaptive_sizes(x, output_size, fname: str) -> tuple:
    sizes = (output_size,) * 3 if output_size is None or isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != 3:
        raise ValueError(f"{fname}: output_size must be an int or three ints or None, got {output_size!r}")
    return Cv._ints(tuple(x.shape[2 + i] if s is None else s for i, s in enumerate(sizes)), 3, "output_size")


def adaptive_max_pool3d(x, output_size, return_indices: bool = False):
    """Max over PyTorch's adaptive windows of each axis; return_indices gives each maximum's flat
    index in its volume (d H W + h W + w), the first of equal maxima, as max_pool3d's."""
    x, unbatched = _volume(x, "adaptive_max_pool3d")
    sizes = _adaptive_sizes(x, output_size, "adaptive_max_pool3d")
    if 0 in x.shape[2:] and np.prod(sizes):
        raise fg_errors.ShapeError(f"adaptive_max_pool3d of an empty volume (input shape {x.shape})")
    depth, height, width = x.shape[2:]
    values, positions = [], []
    for (d0, d1), (h0, h1), (w0, w1) in itertools.product(
            *(Cv._adaptive_bounds(n, m) for n, m in zip(x.shape[2:], sizes))):
        extent = (d1 - d0, h1 - h0, w1 - w0)
        window = fnp.reshape(x[:, :, d0:d1, h0:h1, w0:w1], x.shape[:2] + (int(np.prod(extent)),))
        flat = fnp.argmax(window, axis=-1)  # the first maximum takes the gradient, as PyTorch's
        values.append(fnp.take_along_axis(window, flat[..., None], axis=-1)[..., 0])
        if return_indices:
            d, h, w = flat // (extent[1] * extent[2]) + d0, flat // extent[2] % extent[1] + h0, flat % extent[2] + w0
            positions.append((d * height + h) * width + w)
    shape = x.shape[:2] + sizes
    out = fnp.reshape(fnp.stack(values, -1), shape)
    out = out[0] if unbatched else out
    if not return_indices:
        return out
    idx = fnp.reshape(fnp.stack(positions, -1), shape)
    return out, idx[0] if unbatched else idx


def lp_pool3d(x, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """(sum over each window of x^p)^(1/p), as torch.nn.functional.lp_pool3d (p = norm_type)."""
    kernel = Cv._ints(kernel_size, 3, "kernel_size")
    x = fnp._float_arg(x)
    mean = avg_pool3d(x ** norm_type, kernel, stride, 0, ceil_mode)
    return _lp_pooled(mean, int(np.prod(kernel)), norm_type)


def dropout3d(x, rate: float, key=None):
    """Zero whole channels of (N, C, D, H, W) input with probability rate (identity without a key)."""
    return _channel_dropout(x, rate, key, 3, "dropout3d")


# ---- layers -------------------------------------------------------------------------------------
class Conv3d(_Conv):
    dims, conv = 3, staticmethod(conv3d)


class ConvTranspose3d(_ConvTranspose):
    dims, conv = 3, staticmethod(conv_transpose3d)


class MaxPool3d(_Fixed):
    fn = staticmethod(max_pool3d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):  # PyTorch's module order (return_indices before ceil_mode)
        super().__init__(kernel_size, stride, padding, dilation, ceil_mode, return_indices)


class AvgPool3d(_Fixed):
    fn = staticmethod(avg_pool3d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


class AdaptiveAvgPool3d(_Fixed):
    fn = staticmethod(adaptive_avg_pool3d)

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    fn = staticmethod(adaptive_max_pool3d)


class LPPool3d(_Fixed):
    fn = staticmethod(lp_pool3d)

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__(norm_type, kernel_size, stride, ceil_mode)


class Dropout3d(Dropout1d):
    def __call__(self, x, *, key=None):
        return dropout3d(x, self.p, key)


class InstanceNorm3d(InstanceNorm1d):
    spatial = 3

"""Image and sequence layers of torch.nn beyond convolution: pixel_shuffle / pixel_unshuffle,
unfold / fold (im2col and its transpose), channel dropout, instance_norm, adaptive max pooling and
1-d adaptive average pooling, with their layers, the padding layers (ZeroPad2d, ReflectionPad1d,
...), Unflatten, CosineSimilarity and PairwiseDistance."""
from __future__ import annotations

import math

from .. import errors as fg_errors
from .. import numpy as fnp
from ..vjp import vjp
from . import _convolution as Cv
from . import _functional as F
from .losses import pairwise_distance
from .module import Module

__all__ = ["pixel_shuffle", "pixel_unshuffle", "unfold", "fold", "dropout1d", "dropout2d", "instance_norm",
           "adaptive_max_pool2d", "adaptive_avg_pool1d"]
LAYERS = ["PixelShuffle", "PixelUnshuffle", "Unfold", "Fold", "Dropout1d", "Dropout2d", "InstanceNorm1d",
          "InstanceNorm2d", "AdaptiveMaxPool2d", "AdaptiveAvgPool1d", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d",
          "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
          "CircularPad1d", "CircularPad2d", "ZeroPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d",
          "CircularPad3d", "Unflatten", "CosineSimilarity", "PairwiseDistance"]


def pixel_shuffle(x, upscale_factor: int):
    """(*, C r^2, H, W) -> (*, C, H r, W r): channel c r^2 + i r + j becomes pixel (h r + i, w r + j)."""
    x, r = fnp.asarray(x), int(upscale_factor)
    if x.ndim < 3 or r < 1 or x.shape[-3] % (r * r):
        raise fg_errors.ShapeError(f"pixel_shuffle: {x.shape[-3] if x.ndim >= 3 else 'no'} channels of an input of "
                                   f"shape {x.shape} do not divide by upscale_factor^2 = {r * r}")
    *lead, c, h, w = x.shape
    y = fnp.reshape(x, (*lead, c // (r * r), r, r, h, w))
    n = len(lead)
    y = fnp.transpose(y, tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return fnp.reshape(y, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(x, downscale_factor: int):
    """The inverse of pixel_shuffle: (*, C, H r, W r) -> (*, C r^2, H, W)."""
    x, r = fnp.asarray(x), int(downscale_factor)
    if x.ndim < 3 or r < 1 or x.shape[-1] % r or x.shape[-2] % r:
        raise fg_errors.ShapeError(f"pixel_unshuffle: the last two sides of an input of shape {x.shape} must divide "
                                   f"by downscale_factor = {r}")
    *lead, c, h, w = x.shape
    y = fnp.reshape(x, (*lead, c, h // r, r, w // r, r))
    n = len(lead)
    y = fnp.transpose(y, tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return fnp.reshape(y, (*lead, c * r * r, h // r, w // r))


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): (N, C, H, W) -> (N, C kh kw, L), the L sliding
    windows' values, channel-major then the window's rows."""
    x, unbatched = Cv._batched_image(x, "unfold")
    kernel, dilation, stride = (Cv._pair(v, name) for v, name in ((kernel_size, "kernel_size"),
                                                                (dilation, "dilation"), (stride, "stride")))
    sides = tuple((p, p) for p in Cv._pair(padding, "padding"))
    windows = Cv._windows(x, kernel, stride, sides, dilation, "unfold")  # (N, C, Ho, Wo, kh, kw)
    n, c, ho, wo = windows.shape[:4]
    out = fnp.reshape(fnp.transpose(windows, (0, 1, 4, 5, 2, 3)), (n, c * kernel[0] * kernel[1], ho * wo))
    return out[0] if unbatched else out


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im): (N, C kh kw, L) -> (N, C, H, W), each window's values
    added back where unfold read them (overlaps sum): unfold's transpose."""
    x = fnp._float_arg(x)
    unbatched = x.ndim == 2
    x = fnp.expand_dims(x, 0) if unbatched else x
    kh, kw = Cv._pair(kernel_size, "kernel_size")
    if x.ndim != 3 or x.shape[1] % (kh * kw):
        raise fg_errors.ShapeError(f"fold: input of shape {x.shape} must be (N, C * {kh} * {kw}, L)")
    image = (x.shape[0], x.shape[1] // (kh * kw)) + Cv._pair(output_size, "output_size")
    windows, pullback = vjp(lambda y: unfold(y, (kh, kw), dilation, padding, stride),
                            fnp.zeros(image, x.dtype, device=x.device))
    if x.shape[2] != windows.shape[2]:
        raise fg_errors.ShapeError(f"fold: {x.shape[2]} blocks given, but output_size {image[2:]} with these "
                                   f"windows has {windows.shape[2]}")
    (out,) = pullback(x)
    return out[0] if unbatched else out


def _channel_dropout(x, rate: float, key, spatial: int, fname: str):
    """Dropout of whole channels: (N, C, *spatial) or unbatched (C, *spatial)."""
    x = fnp.asarray(x)
    if x.ndim not in (spatial + 1, spatial + 2):
        raise fg_errors.ShapeError(f"{fname} expects (N, C, ...) or (C, ...) input with {spatial} spatial axes, "
                                   f"got shape {x.shape}")
    return F._dropout(x, rate, key, x.shape[:x.ndim - spatial] + (1,) * spatial)


def dropout1d(x, rate: float, key=None):
    """Zero whole channels of (N, C, L) input with probability rate (identity without a key)."""
    return _channel_dropout(x, rate, key, 1, "dropout1d")


def dropout2d(x, rate: float, key=None):
    """Zero whole channels of (N, C, H, W) input with probability rate (identity without a key)."""
    return _channel_dropout(x, rate, key, 2, "dropout2d")


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each example's channels over their spatial axes (N, C, ...); with
    use_input_stats=False, by the given running statistics instead. Running statistics are not
    updated here (arrays are immutable): pass them only with use_input_stats=False."""
    x = fnp._float_arg(x)
    if x.ndim < 3:
        raise fg_errors.ShapeError(f"instance_norm expects (N, C, ...) input with spatial axes, got shape {x.shape}")
    x, running_mean, running_var, weight, bias = fnp.follow(x, running_mean, running_var, weight, bias)
    narrow, x = x.dtype, fnp._widened(x)  # float16 and bfloat16 normalised in float32, rounded once
    channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if use_input_stats:
        if running_mean is not None or running_var is not None:
            raise ValueError("instance_norm: running statistics cannot be updated in place; pass them only with "
                             "use_input_stats=False, or track them outside the function")
        out = F.group_norm(x, x.shape[1], None, None, eps)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and running_var")
        mean, var = (fnp.reshape(fnp._widened(v), channel) for v in (running_mean, running_var))
        out = (x - mean) / fnp.sqrt(var + eps)
    if weight is not None:
        out = out * fnp.reshape(weight, channel)
    return fnp._narrowed(out if bias is None else out + fnp.reshape(bias, channel), narrow)


def adaptive_max_pool2d(x, output_size, return_indices: bool = False):
    """Max over PyTorch's adaptive windows; return_indices gives each maximum's flat index in its
    plane (h W + w), as max_pool2d's."""
    x, unbatched = Cv._batched_image(x, "adaptive_max_pool2d")
    h, w = x.shape[2:]
    out_h, out_w = Cv._adaptive_size(x, output_size)
    if (h == 0 or w == 0) and out_h * out_w:
        raise fg_errors.ShapeError(f"adaptive_max_pool2d of an empty plane (input shape {x.shape})")
    values, positions = [], []
    for r0, r1 in Cv._adaptive_bounds(h, out_h):
        for c0, c1 in Cv._adaptive_bounds(w, out_w):
            window = fnp.reshape(x[:, :, r0:r1, c0:c1], x.shape[:2] + ((r1 - r0) * (c1 - c0),))
            flat = fnp.argmax(window, axis=-1)  # the first maximum takes the gradient, as PyTorch's
            values.append(fnp.take_along_axis(window, flat[..., None], axis=-1)[..., 0])
            if return_indices:
                positions.append((flat // (c1 - c0) + r0) * w + flat % (c1 - c0) + c0)
    shape = x.shape[:2] + (out_h, out_w)
    out = fnp.reshape(fnp.stack(values, -1), shape)
    out = out[0] if unbatched else out
    if not return_indices:
        return out
    idx = fnp.reshape(fnp.stack(positions, -1), shape)
    return out, idx[0] if unbatched else idx


def adaptive_avg_pool1d(x, output_size: int):
    """Mean over PyTorch's adaptive windows of (N, C, L) or (C, L) input."""
    x = fnp.asarray(x)
    if x.ndim not in (2, 3):
        raise fg_errors.ShapeError(f"adaptive_avg_pool1d expects (N, C, L) or (C, L) input, got shape {x.shape}")
    out = Cv.adaptive_avg_pool2d(fnp.expand_dims(x, -2), (1, output_size))
    return fnp.squeeze(out, -2)


class _Fixed(Module):
    """A layer applying fn(x, *args) with its arguments fixed when made (static structure)."""
    fn = None

    def __init__(self, *args):
        self.args = args

    def __call__(self, x, *, key=None):
        return type(self).fn(x, *self.args)


class PixelShuffle(_Fixed):
    fn = staticmethod(pixel_shuffle)

    def __init__(self, upscale_factor: int):
        super().__init__(upscale_factor)


class PixelUnshuffle(_Fixed):
    fn = staticmethod(pixel_unshuffle)

    def __init__(self, downscale_factor: int):
        super().__init__(downscale_factor)


class Unfold(_Fixed):
    fn = staticmethod(unfold)

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)


class Fold(_Fixed):
    fn = staticmethod(fold)

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(output_size, kernel_size, dilation, padding, stride)


class AdaptiveMaxPool2d(_Fixed):
    fn = staticmethod(adaptive_max_pool2d)

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size, return_indices)


class AdaptiveAvgPool1d(_Fixed):
    fn = staticmethod(adaptive_avg_pool1d)

    def __init__(self, output_size: int):
        super().__init__(output_size)


class Dropout1d(Module):
    """Channel dropout; active when called with a key (training), as nn.Dropout."""

    def __init__(self, p: float = 0.5):
        self.p = p

    def __call__(self, x, *, key=None):
        return dropout1d(x, self.p, key)


class Dropout2d(Dropout1d):
    def __call__(self, x, *, key=None):
        return dropout2d(x, self.p, key)


class InstanceNorm1d(Module):
    """torch.nn.InstanceNorm1d: per-example, per-channel normalisation over the spatial axes of
    (N, C, L) or (C, L) input, with a learned per-channel scale and shift where affine (PyTorch's
    default: not affine). Running statistics (track_running_stats) are not kept: BatchNorm keeps them."""
    spatial = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, *, key=None, dtype=None):
        if track_running_stats:
            raise ValueError(f"{type(self).__name__}: track_running_stats is not supported (instance statistics "
                             f"only); BatchNorm keeps running statistics")
        self.num_features, self.eps = num_features, eps
        dtype = dtype or fnp.float32
        self.weight = fnp.ones((num_features,), dtype) if affine else None
        self.bias = fnp.zeros((num_features,), dtype) if affine else None

    def __call__(self, x, *, key=None):
        x = fnp.asarray(x)
        batched = x.ndim == self.spatial + 2
        if x.ndim not in (self.spatial + 1, self.spatial + 2) or x.shape[1 if batched else 0] != self.num_features:
            raise fg_errors.ShapeError(f"{type(self).__name__}({self.num_features}): input of shape {x.shape} is not "
                                       f"(N, {self.num_features}, ...) with {self.spatial} spatial axes")
        out = instance_norm(x if batched else fnp.expand_dims(x, 0), weight=self.weight, bias=self.bias, eps=self.eps)
        return out if batched else out[0]


class InstanceNorm2d(InstanceNorm1d):
    """torch.nn.InstanceNorm2d: as InstanceNorm1d over (N, C, H, W) or (C, H, W) input."""
    spatial = 2


def _pad_widths(padding, dims: int) -> tuple:
    """A padding layer's widths as Cv.pad takes them (last axis first): an int pads every side."""
    if isinstance(padding, int):
        return (padding,) * (2 * dims)
    padding = tuple(padding)
    if len(padding) != 2 * dims:
        sides = ", ".join(["left, right", "top, bottom", "front, back"][:dims])
        raise ValueError(f"padding must be an int or {2 * dims} ints ({sides}), got {padding}")
    return padding


class _Pad(Module):
    """Cv.pad(x, padding, mode) over the last `dims` axes (torch.nn's padding layers)."""
    dims, mode = 1, "constant"

    def __init__(self, padding):
        self.padding = _pad_widths(padding, self.dims)

    def __call__(self, x, *, key=None):
        return Cv.pad(x, self.padding, self.mode)


class ZeroPad1d(_Pad):
    """Zeros on both sides of the last axis (_Pad's constant mode)."""


class ZeroPad2d(ZeroPad1d):
    dims = 2


class ZeroPad3d(ZeroPad1d):
    dims = 3


class ReflectionPad1d(_Pad):
    mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    dims = 2


class ReflectionPad3d(ReflectionPad1d):
    dims = 3


class ReplicationPad1d(_Pad):
    mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    dims = 2


class ReplicationPad3d(ReplicationPad1d):
    dims = 3


class CircularPad1d(_Pad):
    mode = "circular"


class CircularPad2d(CircularPad1d):
    dims = 2


class CircularPad3d(CircularPad1d):
    dims = 3


class ConstantPad1d(_Pad):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def __call__(self, x, *, key=None):
        return Cv.pad(x, self.padding, "constant", self.value)


class ConstantPad2d(ConstantPad1d):
    dims = 2


class ConstantPad3d(ConstantPad1d):
    dims = 3


class Unflatten(Module):
    """Axis dim split into unflattened_size (torch.nn.Unflatten)."""

    def __init__(self, dim: int, unflattened_size):
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def __call__(self, x, *, key=None):
        x = fnp.asarray(x)
        axis = fnp._normalize_axis(self.dim, x.ndim)
        known = math.prod(s for s in self.unflattened_size if s != -1)
        fits = (x.shape[axis] % known == 0) if -1 in self.unflattened_size and known else known == x.shape[axis]
        if not fits:
            raise fg_errors.ShapeError(f"Unflatten: axis {self.dim} of size {x.shape[axis]} cannot become "
                                       f"{self.unflattened_size}")
        return fnp.reshape(x, x.shape[:axis] + self.unflattened_size + x.shape[axis + 1:])


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8):
        self.dim, self.eps = dim, eps

    def __call__(self, x1, x2, *, key=None):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        self.p, self.eps, self.keepdim = p, eps, keepdim

    def __call__(self, x1, x2, *, key=None):
        return pairwise_distance(x1, x2, self.p, self.eps, self.keepdim)

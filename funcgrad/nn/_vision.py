"""torch.nn.functional's spatial sampling and the image layers around it: affine_grid and
grid_sample (spatial transformers), local_response_norm, power-average pooling (lp_pool1d/2d),
channel_shuffle, max unpooling, adaptive_max_pool1d; with their layers and Softmax2d and the
Upsampling*2d aliases. All compose existing primitives, so gradients, jit and vmap follow."""
from __future__ import annotations

import itertools

import numpy as np

from .. import errors as fg_errors
from .. import numpy as fnp
from ..ops import conv as C
from ..trace import bind
from . import _convolution as Cv
from . import _functional as F
from ._pixels import _Fixed, adaptive_max_pool2d
from .layers import Upsample

__all__ = ["affine_grid", "grid_sample", "local_response_norm", "lp_pool1d", "lp_pool2d", "channel_shuffle",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "adaptive_max_pool1d"]
LAYERS = ["LocalResponseNorm", "LPPool1d", "LPPool2d", "ChannelShuffle", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
          "AdaptiveMaxPool1d", "Softmax2d", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


# ---- affine_grid / grid_sample ------------------------------------------------------------------
def _base_coordinates(steps: int, align_corners: bool, dtype) -> np.ndarray:
    """PyTorch's normalised pixel positions along one axis: -1 and 1 are the end pixels' centres
    (align_corners) or their outer edges."""
    if steps <= 1:
        return np.zeros(max(steps, 0), dtype)
    line = np.linspace(-1.0, 1.0, steps)
    return (line if align_corners else line * (steps - 1) / steps).astype(dtype)


def affine_grid(theta, size, align_corners: bool = False):
    """Sampling positions (N, H, W, 2) of the affine maps theta (N, 2, 3) over an output of size
    (N, C, H, W), or (N, D, H, W, 3) of theta (N, 3, 4) over (N, C, D, H, W): each output pixel's
    normalised (x, y[, z]) times theta, as torch.nn.functional.affine_grid."""
    theta = fnp._float_arg(theta)
    size = tuple(int(s) for s in size)
    d = len(size) - 2
    if d not in (2, 3) or tuple(theta.shape) != (size[0], d, d + 1):
        raise fg_errors.ShapeError(f"affine_grid: size {size} needs theta of shape (N, 2, 3) for 4-D or (N, 3, 4) "
                                   f"for 5-D sizes, with N = {size[0] if size else '?'}; got theta {theta.shape}")
    if min(size[2:]) <= 0:
        raise ValueError(f"affine_grid: spatial sizes must be positive, got size {size}")
    spatial = size[2:]
    axes = [_base_coordinates(s, align_corners, theta.dtype) for s in reversed(spatial)]  # x (width) first
    mesh = np.meshgrid(*axes[::-1], indexing="ij")  # over (D,) H, W
    base = np.stack([*mesh[::-1], np.ones(spatial, theta.dtype)], axis=-1).reshape(-1, d + 1)
    grid = fnp.matmul(fnp._beside(base, theta), fnp.swapaxes(theta, 1, 2))  # (N, pixels, d)
    return fnp.reshape(grid, (size[0],) + spatial + (d,))


def _unnormalized(coord, size: int, align_corners: bool):
    return (coord + 1.0) / 2.0 * (size - 1) if align_corners else ((coord + 1.0) * size - 1.0) / 2.0


def _reflected(coord, low2: int, high2: int):
    """coord reflected into [low2 / 2, high2 / 2] by PyTorch's rule (the bounds given doubled)."""
    if low2 == high2:
        return fnp.zeros_like(coord)
    low, span = low2 / 2.0, (high2 - low2) / 2.0
    dist = fnp.abs(coord - low)
    extra = fnp.fmod(dist, span)
    flips = fnp.floor(dist / span)
    return fnp.where(fnp.fmod(flips, 2.0) == 0.0, extra + low, span - extra + low)


def _padded_coordinate(coord, size: int, padding_mode: str, align_corners: bool):
    """A source coordinate moved into the image by the padding mode (zeros leaves it)."""
    if padding_mode == "zeros":
        return coord
    if padding_mode == "reflection":
        coord = _reflected(coord, 0, 2 * (size - 1)) if align_corners else _reflected(coord, -1, 2 * size - 1)
    # PyTorch's clip_coordinates_set_grad: the bounds count as outside, with a zero gradient there
    # (a clip's would be 1); its clamp sends NaN to the low end
    high = float(size - 1)
    coord = fnp.where(coord <= 0.0, 0.0, fnp.where(coord >= high, high, coord))
    return fnp.where(fnp.isnan(coord), 0.0, coord)


def _gather_taps(flat, spatial, taps):
    """Sum of weight * value over taps [(integer coordinates per axis (N, P), weight (N, P))] read
    from flat (N, C, prod(spatial)); a tap outside the image reads 0."""
    total = None
    for coords, weight in taps:
        inside, index = None, None
        for c, size in zip(coords, spatial):
            ok = (c >= 0) & (c <= size - 1)
            inside = ok if inside is None else inside & ok
            c = fnp.astype(fnp.where(ok, c, 0), np.int64)  # a NaN position reads pixel 0, then drops
            index = c if index is None else index * size + c
        values = fnp.take_along_axis(flat, fnp.expand_dims(index, 1), axis=2)
        term = fnp.where(fnp.expand_dims(inside, 1), values, 0.0) * fnp.expand_dims(weight, 1)
        total = term if total is None else total + term
    return total


def _cubic_weights(t):
    """PyTorch's cubic convolution coefficients (A = -0.75) of the four taps around t in [0, 1)."""
    a = -0.75

    def near(x):
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0

    def far(x):
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)


def grid_sample(x, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool = False):
    """x (N, C, H, W) sampled at grid (N, Ho, Wo, 2) of normalised (x, y) positions in [-1, 1]
    (or x (N, C, D, H, W) at (N, Do, Ho, Wo, 3)), as torch.nn.functional.grid_sample: modes
    bilinear, nearest and (4-D) bicubic; padding zeros, border or reflection. Differentiable in x
    and (except nearest) in grid."""
    x, grid = fnp._float_arg(x), fnp._float_arg(grid)
    x, grid = fnp.follow(x, grid)
    d = x.ndim - 2
    if d not in (2, 3) or grid.ndim != x.ndim or grid.shape[0] != x.shape[0] or grid.shape[-1] != d:
        raise fg_errors.ShapeError(f"grid_sample: input (N, C, H, W) takes a grid (N, Ho, Wo, 2) and (N, C, D, H, W) "
                                   f"one (N, Do, Ho, Wo, 3) with the same N; got input {x.shape}, grid {grid.shape}")
    if mode not in ("bilinear", "nearest", "bicubic") or (mode == "bicubic" and d != 2):
        raise ValueError(f"grid_sample: mode must be 'bilinear', 'nearest' or (4-D input) 'bicubic', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}")
    dtype = fnp.result_type(x, grid)
    x, grid = fnp.astype(x, dtype), fnp.astype(grid, dtype)
    n, c, spatial, out_spatial = x.shape[0], x.shape[1], tuple(x.shape[2:]), tuple(grid.shape[1:-1])
    flat = fnp.reshape(x, (n, c, -1))
    points = fnp.reshape(grid, (n, -1, d))
    # grid's last axis is (x, y[, z]): the image's axes in reverse
    coords = [_unnormalized(points[..., d - 1 - i], size, align_corners) for i, size in enumerate(spatial)]
    if mode == "bicubic":
        taps = _bicubic_taps(coords, spatial, padding_mode, align_corners)
    else:
        coords = [_padded_coordinate(co, size, padding_mode, align_corners) for co, size in zip(coords, spatial)]
        if mode == "nearest":
            taps = [([fnp.round(co) for co in coords], fnp.ones_like(coords[0]))]
        else:
            taps = _linear_taps(coords)
    out = _gather_taps(flat, spatial, taps)
    return fnp.reshape(out, (n, c) + out_spatial)


def _linear_taps(coords):
    """The 2^d corners around each point with their (bi/tri)linear weights."""
    lows = [fnp.floor(co) for co in coords]
    taps = []
    for corner in itertools.product((0, 1), repeat=len(coords)):
        weight, at = None, []
        for co, low, up in zip(coords, lows, corner):
            at.append(low + up)
            w = co - low if up else low + 1.0 - co
            weight = w if weight is None else weight * w
        taps.append((at, weight))
    return taps


def _bicubic_taps(coords, spatial, padding_mode: str, align_corners: bool):
    """The 4x4 taps of bicubic sampling; padding moves each tap (PyTorch's get_value_bounded)."""
    lows = [fnp.floor(co) for co in coords]
    weights = [_cubic_weights(co - low) for co, low in zip(coords, lows)]
    taps = []
    for offsets in itertools.product(range(4), repeat=2):
        at = [_padded_coordinate(low + (k - 1.0), size, padding_mode, align_corners)
              for low, k, size in zip(lows, offsets, spatial)]
        at = [fnp.trunc(a) for a in at] if padding_mode != "zeros" else at
        taps.append((at, weights[0][offsets[0]] * weights[1][offsets[1]]))
    return taps


# ---- channel-wise normalisation and pooling -----------------------------------------------------
def local_response_norm(x, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """x / (k + alpha * mean(x^2 over `size` neighbouring channels, zero-padded))^beta over input
    (N, C, ...), as torch.nn.functional.local_response_norm (AlexNet's LRN)."""
    x = fnp._float_arg(x)
    if x.ndim < 3:
        raise fg_errors.ShapeError(f"local_response_norm expects (N, C, ...) input of 3 or more dimensions, "
                                   f"got shape {x.shape}")
    if int(size) < 1:
        raise ValueError(f"local_response_norm: size must be positive, got {size}")
    if x.size == 0:
        return x
    size, channels = int(size), x.shape[1]
    widths = [(0, 0)] * x.ndim
    widths[1] = (size // 2, (size - 1) // 2)
    square = fnp.pad(x * x, widths)
    window = sum(square[:, i:i + channels] for i in range(size))
    return x / (window * (alpha / size) + k) ** beta


def _lp_pooled(mean, count: int, norm_type: float):
    return (fnp.sign(mean) * F.relu(fnp.abs(mean)) * count) ** (1.0 / norm_type)


def lp_pool2d(x, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """(sum over each window of x^p)^(1/p), as torch.nn.functional.lp_pool2d (p = norm_type)."""
    kh, kw = Cv._pair(kernel_size, "kernel_size")
    x = fnp._float_arg(x)
    mean = Cv.avg_pool2d(x ** norm_type, (kh, kw), stride, 0, ceil_mode)
    return _lp_pooled(mean, kh * kw, norm_type)


def lp_pool1d(x, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """(sum over each window of x^p)^(1/p) along the last axis of (N, C, L) or (C, L) input."""
    k = Cv._single(kernel_size, "kernel_size")
    x = fnp._float_arg(x)
    mean = Cv.avg_pool1d(x ** norm_type, k, stride, 0, ceil_mode)
    return _lp_pooled(mean, k, norm_type)


def channel_shuffle(x, groups: int):
    """(N, C, *) with its channels regrouped: channel g * (C / groups) + i moves to i * groups + g
    (ShuffleNet's, torch.nn.functional.channel_shuffle)."""
    x = fnp.asarray(x)
    groups = int(groups)
    if x.ndim < 3 or groups < 1 or x.shape[1] % groups:
        raise fg_errors.ShapeError(f"channel_shuffle needs (N, C, *) input with C divisible by groups = {groups}, "
                                   f"got shape {x.shape}")
    n, c, *rest = x.shape
    y = fnp.reshape(x, (n, groups, c // groups, *rest))
    return fnp.reshape(fnp.swapaxes(y, 1, 2), x.shape)


def adaptive_max_pool1d(x, output_size: int, return_indices: bool = False):
    """Max over PyTorch's adaptive windows of (N, C, L) or (C, L) input; return_indices gives each
    maximum's position along L."""
    out = adaptive_max_pool2d(Cv._as_image(x, "adaptive_max_pool1d"), (1, Cv._single(output_size, "output_size")),
                              return_indices)
    return tuple(fnp.squeeze(o, -2) for o in out) if return_indices else fnp.squeeze(out, -2)


# ---- max unpooling ------------------------------------------------------------------------------
def _unpool_size(in_hw, kernel, stride, padding, output_size, fname: str) -> tuple:
    """PyTorch's _unpool_output_size: (in - 1) stride - 2 padding + kernel per axis, or the given
    output_size (its trailing axes) within a stride of that."""
    default = tuple((i - 1) * s - 2 * p + k for i, k, s, p in zip(in_hw, kernel, stride, padding))
    if output_size is None:
        size = default
    else:
        size = tuple(int(v) for v in output_size)[-len(default):]
        if len(tuple(output_size)) not in (len(default), len(default) + 2) or any(
                not d - s < v < d + s for v, d, s in zip(size, default, stride)):
            raise ValueError(f"{fname}: output_size {tuple(output_size)} must be {len(default)} sizes (or with the "
                             f"batch and channel axes) each between {tuple(d - s for d, s in zip(default, stride))} "
                             f"and {tuple(d + s for d, s in zip(default, stride))} exclusive")
    if min(size) <= 0:
        raise ValueError(f"{fname}: the output size {size} is not positive")
    return size


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d(return_indices=True): zeros of the unpooled size with each value
    of x (N, C, H, W) or (C, H, W) at its index in the output plane (torch.nn.functional's)."""
    x, unbatched = Cv._batched_image(fnp._float_arg(x), "max_unpool2d")
    kernel = Cv._pair(kernel_size, "kernel_size")
    stride = kernel if stride is None else Cv._pair(stride, "stride")
    size = _unpool_size(x.shape[2:], kernel, stride, Cv._pair(padding, "padding"), output_size, "max_unpool2d")
    out = _unpool(x, fnp.expand_dims(fnp.asarray(indices), 0) if unbatched else indices, size, "max_unpool2d")
    return out[0] if unbatched else out


def _unpool(x, indices, size: tuple, fname: str):
    """x (N, C, *) placed at its flat indices into zeros of spatial size `size`."""
    indices = fnp.asarray(indices)
    if tuple(indices.shape) != tuple(x.shape) or indices.dtype.kind not in "iu":
        raise fg_errors.ShapeError(f"{fname}: indices must be integers of the input's shape {x.shape}, got "
                                   f"{indices.dtype} of shape {indices.shape}")
    volume = int(np.prod(size))
    known = fnp.concrete_or_none(indices)
    if known is not None and known.size and (known.min() < 0 or known.max() >= volume):
        what = "planes" if len(size) == 2 else "volumes"
        raise IndexError(f"{fname}: indices span [{known.min()}, {known.max()}], outside the output {what} of "
                         f"{'x'.join(map(str, size))} = {volume} elements")
    n, c = x.shape[:2]
    # PyTorch's rule: each position holds one of the values sent there (a max that two
    # overlapping windows chose comes twice), and every value gets its position's gradient. The
    # set carries the values; a zero-valued scatter-add carries the gradient (its transpose is
    # that gather), kept at zero where a value is not finite.
    values = fnp.reshape(x, (n, c, -1))
    flat = fnp.zeros((n, c, volume), x.dtype, device=x.device)
    out = fnp.put_along_axis(flat, fnp.reshape(indices, (n, c, -1)), fnp.stop_gradient(values), axis=2,
                             inplace=False)
    plane = (size[0], volume // size[0])  # a volume's flat indices are those of its (D, H W) plane
    carrier = fnp.reshape(fnp.where(fnp.isfinite(x), x - fnp.stop_gradient(x), 0.0), (n, c, 1, -1))
    gradient = bind(C.scatter_plane_p, carrier, fnp.reshape(indices, (n, c, 1, -1)), plane=plane)
    return fnp.reshape(out, (n, c) + size) + fnp.reshape(gradient, (n, c) + size)


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d(return_indices=True) on (N, C, D, H, W) or (C, D, H, W) input."""
    x = fnp._float_arg(x)
    if x.ndim not in (4, 5):
        raise fg_errors.ShapeError(f"max_unpool3d expects (N, C, D, H, W) or (C, D, H, W) input, got shape {x.shape}")
    unbatched = x.ndim == 4
    x = fnp.expand_dims(x, 0) if unbatched else x
    kernel = Cv._ints(kernel_size, 3, "kernel_size")
    stride = kernel if stride is None else Cv._ints(stride, 3, "stride")
    size = _unpool_size(x.shape[2:], kernel, stride, Cv._ints(padding, 3, "padding"), output_size, "max_unpool3d")
    out = _unpool(x, fnp.expand_dims(fnp.asarray(indices), 0) if unbatched else indices, size, "max_unpool3d")
    return out[0] if unbatched else out


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_unpool2d along the last axis of (N, C, L) or (C, L) input."""
    k = Cv._single(kernel_size, "kernel_size")
    s = k if stride is None else Cv._single(stride, "stride")
    size = None if output_size is None else (1, tuple(output_size)[-1])
    out = max_unpool2d(Cv._as_image(x, "max_unpool1d"), fnp.expand_dims(fnp.asarray(indices), -2), (1, k), (1, s),
                       (0, Cv._single(padding, "padding")), size)
    return fnp.squeeze(out, -2)


# ---- layers -------------------------------------------------------------------------------------
class LocalResponseNorm(_Fixed):
    fn = staticmethod(local_response_norm)

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__(size, alpha, beta, k)


class LPPool2d(_Fixed):
    fn = staticmethod(lp_pool2d)

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__(norm_type, kernel_size, stride, ceil_mode)


class LPPool1d(LPPool2d):
    fn = staticmethod(lp_pool1d)


class ChannelShuffle(_Fixed):
    fn = staticmethod(channel_shuffle)

    def __init__(self, groups: int):
        super().__init__(groups)


class AdaptiveMaxPool1d(_Fixed):
    fn = staticmethod(adaptive_max_pool1d)

    def __init__(self, output_size: int, return_indices: bool = False):
        super().__init__(output_size, return_indices)


class MaxUnpool2d(_Fixed):
    """Called as layer(x, indices, output_size=None), as torch.nn.MaxUnpool2d."""
    fn = staticmethod(max_unpool2d)

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__(kernel_size, stride, padding)

    def __call__(self, x, indices, output_size=None, *, key=None):
        return type(self).fn(x, indices, *self.args, output_size)


class MaxUnpool3d(MaxUnpool2d):
    fn = staticmethod(max_unpool3d)


class MaxUnpool1d(MaxUnpool2d):
    fn = staticmethod(max_unpool1d)


class Softmax2d(_Fixed):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input."""

    def __call__(self, x, *, key=None):
        x = fnp.asarray(x)
        if x.ndim not in (3, 4):
            raise fg_errors.ShapeError(f"Softmax2d expects (N, C, H, W) or (C, H, W) input, got shape {x.shape}")
        return F.softmax(x, axis=-3)


def UpsamplingNearest2d(size=None, scale_factor=None):  # noqa: N802  (torch.nn's constructors)
    return Upsample(size, scale_factor, "nearest")


def UpsamplingBilinear2d(size=None, scale_factor=None):  # noqa: N802
    return Upsample(size, scale_factor, "bilinear", align_corners=True)

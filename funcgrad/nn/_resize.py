"""interpolate: torch.nn.functional.interpolate on (N, C, *spatial) arrays of 1, 2 or 3 spatial
axes. Every mode is separable, so each spatial axis is resampled in turn as a sum over a few taps:
output[i] = sum_t weight[i, t] * input[index[i, t]], the indices and weights computed on the host
with PyTorch's rules (source coordinates, edge clamping, A = -0.75 cubic, antialiasing filters) and
the sum made of take and multiply, so gradients, jit and vmap follow and the cost stays linear in
the image (a dense resampling matrix would be quadratic)."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import errors as fg_errors
from .. import numpy as fnp

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_MODES = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "area": (1, 2, 3), "linear": (1,), "bilinear": (2,),
          "bicubic": (2,), "trilinear": (3,)}
_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
_CUBIC_A = -0.75  # PyTorch's (and TensorFlow's) bicubic; its antialiased filter uses -0.5 (PIL's)


def _per_axis(value, count: int, name: str) -> tuple:
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * count
    if len(values) != count:
        raise fg_errors.ShapeError(f"interpolate: {name} {value!r} has {len(values)} entries for an input with "
                                   f"{count} spatial axes")
    return values


def _output_size(spatial, size, scale_factor, recompute_scale_factor):
    """(output sizes, the scale per axis the source coordinates use, or None where in / out is meant)."""
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate needs exactly one of size and scale_factor")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("interpolate: recompute_scale_factor is not meaningful with an explicit size")
        out = tuple(int(s) for s in _per_axis(size, len(spatial), "size"))
        scales = (None,) * len(spatial)
    else:
        factors = tuple(float(f) for f in _per_axis(scale_factor, len(spatial), "scale_factor"))
        if not all(f > 0 and math.isfinite(f) for f in factors):
            raise ValueError(f"interpolate: scale_factor must be positive and finite, got {scale_factor!r}")
        out = tuple(math.floor(n * f) for n, f in zip(spatial, factors))
        scales = (None,) * len(spatial) if recompute_scale_factor else factors
    if min(out, default=1) <= 0:
        raise ValueError(f"interpolate: the output size {out} of an input of spatial size {tuple(spatial)} must be "
                         f"positive on every axis")
    return out, scales


def _scale(n_in: int, n_out: int, factor, align_corners: bool, dtype):
    """PyTorch's area_pixel_compute_scale, in the precision of its kernels (float for float32 data)."""
    if align_corners:
        return dtype((n_in - 1) / (n_out - 1)) if n_out > 1 else dtype(0)
    return dtype(1.0 / factor) if factor is not None else dtype(n_in / n_out)


def _nearest_taps(n_in, n_out, factor, exact: bool):
    scale = _scale(n_in, n_out, factor, False, np.float32)
    offset = np.float32(0.5) if exact else np.float32(0)
    src = np.floor((np.arange(n_out, dtype=np.float32) + offset) * scale).astype(np.int64)
    return np.minimum(src, n_in - 1)[:, None], None


def _linear_taps(n_in, n_out, factor, align_corners, dtype):
    scale = _scale(n_in, n_out, factor, align_corners, dtype)
    dst = np.arange(n_out, dtype=dtype)
    src = dst * scale if align_corners else np.maximum(scale * (dst + dtype(0.5)) - dtype(0.5), dtype(0))
    lo = np.floor(src).astype(np.int64)
    hi = np.where(lo < n_in - 1, lo + 1, lo)
    frac = np.clip(src - lo, 0, 1)
    return np.stack([lo, hi], 1), np.stack([1 - frac, frac], 1)


def _cubic_taps(n_in, n_out, factor, align_corners, dtype):
    scale = _scale(n_in, n_out, factor, align_corners, dtype)
    dst = np.arange(n_out, dtype=dtype)
    src = dst * scale if align_corners else scale * (dst + dtype(0.5)) - dtype(0.5)  # not clamped (PyTorch's)
    start = np.floor(src)
    t = (src - start)[:, None]
    distance = np.concatenate([t + 1, t, 1 - t, 2 - t], axis=1)
    index = np.clip(start.astype(np.int64)[:, None] + np.arange(-1, 3), 0, n_in - 1)
    return index, _cubic(distance, _CUBIC_A)


def _cubic(x, a):
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0))


def _antialiased_taps(n_in, n_out, factor, align_corners, cubic: bool):
    """PyTorch's antialiased filters (separable, as PIL's): a triangle or a = -0.5 cubic stretched
    over the source pixels an output pixel covers when shrinking, normalised to sum to one."""
    scale = float(_scale(n_in, n_out, factor, align_corners, np.float64))
    support = (2.0 if cubic else 1.0) * max(scale, 1.0)
    stretch = 1.0 / scale if scale >= 1.0 else 1.0
    center = scale * (np.arange(n_out) + 0.5)
    first = np.maximum((center - support + 0.5).astype(np.int64), 0)
    count = np.minimum((center + support + 0.5).astype(np.int64), n_in) - first
    taps = np.arange(max(int(count.max()), 1))
    index = first[:, None] + taps
    x = (index - center[:, None] + 0.5) * stretch
    weight = _cubic(x, -0.5) if cubic else np.maximum(1 - np.abs(x), 0)
    weight = np.where(taps < count[:, None], weight, 0)
    weight = weight / np.maximum(weight.sum(1, keepdims=True), np.finfo(np.float64).tiny)
    return np.minimum(index, n_in - 1), weight


def _area_taps(n_in, n_out):
    """adaptive_avg_pool's windows: [floor(i * in / out), ceil((i + 1) * in / out))."""
    start = np.arange(n_out) * n_in // n_out
    stop = -(-(np.arange(n_out) + 1) * n_in // n_out)
    taps = np.arange(int((stop - start).max()))
    inside = taps < (stop - start)[:, None]
    index = np.minimum(start[:, None] + taps, n_in - 1)
    return index, inside / (stop - start)[:, None]


def _resample(x, axis: int, index, weight):
    """sum over taps t of weight[:, t] * x[..., index[:, t], ...] along axis (a take where one tap)."""
    if weight is None:
        return fnp.take(x, index[:, 0], axis=axis)
    trailing = (1,) * (x.ndim - axis - 1)
    out = None
    for t in range(index.shape[1]):
        w = fnp._placed(fnp.asarray(weight[:, t].astype(x.dtype).reshape((-1,) + trailing)), x.device)
        term = fnp.take(x, index[:, t], axis=axis) * w
        out = term if out is None else out + term
    return out


def interpolate(x, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False):
    """Resize (N, C, L), (N, C, H, W) or (N, C, D, H, W) arrays as torch.nn.functional.interpolate:
    modes nearest, nearest-exact, area (adaptive average pooling), linear (3-D input), bilinear and
    bicubic (4-D), trilinear (5-D); align_corners for the interpolating modes (False by default);
    antialias for bilinear and bicubic. Integer images come back rounded to their dtype."""
    x = fnp.asarray(x)
    if mode not in _MODES:
        raise ValueError(f"interpolate mode must be one of {sorted(_MODES)}, got {mode!r}")
    if x.ndim not in (3, 4, 5):
        raise fg_errors.ShapeError(f"interpolate expects (N, C, L), (N, C, H, W) or (N, C, D, H, W) input, got "
                                   f"shape {x.shape}")
    spatial = x.shape[2:]
    if len(spatial) not in _MODES[mode]:
        raise fg_errors.ShapeError(f"interpolate: mode {mode!r} takes {_MODES[mode][0] + 2}-D input, got shape "
                                   f"{x.shape}")
    if align_corners is not None and mode not in _INTERPOLATING:
        raise ValueError(f"interpolate: align_corners can only be set with the modes {_INTERPOLATING}, not {mode!r}")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError(f"interpolate: antialias is for the bilinear and bicubic modes, not {mode!r}")
    if 0 in spatial:
        raise fg_errors.ShapeError(f"interpolate: an input of shape {x.shape} has no pixels to resample")
    out_size, factors = _output_size(spatial, size, scale_factor, recompute_scale_factor)
    integer = not dtypes.is_inexact(x.dtype)
    if mode.startswith("nearest"):
        taps = [_nearest_taps(n, m, f, mode == "nearest-exact") for n, m, f in zip(spatial, out_size, factors)]
    else:
        original = x.dtype
        if x.dtype not in (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128):
            x = fnp.astype(x, dtypes.float32)  # integers, float16 and bfloat16 accumulate in float32
        precision = np.float64 if x.dtype in (dtypes.float64, dtypes.complex128) else np.float32
        corners = bool(align_corners)
        if mode == "area":
            taps = [_area_taps(n, m) for n, m in zip(spatial, out_size)]
        elif antialias:
            taps = [_antialiased_taps(n, m, f, corners, mode == "bicubic")
                    for n, m, f in zip(spatial, out_size, factors)]
        elif mode == "bicubic":
            taps = [_cubic_taps(n, m, f, corners, precision) for n, m, f in zip(spatial, out_size, factors)]
        else:
            taps = [_linear_taps(n, m, f, corners, precision) for n, m, f in zip(spatial, out_size, factors)]
    for axis, (index, weight) in enumerate(taps, start=2):
        identity = weight is None and np.array_equal(index[:, 0], np.arange(x.shape[axis]))
        if not identity:  # nearest resampling to the same size leaves the axis as it is
            x = _resample(x, axis, index, weight)
    if mode.startswith("nearest") or x.dtype == original:
        return x
    if integer:
        info = np.iinfo(original) if original != dtypes.bool_ else None
        rounded = fnp.round(x) if info is None else fnp.clip(fnp.round(x), info.min, info.max)
        return fnp.astype(rounded, original)
    return fnp.astype(x, original)


def upsample(x, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None):
    """PyTorch's deprecated name for interpolate."""
    return interpolate(x, size, scale_factor, mode, align_corners)


def upsample_nearest(x, size=None, scale_factor=None):
    return interpolate(x, size, scale_factor, "nearest")


def upsample_bilinear(x, size=None, scale_factor=None):
    """Bilinear with align_corners=True, as PyTorch's deprecated upsample_bilinear."""
    return interpolate(x, size, scale_factor, "bilinear", align_corners=True)

"""Fractional max pooling (Graham, 2014; torch.nn.functional.fractional_max_pool2d / 3d): windows of
kernel_size placed at pseudo-random, increasing starts that cover the input with output_size of
them. Starts follow PyTorch's interval rule from one uniform sample per plane and axis, so given
the same samples (_random_samples) the result is PyTorch's; otherwise they are drawn from key.
"""
from __future__ import annotations

import math

import numpy as np

from .. import errors as fg_errors
from .. import numpy as fnp
from .. import random
from ._convolution import _ints
from .module import Module

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d"]
LAYERS = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


def _starts(sample, size: int, out: int, pool: int):
    """(..., out) window starts along an axis: trunc((i + u) a) - trunc(u a) with a = (size - pool)
    / (out - 1), the last window flush with the end (PyTorch's generate_intervals, in x's dtype)."""
    if out == 1:
        return fnp.full(sample.shape + (1,), size - pool, dtype=np.int64)
    alpha = fnp.asarray(size - pool, sample.dtype) / fnp.asarray(out - 1, sample.dtype)
    u = sample[..., None]
    steps = fnp.arange(out - 1, dtype=sample.dtype)
    inner = fnp.astype(fnp.floor((steps + u) * alpha), np.int64) - fnp.astype(fnp.floor(u * alpha), np.int64)
    return fnp.concatenate([inner, fnp.full(sample.shape + (1,), size - pool, dtype=np.int64)], axis=-1)


def _fractional(x, dims: int, kernel_size, output_size, output_ratio, return_indices, samples, key, fname):
    x = fnp.asarray(x)
    if x.ndim not in (dims + 1, dims + 2):
        raise fg_errors.ShapeError(f"{fname} expects (N, C, *{dims} spatial) or (C, *spatial) input, got shape "
                                   f"{x.shape}")
    unbatched = x.ndim == dims + 1
    x = fnp.expand_dims(x, 0) if unbatched else x
    spatial = tuple(x.shape[2:])
    pool = _ints(kernel_size, dims, "kernel_size")
    if (output_size is None) == (output_ratio is None):
        raise ValueError(f"{fname} needs exactly one of output_size and output_ratio")
    if output_size is not None:
        out = _ints(output_size, dims, "output_size")
    else:
        ratio = (float(output_ratio),) * dims if np.ndim(output_ratio) == 0 else tuple(map(float, output_ratio))
        if len(ratio) != dims or not all(0 < r < 1 for r in ratio):
            raise ValueError(f"{fname}: output_ratio must be {dims} numbers in (0, 1), got {output_ratio!r}")
        out = tuple(int(n * r) for n, r in zip(spatial, ratio))
    for axis, (n, o, k) in enumerate(zip(spatial, out, pool)):
        if k < 1 or o < 1 or o + k - 1 > n:
            raise ValueError(f"{fname}: output size {o} with kernel {k} does not fit input size {n} along spatial "
                             f"axis {axis} (needs output + kernel - 1 <= input)")
    batch, channels = x.shape[:2]
    if samples is None:
        if key is None:
            raise ValueError(f"{fname} places its windows at random: pass key= (or _random_samples)")
        samples = random.uniform(key, (batch, channels, dims), dtype=x.dtype)
    samples = fnp.asarray(samples, dtype=x.dtype)
    if tuple(samples.shape) != (batch, channels, dims):
        raise fg_errors.ShapeError(f"{fname}: _random_samples must have shape {(batch, channels, dims)}, got "
                                   f"{tuple(samples.shape)}")
    order = (1, 0) if dims == 2 else (0, 1, 2)  # PyTorch's sample per axis: (W, H) in 2-D, (T, H, W) in 3-D
    flat = fnp.zeros((batch, channels) + out + pool, dtype=np.int64)
    stride = 1
    for axis in range(dims - 1, -1, -1):  # each tap's flat index in its plane, axis by axis
        starts = _starts(samples[..., order[axis]], spatial[axis], out[axis], pool[axis])
        shape = (batch, channels) + tuple(out[a] if a == axis else 1 for a in range(dims)) + (1,) * dims
        taps = (1,) * (2 + dims) + tuple(pool[a] if a == axis else 1 for a in range(dims))
        flat = flat + (fnp.reshape(starts, shape) + fnp.reshape(fnp.arange(pool[axis]), taps)) * stride
        stride *= spatial[axis]
    flat = fnp.reshape(flat, (batch, channels) + out + (math.prod(pool),))
    planes = fnp.reshape(x, (batch, channels, -1))
    values = fnp.reshape(fnp.take_along_axis(planes, fnp.reshape(flat, (batch, channels, -1)), axis=-1),
                         flat.shape)
    best = fnp.argmax(values, axis=-1, keepdims=True)  # the first maximum, as PyTorch's
    pooled = fnp.squeeze(fnp.take_along_axis(values, best, axis=-1), -1)
    indices = fnp.squeeze(fnp.take_along_axis(flat, best, axis=-1), -1)
    if unbatched:
        pooled, indices = pooled[0], indices[0]
    return (pooled, indices) if return_indices else pooled


def fractional_max_pool2d(x, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                          _random_samples=None, *, key=None):
    """Max over (kh, kw) windows at fractional starts of (N, C, H, W) or (C, H, W) input; indices
    are flat in each plane (h W + w), as max_pool2d's."""
    return _fractional(x, 2, kernel_size, output_size, output_ratio, return_indices, _random_samples, key,
                       "fractional_max_pool2d")


def fractional_max_pool3d(x, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                          _random_samples=None, *, key=None):
    """Max over (kt, kh, kw) windows at fractional starts of (N, C, T, H, W) or (C, T, H, W) input;
    indices are flat in each volume."""
    return _fractional(x, 3, kernel_size, output_size, output_ratio, return_indices, _random_samples, key,
                       "fractional_max_pool3d")


class FractionalMaxPool2d(Module):
    """torch.nn.FractionalMaxPool2d: windows placed at random, drawn from the call's key."""
    fn = staticmethod(fractional_max_pool2d)

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None):
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices, self.samples = return_indices, _random_samples

    def __call__(self, x, *, key=None):
        return type(self).fn(x, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                             self.samples, key=key)


class FractionalMaxPool3d(FractionalMaxPool2d):
    fn = staticmethod(fractional_max_pool3d)

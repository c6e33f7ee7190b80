"""jax.nn.initializers: each builder returns an initializer init(key, shape, dtype) (flax's
kernel_init), with JAX's conventions: a kernel is (..., in, out), so fans are read from in_axis=-2
and out_axis=-1 and every other axis is receptive field (nn.init has PyTorch's (out, in, ...)
conventions instead)."""
from __future__ import annotations

import math
from typing import Callable, Sequence

from .. import dtypes
from .. import numpy as fnp
from .. import random
from ..numpy import linalg

__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal", "variance_scaling",
           "glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal", "lecun_uniform", "lecun_normal",
           "he_uniform", "he_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]

Initializer = Callable  # init(key, shape, dtype=None) -> Array
_TRUNCATED_STD = 0.87962566103423978  # the standard deviation of N(0, 1) truncated to [-2, 2]


def _dtype(dtype):
    return dtypes.default_float if dtype is None else dtypes.canonicalize(dtype)


def zeros(key, shape, dtype=None):
    return fnp.zeros(tuple(shape), _dtype(dtype))


def ones(key, shape, dtype=None):
    return fnp.ones(tuple(shape), _dtype(dtype))


def constant(value, dtype=None) -> Initializer:
    def init(key, shape, dtype=dtype):
        return fnp.full(tuple(shape), value, _dtype(dtype))
    return init


def uniform(scale: float = 1e-2, dtype=None) -> Initializer:
    """U[0, scale), as JAX's (not symmetric about 0)."""
    def init(key, shape, dtype=dtype):
        return random.uniform(key, tuple(shape), _dtype(dtype)) * scale
    return init


def normal(stddev: float = 1e-2, dtype=None) -> Initializer:
    def init(key, shape, dtype=dtype):
        return random.normal(key, tuple(shape), _dtype(dtype)) * stddev
    return init


def truncated_normal(stddev: float = 1e-2, dtype=None, lower: float = -2.0, upper: float = 2.0) -> Initializer:
    """stddev times N(0, 1) truncated to [lower, upper]."""
    def init(key, shape, dtype=dtype):
        return random.truncated_normal(key, lower, upper, tuple(shape), _dtype(dtype)) * stddev
    return init


def _size(shape, axes) -> int:
    return shape[axes] if isinstance(axes, int) else math.prod(shape[a] for a in axes)


def _fans(shape, in_axis, out_axis, batch_axis) -> tuple[float, float]:
    """JAX's fan_in and fan_out: the in and out axes' sizes times the receptive field (every axis
    that is none of in, out and batch)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) < 2:
        raise ValueError(f"variance scaling needs a kernel of rank >= 2 for the default in_axis=-2, got shape "
                         f"{tuple(shape)}: give in_axis")
    sizes = _size(shape, in_axis), _size(shape, out_axis), _size(shape, batch_axis)
    receptive = math.prod(shape) / (sizes[0] * sizes[1] * sizes[2])
    return sizes[0] * receptive, sizes[1] * receptive


def variance_scaling(scale: float, mode: str, distribution: str, in_axis: int | Sequence[int] = -2,
                     out_axis: int | Sequence[int] = -1, batch_axis: int | Sequence[int] = (),
                     dtype=None) -> Initializer:
    """Samples of variance scale / n, n the fan_in, fan_out, their mean (fan_avg) or geometric
    mean (fan_geo_avg): from a normal truncated to +-2 standard deviations, a normal, or a
    uniform distribution."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"variance_scaling: invalid mode {mode!r}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"variance_scaling: invalid distribution {distribution!r}")

    def init(key, shape, dtype=dtype):
        shape, dtype = tuple(shape), _dtype(dtype)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
             "fan_geo_avg": math.sqrt(fan_in * fan_out)}[mode]
        variance = scale / n
        if distribution == "truncated_normal":
            return random.truncated_normal(key, -2.0, 2.0, shape, dtype) * (math.sqrt(variance) / _TRUNCATED_STD)
        if distribution == "normal":
            return random.normal(key, shape, dtype) * math.sqrt(variance)
        return random.uniform(key, shape, dtype, -1.0, 1.0) * math.sqrt(3 * variance)
    return init


def _scaled(scale: float, mode: str, distribution: str):
    def builder(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)
    return builder


glorot_uniform, glorot_normal = _scaled(1.0, "fan_avg", "uniform"), _scaled(1.0, "fan_avg", "truncated_normal")
lecun_uniform, lecun_normal = _scaled(1.0, "fan_in", "uniform"), _scaled(1.0, "fan_in", "truncated_normal")
he_uniform, he_normal = _scaled(2.0, "fan_in", "uniform"), _scaled(2.0, "fan_in", "truncated_normal")
xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal = glorot_uniform, glorot_normal, he_uniform, he_normal


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """scale times a matrix with orthonormal columns (or rows, if fewer), the column_axis its
    columns and every other axis flattened into rows: Q of the QR of a normal matrix, each column's
    sign fixed by R's diagonal (so Q is Haar-distributed)."""
    def init(key, shape, dtype=dtype):
        shape, dtype = tuple(shape), _dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer needs a shape of rank >= 2, got {shape}")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        tall = (n_rows, n_cols) if n_rows >= n_cols else (n_cols, n_rows)
        q, r = linalg.qr(random.normal(key, tall, dtype))
        q = q * fnp.sign(fnp.diagonal(r))
        q = q if n_rows >= n_cols else fnp.transpose(q)
        moved = shape[:column_axis % len(shape)] + shape[column_axis % len(shape) + 1:] + (n_cols,)
        return scale * fnp.moveaxis(fnp.reshape(q, moved), -1, column_axis)
    return init


def delta_orthogonal(scale: float = 1.0, column_axis: int = -1, dtype=None) -> Initializer:
    """A 1-3-D convolution kernel (spatial..., in, out) that is zero but at its spatial centre, an
    orthogonal (in, out) matrix there (in <= out)."""
    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"delta_orthogonal needs a 3-D, 4-D or 5-D kernel shape, got {shape}")
        if shape[-1] < shape[-2]:
            raise ValueError(f"delta_orthogonal needs in <= out channels, got shape {shape}")
        matrix = orthogonal(scale, column_axis, dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return fnp.zeros(shape, _dtype(dtype)).at[centre].set(matrix)
    return init

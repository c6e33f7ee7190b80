"""Initialisers. Each takes a PRNG key, a shape and a dtype, and returns a new array.

fan_in / fan_out follow PyTorch: for a weight (out, in, *kernel), fan_in = in * prod(kernel).
"""
from __future__ import annotations

import math

from .. import dtypes
from .. import numpy as fnp
from .. import random
from ..numpy import linalg


def fans(shape) -> tuple[int, int]:
    if len(shape) < 2:
        raise ValueError(f"fan_in and fan_out need a weight of rank >= 2, got shape {tuple(shape)}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def zeros(key, shape, dtype=dtypes.float32):
    return fnp.zeros(shape, dtype)


def ones(key, shape, dtype=dtypes.float32):
    return fnp.ones(shape, dtype)


def normal(key, shape, dtype=dtypes.float32, std: float = 1.0, mean: float = 0.0):
    return random.normal(key, shape, dtype) * std + mean


def uniform(key, shape, dtype=dtypes.float32, bound: float = 1.0):
    return random.uniform(key, shape, dtype, -bound, bound)


def kaiming_uniform(key, shape, dtype=dtypes.float32, a: float = math.sqrt(5)):
    """PyTorch's default for Linear and Conv weights (a = sqrt(5) gives bound 1/sqrt(fan_in))."""
    fan_in, _ = fans(shape)
    gain = math.sqrt(2.0 / (1 + a * a))
    return uniform(key, shape, dtype, gain * math.sqrt(3.0 / fan_in))


def kaiming_normal(key, shape, dtype=dtypes.float32, a: float = 0.0):
    fan_in, _ = fans(shape)
    return normal(key, shape, dtype, std=math.sqrt(2.0 / (1 + a * a)) / math.sqrt(fan_in))


def xavier_uniform(key, shape, dtype=dtypes.float32, gain: float = 1.0):
    fan_in, fan_out = fans(shape)
    return uniform(key, shape, dtype, gain * math.sqrt(6.0 / (fan_in + fan_out)))


def xavier_normal(key, shape, dtype=dtypes.float32, gain: float = 1.0):
    fan_in, fan_out = fans(shape)
    return normal(key, shape, dtype, std=gain * math.sqrt(2.0 / (fan_in + fan_out)))


def bias_uniform(key, shape, fan_in: int, dtype=dtypes.float32):
    """PyTorch's default bias: uniform in +-1/sqrt(fan_in)."""
    return uniform(key, shape, dtype, 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0)


def orthogonal(key, shape, dtype=dtypes.float32, gain: float = 1.0):
    """torch.nn.init.orthogonal_: the (rows, rest) flattening of the weight has orthonormal rows or
    columns (whichever are fewer), from the QR of a normal matrix with R's diagonal signs applied."""
    shape = tuple(shape)
    if len(shape) < 2:
        raise ValueError(f"orthogonal initialisation needs at least 2 dimensions, got shape {shape}")
    rows, cols = shape[0], int(math.prod(shape[1:]))
    flat = random.normal(key, (max(rows, cols), min(rows, cols)), dtypes.float32)
    q, r = linalg.qr(flat)
    q = q * fnp.expand_dims(fnp.where(fnp.diagonal(r) >= 0, 1.0, -1.0), 0)
    if rows < cols:
        q = fnp.transpose(q)
    return fnp.astype(fnp.reshape(q * gain, shape), dtype)

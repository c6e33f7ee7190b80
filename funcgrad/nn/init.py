"""Initialisers. Each takes a PRNG key, a shape and a dtype, and returns a new array.

fan_in / fan_out follow PyTorch: for a weight (out, in, *kernel), fan_in = in * prod(kernel).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from .. import random
from ..numpy import linalg


def _checked(shape) -> tuple[int, ...]:
    """shape as a tuple of ints; a negative size (nn.Linear(-1, 3)) raises, naming the shape."""
    shape = tuple(shape) if np.ndim(shape) else (shape,)
    if any(d < 0 for d in shape):
        raise ValueError(f"cannot create a parameter of shape {shape}: it has a negative dimension")
    return shape


def fans(shape) -> tuple[int, int]:
    shape = _checked(shape)
    if len(shape) < 2:
        raise ValueError(f"fan_in and fan_out need a weight of rank >= 2, got shape {tuple(shape)}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def zeros(key, shape, dtype=dtypes.float32):
    return fnp.zeros(_checked(shape), dtype)


def ones(key, shape, dtype=dtypes.float32):
    return fnp.ones(_checked(shape), dtype)


def normal(key, shape, dtype=dtypes.float32, std: float = 1.0, mean: float = 0.0):
    """N(mean, std^2). std comes before mean here, where torch's normal_(mean, std) has mean first:
    pass them by name."""
    return random.normal(key, _checked(shape), dtype) * std + mean


def uniform(key, shape, dtype=dtypes.float32, bound: float = 1.0):
    return random.uniform(key, _checked(shape), dtype, -bound, bound)


_LINEAR_GAIN = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """torch.nn.init.calculate_gain: the scale that keeps activations' variance through a layer
    followed by this nonlinearity (param: leaky_relu's negative slope, 0.01 by default)."""
    if nonlinearity in _LINEAR_GAIN:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "selu":
        return 3.0 / 4
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {slope!r} is not a number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _kaiming_std(shape, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming initialisation: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fans(shape)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        raise ValueError(f"kaiming initialisation of a weight of shape {tuple(shape)}: its {mode} is 0")
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform(key, shape, dtype=dtypes.float32, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu"):
    """torch.nn.init.kaiming_uniform_: U(-b, b), b = gain * sqrt(3 / fan). PyTorch's Linear and Conv
    weights use a = sqrt(5) (b = 1 / sqrt(fan_in)), as funcgrad's layers do."""
    return uniform(key, shape, dtype, math.sqrt(3.0) * _kaiming_std(shape, a, mode, nonlinearity))


def kaiming_normal(key, shape, dtype=dtypes.float32, a: float = 0.0, mode: str = "fan_in",
                   nonlinearity: str = "leaky_relu"):
    """torch.nn.init.kaiming_normal_: N(0, (gain / sqrt(fan))^2); ResNets take mode='fan_out',
    nonlinearity='relu'."""
    return normal(key, shape, dtype, std=_kaiming_std(shape, a, mode, nonlinearity))


def trunc_normal(key, shape, dtype=dtypes.float32, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                 b: float = 2.0):
    """torch.nn.init.trunc_normal_: N(mean, std^2) cut to [a, b] (absolute bounds, as PyTorch's)."""
    if not a < b:
        raise ValueError(f"trunc_normal: the bounds must satisfy a < b, got a={a}, b={b}")
    lower, upper = (a - mean) / std, (b - mean) / std
    return random.truncated_normal(key, lower, upper, shape, dtype) * std + mean


def constant(key, shape, dtype=dtypes.float32, value: float = 0.0):
    return fnp.full(shape, value, dtype)


def eye(key, shape, dtype=dtypes.float32):
    """torch.nn.init.eye_: the identity of a 2-D weight (ones on the diagonal of a rectangle)."""
    if len(shape) != 2:
        raise ValueError(f"eye initialisation needs a 2-D weight, got shape {tuple(shape)}")
    return fnp.eye(shape[0], shape[1], dtype=dtype)


def dirac(key, shape, dtype=dtypes.float32, groups: int = 1):
    """torch.nn.init.dirac_: a conv weight (out, in, *kernel) that passes its input through, each
    of the first min(out, in) channels (per group) to itself at the kernel's centre."""
    shape = tuple(shape)
    if len(shape) not in (3, 4, 5):
        raise ValueError(f"dirac initialisation needs a conv weight of rank 3, 4 or 5, got shape {shape}")
    if shape[0] % groups:
        raise ValueError(f"dirac initialisation: {shape[0]} output channels do not split into {groups} groups")
    per_group = shape[0] // groups
    weight = np.zeros(shape, dtypes.canonicalize(dtype))
    centre = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(min(per_group, shape[1])):
            weight[(g * per_group + d, d) + centre] = 1
    return fnp.asarray(weight)


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

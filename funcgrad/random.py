"""Splittable, reproducible PRNG keys with JAX's semantics, on the counter-based Threefry-2x32.

A key is a uint32 Array of shape (2,). Functions never mutate a key: split it to get fresh
ones. The numbers depend only on (key, shape, dtype), so the GPU backend reproduces them.
Counter domains: 0 for sampling, 1 for split, 2 for fold_in, so they never collide.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .array import Array, ArrayBase
from .cpu.threefry import threefry2x32
from .numpy import asarray, take

_SAMPLE, _SPLIT, _FOLD_IN = 0, 1, 2


def _key_data(key) -> np.ndarray:
    data = np.asarray(key.concrete() if hasattr(key, "concrete") else key)
    if data.shape != (2,) or data.dtype != np.uint32:
        raise TypeError(f"expected a PRNG key (a uint32 array of shape (2,) from fg.random.key), "
                        f"got {data.dtype} of shape {data.shape}")
    return data


def key(seed: int) -> Array:
    """A key from an integer seed (jax.random.key / PRNGKey)."""
    seed = int(seed)
    if not -(2 ** 63) <= seed < 2 ** 64:
        raise ValueError(f"seed {seed} does not fit in 64 bits")
    seed %= 2 ** 64
    return Array(np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32))


PRNGKey = key


def split(key, num: int = 2) -> Array:
    """num new independent keys, shape (num, 2)."""
    k = _key_data(key)
    y0, y1 = threefry2x32(k, np.full(num, _SPLIT, np.uint32), np.arange(num, dtype=np.uint32))
    return Array(np.stack([y0, y1], axis=1))


def fold_in(key, data: int) -> Array:
    """A new key determined by key and an integer (a step number, a rank)."""
    k = _key_data(key)
    y0, y1 = threefry2x32(k, np.array([_FOLD_IN], np.uint32), np.array([int(data) & 0xFFFFFFFF], np.uint32))
    return Array(np.array([y0[0], y1[0]], np.uint32))


def _shape(shape) -> tuple[int, ...]:
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)


def random_bits(key, n: int) -> np.ndarray:
    """n uint32 words: both words of counters 0..ceil(n/2)-1 of the sampling domain."""
    k = _key_data(key)
    m = (n + 1) // 2
    y0, y1 = threefry2x32(k, np.full(m, _SAMPLE, np.uint32), np.arange(m, dtype=np.uint32))
    return np.concatenate([y0, y1])[:n]


def _unit_float(key, shape, dtype) -> np.ndarray:
    """Uniform in [0, 1): the top mantissa bits of random words under a fixed exponent."""
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.float64:
        bits = random_bits(key, 2 * n).astype(np.uint64)
        words = (bits[:n] << np.uint64(32)) | bits[n:]
        out = ((words >> np.uint64(12)) | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0
    else:
        bits = random_bits(key, n)
        out = ((bits >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)
    return out.reshape(shape)


def _float_dtype(dtype):
    dtype = dtypes.canonicalize(dtype)
    if not dtypes.is_float(dtype):
        raise TypeError(f"this sampler produces floating-point numbers, not {dtype}")
    return dtype


def uniform(key, shape=(), dtype=dtypes.float32, minval=0.0, maxval=1.0) -> Array:
    """Uniform samples in [minval, maxval)."""
    dtype, shape = _float_dtype(dtype), _shape(shape)
    compute = np.float64 if dtype == np.float64 else np.float32
    u = _unit_float(key, shape, compute)
    lo, hi = np.asarray(minval, compute), np.asarray(maxval, compute)
    return Array(np.maximum(lo, u * (hi - lo) + lo).astype(dtype))


def normal(key, shape=(), dtype=dtypes.float32) -> Array:
    """Standard normal samples (Box-Muller on pairs of uniforms)."""
    dtype, shape = _float_dtype(dtype), _shape(shape)
    compute = np.float64 if dtype == np.float64 else np.float32
    n = int(np.prod(shape, dtype=np.int64))
    m = (n + 1) // 2
    u = _unit_float(key, (2, m), compute)
    radius = np.sqrt(-2.0 * np.log1p(-u[0]))  # 1 - u is in (0, 1]: the log is finite
    angle = (2 * np.pi) * u[1]
    z = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:n]
    return Array(z.reshape(shape).astype(dtype))


def truncated_normal(key, lower, upper, shape=(), dtype=dtypes.float32) -> Array:
    """Normal samples conditioned on lower < x < upper (inverse-CDF through erf)."""
    from math import erf, sqrt

    dtype, shape = _float_dtype(dtype), _shape(shape)
    cdf = lambda v: 0.5 * (1 + erf(v / sqrt(2)))  # noqa: E731
    lo, hi = cdf(float(lower)), cdf(float(upper))
    p = lo + (hi - lo) * _unit_float(key, shape, np.float64)
    z = np.sqrt(2) * _erfinv(2 * p - 1)
    return Array(np.clip(z, lower, upper).astype(dtype))


def _erfinv(y: np.ndarray) -> np.ndarray:
    """Inverse error function: Winitzki's closed-form guess refined by Newton steps on erf."""
    from .cpu.special import erf
    y = np.clip(np.asarray(y, np.float64), -1 + 1e-15, 1 - 1e-15)
    a = 0.147
    log_term = np.log1p(-y * y)
    first = 2 / (np.pi * a) + log_term / 2
    x = np.sign(y) * np.sqrt(np.sqrt(first * first - log_term / a) - first)
    for _ in range(3):
        x = x - (erf(x) - y) / (2 / np.sqrt(np.pi) * np.exp(-x * x))
    return x


def randint(key, shape, minval, maxval, dtype=dtypes.int64) -> Array:
    """Integers uniform in [minval, maxval) (64 random bits each, so the modulo bias is < 2^-32)."""
    dtype, shape = dtypes.canonicalize(dtype), _shape(shape)
    if dtype.kind not in "iu":
        raise TypeError(f"randint produces integers, not {dtype}")
    lo = np.broadcast_to(np.asarray(minval, np.int64), shape)
    span = np.broadcast_to(np.asarray(maxval, np.int64), shape) - lo
    if np.any(span <= 0):
        raise ValueError(f"randint needs minval < maxval, got minval={minval}, maxval={maxval}")
    n = int(np.prod(shape, dtype=np.int64))
    bits = random_bits(key, 2 * n).astype(np.uint64)
    words = ((bits[:n] << np.uint64(32)) | bits[n:]).reshape(shape)
    return Array((lo + (words % span.astype(np.uint64)).astype(np.int64)).astype(dtype))


def bernoulli(key, p=0.5, shape=None) -> Array:
    """Booleans that are True with probability p."""
    p = np.asarray(p.concrete() if hasattr(p, "concrete") else p, np.float32)
    shape = p.shape if shape is None else _shape(shape)
    return Array(_unit_float(key, shape, np.float32) < p)


def permutation(key, x, axis: int = 0):
    """A random permutation of range(x) for an int x, else of x's entries along axis."""
    n = int(x) if np.ndim(x) == 0 and not isinstance(x, ArrayBase) else asarray(x).shape[axis]
    bits = random_bits(key, 2 * n).astype(np.uint64)
    order = np.argsort((bits[:n] << np.uint64(32)) | bits[n:], kind="stable")
    if np.ndim(x) == 0 and not isinstance(x, ArrayBase):
        return Array(order.astype(np.int64))
    return take(x, order, axis=axis)


def gumbel(key, shape=(), dtype=dtypes.float32) -> Array:
    dtype, shape = _float_dtype(dtype), _shape(shape)
    u = _unit_float(key, shape, np.float64)
    return Array((-np.log(-np.log1p(-u) + 1e-300)).astype(dtype))


def categorical(key, logits, axis: int = -1, shape=None) -> Array:
    """Samples of a categorical distribution given unnormalised log-probabilities (Gumbel-max)."""
    logits = np.asarray(asarray(logits).concrete() if hasattr(logits, "concrete") else asarray(logits))
    axis = axis % logits.ndim
    batch = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch if shape is None else _shape(shape)
    full = shape[:len(shape) - len(batch)] + logits.shape if shape != batch else logits.shape
    noise = np.asarray(gumbel(key, full, np.float32 if logits.dtype != np.float64 else np.float64))
    return Array(np.argmax(noise + logits, axis=axis - logits.ndim).astype(np.int64))

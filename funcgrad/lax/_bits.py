"""jax.lax's operations on the bits of numbers: reinterpreting them, counting them, the high half
of a product, xor reductions and rounding a float to a narrower format (XLA's ReducePrecision)."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from ..ops import prng
from ..trace import bind

__all__ = ["bitcast_convert_type", "clz", "population_count", "mulhi", "reduce_xor", "reduce_precision"]

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _integer(x, name: str):
    x = fnp.asarray(x)
    if not (np.issubdtype(x.dtype, np.integer) or (x.dtype == np.bool_ and name == "reduce_xor")):
        raise TypeError(f"lax.{name} takes integers, got {x.dtype}")
    return x


def bitcast_convert_type(operand, new_dtype):
    """operand's bits read as new_dtype: a narrower type adds a trailing axis of the parts, a wider
    one consumes a trailing axis of that many (jax.lax's shapes)."""
    x = fnp.asarray(operand)
    new = np.dtype(new_dtype)
    old = np.dtype(x.dtype)
    if new.itemsize < old.itemsize:
        return bind(prng.bitcast_p, fnp.expand_dims(x, -1), dtype=new)
    if new.itemsize > old.itemsize:
        ratio = new.itemsize // old.itemsize
        if not x.ndim or x.shape[-1] != ratio:
            raise ValueError(f"bitcast_convert_type: {old} to {new} needs a last axis of {ratio}, got shape {x.shape}")
        return fnp.squeeze(bind(prng.bitcast_p, x, dtype=new), -1)
    return bind(prng.bitcast_p, x, dtype=new)


def _bits(x):
    """x's bits as the unsigned integer of its width."""
    return bind(prng.bitcast_p, x, dtype=np.dtype(_UNSIGNED[np.dtype(x.dtype).itemsize]))


def clz(x):
    """The number of leading zero bits of each integer (of its two's complement for signed ones)."""
    x = _integer(x, "clz")
    u = _bits(x)
    width = 8 * np.dtype(x.dtype).itemsize
    shifts = np.arange(width, dtype=u.dtype)
    zero_above = fnp.right_shift(fnp.expand_dims(u, -1), shifts) == 0  # (u >> k) == 0 for the k past the top bit
    return fnp.astype(fnp.sum(zero_above, axis=-1), x.dtype)


def population_count(x):
    """The number of set bits of each integer (of its two's complement for signed ones)."""
    x = _integer(x, "population_count")
    return fnp.astype(fnp.bitwise_count(_bits(x)), x.dtype)


def mulhi(x, y):
    """The high half of each full-width product x * y (signed or unsigned, as the dtype)."""
    x, y = _integer(x, "mulhi"), _integer(y, "mulhi")
    if x.dtype != y.dtype:
        raise TypeError(f"lax.mulhi takes one dtype, got {x.dtype} and {y.dtype}")
    dtype = np.dtype(x.dtype)
    width = 8 * dtype.itemsize
    signed = np.issubdtype(dtype, np.signedinteger)
    if width <= 32:  # the whole product fits 64 bits
        wide = np.int64 if signed else np.uint64
        product = fnp.multiply(fnp.astype(x, wide), fnp.astype(y, wide))
        return fnp.astype(fnp.right_shift(product, np.asarray(width, wide)), dtype)
    ux, uy = _bits(x), _bits(y)  # 64 bits: schoolbook on 32-bit halves, unsigned, then the sign correction
    low, shift = np.uint64(0xFFFFFFFF), np.uint64(32)
    x0, x1, y0, y1 = ux & low, ux >> shift, uy & low, uy >> shift
    cross = (x0 * y0 >> shift) + (x1 * y0 & low) + (x0 * y1 & low)
    high = x1 * y1 + (x1 * y0 >> shift) + (x0 * y1 >> shift) + (cross >> shift)
    if signed:  # (x + 2^64 [x<0]) (y + 2^64 [y<0]): subtract the extra terms' high halves
        high = high - fnp.where(x < 0, uy, np.uint64(0)) - fnp.where(y < 0, ux, np.uint64(0))
    return bind(prng.bitcast_p, high, dtype=dtype)


def reduce_xor(operand, axes):
    """The exclusive or of the elements along axes (parity, for booleans), by halving."""
    x = _integer(operand, "reduce_xor")
    axes = tuple(sorted({int(a) % x.ndim for a in axes})) if x.ndim else ()
    kept = tuple(a for a in range(x.ndim) if a not in axes)
    n = math.prod(x.shape[a] for a in axes)
    rows = fnp.reshape(fnp.transpose(x, kept + axes), tuple(x.shape[a] for a in kept) + (n,))
    if n == 0:
        return fnp.zeros(rows.shape[:-1], x.dtype)
    while rows.shape[-1] > 1:
        if rows.shape[-1] % 2:  # xor with the identity, 0
            rows = fnp.concatenate([rows, fnp.zeros(rows.shape[:-1] + (1,), x.dtype)], axis=-1)
        half = rows.shape[-1] // 2
        rows = fnp.bitwise_xor(rows[..., :half], rows[..., half:])
    return rows[..., 0]


_FORMATS = {np.dtype(np.float16): (5, 10), np.dtype(np.float32): (8, 23), np.dtype(np.float64): (11, 52)}


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """Each float rounded to the nearest (ties to even) of a format with those exponent and
    mantissa bits, kept in its dtype: overflow gives inf, what falls below that format's smallest
    normal gives zero, NaN stays NaN (XLA's ReducePrecision, as jax runs it)."""
    x = fnp.asarray(operand)
    dtype = np.dtype(x.dtype)
    if dtype not in _FORMATS:
        if dtype.name == "bfloat16":  # bfloat16 rounds as the float32 it widens to exactly
            return fnp.astype(reduce_precision(fnp.astype(x, np.float32), exponent_bits, mantissa_bits), dtype)
        raise TypeError(f"lax.reduce_precision takes floats, got {dtype}")
    src_exponent, src_mantissa = _FORMATS[dtype]
    if not (1 <= exponent_bits and 0 <= mantissa_bits):
        raise ValueError(f"reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0, got "
                         f"{exponent_bits} and {mantissa_bits}")
    word = np.dtype(_UNSIGNED[dtype.itemsize]).type
    bits = _bits(x)
    if mantissa_bits < src_mantissa:
        drop = src_mantissa - mantissa_bits
        last_kept = word(1 << drop)
        bias = (bits & last_kept) >> word(drop)  # ties to even: round up on a tie only past an odd last bit
        bits = (bits + bias + word((1 << (drop - 1)) - 1)) & ~word((1 << drop) - 1)
    if exponent_bits < src_exponent:
        sign = word(1 << (8 * dtype.itemsize - 1))
        exponent_mask = word(((1 << src_exponent) - 1) << src_mantissa)
        src_bias, new_bias = (1 << (src_exponent - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = bits & exponent_mask
        overflows = exponent > word((src_bias + new_bias) << src_mantissa)
        underflows = exponent <= word((src_bias - new_bias) << src_mantissa)
        signed_zero = bits & sign
        bits = fnp.where(overflows, signed_zero | exponent_mask, fnp.where(underflows, signed_zero, bits))
    out = bind(prng.bitcast_p, bits, dtype=dtype)
    return fnp.where(fnp.isnan(x), x, out)

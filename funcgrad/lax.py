"""funcgrad.lax: jax.lax's control flow and the few lax names JAX code reaches for most.

The loops and scan run in Python and unroll under jit (see funcgrad.control); everything else is
funcgrad.numpy under its lax name.
"""
from __future__ import annotations

import operator

from . import numpy as fnp
from .control import cond, fori_loop, map, scan, switch, while_loop  # noqa: A004
from . import dtypes
from .numpy import stop_gradient
from .ops import elementwise as E
from .trace import bind

__all__ = ["cond", "switch", "fori_loop", "while_loop", "scan", "map", "stop_gradient", "select", "rsqrt",
           "square", "integer_pow", "exp", "log", "tanh", "logistic", "erf", "max", "min", "abs", "sign", "dot",
           "batch_matmul", "concatenate", "broadcast_in_dim", "expand_dims", "clamp", "top_k", "complex", "real",
           "imag", "conj"]


def complex(x, y):  # noqa: A001  (lax's name; torch.complex)
    """x + i y from two real arrays (broadcast), differentiable in both: complex64 from float32
    parts, complex128 from float64."""
    re, im = fnp._float_pair(x, y)
    if not (dtypes.is_float(re.dtype) and dtypes.is_float(im.dtype)):
        raise TypeError(f"complex takes real parts, not {re.dtype} and {im.dtype}")
    return bind(E.complex_p, re, im)


real, imag, conj = fnp.real, fnp.imag, fnp.conj


def select(pred, on_true, on_false):
    return fnp.where(pred, on_true, on_false)


def rsqrt(x):
    return fnp.reciprocal(fnp.sqrt(x))


def integer_pow(x, y: int):
    return fnp.power(x, int(y))


def erf(x):
    """The error function, elementwise (jax.lax.erf, torch.erf)."""
    return bind(E.erf_p, fnp._float_arg(x))


def logistic(x):
    from .nn import sigmoid
    return sigmoid(x)


def clamp(min, x, max):  # noqa: A002  (lax's argument order)
    return fnp.clip(x, min, max)


def concatenate(operands, dimension: int):
    return fnp.concatenate(operands, axis=dimension)


def top_k(operand, k: int):
    """(values, indices) of the k largest entries along the last axis, largest first, equal values
    in index order (jax.lax.top_k, torch.topk); the values are differentiable."""
    operand = fnp.asarray(operand)
    n = operand.shape[-1] if operand.ndim else 0
    k = operator.index(k)
    if not operand.ndim or not 0 <= k <= n:
        raise ValueError(f"top_k: k = {k} must be in [0, {n}] for an operand of shape {operand.shape}")
    # a stable ascending sort of the reversed axis, reversed, is descending with ties in index order
    order = fnp.flip(fnp.argsort(fnp.flip(operand, -1), axis=-1), -1)
    indices = (n - 1) - order[..., :k]
    return fnp.take_along_axis(operand, indices, axis=-1), indices


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """operand's axes placed at broadcast_dimensions of the new shape, then broadcast."""
    operand = fnp.asarray(operand)
    expanded = [1] * len(shape)
    for axis, size in zip(broadcast_dimensions, operand.shape):
        expanded[axis] = size
    return fnp.broadcast_to(fnp.reshape(operand, tuple(expanded)), tuple(shape))


square, exp, log, tanh, abs, sign = fnp.square, fnp.exp, fnp.log, fnp.tanh, fnp.abs, fnp.sign  # noqa: A001
max, min, dot, expand_dims = fnp.maximum, fnp.minimum, fnp.dot, fnp.expand_dims  # noqa: A001
batch_matmul = fnp.matmul

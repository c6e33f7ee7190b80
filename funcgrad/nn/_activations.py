"""The rest of PyTorch's activations, as functions and as layers: glu, softmin, the shrinkages,
threshold and prelu (a learned slope), and the layer forms of the functional activations that
had none (ReLU6, Hardtanh, SELU, CELU, Softsign, LogSigmoid, Hardsigmoid, Hardswish); and
jax.nn's names for the same functions (swish, hard_tanh, ...) with its standardize, squareplus,
sparse_plus and logsumexp."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from .. import errors as fg_errors
from ..scipy.special import log1mexp, logsumexp  # jax.nn.logsumexp is scipy's: b, return_sign
from . import _functional as F
from .layers import Lambda
from .module import Module

__all__ = ["glu", "softmin", "hardshrink", "softshrink", "tanhshrink", "threshold", "prelu", "swish", "hard_silu",
           "hard_tanh", "soft_sign", "logsumexp", "standardize", "squareplus", "sparse_plus", "sparse_sigmoid",
           "log1mexp", "logmeanexp", "identity"]
LAYERS = ["GLU", "Softmin", "Hardshrink", "Softshrink", "Tanhshrink", "Threshold", "PReLU", "ReLU6", "Hardtanh",
          "SELU", "CELU", "Softsign", "LogSigmoid", "Hardsigmoid", "Hardswish"]


def glu(x, dim: int = -1):
    """a * sigmoid(b) of x's two halves along dim (torch.nn.functional.glu)."""
    x = fnp._float_arg(x)
    axis = fnp._normalize_axis(dim, x.ndim)
    if x.shape[axis] % 2:
        raise fg_errors.ShapeError(f"glu halves dim {dim}, whose size {x.shape[axis]} is odd")
    a, b = fnp.split(x, 2, axis=axis)
    return a * F.sigmoid(b)


def softmin(x, dim: int = -1, *, dtype=None):
    return F.softmax(-fnp._float_arg(x if dtype is None else fnp.astype(x, dtype)), axis=dim)


def hardshrink(x, lambd: float = 0.5):
    """0 where -lambd <= x <= lambd, else x (a NaN stays NaN, as PyTorch's)."""
    x = fnp._float_arg(x)
    return fnp.where((x >= -lambd) & (x <= lambd), fnp.zeros_like(x), x)


def softshrink(x, lambd: float = 0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between (PyTorch's, lambd >= 0)."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be non-negative, got {lambd}")
    x = fnp._float_arg(x)
    with np.errstate(invalid="ignore"):  # x - x is +0 in the band and keeps NaN; at +-inf (not used) it is NaN
        return fnp.where(x > lambd, x - lambd, fnp.where(x < -lambd, x + lambd, x - x))


def tanhshrink(x):
    x = fnp._float_arg(x)
    return x - fnp.tanh(x)


def threshold(x, threshold: float, value: float):
    """value where x <= threshold, else x (a NaN stays NaN, as PyTorch's)."""
    x = fnp.asarray(x)
    return fnp.where(x <= threshold, fnp.full_like(x, value), x)


def prelu(x, weight):
    """max(0, x) + weight * min(0, x), weight one slope or one per channel (axis 1), as PyTorch's."""
    x = fnp._float_arg(x)
    weight = fnp.asarray(fnp.follow(x, weight)[1])
    if weight.ndim != 1 or weight.shape[0] not in (1, x.shape[1] if x.ndim > 1 else 1):
        raise fg_errors.ShapeError(f"prelu: weight of shape {weight.shape} must hold 1 slope or one per channel "
                                   f"(axis 1) of an input of shape {x.shape}")
    slope = fnp.reshape(weight, (1, -1) + (1,) * (x.ndim - 2)) if x.ndim > 1 and weight.shape[0] > 1 else weight[0]
    return fnp.where(x > 0, x, slope * x)


# jax.nn's names
swish, hard_silu, hard_tanh, soft_sign = F.silu, F.hard_swish, F.hardtanh, F.softsign


def standardize(x, axis=-1, mean=None, variance=None, epsilon: float = 1e-5, where=None):
    """(x - mean) / sqrt(variance + epsilon) over axis, the moments computed where not given
    (jax.nn.standardize; where= selects the elements the moments see)."""
    x = fnp._float_arg(x)
    mean = fnp.mean(x, axis, keepdims=True, where=where) if mean is None else mean
    if variance is None:
        centered = x - mean
        variance = fnp.mean(centered * centered, axis, keepdims=True, where=where)
    return (x - mean) / fnp.sqrt(variance + epsilon)


def squareplus(x, b: float = 4.0):
    """(x + sqrt(x^2 + b)) / 2: a smooth relu without exponentials (jax.nn.squareplus)."""
    x = fnp._float_arg(x)
    return (x + fnp.sqrt(x * x + b)) / 2


def sparse_sigmoid(x):
    """0 below -1, (x + 1) / 2 between -1 and 1, 1 above: sparse_plus's derivative
    (jax.nn.sparse_sigmoid)."""
    x = fnp._float_arg(x)
    return fnp.clip((x + 1) / 2, 0.0, 1.0)


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """log(mean(exp(x))) over axis, computed as logsumexp - log n (jax.nn.logmeanexp); where= picks
    the elements counted."""
    x = fnp._float_arg(x)
    if where is None:
        count = x.size if axis is None else math.prod(x.shape[a] for a in np.atleast_1d(axis))
        return fnp.logsumexp(x, axis=axis, keepdims=keepdims) - np.log(count)
    picked = fnp.where(where, x, -np.inf)
    count = fnp.sum(fnp.astype(fnp.broadcast_to(where, x.shape), x.dtype), axis=axis, keepdims=keepdims)
    return fnp.logsumexp(picked, axis=axis, keepdims=keepdims) - fnp.log(count)


def identity(x):
    """x itself (jax.nn.identity)."""
    return fnp.asarray(x)


def sparse_plus(x):
    """0 below -1, (x + 1)^2 / 4 between -1 and 1, x above (jax.nn.sparse_plus)."""
    x = fnp._float_arg(x)
    return fnp.where(x <= -1, fnp.zeros_like(x), fnp.where(x >= 1, x, (x + 1) ** 2 / 4))


def GLU(dim: int = -1):  # noqa: N802  (module-style constructors, as torch.nn's)
    return Lambda(lambda x: glu(x, dim))


def Softmin(dim: int = -1):  # noqa: N802
    return Lambda(lambda x: softmin(x, dim))


def Hardshrink(lambd: float = 0.5):  # noqa: N802
    return Lambda(lambda x: hardshrink(x, lambd))


def Softshrink(lambd: float = 0.5):  # noqa: N802
    return Lambda(lambda x: softshrink(x, lambd))


def Tanhshrink():  # noqa: N802
    return Lambda(tanhshrink)


def Threshold(threshold_value: float, value: float):  # noqa: N802
    return Lambda(lambda x: threshold(x, threshold_value, value))


def ReLU6():  # noqa: N802
    return Lambda(F.relu6)


def Hardtanh(min_val: float = -1.0, max_val: float = 1.0):  # noqa: N802
    return Lambda(lambda x: F.hardtanh(x, min_val, max_val))


def SELU():  # noqa: N802
    return Lambda(F.selu)


def CELU(alpha: float = 1.0):  # noqa: N802
    return Lambda(lambda x: F.celu(x, alpha))


def Softsign():  # noqa: N802
    return Lambda(F.softsign)


def LogSigmoid():  # noqa: N802
    return Lambda(F.log_sigmoid)


def Hardsigmoid():  # noqa: N802
    return Lambda(F.hardsigmoid)


def Hardswish():  # noqa: N802
    return Lambda(F.hardswish)


class PReLU(Module):
    """torch.nn.PReLU: a learned negative slope (one, or num_parameters per channel), init 0.25."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, *, key=None, dtype=dtypes.float32):
        self.weight = fnp.full((num_parameters,), init, dtype)

    def __call__(self, x, *, key=None):
        return prelu(x, self.weight)

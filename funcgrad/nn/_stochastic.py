"""torch.nn's random activations and samplers, each drawing from the PRNG key it is given (a
key is training mode, as for dropout): rrelu (a random leaky slope), alpha_dropout and
feature_alpha_dropout (dropout that keeps SELU's mean and variance), gumbel_softmax (a
differentiable categorical sample), with their layers."""
from __future__ import annotations

import math

from .. import numpy as fnp
from .. import random
from . import _functional as F
from .module import Module

__all__ = ["rrelu", "alpha_dropout", "feature_alpha_dropout", "gumbel_softmax"]
LAYERS = ["RReLU", "AlphaDropout", "FeatureAlphaDropout"]

_SELU_ALPHA = 1.7580993408473766  # -SELU's saturation value: scale * alpha


def rrelu(x, lower: float = 1 / 8, upper: float = 1 / 3, training: bool = False, *, key=None):
    """x above 0, x times a slope below: drawn uniformly from [lower, upper] per element in
    training (a key), (lower + upper) / 2 in evaluation, as torch.nn.functional.rrelu."""
    x = fnp._float_arg(x)
    if not lower <= upper:
        raise ValueError(f"rrelu: lower {lower} must not exceed upper {upper}")
    if training and key is None:
        raise ValueError("rrelu: training draws random slopes, so it needs key=")
    if key is None:
        slope = (lower + upper) / 2
    else:
        slope = random.uniform(key, x.shape, x.dtype, lower, upper)
    return fnp.where(x > 0, x, x * slope)  # the slope's gradient at 0, as leaky_relu's and PyTorch's


def _alpha_dropout(x, p: float, key, mask_shape):
    """PyTorch's alpha dropout: dropped values become SELU's saturation value, then an affine map
    a x + b restores the mean and variance of SELU's fixed point."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"alpha dropout probability must be in [0, 1], got {p}")
    x = fnp._float_arg(x)
    if key is None or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    a = 1.0 / math.sqrt((_SELU_ALPHA ** 2 * p + 1) * (1 - p))
    keep = fnp.astype(random.bernoulli(key, 1.0 - p, mask_shape), x.dtype)
    return x * (keep * a) + ((keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p)


def alpha_dropout(x, p: float = 0.5, key=None):
    """torch.nn.functional.alpha_dropout, for SELU networks; identity without a key."""
    return _alpha_dropout(x, p, key, fnp.shape(x))


def feature_alpha_dropout(x, p: float = 0.5, key=None):
    """alpha_dropout of whole channels (axis 1) of (N, C, ...) input."""
    shape = fnp.shape(x)
    return _alpha_dropout(x, p, key, shape[:2] + (1,) * (len(shape) - 2))


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1, *, key):
    """softmax((logits + Gumbel noise) / tau) along dim, as torch.nn.functional.gumbel_softmax; hard
    gives the one-hot of its maximum in the forward pass and the soft sample's gradient (the
    straight-through estimator). eps is accepted for PyTorch's signature (unused there too)."""
    logits = fnp._float_arg(logits)
    soft = F.softmax((logits + random.gumbel(key, logits.shape, logits.dtype)) / tau, axis=dim)
    if not hard:
        return soft
    axis = fnp._normalize_axis(dim, logits.ndim)
    index = fnp.expand_dims(fnp.argmax(soft, axis=axis), axis)
    classes = fnp.reshape(fnp.arange(logits.shape[axis], device=logits.device),
                          tuple(-1 if a == axis else 1 for a in range(logits.ndim)))
    return fnp.astype(index == classes, soft.dtype) - fnp.stop_gradient(soft) + soft


class RReLU(Module):
    def __init__(self, lower: float = 1 / 8, upper: float = 1 / 3):
        self.lower, self.upper = lower, upper

    def __call__(self, x, *, key=None):
        return rrelu(x, self.lower, self.upper, key=key)


class AlphaDropout(Module):
    """Alpha dropout; active when called with a key (training), as nn.Dropout."""
    apply = staticmethod(alpha_dropout)

    def __init__(self, p: float = 0.5):
        self.p = p

    def __call__(self, x, *, key=None):
        return type(self).apply(x, self.p, key)


class FeatureAlphaDropout(AlphaDropout):
    apply = staticmethod(feature_alpha_dropout)

"""Activations as functions, each a fused primitive (one stable pass forward, one rule back)."""
from __future__ import annotations

from .. import numpy as fnp
from ..ops import elementwise as E
from ..ops import reductions as R
from ..trace import bind


def relu(x):
    """max(x, 0), with gradient 0 at 0 (PyTorch's convention)."""
    return bind(E.relu_p, fnp._float_arg(x))


def gelu(x, approximate: bool = False):
    """Gaussian error linear unit: exact (erf) by default, as torch.nn.functional.gelu;
    approximate=True (or "tanh") uses the tanh formula."""
    return bind(E.gelu_p, fnp._float_arg(x), approximate=bool(approximate) and approximate != "none")


def sigmoid(x):
    return bind(E.sigmoid_p, fnp._float_arg(x))


def softplus(x):
    """log(1 + exp(x)), computed without overflow."""
    return bind(E.softplus_p, fnp._float_arg(x))


def silu(x):
    """x * sigmoid(x) (also called swish)."""
    x = fnp._float_arg(x)
    return fnp.multiply(x, sigmoid(x))


def softmax(x, axis=-1):
    x = fnp._float_arg(x)
    return bind(R.softmax_p, x, axes=fnp._axes(axis, x.ndim))


def log_softmax(x, axis=-1):
    x = fnp._float_arg(x)
    return bind(R.log_softmax_p, x, axes=fnp._axes(axis, x.ndim))

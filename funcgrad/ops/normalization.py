"""Layer and RMS normalisation over the last axis as one primitive: norm_p(x, eps, center) is
(x - mean) / sqrt(var + eps) with center, x / sqrt(mean(x^2) + eps) without (variance biased, as
PyTorch's). Weight and bias are elementwise steps after it (jit fuses them into one kernel).

Its reverse rule binds norm_grad_p, the fused backward pass (PyTorch's native_layer_norm_backward)
that recomputes each row's statistics. The Jacobian, rstd (I - 1/n - xhat xhat^T / n) (without the
1/n term uncentred), is symmetric, so one formula is the VJP and the JVP. Where the rule's operands
are themselves being differentiated (a Hessian) it composes that formula of primitives instead,
which differentiates to any order. On a GPU each of the two is one row kernel
(cuda/kernels/reduce.py: norm).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..cpu import norms as cpu_norms
from ..trace import is_differentiated
from . import elementwise as E
from .core import Primitive, ShapedArray, defjvp, defvjp
from .layout import batch_first, sum_p


def _check(x):
    if len(x.shape) == 0 or x.dtype not in dtypes.float_dtypes:
        raise TypeError(f"normalisation takes a floating-point array of rank >= 1, got {x.dtype}{list(x.shape)}")


def _norm_shape(x, *, eps, center):
    _check(x)
    return ShapedArray(x.shape, x.dtype)


def _grad_shape(x, g, *, eps, center):
    _check(x)
    if tuple(g.shape) != tuple(x.shape):
        raise ValueError(f"norm_grad: a cotangent of shape {g.shape} for an input of shape {x.shape}")
    return ShapedArray(x.shape, np.result_type(x.dtype, g.dtype))


def _row_mean(x):
    n = x.shape[-1]
    return E.div_p(sum_p(x, axes=(len(x.shape) - 1,), keepdims=True), E.const(n, x.dtype))


def composed_linear(t, out, x, eps, center):
    """The Jacobian at x (out: the normalised x) applied to t, as primitives (differentiable to any
    order)."""
    xc = E.sub_p(x, _row_mean(x)) if center else x
    rstd = E.div_p(E.const(1, x.dtype), E.sqrt_p(E.add_p(_row_mean(E.mul_p(xc, xc)), E.const(eps, x.dtype))))
    inner = E.sub_p(t, E.mul_p(out, _row_mean(E.mul_p(t, out))))
    if center:
        inner = E.sub_p(inner, _row_mean(t))
    return E.mul_p(rstd, inner)


def _linear(t, out, x, *, eps, center):
    if is_differentiated(t) or is_differentiated(x):
        return composed_linear(t, out, x, eps, center)
    return norm_grad_p(x, t, eps=eps, center=center)


def _batch(size, prim, vals, dims, **params):
    """The normalised axis is last: the vmapped axis joins the leading ones."""
    return prim(*(batch_first(v, d, size) for v, d in zip(vals, dims)), **params), 0


def _norm_impl(x, eps, center, out=None):
    _check(x)  # eager calls reach here without the shape rule
    return cpu_norms.normalize(x, eps, center, out)


def _grad_impl(x, g, eps, center, out=None):
    _grad_shape(x, g, eps=eps, center=center)
    return cpu_norms.normalize_grad(x, g, eps, center, out)


norm_p = Primitive("norm", _norm_impl, shape_rule=_norm_shape, batch_rule=_batch, cuda="norm", fresh=True,
                   writes_into=True)
# Bound only where nothing is being differentiated (_linear checks), so it needs no rules.
norm_grad_p = Primitive("norm_grad", _grad_impl, shape_rule=_grad_shape, batch_rule=_batch, cuda="norm_grad",
                        fresh=True, writes_into=True, differentiable=False)
defvjp(norm_p, _linear)
defjvp(norm_p, _linear)

"""Reductions over an axis set, scans, and the fused softmax family."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..cpu import rows
from . import elementwise as E
from . import shape as S
from .core import Primitive, deflinear, defjvp, defvjp, shape_of


def _accumulate(x):
    """Low-precision floats accumulate in float32, as PyTorch does."""
    return x.astype(np.float32) if x.dtype in dtypes.low_precision else x


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def expand_reduced(g, x_shape, axes, keepdims):
    """Reshape a reduced result so it broadcasts against the input again."""
    return g if keepdims else S.reshape_p(g, shape=_kept_shape(x_shape, axes))


def broadcast_like(t, out):
    shape = shape_of(out)
    return t if shape_of(t) == shape else S.broadcast_to_p(t, shape=shape)


def unbroadcast(g, shape):
    """Sum a cotangent over the axes NumPy broadcasting added or stretched."""
    g_shape = g.shape
    if g_shape == shape:
        return g
    lead = len(g_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g_shape[lead + i] != 1)
    if axes:
        g = sum_p(g, axes=axes, keepdims=False)
    return g if g.shape == shape else S.reshape_p(g, shape=shape)


# ---- sum -------------------------------------------------------------------------------------
def _sum_impl(x, axes, keepdims):
    # the ufunc's reduce is np.sum (same dtypes, same pairwise sums) without np.sum's Python layer
    out = np.add.reduce(_accumulate(x), axis=axes, keepdims=keepdims)
    return out.astype(x.dtype) if x.dtype in dtypes.low_precision else out


sum_p = Primitive("sum", _sum_impl)
deflinear(sum_p, lambda g, out, x, axes, keepdims: S.broadcast_to_p(
    expand_reduced(g, x.shape, axes, keepdims), shape=x.shape))


# ---- max / min: the gradient is shared evenly among tied maxima (as PyTorch's amax) --------------
def _chooser_weights(x, out, axes, keepdims):
    hits = E.convert_p(E.eq_p(x, expand_reduced(out, x.shape, axes, keepdims)), dtype=x.dtype)
    return E.div_p(hits, sum_p(hits, axes=axes, keepdims=True))


def _chooser(name, impl):
    prim = Primitive(name, impl)
    defvjp(prim, lambda g, out, x, axes, keepdims: E.mul_p(
        expand_reduced(g, x.shape, axes, keepdims), _chooser_weights(x, out, axes, keepdims)))
    defjvp(prim, lambda t, out, x, axes, keepdims: sum_p(
        E.mul_p(t, _chooser_weights(x, out, axes, keepdims)), axes=axes, keepdims=keepdims))
    return prim


max_p = _chooser("max", lambda x, axes, keepdims: np.max(x, axis=axes, keepdims=keepdims))
min_p = _chooser("min", lambda x, axes, keepdims: np.min(x, axis=axes, keepdims=keepdims))
argmax_p = Primitive("argmax", lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims),
                     differentiable=False)
argmin_p = Primitive("argmin", lambda x, axis, keepdims: np.argmin(x, axis=axis, keepdims=keepdims),
                     differentiable=False)
all_p = Primitive("all", lambda x, axes, keepdims: np.all(x, axis=axes, keepdims=keepdims),
                  differentiable=False)
any_p = Primitive("any", lambda x, axes, keepdims: np.any(x, axis=axes, keepdims=keepdims),
                  differentiable=False)


# ---- prod: exact with zeros, via products of the other elements --------------------------------
def _exclusive_cumprod(x):
    """Along the last axis, out[..., i] = prod(x[..., :i]); log-depth scan of multiplications."""
    n = x.shape[-1]
    pad_front = ((0, 0),) * (x.ndim - 1)
    acc = S.pad_p(S.slice_last(x, 0, n - 1), widths=pad_front + ((1, 0),), value=1)
    shift = 1
    while shift < n:
        shifted = S.pad_p(S.slice_last(acc, 0, n - shift), widths=pad_front + ((shift, 0),), value=1)
        acc = E.mul_p(acc, shifted)
        shift *= 2
    return acc


def _prod_of_others(x, axes):
    """For each element, the product of the other elements of its reduction group."""
    keep = [i for i in range(x.ndim) if i not in axes]
    perm = tuple(keep) + tuple(axes)
    xt = S.transpose_p(x, perm=perm)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    flat = S.reshape_p(xt, shape=tuple(x.shape[i] for i in keep) + (n,))
    if n == 0:
        return x
    left = _exclusive_cumprod(flat)
    right = S.flip_last(_exclusive_cumprod(S.flip_last(flat)))
    others = S.reshape_p(E.mul_p(left, right), shape=xt.shape)
    return S.transpose_p(others, perm=tuple(np.argsort(perm)))


def _prod_impl(x, axes, keepdims):
    out = np.prod(_accumulate(x), axis=axes, keepdims=keepdims)
    return out.astype(x.dtype) if x.dtype in dtypes.low_precision else out


prod_p = Primitive("prod", _prod_impl)
defvjp(prod_p, lambda g, out, x, axes, keepdims: E.mul_p(
    expand_reduced(g, x.shape, axes, keepdims), _prod_of_others(x, axes)))
defjvp(prod_p, lambda t, out, x, axes, keepdims: sum_p(
    E.mul_p(t, _prod_of_others(x, axes)), axes=axes, keepdims=keepdims))


# ---- cumsum ------------------------------------------------------------------------------------
def _cumsum_impl(x, axis, reverse):
    acc = _accumulate(x)
    if reverse:
        out = np.flip(np.cumsum(np.flip(acc, axis), axis=axis), axis)
    else:
        out = np.cumsum(acc, axis=axis)
    return out.astype(x.dtype) if x.dtype != out.dtype and dtypes.is_float(x.dtype) else out


cumsum_p = Primitive("cumsum", _cumsum_impl)
deflinear(cumsum_p, lambda g, out, x, axis, reverse: cumsum_p(g, axis=axis, reverse=not reverse))


# ---- logsumexp and the softmax family (fused: one stable pass forward, one rule backward) -------
def _stable_max(x, axes):
    m = np.max(x, axis=axes, keepdims=True)
    return np.where(np.isfinite(m), m, np.zeros((), m.dtype))


def _logsumexp_impl(x, axes, keepdims):
    if axes == (np.ndim(x) - 1,) and not keepdims:
        fast = rows.logsumexp_last_axis(np.asarray(x))
        if fast is not None:
            return fast
    x32 = _accumulate(x)
    m = _stable_max(x32, axes)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x32 - m), axis=axes, keepdims=True)) + m
    if not keepdims:
        out = np.squeeze(out, axis=axes)
    return out.astype(x.dtype, copy=False)


def _softmax_of(x, out, axes, keepdims):
    return E.exp_p(E.sub_p(x, expand_reduced(out, x.shape, axes, keepdims)))


logsumexp_p = Primitive("logsumexp", _logsumexp_impl)
defvjp(logsumexp_p, lambda g, out, x, axes, keepdims: E.mul_p(
    expand_reduced(g, x.shape, axes, keepdims), _softmax_of(x, out, axes, keepdims)))
defjvp(logsumexp_p, lambda t, out, x, axes, keepdims: sum_p(
    E.mul_p(t, _softmax_of(x, out, axes, keepdims)), axes=axes, keepdims=keepdims))


def _softmax_impl(x, axes):
    if axes == (np.ndim(x) - 1,):
        fast = rows.last_axis(np.asarray(x), log=False)
        if fast is not None:
            return fast
    x32 = _accumulate(x)
    e = np.exp(x32 - _stable_max(x32, axes))
    return (e / np.sum(e, axis=axes, keepdims=True)).astype(x.dtype, copy=False)


def _log_softmax_impl(x, axes):
    if axes == (np.ndim(x) - 1,):
        fast = rows.last_axis(np.asarray(x), log=True)
        if fast is not None:
            return fast
    x32 = _accumulate(x)
    shifted = x32 - _stable_max(x32, axes)
    with np.errstate(divide="ignore"):
        out = shifted - np.log(np.sum(np.exp(shifted), axis=axes, keepdims=True))
    return out.astype(x.dtype, copy=False)


def _softmax_linear(t, out, axes):
    """The softmax Jacobian (symmetric) applied to t: out * (t - sum(t * out))."""
    return E.mul_p(out, E.sub_p(t, sum_p(E.mul_p(t, out), axes=axes, keepdims=True)))


def _log_softmax_vjp(g, out, axes):
    return E.sub_p(g, E.mul_p(E.exp_p(out), sum_p(g, axes=axes, keepdims=True)))


def _log_softmax_jvp(t, out, axes):
    return E.sub_p(t, sum_p(E.mul_p(E.exp_p(out), t), axes=axes, keepdims=True))


softmax_p = Primitive("softmax", _softmax_impl)
defvjp(softmax_p, lambda g, out, x, axes: _softmax_linear(g, out, axes))
defjvp(softmax_p, lambda t, out, x, axes: _softmax_linear(t, out, axes))
log_softmax_p = Primitive("log_softmax", _log_softmax_impl)
defvjp(log_softmax_p, lambda g, out, x, axes: _log_softmax_vjp(g, out, axes))
defjvp(log_softmax_p, lambda t, out, x, axes: _log_softmax_jvp(t, out, axes))


# ---- picking each row's label (the likelihood term of classification losses) --------------------
def _check_labels(labels, shape: tuple) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.shape != tuple(shape):
        raise ValueError(f"labels of shape {labels.shape} do not match the leading axes {tuple(shape)}")
    return labels


def _pick_impl(x, labels):
    x = np.asarray(x)
    return rows.pick(x, _check_labels(labels, x.shape[:-1]))  # out of range: IndexError, never a wrapped read


def _unpick_impl(g, labels, classes):
    g = np.asarray(g)
    return rows.unpick(g, _check_labels(labels, g.shape), classes)


# pick(x, labels) = x[..., labels]: one entry per row of the last axis (the logit of each example's
# class, so cross-entropy is logsumexp - pick without a log-probability array); unpick, its
# transpose, puts each row's value at its label in zeros (the one-hot part of the gradient).
pick_p = Primitive("pick", _pick_impl)
unpick_p = Primitive("unpick", _unpick_impl)
deflinear(pick_p, lambda g, out, x, labels: unpick_p(g, labels, classes=shape_of(x)[-1]))
deflinear(unpick_p, lambda g, out, ct, labels, classes: pick_p(g, labels))

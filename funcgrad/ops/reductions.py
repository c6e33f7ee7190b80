"""Reductions over an axis set (sum lives in layout.py, as broadcasting's transpose), scans, the
fused softmax family, and picking each row's label."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..cpu import rows
from . import elementwise as E
from .core import Primitive, ShapedArray, aval, deflinear, defjvp, defvjp, real_only, shape_of
from .layout import (accumulate, accumulated_dtype, batch_axes, batch_axis, batch_leading, expand_reduced,
                     normalized_axes, reduced_shape, reshape_p, sum_p, transpose_p)
from .shape import flip_last, pad_p, slice_last


# ---- shape rules ------------------------------------------------------------------------------------
def _reduction_shape(dtype_of, identity: bool = True):
    """Shape rule of a reduction over `axes`: the kept axes, and dtype_of(input dtype). Without an
    identity (max, min) an empty reduced axis is an error, as in NumPy."""
    def rule(x, *, axes, keepdims):
        axes = normalized_axes(axes, len(x.shape))
        if not identity and any(x.shape[a] == 0 for a in axes):
            raise ValueError("zero-size array to reduction operation which has no identity")
        return ShapedArray(reduced_shape(x.shape, axes, keepdims), dtype_of(x.dtype))
    return rule


def _same(dtype):
    return dtype


def _boolean(dtype):
    return np.dtype(np.bool_)


def _arg_reduction(name: str) -> Primitive:
    def shape_rule(x, *, axis, keepdims):
        axes = normalized_axes(axis, len(x.shape))
        if any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"attempt to get {name} of an empty sequence")
        if axis is None:
            return ShapedArray((1,) * len(x.shape) if keepdims else (), dtypes.int64)
        return ShapedArray(reduced_shape(x.shape, axes, keepdims), dtypes.int64)
    impl = getattr(np, name)
    return Primitive(name, real_only(name, lambda x, axis, keepdims: impl(x, axis=axis, keepdims=keepdims)),
                     shape_rule=real_only(name, shape_rule), batch_rule=batch_axis, cuda=name, differentiable=False)


def _cumsum_shape(x, *, axis, reverse):
    shape = x.shape if axis is not None else (int(np.prod(x.shape, dtype=np.int64)),)
    normalized_axes(axis, len(x.shape))
    return ShapedArray(shape, x.dtype if dtypes.is_float(x.dtype) else accumulated_dtype(x.dtype))


def _softmax_shape(x, *, axes):
    normalized_axes(axes, len(x.shape))
    return ShapedArray(x.shape, x.dtype)


def _reduction(name: str, impl, dtype_of, cuda: str, identity: bool = True, differentiable: bool = True,
               fresh: bool = False, real_numbers: bool = False) -> Primitive:
    shape_rule = _reduction_shape(dtype_of, identity)
    if real_numbers:
        impl, shape_rule = real_only(name, impl), real_only(name, shape_rule)
    return Primitive(name, impl, shape_rule=shape_rule, batch_rule=batch_axes, cuda=cuda, differentiable=differentiable,
                     fresh=fresh)


# ---- max / min: the gradient is shared evenly among tied maxima (as PyTorch's amax) --------------
def _chooser_weights(x, out, axes, keepdims):
    hits = E.convert_p(E.eq_p(x, expand_reduced(out, x.shape, axes, keepdims)), dtype=x.dtype)
    return E.div_p(hits, sum_p(hits, axes=axes, keepdims=True))


def _chooser(name, impl):
    prim = _reduction(name, impl, _same, f"reduce_{name}", identity=False, real_numbers=True)
    defvjp(prim, lambda g, out, x, axes, keepdims: E.mul_p(
        expand_reduced(g, x.shape, axes, keepdims), _chooser_weights(x, out, axes, keepdims)))
    defjvp(prim, lambda t, out, x, axes, keepdims: sum_p(
        E.mul_p(t, _chooser_weights(x, out, axes, keepdims)), axes=axes, keepdims=keepdims))
    return prim


max_p = _chooser("max", lambda x, axes, keepdims: np.max(x, axis=axes, keepdims=keepdims))
min_p = _chooser("min", lambda x, axes, keepdims: np.min(x, axis=axes, keepdims=keepdims))
argmax_p = _arg_reduction("argmax")
argmin_p = _arg_reduction("argmin")
all_p = _reduction("all", lambda x, axes, keepdims: np.all(x, axis=axes, keepdims=keepdims), _boolean, "reduce_all",
                   differentiable=False)
any_p = _reduction("any", lambda x, axes, keepdims: np.any(x, axis=axes, keepdims=keepdims), _boolean, "reduce_any",
                   differentiable=False)


# ---- prod: exact with zeros, via products of the other elements --------------------------------
def _exclusive_cumprod(x):
    """Along the last axis, out[..., i] = prod(x[..., :i]); log-depth scan of multiplications."""
    n = x.shape[-1]
    pad_front = ((0, 0),) * (x.ndim - 1)
    acc = pad_p(slice_last(x, 0, n - 1), widths=pad_front + ((1, 0),), value=1)
    shift = 1
    while shift < n:
        shifted = pad_p(slice_last(acc, 0, n - shift), widths=pad_front + ((shift, 0),), value=1)
        acc = E.mul_p(acc, shifted)
        shift *= 2
    return acc


def prod_of_others(x, axes):
    """For each element, the product of the other elements of its reduction group (exact with
    zeros: two log-depth scans, no division); prod's rules and det's adjugate use it."""
    keep = [i for i in range(x.ndim) if i not in axes]
    perm = tuple(keep) + tuple(axes)
    xt = transpose_p(x, perm=perm)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    flat = reshape_p(xt, shape=tuple(x.shape[i] for i in keep) + (n,))
    if n == 0:
        return x
    left = _exclusive_cumprod(flat)
    right = flip_last(_exclusive_cumprod(flip_last(flat)))
    others = reshape_p(E.mul_p(left, right), shape=xt.shape)
    return transpose_p(others, perm=tuple(np.argsort(perm)))


def _prod_impl(x, axes, keepdims):
    out = np.prod(accumulate(x), axis=axes, keepdims=keepdims)
    return out.astype(x.dtype) if x.dtype in dtypes.low_precision else out


prod_p = _reduction("prod", _prod_impl, accumulated_dtype, "reduce_prod")
defvjp(prod_p, lambda g, out, x, axes, keepdims: E.mul_p(
    expand_reduced(g, x.shape, axes, keepdims), prod_of_others(x, axes)))
defjvp(prod_p, lambda t, out, x, axes, keepdims: sum_p(
    E.mul_p(t, prod_of_others(x, axes)), axes=axes, keepdims=keepdims))


# ---- cumsum ------------------------------------------------------------------------------------
def _cumsum_impl(x, axis, reverse):
    # single-precision floats run in double, as PyTorch's CPU cumsum does: a sequential sum of 10^5
    # float32 values drifts by 1e-4 relative (NumPy's), where each partial sum is then correctly rounded
    acc = x.astype(_DOUBLE[x.dtype]) if x.dtype in _DOUBLE else accumulate(x)
    if reverse:
        out = np.flip(np.cumsum(np.flip(acc, axis), axis=axis), axis)
    else:
        out = np.cumsum(acc, axis=axis)
    return out.astype(x.dtype) if x.dtype != out.dtype and dtypes.is_inexact(x.dtype) else out


_DOUBLE = {np.dtype(np.float32): np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.complex128),
           **{dt: np.dtype(np.float64) for dt in dtypes.low_precision}}
cumsum_p = Primitive("cumsum", _cumsum_impl, shape_rule=_cumsum_shape, batch_rule=batch_axis, cuda="cumsum",
                     fresh=True)
deflinear(cumsum_p, lambda g, out, x, axis, reverse: cumsum_p(g, axis=axis, reverse=not reverse))


# ---- logsumexp and the softmax family (fused: one stable pass forward, one rule backward) -------
def _stable_max(x, axes, infinite: bool = True):
    """The shift: the maximum, or 0 where it is infinite (logsumexp: +inf in a row gives +inf, as
    torch.logsumexp), or with infinite=False only where it is -inf (softmax: a row holding +inf is
    NaN, as in PyTorch and JAX; an all -inf row is 0 / 0, NaN, either way)."""
    m = np.max(x, axis=axes, keepdims=True)
    return np.where(np.isfinite(m) if infinite else m != -np.inf, m, np.zeros((), m.dtype))


def _logsumexp_impl(x, axes, keepdims):
    if axes == (np.ndim(x) - 1,) and not keepdims:
        fast = rows.logsumexp_last_axis(np.asarray(x))
        if fast is not None:
            return fast
    x32 = accumulate(x)
    m = _stable_max(x32, axes)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x32 - m), axis=axes, keepdims=True)) + m
    if not keepdims:
        out = np.squeeze(out, axis=axes)
    return out.astype(x.dtype, copy=False)


def _softmax_of(x, out, axes, keepdims):
    return E.exp_p(E.sub_p(x, expand_reduced(out, x.shape, axes, keepdims)))


logsumexp_p = _reduction("logsumexp", _logsumexp_impl, _same, "logsumexp", fresh=True, real_numbers=True)
defvjp(logsumexp_p, lambda g, out, x, axes, keepdims: E.mul_p(
    expand_reduced(g, x.shape, axes, keepdims), _softmax_of(x, out, axes, keepdims)))
defjvp(logsumexp_p, lambda t, out, x, axes, keepdims: sum_p(
    E.mul_p(t, _softmax_of(x, out, axes, keepdims)), axes=axes, keepdims=keepdims))


def _softmax_impl(x, axes):
    if np.size(x) == 0:  # an empty axis, or no rows: nothing to normalise (PyTorch's empty result)
        return np.empty(np.shape(x), x.dtype)
    if axes == (np.ndim(x) - 1,):
        fast = rows.last_axis(np.asarray(x), log=False)
        if fast is not None:
            return fast
    x32 = accumulate(x)
    e = np.exp(x32 - _stable_max(x32, axes, infinite=False))
    return (e / np.sum(e, axis=axes, keepdims=True)).astype(x.dtype, copy=False)


def _log_softmax_impl(x, axes):
    if np.size(x) == 0:
        return np.empty(np.shape(x), x.dtype)
    if axes == (np.ndim(x) - 1,):
        fast = rows.last_axis(np.asarray(x), log=True)
        if fast is not None:
            return fast
    x32 = accumulate(x)
    shifted = x32 - _stable_max(x32, axes, infinite=False)
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


softmax_p = Primitive("softmax", real_only("softmax", _softmax_impl), shape_rule=real_only("softmax", _softmax_shape),
                      batch_rule=batch_axes, cuda="softmax", fresh=True)
defvjp(softmax_p, lambda g, out, x, axes: _softmax_linear(g, out, axes))
defjvp(softmax_p, lambda t, out, x, axes: _softmax_linear(t, out, axes))
log_softmax_p = Primitive("log_softmax", real_only("log_softmax", _log_softmax_impl),
                          shape_rule=real_only("log_softmax", _softmax_shape),
                          batch_rule=batch_axes, cuda="log_softmax", fresh=True)
defvjp(log_softmax_p, lambda g, out, x, axes: _log_softmax_vjp(g, out, axes))
defjvp(log_softmax_p, lambda t, out, x, axes: _log_softmax_jvp(t, out, axes))


# ---- picking each row's label (the likelihood term of classification losses) --------------------
def _check_labels(labels, shape: tuple) -> np.ndarray:
    labels = np.asarray(labels)
    _labels_match(aval(labels), shape)
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
def _labels_match(labels, shape: tuple) -> None:
    if not isinstance(labels, ShapedArray) or labels.dtype.kind not in "iu":
        raise TypeError("labels must be an integer array")
    if labels.shape != tuple(shape):
        raise ValueError(f"labels of shape {labels.shape} do not match the leading axes {tuple(shape)}")


def _pick_shape(x, labels):
    if not x.shape:
        raise ValueError("pick needs an array with a class axis last, got a 0-d array")
    _labels_match(labels, x.shape[:-1])
    return ShapedArray(x.shape[:-1], x.dtype)


def _unpick_shape(g, labels, *, classes):
    _labels_match(labels, g.shape)
    return ShapedArray(g.shape + (int(classes),), g.dtype)


pick_p = Primitive("pick", _pick_impl, shape_rule=_pick_shape, batch_rule=batch_leading, cuda="pick", fresh=True)
unpick_p = Primitive("unpick", _unpick_impl, shape_rule=_unpick_shape, batch_rule=batch_leading, cuda="unpick",
                     fresh=True)
deflinear(pick_p, lambda g, out, x, labels: unpick_p(g, labels, classes=shape_of(x)[-1]))
deflinear(unpick_p, lambda g, out, ct, labels, classes: pick_p(g, labels))

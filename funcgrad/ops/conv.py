"""Sliding windows: im2col and its transpose col2im, from which convolution and pooling are built.

im2col turns a padded (N, C, H, W) batch into the view (N, C, Ho, Wo, kh, kw) of every window;
col2im adds windows back into an image. Each is the other's VJP, so convolution (an einsum of
windows and weights) and pooling are differentiable to any order with no rules of their own.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..cpu import windows
from .core import Primitive, ShapedArray, deflinear
from .layout import batch_first, reshape_p


def output_size(size: int, kernel: int, stride: int, dilation: int) -> int:
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _im2col_impl(x, kernel, stride, dilation):
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    windows = sliding_window_view(x, (span_h, span_w), axis=(2, 3))
    return windows[:, :, ::sh, ::sw, ::dh, ::dw]


def _col2im_impl(cols, image_shape, kernel, stride, dilation):
    fast = windows.col2im(np.asarray(cols), image_shape, stride, dilation)
    if fast is not None:
        return fast
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho, wo = cols.shape[2], cols.shape[3]
    out = np.zeros(image_shape, cols.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw] += cols[:, :, :, :, i, j]
    return out


def _im2col_shape(x, *, kernel, stride, dilation):
    if len(x.shape) != 4:
        raise ValueError(f"im2col takes an (N, C, H, W) batch, got shape {x.shape}")
    n, c, h, w = x.shape
    ho, wo = (output_size(size, k, s, d) for size, k, s, d in zip((h, w), kernel, stride, dilation))
    if ho <= 0 or wo <= 0:
        raise ValueError(f"window {tuple(kernel)} with dilation {tuple(dilation)} is larger than the input {x.shape}")
    return ShapedArray((n, c, ho, wo) + tuple(kernel), x.dtype)


def _col2im_shape(cols, *, image_shape, kernel, stride, dilation):
    expected = _im2col_shape(ShapedArray(image_shape, cols.dtype), kernel=kernel, stride=stride, dilation=dilation)
    if cols.shape != expected.shape:
        raise ValueError(f"col2im: windows of shape {cols.shape} do not come from an image of shape "
                         f"{tuple(image_shape)} (expected {expected.shape})")
    return ShapedArray(image_shape, cols.dtype)


def _merge_batch(x):
    return reshape_p(x, shape=(x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))


def _im2col_batch(size, prim, vals, dims, **params):
    x = batch_first(vals[0], dims[0], size)
    out = prim(_merge_batch(x), **params)
    return reshape_p(out, shape=(size, x.shape[1]) + tuple(out.shape[1:])), 0


def _col2im_batch(size, prim, vals, dims, image_shape, **params):
    cols = batch_first(vals[0], dims[0], size)
    out = prim(_merge_batch(cols), image_shape=(size * image_shape[0],) + tuple(image_shape[1:]), **params)
    return reshape_p(out, shape=(size,) + tuple(image_shape)), 0


im2col_p = Primitive("im2col", _im2col_impl, shape_rule=_im2col_shape, batch_rule=_im2col_batch, cuda="im2col")
col2im_p = Primitive("col2im", _col2im_impl, shape_rule=_col2im_shape, batch_rule=_col2im_batch, cuda="col2im",
                     fresh=True)
deflinear(im2col_p, lambda g, out, x, kernel, stride, dilation: col2im_p(
    g, image_shape=x.shape, kernel=kernel, stride=stride, dilation=dilation))
deflinear(col2im_p, lambda g, out, cols, image_shape, kernel, stride, dilation: im2col_p(
    g, kernel=kernel, stride=stride, dilation=dilation))

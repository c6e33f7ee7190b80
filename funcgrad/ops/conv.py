"""Sliding windows: im2col and its transpose col2im, from which convolution and pooling are built.

im2col turns a padded (N, C, H, W) batch into the view (N, C, Ho, Wo, kh, kw) of every window;
col2im adds windows back into an image. Each is the other's VJP, so convolution (an einsum of
windows and weights) and pooling are differentiable to any order with no rules of their own.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..cpu import windows
from .core import Primitive, deflinear


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


im2col_p = Primitive("im2col", _im2col_impl)
col2im_p = Primitive("col2im", _col2im_impl)
deflinear(im2col_p, lambda g, out, x, kernel, stride, dilation: col2im_p(
    g, image_shape=x.shape, kernel=kernel, stride=stride, dilation=dilation))
deflinear(col2im_p, lambda g, out, cols, image_shape, kernel, stride, dilation: im2col_p(
    g, kernel=kernel, stride=stride, dilation=dilation))

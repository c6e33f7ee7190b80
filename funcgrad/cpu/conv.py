"""Convolution on the CPU as one BLAS GEMM per small chunk of images.

The windows of a chunk are copied into a (channels * kh * kw, Ho * Wo) matrix per image (im2col)
that stays in cache, and the GEMM writes the (out channels, Ho * Wo) result straight into the
NCHW output: no output transpose, and never the whole batch's window matrix (58 MB for a 3x3
conv of 32 channels on 64 MNIST images, which a single-einsum convolution copies two more times
in its backward pass). The same chunks serve the two gradients: the weight's as a sum of
per-image GEMMs, the input's as a GEMM per image whose windows col2im adds back.

Arrays here are NumPy arrays: x (N, C, H, W), weight (O, C / groups, kh, kw), padding
((top, bottom), (left, right)).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from . import windows
from .workspace import scratch

CHUNK_BYTES = 4 << 20  # one chunk's window matrix: large enough for BLAS, small enough for cache


def output_size(size: int, kernel: int, stride: int, dilation: int) -> int:
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def window_view(x: np.ndarray, kernel, stride, dilation) -> np.ndarray:
    """The windows of x (N, C, H, W) as the strided view (N, C, Ho, Wo, kh, kw)."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    return sliding_window_view(x, span, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]


def col2im_into(cols: np.ndarray, out: np.ndarray, stride, dilation) -> None:
    """Add windows cols (N, C, Ho, Wo, kh, kw) back into the image out (N, C, H, W)."""
    if windows.col2im_into(cols, out, stride, dilation):
        return
    (sh, sw), (dh, dw) = stride, dilation
    ho, wo, kh, kw = cols.shape[2:]
    for i in range(kh):  # dtypes the numba kernel does not take (float16, bfloat16, integers)
        for j in range(kw):
            out[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw] += cols[..., i, j]


def _padded(x: np.ndarray, padding) -> np.ndarray:
    """x with zero borders, in scratch memory (valid until the next convolution on this thread)."""
    if not any(lo or hi for lo, hi in padding):
        return x
    (top, bottom), (left, right) = padding
    n, c, h, w = x.shape
    out = scratch("conv padded input", (n, c, h + top + bottom, w + left + right), x.dtype)
    out[:, :, :top] = 0
    out[:, :, top + h:] = 0
    out[:, :, top:top + h, :left] = 0
    out[:, :, top:top + h, left + w:] = 0
    out[:, :, top:top + h, left:left + w] = x
    return out


def _chunk(image_bytes: int) -> int:
    return max(1, CHUNK_BYTES // max(1, image_bytes))


def _window_chunks(x, kernel, stride, padding, dilation, groups):
    """(start, stop, matrices) for chunks of images: matrices (n, groups, C/groups * kh * kw, Ho * Wo)."""
    n, c = x.shape[:2]
    view = window_view(_padded(x, padding), kernel, stride, dilation)
    ho, wo = view.shape[2:4]
    view = view.transpose(0, 1, 4, 5, 2, 3)  # (N, C, kh, kw, Ho, Wo): a GEMM operand per image
    per_image = c * kernel[0] * kernel[1] * ho * wo
    step = _chunk(per_image * x.itemsize)
    for start in range(0, n, step):
        stop = min(n, start + step)
        cols = scratch("conv windows", (stop - start,) + view.shape[1:], x.dtype)
        np.copyto(cols, view[start:stop])
        yield start, stop, cols.reshape(stop - start, groups, -1, ho * wo)


def conv(x, weight, stride, padding, dilation, groups, out=None) -> np.ndarray:
    """Cross-correlation: (N, O, Ho, Wo) (into out, a C-contiguous array of that shape and the
    operands' dtype, where one is given)."""
    out_ch, _, kh, kw = weight.shape
    n = x.shape[0]
    hp, wp = (size + lo + hi for size, (lo, hi) in zip(x.shape[2:], padding))
    ho, wo = output_size(hp, kh, stride[0], dilation[0]), output_size(wp, kw, stride[1], dilation[1])
    w = weight.reshape(groups, out_ch // groups, -1)
    dtype = np.result_type(x, weight)
    out = np.empty((n, groups, out_ch // groups, ho * wo), dtype) if out is None else \
        out.reshape(n, groups, out_ch // groups, ho * wo)
    for start, stop, cols in _window_chunks(x, (kh, kw), stride, padding, dilation, groups):
        np.matmul(w, cols, out=out[start:stop])
    return out.reshape(n, out_ch, ho, wo)


def conv_weight_grad(x, g, kernel, stride, padding, dilation, groups) -> np.ndarray:
    """The gradient of conv's weight for output cotangent g (N, O, Ho, Wo): (O, C / groups, kh, kw)."""
    n, out_ch, ho, wo = g.shape
    g = g.reshape(n, groups, 1, out_ch // groups, ho * wo)
    acc = np.zeros((groups, out_ch // groups, x.shape[1] // groups * kernel[0] * kernel[1]), np.result_type(x, g))
    for start, stop, cols in _window_chunks(x, kernel, stride, padding, dilation, groups):
        # (n, G, 1, Og, P) @ (n, G, P, K) -> per image; summed over the chunk's images
        products = scratch("conv weight products", (stop - start,) + acc.shape, acc.dtype)
        acc += np.matmul(g[start:stop, :, 0], cols.transpose(0, 1, 3, 2), out=products).sum(axis=0)
    return acc.reshape(out_ch, -1, kernel[0], kernel[1])


def conv_input_grad(g, weight, image_size, stride, padding, dilation, groups) -> np.ndarray:
    """The gradient of conv's input for output cotangent g (N, O, Ho, Wo): (N, C, H, W)."""
    n, out_ch, ho, wo = g.shape
    _, c_group, kh, kw = weight.shape
    (pt, pb), (pl, pr) = padding
    dtype = np.result_type(g, weight)
    out = np.zeros((n, c_group * groups, image_size[0] + pt + pb, image_size[1] + pl + pr), dtype)
    w_t = weight.reshape(groups, out_ch // groups, -1).transpose(0, 2, 1)  # (G, K, Og)
    g = g.reshape(n, groups, out_ch // groups, ho * wo)
    step = _chunk(c_group * groups * kh * kw * ho * wo * out.itemsize)
    for start in range(0, n, step):
        stop = min(n, start + step)
        cols = scratch("conv windows", (stop - start, groups, w_t.shape[1], ho * wo), dtype)
        np.matmul(w_t, g[start:stop], out=cols)
        cols = cols.reshape(stop - start, -1, kh, kw, ho, wo)
        col2im_into(cols.transpose(0, 1, 4, 5, 2, 3), out[start:stop], stride, dilation)
    return out[:, :, pt:pt + image_size[0], pl:pl + image_size[1]]

"""Convolution on the CPU: most stride-1 passes over 8 channels and more run directly from the
images (cpu/direct.py; its applies() says which), the others as BLAS GEMMs over small chunks of
images' windows.

A chunk's windows are copied into a matrix (im2col) that stays in cache, never the whole batch's
(58 MB for a 3x3 conv of 32 channels on 64 MNIST images). Two layouts of that matrix:

- channels-last rows, where a group has at least ROW_RUN channels: the chunk is padded and
  transposed once to (n, Hp, Wp, C), so each output pixel's window is kh * kw contiguous runs of
  the group's channels, which a numba loop compiled for the window's geometry copies at memory
  speed into (G, n, Ho * Wo, kh * kw * Cg). Each pass is one GEMM per group over all the chunk's
  pixels (a GEMM per image is ~35% slower for 8x8 images). The forward GEMM leaves (pixels,
  channels), which a transposing copy moves to NCHW: that orientation ran 0.86x the time of the
  one that leaves NCHW runs (8x8 images of 32 -> 64 channels; 0.92x at 14x14, 0.94x at 28x28 with
  5x5 windows). The gradients' GEMMs read the cotangent as (channels, pixels), copied from NCHW
  in runs of an image's pixels; the input gradient's windows are added back by the same loop.
  (The image-major copy below takes ~7x as long for 32 channels of 8x8 images: its runs are a
  row of 8 pixels.)
- image-major (N, C, kh, kw, Ho, Wo) views, for thin inputs (an RGB or grey first layer), whose
  channel runs would be a value or three long: a GEMM per image writes NCHW directly, the weight
  gradient sums per-image products, and col2im adds the input gradient's windows back.

Arrays here are NumPy arrays: x (N, C, H, W), weight (O, C / groups, kh, kw), padding
((top, bottom), (left, right)).
"""
from __future__ import annotations

from functools import cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from . import direct, gemm, windows
from .padding import padded, padded_rows, padded_shape
from .workspace import deliver, image_chunks, scratch, target

CHUNK_BYTES = 4 << 20  # one chunk's window matrix: large enough for BLAS, small enough for cache
ROW_RUN = 8  # channels per group from which channels-last rows pay (a run of 8 float32 is one AVX vector)
_ROW_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def output_size(size: int, kernel: int, stride: int, dilation: int) -> int:
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _output_hw(x_shape, kernel, stride, padding, dilation) -> tuple:
    return tuple(output_size(size + lo + hi, k, s, d)
                 for size, (lo, hi), k, s, d in zip(x_shape[2:], padding, kernel, stride, dilation))


def _by_rows(channels_per_group: int, dtype) -> bool:
    return channels_per_group >= ROW_RUN and np.dtype(dtype) in _ROW_DTYPES


def direct_forward(x_shape, kernel, in_per_group: int, out_per_group: int, stride, padding, dilation, dtype) -> bool:
    """Whether conv and conv_weight_grad of this geometry run the direct passes (cpu/direct.py)."""
    out_hw = _output_hw(x_shape, kernel, stride, padding, dilation)
    return direct.applies(stride, dtype, in_per_group, out_per_group, out_hw, x_shape[3] + sum(padding[1]))


def direct_input_grad(image_size, kernel, in_per_group: int, out_per_group: int, stride, dilation, dtype) -> bool:
    """Whether conv_input_grad of this geometry runs the direct pass: the correlation of the
    cotangent (out_per_group channels summed into in_per_group), whose rows are the image's width
    plus the kernel's reach."""
    return direct.applies(stride, dtype, out_per_group, in_per_group, tuple(image_size),
                          image_size[1] + dilation[1] * (kernel[1] - 1))


def _image_chunks(n: int, image_bytes: int):
    return image_chunks(n, image_bytes, CHUNK_BYTES)


# ---- channels-last rows -------------------------------------------------------------------------
@cache
def _window_runs(kernel, stride, dilation, add: bool):
    """A loop over every (group, image, output pixel, window offset) run of a group's channels,
    compiled for one window geometry: it copies the run from the padded images rows (n, Hp, Wp, C)
    to its place in cols (G, n, Ho * Wo, kh * kw * Cg), or with add, adds it back. Indices are
    unsigned: a signed index makes numba test it for wrap-around, which keeps LLVM from
    vectorising the run (6x slower)."""
    from numba import njit, uintp  # numba's first import costs ~0.3 s: pay it only when used
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation

    @njit(cache=True, nogil=True)
    def runs(rows, cols):
        groups, n, pixels = cols.shape[:3]
        hp, wp, c = rows.shape[1:]
        cg = c // groups
        run = uintp(cg)
        ho, wo = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
        if rows.shape[0] != n or pixels != ho * wo or cols.shape[3] != kh * kw * cg or cg * groups != c:
            raise ValueError("window runs: the images and the window matrix do not match")  # unchecked indices
        image, windows = rows.reshape(-1), cols.reshape(-1)
        o = uintp(0)
        for g in range(groups):
            for a in range(n):
                for q in range(pixels):
                    y, z = q // wo, q % wo
                    for i in range(kh):
                        for j in range(kw):
                            s = uintp(((a * hp + y * sh + i * dh) * wp + z * sw + j * dw) * c + g * cg)
                            if add:
                                for t in range(run):
                                    image[s + t] += windows[o + t]
                            else:
                                for t in range(run):
                                    windows[o + t] = image[s + t]
                            o += run
    return runs


def _rows_bytes(channels: int, padded_hw, kernel, out_hw, itemsize: int) -> int:
    """The bytes one image takes in the rows layout: its padded rows and its windows."""
    return (padded_hw[0] * padded_hw[1] + kernel[0] * kernel[1] * out_hw[0] * out_hw[1]) * channels * itemsize


def _row_chunks(x, kernel, stride, padding, dilation, groups, dtype):
    """(start, stop, cols) for chunks of images: cols (G, n, Ho * Wo, kh * kw * Cg)."""
    n, c = x.shape[:2]
    ho, wo = _output_hw(x.shape, kernel, stride, padding, dilation)
    copy_runs = _window_runs(tuple(kernel), tuple(stride), tuple(dilation), False)
    per_image = _rows_bytes(c, padded_shape(x.shape, padding)[2:], kernel, (ho, wo), np.dtype(dtype).itemsize)
    for start, stop in _image_chunks(n, per_image):
        cols = scratch("conv windows", (groups, stop - start, ho * wo, kernel[0] * kernel[1] * c // groups), dtype)
        copy_runs(padded_rows(x[start:stop], padding, dtype), cols)
        yield start, stop, cols


def _weight_rows(weight: np.ndarray, groups: int) -> np.ndarray:
    """weight (O, Cg, kh, kw) as (G, Og, kh * kw * Cg): the windows' (i, j, channel) order."""
    out_ch, cg, kh, kw = weight.shape
    return np.ascontiguousarray(weight.reshape(groups, out_ch // groups, cg, kh, kw).transpose(0, 1, 3, 4, 2)) \
        .reshape(groups, out_ch // groups, cg * kh * kw)


def _cotangent_rows(g: np.ndarray, start: int, stop: int, dtype) -> np.ndarray:
    """Images start .. stop of g (N, G, Og, P) as (G, Og, n, P) of dtype, in scratch memory: the
    GEMM operand (G, Og, n * P), copied in runs of an image's pixels."""
    _, groups, og, pixels = g.shape
    rows = scratch("conv cotangent", (groups, og, stop - start, pixels), dtype)
    np.copyto(rows, g[start:stop].transpose(1, 2, 0, 3))
    return rows


# ---- image-major windows ------------------------------------------------------------------------
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


def _window_chunks(x, kernel, stride, padding, dilation, groups):
    """(start, stop, matrices) for chunks of images: matrices (n, groups, C/groups * kh * kw, Ho * Wo)."""
    n, c = x.shape[:2]
    view = window_view(padded(x, padding), kernel, stride, dilation)
    ho, wo = view.shape[2:4]
    view = view.transpose(0, 1, 4, 5, 2, 3)  # (N, C, kh, kw, Ho, Wo): a GEMM operand per image
    for start, stop in _image_chunks(n, c * kernel[0] * kernel[1] * ho * wo * x.itemsize):
        cols = scratch("conv windows", (stop - start,) + view.shape[1:], x.dtype)
        np.copyto(cols, view[start:stop])
        yield start, stop, cols.reshape(stop - start, groups, c // groups * kernel[0] * kernel[1], ho * wo)


# ---- the three passes ---------------------------------------------------------------------------
def conv(x, weight, stride, padding, dilation, groups, out=None) -> np.ndarray:
    """Cross-correlation: (N, O, Ho, Wo) (into out, a C-contiguous array of that shape and the
    operands' dtype, where one is given)."""
    out_ch, cg, kh, kw = weight.shape
    n = x.shape[0]
    ho, wo = _output_hw(x.shape, (kh, kw), stride, padding, dilation)
    dtype = np.result_type(x, weight)
    if direct_forward(x.shape, (kh, kw), cg, out_ch // groups, stride, padding, dilation, dtype):
        return deliver(direct.conv(x, weight, padding, dilation, groups, target(out, dtype)), out)
    out = np.empty((n, groups, out_ch // groups, ho * wo), dtype) if out is None else \
        out.reshape(n, groups, out_ch // groups, ho * wo)
    if _by_rows(cg, dtype):
        w_rows = _weight_rows(weight, groups)
        og = out_ch // groups
        for start, stop, cols in _row_chunks(x, (kh, kw), stride, padding, dilation, groups, dtype):
            # one GEMM per group over the chunk's pixels, (n * P, K) @ (K, Og), then a transposing
            # copy to NCHW: OpenBLAS runs this orientation enough faster than (Og, K) @ (K, n * P),
            # whose result would move in runs of an image's pixels, to pay for the copy
            pixels = scratch("conv pixel rows", (groups, (stop - start) * ho * wo, og), dtype)
            gemm.matmul(cols.reshape(groups, pixels.shape[1], cols.shape[-1]), w_rows.transpose(0, 2, 1), out=pixels)
            out[start:stop] = pixels.reshape(groups, stop - start, ho * wo, og).transpose(1, 0, 3, 2)
    else:
        w = weight.reshape(groups, out_ch // groups, cg * kh * kw)
        for start, stop, cols in _window_chunks(x, (kh, kw), stride, padding, dilation, groups):
            gemm.matmul(w, cols, out=out[start:stop])
    return out.reshape(n, out_ch, ho, wo)


def conv_weight_grad(x, g, kernel, stride, padding, dilation, groups, out=None) -> np.ndarray:
    """The gradient of conv's weight for output cotangent g (N, O, Ho, Wo): (O, C / groups, kh, kw)
    (into out where one is given)."""
    n, out_ch, ho, wo = g.shape
    cg, og = x.shape[1] // groups, out_ch // groups
    dtype = np.result_type(x, g)
    if direct_forward(x.shape, kernel, cg, og, stride, padding, dilation, dtype):
        return deliver(direct.conv_weight_grad(x, g, kernel, padding, dilation, groups), out)
    acc = np.zeros((groups, og, cg * kernel[0] * kernel[1]), dtype)
    g = g.reshape(n, groups, og, ho * wo)
    if _by_rows(cg, dtype):
        for start, stop, cols in _row_chunks(x, kernel, stride, padding, dilation, groups, dtype):
            # one GEMM per group over the chunk's pixels: (G, Og, n * P) @ (G, n * P, K)
            g_rows = _cotangent_rows(g, start, stop, dtype)
            products = scratch("conv weight products", acc.shape, dtype)
            pixels = (stop - start) * ho * wo
            cols = cols.reshape(groups, pixels, acc.shape[-1])
            acc += gemm.matmul(g_rows.reshape(groups, og, pixels), cols, out=products)
        return deliver(np.ascontiguousarray(acc.reshape(out_ch, kernel[0], kernel[1], cg).transpose(0, 3, 1, 2)), out)
    for start, stop, cols in _window_chunks(x, kernel, stride, padding, dilation, groups):
        # (n, G, Og, P) @ (n, G, P, K) -> per image; summed over the chunk's images
        products = scratch("conv weight products", (stop - start,) + acc.shape, dtype)
        acc += gemm.matmul(g[start:stop], cols.transpose(0, 1, 3, 2), out=products).sum(axis=0)
    return deliver(acc.reshape(out_ch, cg, kernel[0], kernel[1]), out)


def conv_input_grad(g, weight, image_size, stride, padding, dilation, groups, out=None) -> np.ndarray:
    """The gradient of conv's input for output cotangent g (N, O, Ho, Wo): (N, C, H, W) (into out,
    C-contiguous, where one is given)."""
    n, out_ch, ho, wo = g.shape
    _, cg, kh, kw = weight.shape
    (pt, pb), (pl, pr) = padding
    h, w = image_size
    dtype = np.result_type(g, weight)
    if direct_input_grad(image_size, (kh, kw), cg, out_ch // groups, stride, dilation, dtype):
        return deliver(direct.conv_input_grad(g, weight, padding, dilation, groups, target(out, dtype)), out)
    g = g.reshape(n, groups, out_ch // groups, ho * wo)
    if _by_rows(cg, dtype):
        out = np.empty((n, cg * groups, h, w), dtype) if out is None else out
        w_rows = _weight_rows(weight, groups)
        add_runs = _window_runs((kh, kw), tuple(stride), tuple(dilation), True)
        padded_hw = padded_shape(out.shape, padding)[2:]
        for start, stop in _image_chunks(n, _rows_bytes(cg * groups, padded_hw, (kh, kw), (ho, wo), out.itemsize)):
            # (n * P, Og) @ (Og, K) per group, the cotangent copied in runs of an image's pixels
            g_rows = _cotangent_rows(g, start, stop, dtype)
            cols = scratch("conv windows", (groups, (stop - start) * ho * wo, kh * kw * cg), dtype)
            gemm.matmul(g_rows.reshape(groups, out_ch // groups, cols.shape[1]).transpose(0, 2, 1), w_rows, out=cols)
            rows = scratch("conv padded rows", (stop - start,) + padded_hw + (cg * groups,), dtype)
            rows.fill(0)
            add_runs(rows, cols.reshape(groups, stop - start, ho * wo, kh * kw * cg))
            out[start:stop] = rows[:, pt:pt + h, pl:pl + w].transpose(0, 3, 1, 2)
        return out
    full = np.zeros((n, cg * groups, h + pt + pb, w + pl + pr), dtype)
    w_t = weight.reshape(groups, out_ch // groups, cg * kh * kw).transpose(0, 2, 1)  # (G, K, Og)
    for start, stop in _image_chunks(n, cg * groups * kh * kw * ho * wo * full.itemsize):
        cols = scratch("conv windows", (stop - start, groups, w_t.shape[1], ho * wo), dtype)
        gemm.matmul(w_t, g[start:stop], out=cols)
        cols = cols.reshape(stop - start, cg * groups, kh, kw, ho, wo)
        col2im_into(cols.transpose(0, 1, 4, 5, 2, 3), full[start:stop], stride, dilation)
    return deliver(full[:, :, pt:pt + h, pl:pl + w], out)

"""Loops over sliding windows that NumPy does slowly, as numba loop nests: col2im (adding windows
back into an image) and max pooling's window argmax and its scatter.

NumPy does col2im as kh * kw strided in-place adds of 6-d slices, which run at a small fraction of
memory speed: 5.9 ms for the 64 x 32 x 8 x 8 windows of a 3 x 3 convolution, where one pass over
the windows takes about 1 ms. A max pool's argmax over a copy of its windows took 28 ms for a
64 x 64 x 28 x 28 batch and its gradient's np.add.at 25 ms; these loops take 2 ms and 1 ms.
"""
from __future__ import annotations

from functools import cache

import numpy as np

from .workspace import deliver


@cache
def _kernels():
    from numba import njit  # numba's first import costs ~0.3 s: pay it only when used

    @njit(cache=True, nogil=True)
    def col2im(cols, out, sh, sw, dh, dw):
        """For windows laid out (N, C, Ho, Wo, kh, kw) in memory."""
        n, c, ho, wo, kh, kw = cols.shape
        for a in range(n):
            for b in range(c):
                for i in range(kh):  # one window offset at a time: the inner loop then writes
                    for j in range(kw):  # a row of distinct pixels (no add waits on the previous)
                        for y in range(ho):
                            row = y * sh + i * dh
                            for x in range(wo):
                                out[a, b, row, x * sw + j * dw] += cols[a, b, y, x, i, j]

    @njit(cache=True, nogil=True)
    def col2im_offsets_outside(cols, out, sh, sw, dh, dw):
        """For windows whose offsets (kh, kw) are outer in memory, as an einsum's product over the
        channels leaves them: read in memory order, a row of pixels at a time."""
        n, c, ho, wo, kh, kw = cols.shape
        for b in range(c):
            for i in range(kh):
                for j in range(kw):
                    for a in range(n):
                        for y in range(ho):
                            row = y * sh + i * dh
                            for x in range(wo):
                                out[a, b, row, x * sw + j * dw] += cols[a, b, y, x, i, j]

    @njit(cache=True, nogil=True)
    def window_argmax(x, out, kh, kw, sh, sw, ph, pw, dh, dw, only_missing):
        """out[n, c, y, z]: the flat (row * W + column) position in x's plane of the first maximum
        of window (y, z), over the positions inside x (padding never wins); a NaN is the maximum.
        only_missing: fill only the windows marked -1 (those interior_argmax left)."""
        n, c, h, w = x.shape
        ho, wo = out.shape[2], out.shape[3]
        for a in range(n):
            for b in range(c):
                for y in range(ho):
                    for z in range(wo):
                        if only_missing and out[a, b, y, z] >= 0:
                            continue
                        best, where = x[a, b, 0, 0], -1
                        for i in range(kh):
                            r = y * sh - ph + i * dh
                            if 0 <= r < h:
                                for j in range(kw):
                                    q = z * sw - pw + j * dw
                                    if 0 <= q < w:
                                        v = x[a, b, r, q]
                                        if where < 0 or v > best or (v != v and best == best):
                                            best, where = v, r * w + q
                        if where < 0:
                            raise ValueError("a pooling window lies wholly in the padding")
                        out[a, b, y, z] = where

    @njit(cache=True, nogil=True)
    def scatter_rows(g, index, out):
        """out[m, index[m, p]] += g[m, p]."""
        rows, width = out.shape
        for m in range(rows):
            for p in range(index.shape[1]):
                k = index[m, p]
                if k < 0 or k >= width:
                    raise IndexError("a pooling index lies outside its plane")
                out[m, k] += g[m, p]

    @njit(cache=True, nogil=True)
    def gather_rows(x, index, out):
        """out[m, p] = x[m, index[m, p]]."""
        for m in range(out.shape[0]):
            for p in range(out.shape[1]):
                k = index[m, p]
                if k < 0 or k >= x.shape[1]:
                    raise IndexError("a pooling index lies outside its plane")
                out[m, p] = x[m, k]
    return col2im, col2im_offsets_outside, window_argmax, scatter_rows, gather_rows


def col2im_into(cols: np.ndarray, out: np.ndarray, stride, dilation) -> bool:
    """Add the windows cols (N, C, Ho, Wo, kh, kw) into the image out (N, C, H, W); False, with
    nothing done, for a dtype the kernels do not take (float16, bfloat16, integers: NumPy does
    those). Windows in either layout (window offsets inner or outer in memory) are read where they
    lie, without a copy."""
    if cols.dtype not in (np.float32, np.float64) or out.dtype != cols.dtype:
        return False
    by_rows, offsets_outside = _kernels()[:2]
    if cols.ndim == 6 and cols.size and abs(cols.strides[5]) > abs(cols.strides[3]) > 0:
        offsets_outside(cols, out, stride[0], stride[1], dilation[0], dilation[1])
    else:
        by_rows(np.ascontiguousarray(cols), out, stride[0], stride[1], dilation[0], dilation[1])
    return True


@cache
def _interior_argmax(kh: int, kw: int, sh: int, sw: int, dh: int, dw: int):
    """window_argmax for the windows wholly inside the plane, compiled for one window geometry:
    with the loop bounds constant and no NaN or bounds test per element, LLVM unrolls and
    vectorises it (2.5 ms for a 2x2 pool of 64 x 64 x 28 x 28, the general loop 21 ms). Windows
    that touch the padding are left -1; returns whether x holds a NaN (then the general loop
    decides, as a NaN must win)."""
    from numba import njit

    @njit(cache=True, nogil=True)
    def kernel(x, out, ph, pw):
        n, c, h, w = x.shape
        ho, wo = out.shape[2], out.shape[3]
        nan, missing = False, False
        for a in range(n):
            for b in range(c):
                for y in range(ho):
                    r0 = y * sh - ph
                    rows_inside = r0 >= 0 and r0 + (kh - 1) * dh < h
                    for z in range(wo):
                        q0 = z * sw - pw
                        if not (rows_inside and q0 >= 0 and q0 + (kw - 1) * dw < w):
                            out[a, b, y, z] = -1
                            missing = True
                            continue
                        best, where = x[a, b, r0, q0], r0 * w + q0
                        for i in range(kh):
                            for j in range(kw):
                                v = x[a, b, r0 + i * dh, q0 + j * dw]
                                nan |= v != v
                                if v > best:
                                    best, where = v, (r0 + i * dh) * w + q0 + j * dw
                        out[a, b, y, z] = where
        return nan, missing
    return kernel


def window_argmax(x: np.ndarray, kernel, stride, padding, dilation, out_hw, out=None) -> np.ndarray:
    """int64 (N, C, Ho, Wo): where in each (H, W) plane of x each window's first maximum lies
    (written into out, a C-contiguous array of that shape, where one is given)."""
    if x.dtype not in (np.float32, np.float64) and x.dtype.kind not in "biu":
        x = x.astype(np.float32)  # float16 and bfloat16 widen exactly: the same order, the same maxima
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape[:2] + tuple(out_hw), np.int64) if out is None else out
    if not out.size:
        return out
    ph, pw = (lo for lo, _ in padding)
    nan, missing = _interior_argmax(*kernel, *stride, *dilation)(x, out, ph, pw)
    if nan or missing:
        _kernels()[2](x, out, *kernel, *stride, ph, pw, *dilation, not nan)
    return out


def scatter_rows(g: np.ndarray, index: np.ndarray, width: int, out=None) -> np.ndarray:
    """(M, width) zeros with g (M, P) added at columns index (M, P) of each row (into out, a
    C-contiguous (M, width) array of g's dtype, where one is given)."""
    work = g.dtype if g.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    acc = out if out is not None and out.dtype == work else np.empty((g.shape[0], width), work)
    acc.fill(0)
    _kernels()[3](np.ascontiguousarray(g, work), np.ascontiguousarray(index), acc)
    return deliver(acc.astype(g.dtype, copy=False), out)


def gather_rows(x: np.ndarray, index: np.ndarray, out=None) -> np.ndarray:
    """x[m, index[m, p]] for every row m of x (M, width) and position p of index (M, P) (into
    out, a C-contiguous array of index's shape, where one is given)."""
    if x.dtype not in (np.float32, np.float64):
        return deliver(np.take_along_axis(x, index, axis=1), out)
    out = np.empty(index.shape, x.dtype) if out is None else out
    _kernels()[4](np.ascontiguousarray(x), np.ascontiguousarray(index), out)
    return out

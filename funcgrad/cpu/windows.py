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

from . import threads
from .workspace import deliver


@cache
def _kernels():
    from numba import njit, uintp  # numba's first import costs ~0.3 s: pay it only when used

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
    def window_argmax(x, out, kh, kw, sh, sw, ph, pw, dh, dw):
        """out[n, c, y, z]: the flat (row * W + column) position in x's plane of the first maximum
        of window (y, z), over the positions inside x (padding never wins); a NaN is the maximum.
        The loop for what argmax_kernels.fast_argmax leaves: a batch holding a NaN, or a window
        in the padding."""
        n, c, h, w = x.shape
        ho, wo = out.shape[2], out.shape[3]
        for a in range(n):
            for b in range(c):
                for y in range(ho):
                    for z in range(wo):
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
        """out[m, index[m, p]] += g[m, p]. Unsigned flat indices: a signed one is tested for
        wrap-around at every access."""
        rows, width = out.shape
        positions = uintp(index.shape[1])
        values, where, acc = g.reshape(-1), index.reshape(-1), out.reshape(-1)
        for m in range(rows):
            src, dst = uintp(m) * positions, uintp(m) * uintp(width)
            for p in range(positions):
                k = where[src + uintp(p)]
                if k < 0 or k >= width:
                    raise IndexError("a pooling index lies outside its plane")
                acc[dst + uintp(k)] += values[src + uintp(p)]

    @njit(cache=True, nogil=True)
    def gather_rows(x, index, out):
        """out[m, p] = x[m, index[m, p]], with unsigned flat indices as scatter_rows."""
        rows, positions, width = uintp(out.shape[0]), uintp(out.shape[1]), x.shape[1]
        values, where, picked = x.reshape(-1), index.reshape(-1), out.reshape(-1)
        for m in range(rows):
            src, dst = uintp(m) * uintp(width), uintp(m) * positions
            for p in range(positions):
                k = where[dst + uintp(p)]
                if k < 0 or k >= width:
                    raise IndexError("a pooling index lies outside its plane")
                picked[dst + uintp(p)] = values[src + uintp(k)]
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
    from .argmax_kernels import fast_argmax
    fast, planes = fast_argmax(*kernel, *stride, *dilation), x.reshape(-1, 1, *x.shape[2:])
    found, flags = out.reshape(-1, 1, *out.shape[2:]), []
    threads.split(lambda a, b: flags.append(fast(planes[a:b], found[a:b], ph, pw)), planes.shape[0],
                  x.size * threads.ELEMENT_WORK)
    if any(nan or empty for nan, empty in flags):  # the general loop lets a NaN win, or names the window in the padding
        _kernels()[2](x, out, *kernel, *stride, ph, pw, *dilation)
    return out


def scatter_rows(g: np.ndarray, index: np.ndarray, width: int, out=None) -> np.ndarray:
    """(M, width) zeros with g (M, P) added at columns index (M, P) of each row (into out, a
    C-contiguous (M, width) array of g's dtype, where one is given)."""
    work = g.dtype if g.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    acc = out if out is not None and out.dtype == work else np.empty((g.shape[0], width), work)
    g, index, scatter = np.ascontiguousarray(g, work), np.ascontiguousarray(index), _kernels()[3]

    def rows(a: int, b: int) -> None:
        acc[a:b].fill(0)
        scatter(g[a:b], index[a:b], acc[a:b])
    threads.split(rows, g.shape[0], acc.size * threads.ELEMENT_WORK)
    return deliver(acc.astype(g.dtype, copy=False), out)


def gather_rows(x: np.ndarray, index: np.ndarray, out=None) -> np.ndarray:
    """x[m, index[m, p]] for every row m of x (M, width) and position p of index (M, P) (into
    out, a C-contiguous array of index's shape, where one is given)."""
    if x.dtype not in (np.float32, np.float64):
        return deliver(np.take_along_axis(x, index, axis=1), out)
    out = np.empty(index.shape, x.dtype) if out is None else out
    x, index, gather = np.ascontiguousarray(x), np.ascontiguousarray(index), _kernels()[4]
    threads.split(lambda a, b: gather(x[a:b], index[a:b], out[a:b]), x.shape[0], index.size * threads.ELEMENT_WORK)
    return out

"""col2im (adding sliding windows back into an image) as one numba loop nest.

NumPy does it as kh * kw strided in-place adds of 6-d slices, which run at a small fraction of
memory speed: 5.9 ms for the 64 x 32 x 8 x 8 windows of a 3 x 3 convolution, where one pass over
the windows takes about 1 ms.
"""
from __future__ import annotations

from functools import cache

import numpy as np


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
    return col2im, col2im_offsets_outside


def col2im(cols: np.ndarray, image_shape, stride, dilation) -> np.ndarray | None:
    """The image the windows `cols` (N, C, Ho, Wo, kh, kw) add up to, or None for a dtype the
    kernel does not take (float16, bfloat16: NumPy does those). Windows in either of the two
    layouts the convolution's einsums produce are read where they lie, without a copy."""
    if cols.dtype not in (np.float32, np.float64):
        return None
    out = np.zeros(image_shape, cols.dtype)
    by_rows, offsets_outside = _kernels()
    if cols.ndim == 6 and cols.size and abs(cols.strides[5]) > abs(cols.strides[3]) > 0:
        offsets_outside(cols, out, stride[0], stride[1], dilation[0], dilation[1])
    else:
        by_rows(np.ascontiguousarray(cols), out, stride[0], stride[1], dilation[0], dilation[1])
    return out

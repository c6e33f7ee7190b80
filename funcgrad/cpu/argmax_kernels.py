"""Max pooling's window argmax compiled for one window geometry (see fast_argmax).

numba's on-disk cache keys a closure by the pickled contents of its cells, and a numba dispatcher
pickles with a fresh id in every process: a kernel that closes over another kernel misses the
cache every time (the 3x3 pool's kernel cost 3.5 s of compiling at the start of every `funcgrad
train cnn`). So the helpers the kernel calls are this module's globals, and the kernel closes over
its geometry's integers only, which pickle the same in every process. Imported on first use, as
numba's import costs ~0.2 s.
"""
from __future__ import annotations

from functools import cache

from numba import njit, uintp


@njit(cache=True, nogil=True)
def clipped(values, base, r0, q0, i_lo, i_hi, w, kw, dh, dw):
    """(position in its plane of the first maximum, NaN seen) over the taps inside the plane
    (from values[base]) of the window from row r0, column q0, rows i_lo .. i_hi - 1 of it
    inside; position -1 where it has none."""
    j_lo, j_hi = max(0, (dw - 1 - q0) // dw), min(kw, (w - 1 - q0) // dw + 1)
    where, best, nan = -1, values[base], False
    for i in range(i_lo, i_hi):
        for j in range(j_lo, j_hi):
            at = (r0 + i * dh) * w + q0 + j * dw
            v = values[base + at]
            nan |= v != v
            if where < 0 or v > best:
                best, where = v, at
    return where, nan


@njit(cache=True, nogil=True)
def edges(values, found, o, base, r0, i_lo, i_hi, z_from, z_to, pw, w, kw, sw, dh, dw):
    """clipped over the windows z_from .. z_to - 1 of a row: (NaN seen, a window empty)."""
    nan, empty = False, False
    for z in range(z_from, z_to):
        where, seen = clipped(values, base, r0, z * sw - pw, i_lo, i_hi, w, kw, dh, dw)
        nan |= seen
        empty |= where < 0
        found[o + z] = where
    return nan, empty


@cache
def fast_argmax(kh: int, kw: int, sh: int, sw: int, dh: int, dw: int):
    """window_argmax compiled for one window geometry, without a NaN test per element: the windows
    wholly inside the plane with the loop bounds constant, so LLVM unrolls the window and vectorises
    the row, and those touching the padding over their taps inside it; unsigned flat indices (a
    signed one is tested for wrap-around at every access). A 2x2 pool of 64 x 64 x 28 x 28: 1.1 ms
    (with signed 4-d indices 1.9 ms, the general loop 21 ms); 3x3 at stride 2 padded by 1: 5.2 ms
    (8.6 ms sending the edge windows to the general loop). Returns whether x holds a NaN (then the
    general loop decides, as a NaN must win) and whether a window lay wholly in the padding (left
    -1, for the general loop to refuse)."""

    @njit(cache=True, nogil=True)
    def kernel(x, out, ph, pw):
        n, c, h, w = x.shape
        ho, wo = out.shape[2], out.shape[3]
        z_lo = min(wo, (pw + sw - 1) // sw)  # windows z_lo .. z_hi - 1 of a row lie inside it across
        z_hi = max(z_lo, min(wo, (w - 1 - (kw - 1) * dw + pw) // sw + 1))
        values, found = x.reshape(-1), out.reshape(-1)
        width = uintp(w)
        nan, empty = False, False
        o = 0
        for a in range(n * c):
            base = a * h * w
            for y in range(ho):
                r0 = y * sh - ph
                if r0 < 0 or r0 + (kh - 1) * dh >= h:  # taps i_lo .. i_hi - 1 inside the plane
                    i_lo, i_hi = max(0, (dh - 1 - r0) // dh), min(kh, (h - 1 - r0) // dh + 1)
                    seen, none = edges(values, found, o, base, r0, i_lo, i_hi, 0, wo, pw, w, kw, sw, dh, dw)
                    nan, empty, o = nan or seen, empty or none, o + wo
                    continue
                if z_lo > 0:
                    seen, none = edges(values, found, o, base, r0, 0, kh, 0, z_lo, pw, w, kw, sw, dh, dw)
                    nan, empty = nan or seen, empty or none
                if z_hi < wo:
                    seen, none = edges(values, found, o, base, r0, 0, kh, z_hi, wo, pw, w, kw, sw, dh, dw)
                    nan, empty = nan or seen, empty or none
                top = uintp(r0) * width  # the row's first tap in the plane, and in values
                row = uintp(base) + top
                for z in range(z_lo, z_hi):  # the row's inner windows
                    q0 = uintp(z) * uintp(sw) - uintp(pw)
                    best, where = values[row + q0], top + q0
                    for i in range(kh):
                        for j in range(kw):
                            at = q0 + uintp(i * dh) * width + uintp(j * dw)
                            v = values[row + at]
                            nan |= v != v
                            better = v > best
                            best = v if better else best
                            where = top + at if better else where
                    found[uintp(o) + uintp(z)] = where
                o += wo
        return nan, empty
    return kernel

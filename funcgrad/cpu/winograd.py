"""Stride-1 3x3 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, 2015).

Each 2x2 block of outputs is read from a 4x4 tile of the input: transformed to that tile's 16
Winograd coefficients (V = B^T d B), the block is A^T [U * V] A with U = G w G^T per (output,
input) channel pair. Summed over the input channels, the product at each coefficient is a GEMM
(O, C) @ (C, tiles): 16 multiply-adds per 2x2 outputs and input channel where im2col's GEMM
takes 36 (2.25x fewer), and the matrices between the GEMMs and the images hold 4 values per input
pixel (V) and per output (M), where im2col's holds 9 per output. The transforms' coefficients are
0, +-1 and +-1/2: the result stays within a few rounding errors of the direct sum (F(4x4, 3x3),
4x fewer, has coefficients up to 8 and 1/24 and, in float32, ~6x the direct sum's error).

Only the forward runs here. The weight gradient as the forward's transpose (the cotangent's 2x2
blocks transformed by A, 16 GEMMs against V summed over the tiles, G^T dU G) was 1.15x as fast as
im2col's alone at 28x28 but 0.85x inside the CNN's step (20.7-21.5 against 18.0 ms per step: its
transforms write 4 values per input pixel and per output, 77 MB, and leave cache colder for the
rest); the input gradient, a conv of the cotangent's wider channels, gained nothing (0.96x, 1.00x).

Layouts, chosen so every transform loop runs along a contiguous axis however small the images
(LLVM vectorises it): the input tiles are read from channels-last rows (n, Hp, Wp, C) along the
channels into V (n * tiles, 16, C); the GEMM leaves M (16, O, n * tiles), whose transform runs
along all the chunk's tiles at once before its 2x2 blocks are stored into NCHW rows. Arrays are
NumPy arrays: x (N, C, H, W), weight (O, C / groups, 3, 3), padding ((top, bottom), (left, right)).
"""
from __future__ import annotations

from functools import cache

import numpy as np

from .padding import padded_rows
from .workspace import image_chunks, scratch

CHUNK_BYTES = 16 << 20  # one chunk's rows, V and M: at 28x28 1.1x as fast as im2col's 4 MiB (longer GEMMs)
MIN_CHANNELS = 8  # channels per group (a GEMM's inner size) below which im2col's 9x longer inner size wins
MIN_PIXELS = 256  # outputs per image from which 16 GEMMs over the tiles beat im2col's one (see applies)
PLANE_GAP = 16  # elements between M's planes
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def applies(kernel, stride, dilation, channels_per_group: int, out_per_group: int, out_hw, dtype) -> bool:
    """Whether a conv runs here: 3x3 at stride 1 over images of at least MIN_PIXELS outputs
    (measured on 32 -> 64 channels, batch 64, against cpu/conv.py's im2col: 1.25x and 1.1-1.3x as
    fast at 16x16 and 28x28 alone, 1.02-1.17x inside the 28x28 CNN's step; at 8x8 0.998x, where the
    one im2col GEMM beats 16 small ones)."""
    return (tuple(kernel) == (3, 3) and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1)
            and min(channels_per_group, out_per_group) >= MIN_CHANNELS and out_hw[0] * out_hw[1] >= MIN_PIXELS
            and np.dtype(dtype) in _DTYPES)


@cache
def _input_tiles(channels: int, width: int):
    """input_tiles(rows, v, flags) for rows of `channels` channels and `width` padded columns: v (n *
    th * tw, 16, C) = B^T d B for every 4x4 tile d of rows (n, 2 th + 2, width = 2 tw + 2, C), along
    the channels; flags (C,), zeros, turn NaN where a tile holds an infinity or a NaN. Compiled for
    its sizes: with every offset between the 16 loads and between the 16 stores a constant, LLVM
    checks the arrays for overlap once and vectorises the channel loop (at runtime offsets it would
    need 256 checks, and gives up: 26x slower)."""
    from numba import njit, uintp  # numba's first import costs ~0.3 s: pay it only when used
    tw = (width - 2) // 2
    c = tuple(uintp(k * channels) for k in range(16))
    line = uintp(width * channels)

    @njit(cache=True, nogil=True)
    def input_tiles(rows, v, flags):
        n, hp, wp, cs = rows.shape
        th = (hp - 2) // 2
        if wp != width or cs != channels or v.shape[0] != n * th * tw or v.shape[1] != 16 or v.shape[2] != cs \
                or flags.shape[0] != cs:
            raise ValueError("winograd input tiles: the rows and V do not match")  # unchecked indices
        x, out = rows.reshape(-1), v.reshape(-1)
        o = uintp(0)
        for a in range(n):
            for ty in range(th):
                for tx in range(tw):
                    p = uintp(((a * hp + 2 * ty) * width + 2 * tx) * channels)
                    for k in range(c[1]):
                        q = p + k
                        d00, d01, d02, d03 = x[q], x[q + c[1]], x[q + c[2]], x[q + c[3]]
                        q += line
                        d10, d11, d12, d13 = x[q], x[q + c[1]], x[q + c[2]], x[q + c[3]]
                        q += line
                        d20, d21, d22, d23 = x[q], x[q + c[1]], x[q + c[2]], x[q + c[3]]
                        q += line
                        d30, d31, d32, d33 = x[q], x[q + c[1]], x[q + c[2]], x[q + c[3]]
                        total = d00 + d01 + d02 + d03 + d10 + d11 + d12 + d13 + d20 + d21 + d22 + d23 + d30 + d31 + \
                            d32 + d33
                        flags[k] += total - total  # 0, or NaN from an infinity or a NaN
                        # B^T d: rows 0 - 2, 1 + 2, 2 - 1, 1 - 3
                        r00, r01, r02, r03 = d00 - d20, d01 - d21, d02 - d22, d03 - d23
                        r10, r11, r12, r13 = d10 + d20, d11 + d21, d12 + d22, d13 + d23
                        r20, r21, r22, r23 = d20 - d10, d21 - d11, d22 - d12, d23 - d13
                        r30, r31, r32, r33 = d10 - d30, d11 - d31, d12 - d32, d13 - d33
                        # (B^T d) B: the same on the columns
                        e = o + k
                        out[e], out[e + c[1]], out[e + c[2]], out[e + c[3]] = \
                            r00 - r02, r01 + r02, r02 - r01, r01 - r03
                        out[e + c[4]], out[e + c[5]], out[e + c[6]], out[e + c[7]] = \
                            r10 - r12, r11 + r12, r12 - r11, r11 - r13
                        out[e + c[8]], out[e + c[9]], out[e + c[10]], out[e + c[11]] = \
                            r20 - r22, r21 + r22, r22 - r21, r21 - r23
                        out[e + c[12]], out[e + c[13]], out[e + c[14]], out[e + c[15]] = \
                            r30 - r32, r31 + r32, r32 - r31, r31 - r33
                    o += c[15] + c[1]
    return input_tiles


@cache
def _output_tiles():
    """output_tiles(m, y): y (n, O, Ho, Wo) = A^T M A for each tile's 16 products m (16, >= O * n *
    th * tw), first along all the tiles into the four outputs of each, then stored as 2x2 blocks.
    A loop over flat arrays with unsigned indices: numba tests a signed index for wrap-around,
    which keeps LLVM from vectorising the loops (6x slower)."""
    from numba import njit, uintp  # numba's first import costs ~0.3 s: pay it only when used

    @njit(cache=True, nogil=True)
    def output_tiles(m, y):
        n, o, ho, wo = y.shape
        th, tw = (ho + 1) // 2, (wo + 1) // 2
        tiles = uintp(n * th * tw)
        if m.shape[0] != 16 or m.shape[1] < o * tiles:
            raise ValueError("winograd output tiles: M and the output do not match")  # unchecked indices
        src, out = m.reshape(-1), y.reshape(-1)
        p, pairs = uintp(m.shape[1]), uintp(wo // 2)
        c = (uintp(0), p, p + p, p + p + p, p + p + p + p)  # M's planes
        q = (uintp(0), tiles, tiles + tiles, tiles + tiles + tiles)  # the blocks' planes
        blocks = np.empty(4 * tiles, m.dtype)  # per tile its outputs (0, 0), (0, 1), (1, 0), (1, 1)
        for b in range(o):
            base = uintp(b) * tiles
            for t in range(tiles):
                i = base + t
                m00, m01, m02, m03 = src[i], src[i + c[1]], src[i + c[2]], src[i + c[3]]
                i += c[4]
                m10, m11, m12, m13 = src[i], src[i + c[1]], src[i + c[2]], src[i + c[3]]
                i += c[4]
                m20, m21, m22, m23 = src[i], src[i + c[1]], src[i + c[2]], src[i + c[3]]
                i += c[4]
                m30, m31, m32, m33 = src[i], src[i + c[1]], src[i + c[2]], src[i + c[3]]
                s0, s1, s2, s3 = m00 + m10 + m20, m01 + m11 + m21, m02 + m12 + m22, m03 + m13 + m23
                d0, d1, d2, d3 = m10 - m20 - m30, m11 - m21 - m31, m12 - m22 - m32, m13 - m23 - m33
                blocks[t], blocks[q[1] + t] = s0 + s1 + s2, s1 - s2 - s3
                blocks[q[2] + t], blocks[q[3] + t] = d0 + d1 + d2, d1 - d2 - d3
            for a in range(n):  # channel b's blocks into its NCHW rows, cut at odd edges
                for row in range(ho):
                    r = uintp(((a * o + b) * ho + row) * wo)
                    quadrant = q[2 * (row % 2)] + uintp((a * th + row // 2) * tw)
                    for x in range(pairs):
                        out[r + x + x] = blocks[quadrant + x]
                        out[r + x + x + uintp(1)] = blocks[quadrant + tiles + x]
                    if wo % 2:
                        out[r + pairs + pairs] = blocks[quadrant + pairs]
    return output_tiles


def _tiles(out_hw) -> tuple:
    return (out_hw[0] + 1) // 2, (out_hw[1] + 1) // 2


def _input_coefficients(x: np.ndarray, padding, tiles_hw, dtype) -> np.ndarray | None:
    """V (n * th * tw, 16, C) of x (n, C, H, W), in scratch memory: from x padded as channels-last
    rows (n, 2 th + 2, 2 tw + 2, C), zeros also past the padding where the last tiles reach beyond
    it (an odd output size). None where x holds an infinity or a NaN (see conv)."""
    (top, _), (left, _) = padding
    (th, tw), (n, c, h, w) = tiles_hw, x.shape
    rows = padded_rows(x, ((top, 2 * th + 2 - h - top), (left, 2 * tw + 2 - w - left)), dtype)
    v = scratch("winograd input", (n * th * tw, 16, c), dtype)
    flags = np.zeros(c, dtype)
    _input_tiles(c, 2 * tw + 2)(rows, v, flags)
    return v if np.isfinite(flags.sum()) else None


def _products(out_ch: int, tiles: int, dtype) -> np.ndarray:
    """Scratch for M (16, O * tiles + PLANE_GAP): the gap keeps the 16 planes, which the output
    transform reads at once, from sharing L1 cache sets (at a plane size that is a multiple of 4 KiB,
    as O * tiles * 4 bytes is for 64 channels, it ran 1.6x slower)."""
    return scratch("winograd products", (16, out_ch * tiles + PLANE_GAP), dtype)


def _weight_coefficients(weight: np.ndarray, groups: int, dtype) -> np.ndarray:
    """U = G w G^T of weight (O, Cg, 3, 3) as (16, G, Og, Cg)."""
    out_ch, cg = weight.shape[:2]
    u = (_G @ weight.astype(np.float64, copy=False) @ _G.T).reshape(out_ch, cg, 16)
    return np.ascontiguousarray(u.transpose(2, 0, 1), dtype=dtype).reshape(16, groups, out_ch // groups, cg)


def _per_image(tiles_hw, channels: int, out_ch: int, itemsize: int) -> int:
    th, tw = tiles_hw
    return ((2 * th + 2) * (2 * tw + 2) * channels + 16 * th * tw * (channels + out_ch)) * itemsize


def conv(x: np.ndarray, weight: np.ndarray, padding, groups: int, out: np.ndarray | None = None) -> np.ndarray | None:
    """Cross-correlation of x (N, C, H, W) with a 3x3 weight at stride 1: (N, O, Ho, Wo), into out
    (C-contiguous, of that shape and dtype) where one is given. None where x or the weight holds an
    infinity or a NaN: the transforms subtract values, so an infinity that the direct sum carries
    to +-inf would become inf - inf = NaN here; the caller then takes im2col, whose IEEE results
    are PyTorch's."""
    output_tiles = _output_tiles()
    (top, bottom), (left, right) = padding
    n, c, h, w = x.shape
    out_ch = weight.shape[0]
    out_hw = (h + top + bottom - 2, w + left + right - 2)
    dtype = np.result_type(x, weight)
    out = np.empty((n, out_ch) + out_hw, dtype) if out is None else out
    tiles_hw = _tiles(out_hw)
    u = _weight_coefficients(weight, groups, dtype)
    if not np.isfinite(u).all():
        return None
    for start, stop in image_chunks(n, _per_image(tiles_hw, c, out_ch, dtype.itemsize), CHUNK_BYTES):
        tiles = (stop - start) * tiles_hw[0] * tiles_hw[1]
        v = _input_coefficients(x[start:stop], padding, tiles_hw, dtype)
        if v is None:
            return None
        m = _products(out_ch, tiles, dtype)
        v_groups = v.reshape(tiles, 16, groups, c // groups).transpose(1, 2, 3, 0)  # (16, G, Cg, tiles)
        np.matmul(u, v_groups, out=m[:, :out_ch * tiles].reshape(16, groups, out_ch // groups, tiles))
        output_tiles(m, out[start:stop])
    return out

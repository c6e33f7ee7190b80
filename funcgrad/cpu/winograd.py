"""Stride-1 3x3 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, 2015).

Each 2x2 block of outputs is read from a 4x4 tile of the input: transformed to that tile's 16
Winograd coefficients (V = B^T d B), the block is A^T [U * V] A with U = G w G^T per (output,
input) channel pair. Summed over the input channels, the product at each coefficient is a GEMM
(O, C) @ (C, tiles): 16 multiply-adds per 2x2 outputs and input channel where im2col's GEMM
takes 36 (2.25x fewer), and the matrices between the GEMMs and the images hold 4 values per input
pixel (V) and per output (M), where im2col's holds 9 per output. The transforms' coefficients are
0, +-1 and +-1/2: the result stays within a few rounding errors of the direct sum (F(4x4, 3x3),
4x fewer, has coefficients up to 8 and 1/24 and, in float32, ~6x the direct sum's error).

The weight gradient is the transpose of the forward's bilinear map: the cotangent's blocks
transformed by A (M's transpose), 16 GEMMs against the input's V summed over tiles, then G^T dU G.

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
from .workspace import scratch

CHUNK_BYTES = 16 << 20  # one chunk's rows, V and M: at 28x28 1.1x as fast as im2col's 4 MiB (longer GEMMs)
MIN_CHANNELS = 8  # channels per group (a GEMM's inner size) below which im2col's 9x longer inner size wins
MIN_PIXELS = 256  # outputs per image from which 16 GEMMs over the tiles beat im2col's one (see applies)
PLANE_GAP = 16  # elements between M's planes
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def applies(kernel, stride, dilation, channels_per_group: int, out_per_group: int, out_hw, dtype) -> bool:
    """Whether a conv or its weight gradient runs here: 3x3 at stride 1 over images of at least
    MIN_PIXELS outputs (measured on 32 -> 64 channels, batch 64, against cpu/conv.py's im2col: the
    forward 1.25x and 1.29x as fast at 16x16 and 28x28, the weight gradient 1.16x and 1.15x; at 8x8
    0.998x and 0.93x, where the one im2col GEMM beats 16 small ones). The input gradient, a conv
    of the cotangent's wider channels, gained nothing (0.96x, 1.00x) and stays with im2col."""
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
def _kernels():
    """The output transforms as loops over flat arrays with unsigned indices: numba tests a signed
    index for wrap-around, which keeps LLVM from vectorising the loops (6x slower)."""
    from numba import njit, uintp  # numba's first import costs ~0.3 s: pay it only when used

    @njit(inline="always")
    def _planes(m, images, what):
        """(th, tw, tiles, offsets of M's planes 0..4, offsets of the blocks' planes 0..3) for M
        (16, >= O * n * th * tw) beside images (n, O, Ho, Wo)."""
        n, o, ho, wo = images.shape
        th, tw = (ho + 1) // 2, (wo + 1) // 2
        tiles = uintp(n * th * tw)
        if m.shape[0] != 16 or m.shape[1] < o * tiles:
            raise ValueError(what)  # unchecked indices
        p = uintp(m.shape[1])
        return th, tw, tiles, (uintp(0), p, p + p, p + p + p, p + p + p + p), (uintp(0), tiles, tiles + tiles,
                                                                              tiles + tiles + tiles)

    @njit(inline="always")
    def _blocks(blocks, images, b, th, tw, into_images):
        """Copy channel b's 2x2 blocks between blocks (4, n * th * tw), each block's four values
        along the tiles, and images (n, O, Ho, Wo) flat, cut at odd edges."""
        n, o, ho, wo = images.shape
        flat, tiles, pairs = images.reshape(-1), uintp(blocks.shape[0] // 4), uintp(wo // 2)
        for a in range(n):
            for y in range(ho):
                row = uintp(((a * o + b) * ho + y) * wo)
                quadrant = uintp(2 * (y % 2)) * tiles + uintp((a * th + y // 2) * tw)
                if into_images:
                    for x in range(pairs):
                        flat[row + x + x] = blocks[quadrant + x]
                        flat[row + x + x + uintp(1)] = blocks[quadrant + tiles + x]
                    if wo % 2:
                        flat[row + pairs + pairs] = blocks[quadrant + pairs]
                else:
                    for x in range(pairs):
                        blocks[quadrant + x] = flat[row + x + x]
                        blocks[quadrant + tiles + x] = flat[row + x + x + uintp(1)]
                    if wo % 2:
                        blocks[quadrant + pairs] = flat[row + pairs + pairs]

    @njit(cache=True, nogil=True)
    def output_tiles(m, y):
        """y (n, O, Ho, Wo) = A^T M A for each tile's 16 products m (16, >= O * n * th * tw): first
        along all the tiles into the four outputs of each, then stored as 2x2 blocks."""
        th, tw, tiles, c, q = _planes(m, y, "winograd output tiles: M and the output do not match")
        src = m.reshape(-1)
        blocks = np.empty(4 * tiles, m.dtype)  # per tile its outputs (0, 0), (0, 1), (1, 0), (1, 1)
        for b in range(y.shape[1]):
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
            _blocks(blocks, y, b, th, tw, True)

    @njit(cache=True, nogil=True)
    def cotangent_tiles(g, dm):
        """dm (16, >= O * n * th * tw) = A g A^T for each 2x2 block of g (n, O, Ho, Wo), zeros past its
        edges: the transpose of output_tiles."""
        th, tw, tiles, c, q = _planes(dm, g, "winograd cotangent tiles: the cotangent and dM do not match")
        out = dm.reshape(-1)
        blocks = np.zeros(4 * tiles, dm.dtype)  # zeros stay where a block passes an odd edge
        for b in range(g.shape[1]):
            _blocks(blocks, g, b, th, tw, False)
            base = uintp(b) * tiles
            for t in range(tiles):
                g00, g01, g10, g11 = blocks[t], blocks[q[1] + t], blocks[q[2] + t], blocks[q[3] + t]
                # A g: rows g0, g0 + g1, g0 - g1, -g1; then the same on the columns
                h10, h11, h20, h21 = g00 + g10, g01 + g11, g00 - g10, g01 - g11
                i = base + t
                out[i], out[i + c[1]], out[i + c[2]], out[i + c[3]] = g00, g00 + g01, g00 - g01, -g01
                i += c[4]
                out[i], out[i + c[1]], out[i + c[2]], out[i + c[3]] = h10, h10 + h11, h10 - h11, -h11
                i += c[4]
                out[i], out[i + c[1]], out[i + c[2]], out[i + c[3]] = h20, h20 + h21, h20 - h21, -h21
                i += c[4]
                out[i], out[i + c[1]], out[i + c[2]], out[i + c[3]] = -g10, -g10 - g11, g11 - g10, g11

    return output_tiles, cotangent_tiles


def _tiles(out_hw) -> tuple:
    return (out_hw[0] + 1) // 2, (out_hw[1] + 1) // 2


def _chunk_coefficients(x: np.ndarray, padding, tiles_hw, out_ch: int, dtype):
    """(start, stop, tiles, V, scratch for M) for chunks of x's images; V None where the chunk holds
    an infinity or a NaN."""
    n, c = x.shape[:2]
    step = max(1, CHUNK_BYTES // max(1, _per_image(tiles_hw, c, out_ch, dtype.itemsize)))
    for start in range(0, n, step):
        stop = min(n, start + step)
        tiles = (stop - start) * tiles_hw[0] * tiles_hw[1]
        yield start, stop, tiles, _input_coefficients(x[start:stop], padding, tiles_hw, dtype), \
            _products(out_ch, tiles, dtype)


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
    """Scratch for M (16, O * tiles + PLANE_GAP): the gap keeps the 16 planes, which each tile's
    transform reads or writes at once, from sharing L1 cache sets (at a plane size that is a multiple
    of 4 KiB, as O * tiles * 4 bytes is for 64 channels, the cotangent's transform ran 8x slower)."""
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
    output_tiles, _ = _kernels()
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
    for start, stop, tiles, v, m in _chunk_coefficients(x, padding, tiles_hw, out_ch, dtype):
        if v is None:
            return None
        v_groups = v.reshape(tiles, 16, groups, c // groups).transpose(1, 2, 3, 0)  # (16, G, Cg, tiles)
        np.matmul(u, v_groups, out=m[:, :out_ch * tiles].reshape(16, groups, out_ch // groups, tiles))
        output_tiles(m, out[start:stop])
    return out


def conv_weight_grad(x: np.ndarray, g: np.ndarray, padding, groups: int) -> np.ndarray | None:
    """The gradient of conv's weight for output cotangent g (N, O, Ho, Wo): (O, C / groups, 3, 3);
    None where it is not finite (an infinity or a NaN in x or g), for im2col to give its IEEE
    results (see conv)."""
    _, cotangent_tiles = _kernels()
    c = x.shape[1]
    out_ch = g.shape[1]
    dtype = np.result_type(x, g)
    tiles_hw = _tiles(g.shape[2:])
    du = np.zeros((16, groups, out_ch // groups, c // groups), dtype)
    g = np.ascontiguousarray(g, dtype=dtype)  # the transform reads it flat
    for start, stop, tiles, v, dm in _chunk_coefficients(x, padding, tiles_hw, out_ch, dtype):
        if v is None:
            return None
        cotangent_tiles(g[start:stop], dm)
        products = scratch("winograd weight products", du.shape, dtype)
        # (16, G, Og, tiles) @ (16, G, tiles, Cg), summed over the chunks
        du += np.matmul(dm[:, :out_ch * tiles].reshape(16, groups, out_ch // groups, tiles),
                        v.reshape(tiles, 16, groups, c // groups).transpose(1, 2, 0, 3), out=products)
    du = du.reshape(4, 4, out_ch, c // groups).transpose(2, 3, 0, 1).astype(np.float64)
    dw = (_G.T @ du @ _G).astype(dtype)
    return dw if np.isfinite(dw).all() else None

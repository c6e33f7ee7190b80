"""Stride-1 convolutions computed directly from the images, without window matrices.

Each (image, channel) plane is zero-padded to Hp x Wp and stored flat. Output pixel (y, x) is then
at q = y * Wp + x of its output plane, and the input that tap (i, j) multiplies it by is at q +
i * dh * Wp + j * dw of every input plane: one constant shift per tap, the same for every pixel.
So each pass is a sum of shifted contiguous vectors, and a register-blocked micro-kernel (cpu/simd)
runs it at GEMM speed from data that stays in cache, where im2col copies 9 values per output into a
window matrix first (the MNIST CNN's 32 -> 64 conv: a 58 MB matrix for each pass). The kernels
compute every q < Ho * Wp; the Wp - Wo columns past the end of each output row are discarded.

- forward: out[o, q] = sum over c, t of w[o, c, t] * x[c, q + shift_t]. A task is one image's run
  of a few vectors of q for one group (of OUT_VECTORS, whichever pads Ho * Wp least); its
  accumulators are OUT_BLOCK output channels by those vectors (16-24 registers), and it streams
  the weights through them channel by channel and tap by tap.
- input gradient: the forward pass over the cotangent, padded by d * (k - 1) - p on each side
  (cropped where that is negative), with the kernel flipped and its channel axes swapped.
- weight gradient: dw[o, c, t] = sum over images and q of g[o, q] * x[c, q + shift_t], with g zero
  in the discarded columns and copied channels-last, so a tile of 24 accumulators is a few vectors
  of output channels by several (channel, tap) pairs: per pixel, each cotangent vector is loaded
  once and each pair's input value broadcast once (the GEMM micro-kernel's shape). Each thread
  sums its images into sums of its own.

Tasks are split over the cores (cpu/threads.py). Arrays are NumPy arrays: x (N, C, H, W), weight
(O, C / groups, kh, kw), padding ((top, bottom), (left, right)).
"""
from __future__ import annotations

import hashlib
import threading
from functools import cache
from pathlib import Path

import numpy as np

from . import threads
from .simd import lanes
from .workspace import scratch

MIN_CHANNELS, MAX_CHANNELS, MIN_USE = 8, 128, 0.6  # where the direct passes beat im2col's GEMMs (applies)
UNROLL_TAPS = 9  # kernels of up to this many taps have them written out (_forward_kernel)
OUT_BLOCK, OUT_VECTORS = 4, (6, 5, 4)  # forward accumulators: output channels x vectors of pixels
GRAD_REGISTERS = 24  # weight-gradient accumulators: vectors of output channels x (channel, tap) pairs
PIXEL_CHUNK = 64  # pixels whose cotangents and planes every weight-gradient tile reads in turn
SUMS_BYTES = 256 << 10  # weight-gradient sums updated in one pass over the images (within L2)
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_SIMD = hashlib.sha256(Path(__file__).with_name("simd.py").read_bytes()).hexdigest()[:16]


def applies(stride, dtype, reduced: int, produced: int, out_hw, width: int) -> bool:
    """Whether a pass runs here: stride 1, float32 or float64, channels a group (those the pass sums
    over, and those it produces) from MIN_CHANNELS to MAX_CHANNELS, and outputs (Ho, Wo) over rows of
    `width` padded columns at least MIN_USE of the q the kernels compute. Measured against im2col
    (benchmarks/conv.py, 3x3 convs): thinner inputs give each broadcast weight too few products (a
    grey or RGB first layer: 0.5-0.8x its time; its input gradient, 32 channels into 1, fills a
    quarter of a block of OUT_BLOCK output channels: 0.6x); up to 128 channels the three passes took 0.4-0.85x
    its time at 7x7 to 56x56, at 256 0.85-1.5x, at 512 1.2-1.6x (im2col's one GEMM with K = 9 C
    runs at BLAS's speed there, where a task's planes and weights outgrow the caches); 28x28
    outputs of 30-column rows use 0.97 of what is computed, 8x8 of 10: 0.8."""
    if not (all(s == 1 for s in stride) and np.dtype(dtype) in _DTYPES
            and MIN_CHANNELS <= min(reduced, produced) and max(reduced, produced) <= MAX_CHANNELS):
        return False
    computed = _round_up(out_hw[0] * width, lanes(dtype) * _pixel_vectors(out_hw[0] * width, dtype))
    return out_hw[0] * out_hw[1] >= MIN_USE * computed


def _pixel_vectors(q: int, dtype) -> int:
    """Of OUT_VECTORS, the vectors of pixels a forward task takes that pad q pixels least (the
    most where they tie): 8x8 outputs of 10-column rows, 80 pixels, are 5 vectors of 16 float32,
    where 6 would compute 96."""
    return min(OUT_VECTORS, key=lambda v: (_round_up(q, lanes(dtype) * v), -v))


def _round_up(n: int, step: int) -> int:
    return -(-n // step) * step


# ---- kernel sources -----------------------------------------------------------------------------
def _header() -> list[str]:
    return ["import numpy as np", "from numba import njit", "", f"from funcgrad.cpu import simd  # {_SIMD}", "",
            "@njit(cache=True, nogil=True)"]


@cache
def _forward_kernel(dtype: np.dtype, nv: int, unrolled: int):
    """kernel(planes, weights, shifts, out, groups, cin, plane, n_ob, q_len, t0, t1): planes (N *
    groups * cin planes of `plane` elements, and a tail), weights (groups, n_ob, cin, taps, OUT_BLOCK),
    out (N, groups, n_ob * OUT_BLOCK, q_len), tasks (image, group, block of nv vectors of q) t0 .. t1.
    unrolled: the number of taps, written out one after another (0: a loop over them). A 3x3
    kernel's nine taps unrolled ran 0.87-0.90x the loop's time (its exit mispredicted after every
    channel's nine)."""
    from .fusion import compile_kernel
    lane, ob = lanes(dtype), OUT_BLOCK
    block = lane * nv
    acc = [(o, v, f"a{o}_{v}") for o in range(ob) for v in range(nv)]
    lines = _header() + [
        "def kernel(planes, weights, shifts, out, groups, cin, plane, n_ob, q_len, t0, t1):",
        "    taps = shifts.size",
        f"    nqb = q_len // {block}",
        f"    n_img = out.size // max(1, groups * n_ob * {ob} * q_len)",
        f"    if (q_len % {block} or weights.size != groups * n_ob * cin * taps * {ob} or t0 < 0"
        f" or out.size != n_img * groups * n_ob * {ob} * q_len or t1 > n_img * groups * nqb"
        f" or planes.size < (n_img * groups * cin - 1) * plane + q_len + shifts.max() or shifts.min() < 0"
        f" or {unrolled} not in (0, taps)):",
        "        raise ValueError('direct conv: the planes, weights and output do not match')"]
    lines += [f"    s{t} = shifts[{t}]" for t in range(unrolled)]
    lines += ["    for task in range(t0, t1):",
              f"        q0 = task % nqb * {block}",
              "        g = task // nqb % groups",
              "        n = task // (nqb * groups)",
              "        for b in range(n_ob):"]
    lines += [f"            {a} = simd.splat(np.{dtype.name}(0), {lane})" for _, _, a in acc]
    lines += ["            xb = (n * groups + g) * cin * plane + q0",
              f"            wb = (g * n_ob + b) * cin * taps * {ob}",
              "            for c in range(cin):"]

    def tap(indent: str, shift: str, weight: str) -> list[str]:
        body = [f"{indent}x{v} = simd.load(planes, {shift} + {v * lane}, {lane})" for v in range(nv)]
        for o in range(ob):
            body.append(f"{indent}w = simd.broadcast(weights, {weight} + {o}, {lane})")
            body += [f"{indent}{a} = simd.fma(w, x{v}, {a})" for oo, v, a in acc if oo == o]
        return body
    if unrolled:
        for t in range(unrolled):
            lines += tap("                ", f"xb + s{t}", f"wb + {t * ob}")
        lines.append(f"                wb += {unrolled * ob}")
    else:
        lines += ["                for t in range(taps):"] + tap("                    ", "xb + shifts[t]", "wb") + \
            [f"                    wb += {ob}"]
    lines += ["                xb += plane",
              f"            ob = ((n * groups + g) * n_ob + b) * {ob} * q_len + q0"]
    lines += [f"            simd.store(out, ob + {o} * q_len + {v * lane}, {a})" for o, v, a in acc]
    return compile_kernel("\n".join(lines) + "\n")


def _grad_vectors(og: int, lane: int) -> int:
    """Vectors of output channels in a weight-gradient tile (GRAD_REGISTERS // that many (input
    channel, tap) pairs): of 4, 3, 2, the one that pads og least, the larger where two tie."""
    vectors = -(-og // lane)
    return min((4, 3, 2, 1), key=lambda v: (_round_up(vectors, v), -v)) if vectors > 1 else 1


@cache
def _weight_grad_kernel(dtype: np.dtype, vectors: int):
    """kernel(planes, cot, offsets, partial, groups, cin, plane, og, q_len, n0, n1): partial (groups,
    pairs, og) += the products of images n0 .. n1, for planes (N * groups * cin planes of `plane`
    elements), cot (N, groups, q_len, og) channels-last, zero in the discarded columns, og a multiple
    of `vectors` vectors, and offsets (pairs,): each (input channel, tap) pair's c * plane + shift,
    pairs a multiple of GRAD_REGISTERS // vectors. A tile of accumulators is `vectors` vectors of
    output channels by those pairs, loaded from partial and stored back after each run of
    PIXEL_CHUNK pixels, whose cotangents and planes stay in cache for every tile. The pairs go in
    runs whose sums take SUMS_BYTES, each run over all the images (the sums stay in cache too)."""
    from .fusion import compile_kernel
    lane, nk = lanes(dtype), GRAD_REGISTERS // vectors
    width = vectors * lane
    acc = [(k, v, f"a{k}_{v}") for k in range(nk) for v in range(vectors)]
    lines = _header() + [
        "def kernel(planes, cot, offsets, partial, groups, cin, plane, og, q_len, n0, n1):",
        "    pairs = offsets.size",
        f"    n_img = cot.size // max(1, groups * og * q_len)",
        f"    if (og % {width} or pairs % {nk} or partial.size != groups * pairs * og or n0 < 0 or n1 > n_img"
        f" or cot.size != n_img * groups * og * q_len or (pairs and offsets.min() < 0)"
        f" or planes.size < (n_img * groups * cin - 1) * plane + q_len + (offsets.max() - (cin - 1) * plane if pairs else 0)):",
        "        raise ValueError('direct conv weight gradient: the planes, cotangent and sums do not match')",
        f"    run = max({nk}, {SUMS_BYTES // (dtype.itemsize * nk)} // max(1, og) * {nk})",
        "    for k0 in range(0, pairs, run):",
        "        for n in range(n0, n1):",
        "            for g in range(groups):",
        "                xg = (n * groups + g) * cin * plane",
        "                cg = (n * groups + g) * q_len * og",
        f"                for q0 in range(0, q_len, {PIXEL_CHUNK}):",
        f"                    q1 = min(q_len, q0 + {PIXEL_CHUNK})",
        f"                    for b in range(0, og, {width}):",
        f"                        for kb in range(k0, min(pairs, k0 + run), {nk}):",
        "                            pb = (g * pairs + kb) * og + b"]
    lines += [f"                            {a} = simd.load(partial, pb + {k} * og + {v * lane}, {lane})"
              for k, v, a in acc]
    lines += [f"                            x{k} = xg + offsets[kb + {k}]" for k in range(nk)]
    lines += ["                            for q in range(q0, q1):",
              "                                c = cg + q * og + b"]
    lines += [f"                                g{v} = simd.load(cot, c + {v * lane}, {lane})" for v in range(vectors)]
    for k in range(nk):
        lines.append(f"                                x = simd.broadcast(planes, x{k} + q, {lane})")
        lines += [f"                                {a} = simd.fma(x, g{v}, {a})" for kk, v, a in acc if kk == k]
    lines += [f"                            simd.store(partial, pb + {k} * og + {v * lane}, {a})" for k, v, a in acc]
    return compile_kernel("\n".join(lines) + "\n")


@cache
def _layout_kernels():
    """to_planes(x, planes, keep, every, top, left, wp, plane, bad, t0, t1): the images of x (N, C,
    H, W), taken as N * C // keep runs of keep planes, into flat planes of `plane` elements, `every`
    a run (the rest zero): image p at (top, left) of plane (p // keep) * every + p % keep, zeros
    around it; bad[d] = whether plane d received an infinity or NaN; tasks: planes t0 .. t1.
    from_planes(planes, out, keep, every, wp, t0, t1): the reverse, each output row read from the
    start of its plane's row (the planes' own stride `plane` is planes.size // their count)."""
    from numba import njit

    @njit(cache=True, nogil=True)
    def to_planes(x, planes, keep, every, top, left, wp, plane, bad, t0, t1):
        n, c, h, w = x.shape
        if (n * c % keep or planes.size < n * c // keep * every * plane or top < 0 or left < 0 or left + w > wp
                or (top + h) * wp > plane or keep > every or bad.size < t1 or t0 < 0 or t1 > n * c // keep * every):
            raise ValueError("direct conv: the images do not fit their planes")
        for d in range(t0, t1):
            base, k = d * plane, d % every
            stop, flag = base, False
            if k < keep:
                p = d // every * keep + k
                image = x[p // c, p % c]
                for y in range(h):
                    row = base + (top + y) * wp + left
                    for z in range(stop, row):
                        planes[z] = 0
                    for z in range(w):
                        v = image[y, z]
                        planes[row + z] = v
                        flag |= (v - v) != 0  # inf - inf and NaN - NaN are NaN
                    stop = row + w
            for z in range(stop, base + plane):
                planes[z] = 0
            bad[d] = flag

    @njit(cache=True, nogil=True)
    def from_planes(planes, out, keep, every, wp, t0, t1):
        n, c, h, w = out.shape
        count = n * c // keep * every
        plane = planes.size // max(1, count)
        if n * c % keep or keep > every or w > wp or h * wp > plane or t0 < 0 or t1 > n * c:
            raise ValueError("direct conv: the planes do not hold the output")
        for p in range(t0, t1):
            base = (p // keep * every + p % keep) * plane
            image = out[p // c, p % c]
            for y in range(h):
                for z in range(w):
                    image[y, z] = planes[base + y * wp + z]

    @njit(cache=True, nogil=True)
    def to_rows(g, rows, groups, wp, t0, t1):
        """rows (N, groups, q_len, og) = g (N, groups * o, Ho, Wo) channels-last, pixel (y, x) at
        y * wp + x, zeros elsewhere; tasks: (image, group) pairs t0 .. t1."""
        n, channels, h, w = g.shape
        q_len, og = rows.shape[2:]
        o = channels // groups
        if rows.shape[0] != n or rows.shape[1] != groups or o * groups != channels or o > og or w > wp \
                or h * wp > q_len or t0 < 0 or t1 > n * groups:
            raise ValueError("direct conv: the cotangent does not fit its rows")
        for task in range(t0, t1):
            image, group = task // groups, task % groups
            out = rows[image, group]
            out[:] = 0
            for y in range(h):
                for c in range(o):
                    plane = g[image, group * o + c]
                    for z in range(w):
                        out[y * wp + z, c] = plane[y, z]
    return to_planes, from_planes, to_rows


# ---- planes -------------------------------------------------------------------------------------
def _planes(name: str, x: np.ndarray, padding, plane: int, reach: int, dtype, keep: int = 1, every: int = 1):
    """(flat, wp, finite): x (N, C, H, W) zero-padded by padding (negative: cropped) as flat planes of
    `plane` elements (rows of wp; plane >= hp * wp), in runs of `every` planes of which the first
    `keep` hold images (the rest zeros), in scratch memory and followed by `reach` zeros (what the
    last plane's reads run past its end); finite: whether every value of x that was kept is finite."""
    (top, bottom), (left, right) = padding
    n, c, h, w = x.shape
    wp = w + left + right
    kept = x[:, :, max(0, -top):h - max(0, -bottom), max(0, -left):w - max(0, -right)]
    if kept.dtype != dtype:
        kept = kept.astype(dtype)
    count = n * c // keep * every
    flat = scratch(name, (count * plane + reach,), dtype)
    flat[count * plane:] = 0
    bad = scratch(name + " flags", (count,), np.bool_)
    to_planes = _layout_kernels()[0]
    threads.split(lambda t0, t1: to_planes(kept, flat, keep, every, max(0, top), max(0, left), wp, plane, bad, t0, t1),
                  count, count * plane * threads.ELEMENT_WORK)
    return flat, wp, not bad.any()


def _from_planes(planes, out, keep: int, every: int, wp: int) -> None:
    from_planes = _layout_kernels()[1]
    count = out.shape[0] * out.shape[1]
    threads.split(lambda t0, t1: from_planes(planes, out, keep, every, wp, t0, t1), count, out.size * threads.ELEMENT_WORK)


def _shifts(kernel, dilation, wp: int) -> np.ndarray:
    (kh, kw), (dh, dw) = kernel, dilation
    return np.array([i * dh * wp + j * dw for i in range(kh) for j in range(kw)], np.int64)


# ---- the passes ---------------------------------------------------------------------------------
def _correlate(x, weight, padding, dilation, groups: int, out, dtype) -> np.ndarray:
    """The stride-1 cross-correlation of x (N, C, H, W) with weight (O, C / groups, kh, kw) under
    padding (negative: cropped), into out (N, O, Ho, Wo) where given."""
    n = x.shape[0]
    out_ch, cin, kh, kw = weight.shape
    og = out_ch // groups
    hp, wp = (x.shape[2] + sum(padding[0]), x.shape[3] + sum(padding[1]))
    ho, wo = hp - dilation[0] * (kh - 1), wp - dilation[1] * (kw - 1)
    out = np.empty((n, out_ch, ho, wo), dtype) if out is None else out
    if out.size == 0 or cin == 0:
        out[...] = 0
        return out
    n_ob = -(-og // OUT_BLOCK)
    vectors = _pixel_vectors(ho * wp, dtype)
    block = lanes(dtype) * vectors
    q_len = _round_up(ho * wp, block)
    shifts = _shifts((kh, kw), dilation, wp)
    planes, wp, _ = _planes("direct planes", x, padding, hp * wp, max(0, q_len + int(shifts[-1]) - hp * wp), dtype)
    w = np.zeros((groups, n_ob * OUT_BLOCK, cin, kh * kw), dtype)
    w[:, :og] = weight.reshape(groups, og, cin, kh * kw)
    w = np.ascontiguousarray(w.reshape(groups, n_ob, OUT_BLOCK, cin, kh * kw).transpose(0, 1, 3, 4, 2)).reshape(-1)
    sums = scratch("direct sums", (n * groups * n_ob * OUT_BLOCK * q_len,), dtype)
    kernel = _forward_kernel(np.dtype(dtype), vectors, kh * kw if kh * kw <= UNROLL_TAPS else 0)
    threads.split(lambda t0, t1: kernel(planes, w, shifts, sums, groups, cin, hp * wp, n_ob, q_len, t0, t1),
                  n * groups * (q_len // block), n * out_ch * cin * kh * kw * q_len)
    _from_planes(sums, out, og, n_ob * OUT_BLOCK, wp)
    return out


def conv(x, weight, padding, dilation, groups: int, out=None) -> np.ndarray:
    """Stride-1 cross-correlation: (N, O, Ho, Wo), into out (C-contiguous, of the operands' dtype) where given."""
    return _correlate(x, weight, padding, dilation, groups, out, np.result_type(x, weight))


def conv_input_grad(g, weight, padding, dilation, groups: int, out=None) -> np.ndarray:
    """The gradient of a stride-1 conv's input for output cotangent g (N, O, Ho, Wo): the correlation
    of g, padded by d * (k - 1) - p on each side, with the flipped kernel of swapped channel axes."""
    out_ch, cin, kh, kw = weight.shape
    og = out_ch // groups
    flipped = weight[:, :, ::-1, ::-1].reshape(groups, og, cin, kh, kw).transpose(0, 2, 1, 3, 4)
    span = (dilation[0] * (kh - 1), dilation[1] * (kw - 1))
    pads = tuple((s - lo, s - hi) for s, (lo, hi) in zip(span, padding))
    return _correlate(g, flipped.reshape(groups * cin, og, kh, kw), pads, dilation, groups, out,
                      np.result_type(g, weight))


def conv_weight_grad(x, g, kernel, padding, dilation, groups: int) -> np.ndarray | None:
    """The gradient of a stride-1 conv's weight for output cotangent g (N, O, Ho, Wo): (O, C / groups,
    kh, kw); None where x holds an infinity or NaN (the discarded columns' zero cotangents meet input
    values there, and 0 * inf would be NaN where the true sum has no such product)."""
    dtype = np.result_type(x, g)
    lane = lanes(dtype)
    n, out_ch, ho, wo = g.shape
    cin = x.shape[1] // groups
    if g.size == 0 or cin == 0:
        return np.zeros((out_ch, cin) + tuple(kernel), dtype)
    hp, wp = x.shape[2] + sum(padding[0]), x.shape[3] + sum(padding[1])
    q_len = ho * wp
    vectors = _grad_vectors(out_ch // groups, lane)
    og = _round_up(out_ch // groups, vectors * lane)
    shifts = _shifts(kernel, dilation, wp)
    pairs = _round_up(cin * shifts.size, GRAD_REGISTERS // vectors)  # the extra pairs' sums are dropped
    offsets = np.zeros(pairs, np.int64)
    offsets[:cin * shifts.size] = (np.arange(cin)[:, None] * (hp * wp) + shifts).reshape(-1)
    planes, wp, finite = _planes("direct planes", x, padding, hp * wp, max(0, q_len + int(shifts[-1]) - hp * wp), dtype)
    if not finite:
        return None
    rows = scratch("direct cotangent rows", (n, groups, q_len, og), dtype)
    to_rows = _layout_kernels()[2]
    threads.split(lambda t0, t1: to_rows(g, rows, groups, wp, t0, t1), n * groups, rows.size * threads.ELEMENT_WORK)
    kernel_fn = _weight_grad_kernel(np.dtype(dtype), vectors)
    partials: dict[int, np.ndarray] = {}  # each thread's sums, whichever image ranges it takes

    def run(n0: int, n1: int) -> None:
        partial = partials.get(threading.get_ident())
        if partial is None:
            partial = partials[threading.get_ident()] = np.zeros(groups * pairs * og, dtype)
        kernel_fn(planes, rows.reshape(-1), offsets, partial, groups, cin, hp * wp, og, q_len, n0, n1)
    threads.split(run, n, n * groups * pairs * og * q_len)
    sums = sum(partials.values()).reshape(groups, pairs, og)[:, :cin * shifts.size, :out_ch // groups]
    return np.ascontiguousarray(sums.reshape(groups, cin, kernel[0], kernel[1], -1).transpose(0, 4, 1, 2, 3)) \
        .reshape(out_ch, cin, kernel[0], kernel[1])

"""Stride-1 convolutions computed directly from the images, without window matrices.

Each (image, channel) plane is zero-padded to Hp x Wp and stored flat. Output pixel (y, x) is then
at q = y * Wp + x of its output plane, and the input that tap (i, j) multiplies it by is at q +
i * dh * Wp + j * dw of every input plane: one constant shift per tap, the same for every pixel.
So each pass is a sum of shifted contiguous vectors, and a register-blocked micro-kernel (cpu/simd)
runs it at GEMM speed from data that stays in cache, where im2col copies 9 values per output into a
window matrix first (the MNIST CNN's 32 -> 64 conv: a 58 MB matrix for each pass). The kernels
compute every q < Ho * Wp; the Wp - Wo columns past the end of each output row are discarded,
except where Wo is a whole number of vectors (all or half the lanes: 8x8, 16x16, 32x32 in float32):
then a forward task is a few whole output rows, each vector a run of one row, and no discarded
column is computed (at 8x8 a fifth of the work; _pixel_layout chooses).

- forward: out[o, q] = sum over c, t of w[o, c, t] * x[c, q + shift_t]. A task is one image's run
  of a few vectors of q for one group (of the host's out_vectors, whichever pads Ho * Wp least);
  its accumulators are OUT_BLOCK output channels by those vectors (up to 24 of AVX-512's 32
  registers, 12 of AVX2's 16: cpu/registers sizes every tile for the host), and it streams
  the weights through them channel by channel and tap by tap, adding each SUM_CHANNELS channels'
  sums to its output (two short float32 chains instead of one over every channel and tap).
- input gradient: the forward pass over the cotangent, padded by d * (k - 1) - p on each side
  (cropped where that is negative), with the kernel flipped and its channel axes swapped.
- weight gradient: dw[o, c, t] = sum over images and the real pixels q of g[o, q] * x[c, q +
  shift_t] (no discarded column is visited: a fifth of the work at 8x8), g copied channels-last,
  so a tile of accumulators (16 on AVX-512, 8 on AVX2) is a few vectors of output channels by
  several (channel, tap) pairs: per pixel, each cotangent vector is loaded once and each pair's
  input value broadcast once (the GEMM micro-kernel's shape). Over whole rows of vectors, the vectors run along the
  rows instead (_row_weight_grad_kernel: g as NumPy lays it out, no broadcasts, 0.8x the time at
  8x8, 0.7x at 16x16 and 32x32). Each range of images has sums of its own, added in the ranges'
  order (not the threads': the same bits every run).

Tasks are split over the cores (cpu/threads.py). Arrays are NumPy arrays: x (N, C, H, W), weight
(O, C / groups, kh, kw), padding ((top, bottom), (left, right)).
"""
from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import registers, threads
from .registers import OUT_BLOCK, ROW_GRAD_TAPS
from .workspace import scratch

MIN_CHANNELS, MAX_CHANNELS, MIN_USE = 8, 128, 0.6  # where the direct passes beat im2col's GEMMs (applies)
UNROLL_TAPS = 9  # kernels of up to this many taps have them written out (_forward_kernel)
# Channels whose products a forward task sums in registers before adding them to its output: against
# float64, the input gradient over 128 channels' 3x3 taps 1.0x im2col's error where one chain over
# them all was 6.3x (random convolutions against PyTorch's oneDNN: median 1.4x its error, was 2.1x;
# the forward pass 0.8x, was 1.0x), in the same time (8 channels: 0.9x oneDNN's, 2-5% slower).
SUM_CHANNELS = 16
PIXEL_CHUNK = 64  # pixels whose cotangents and planes every weight-gradient tile reads in turn
SUMS_BYTES = 256 << 10  # weight-gradient sums updated in one pass over the images (within L2)
PIPELINE_IMAGES = 4  # images a thread from which a pass's stages run image by image (_over_images)
SUMS_HELD = 64 << 20  # bytes of weight-gradient sums (a set for each range of images) held at once, at most
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_SIMD = hashlib.sha256(Path(__file__).with_name("simd.py").read_bytes()).hexdigest()[:16]


def lanes(dtype) -> int:
    """Elements of dtype in one of the kernels' vectors (one of the host's registers). Here, not in
    cpu/simd, so that planning a convolution does not import numba (~0.2 s of `import funcgrad`)."""
    return registers.host().vector_bytes // np.dtype(dtype).itemsize


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
    return out_hw[0] * out_hw[1] >= MIN_USE * _pixel_layout(out_hw[0], out_hw[1], width, dtype).q_len


class _Pixels(NamedTuple):
    """How a forward task's vectors cover the output pixels: `vectors` vectors of `lane` pixels, and
    q_len outputs computed a channel. per_row 0: runs of q over the padded rows (q_len >= Ho * Wp);
    else whole output rows of per_row vectors each (Wo = per_row * lane), so no discarded column
    is computed: 8x8 outputs are 64 pixels in 8 rows of 8 float32, where runs of q compute 80.
    stack 2: each vector two whole rows of half its lanes (per_row 1, Wo = lane / 2), loaded as
    two halves (simd.load_halves): 8x8 float32 in whole AVX-512 vectors."""
    lane: int
    vectors: int
    per_row: int
    q_len: int
    stack: int = 1

    @property
    def rows(self) -> int:
        """Output rows a task computes (0: runs of q)."""
        return self.vectors // self.per_row * self.stack if self.per_row else 0


def _pixel_layout(ho: int, wo: int, wp: int, dtype) -> _Pixels:
    """The forward tasks' layout of the outputs, for the host's registers."""
    return _layout_for(ho, wo, wp, np.dtype(dtype), registers.host())


@cache
def _layout_for(ho: int, wo: int, wp: int, dtype: np.dtype, regs: registers.Registers) -> _Pixels:
    """Of runs of q (regs.out_vectors vectors, whichever pads Ho * Wp least, the most where they
    tie) and whole rows of vectors of all lanes or, where regs.half_vectors, half (a task a few rows:
    vectors a multiple of per_row), the one that computes the fewest outputs (runs where they tie).
    Half vectors (8 float32) run at the FMA units' speed on Zen 4 (ymm halves of one zmm): the 32 ->
    64 conv at 8x8 115 GFLOP/s on one thread, runs of q 106 (of which 0.8 real pixels). A core with
    512-bit FMA units (Zen 5, Intel's AVX-512 Xeons) does twice a half vector's work with a whole one:
    on Zen 5 that conv's three passes took 660-700 us in whole rows of half vectors, 460-490 in runs
    of q (64 images, two threads), so only Zen 4 takes half vectors (registers.half_vectors).
    Rows of half a vector otherwise go two to a vector (stack 2), where that computes fewer outputs
    than runs of q: on Zen 5 the 8x8 convs' forward and input-gradient passes (32 or 64 channels
    into 32 or 64) took 0.79-0.87x the time of runs of q."""
    full = regs.vector_bytes // dtype.itemsize
    vectors = min(regs.out_vectors, key=lambda v: (_round_up(ho * wp, full * v), -v))
    best = _Pixels(full, vectors, 0, _round_up(ho * wp, full * vectors))
    for lane in (full, full // 2) if regs.half_vectors else (full,):
        for vectors in regs.out_vectors if wo % lane == 0 else ():
            per_row = wo // lane
            if vectors % per_row == 0 and _round_up(ho, vectors // per_row) * wo < best.q_len:
                best = _Pixels(lane, vectors, per_row, _round_up(ho, vectors // per_row) * wo)
    for vectors in regs.out_vectors if 2 * wo == full else ():
        if _round_up(ho, 2 * vectors) * wo < best.q_len:
            best = _Pixels(full, vectors, 1, _round_up(ho, 2 * vectors) * wo, stack=2)
    return best


def _round_up(n: int, step: int) -> int:
    return -(-n // step) * step


# ---- kernel sources -----------------------------------------------------------------------------
def _header() -> list[str]:
    return ["import numpy as np", "from numba import njit", "", f"from funcgrad.cpu import simd  # {_SIMD}", "",
            "@njit(cache=True, nogil=True)"]


@cache
def _forward_kernel(dtype: np.dtype, lane: int, nv: int, per_row: int, wp: int, unrolled: int, stack: int = 1):
    """kernel(planes, weights, shifts, out, groups, cin, plane, n_ob, q_len, t0, t1): planes (N *
    groups * cin planes of `plane` elements, and a tail), weights (groups, n_ob, cin, taps, OUT_BLOCK),
    out (N, groups, n_ob * OUT_BLOCK, q_len), tasks (image, group, block of nv vectors of `lane`
    outputs) t0 .. t1. per_row 0: a block is a run of q; else nv // per_row whole output rows of
    per_row vectors (stack 2: nv * 2 rows, two a vector), over planes of rows of wp (a constant of
    the kernel's code, as each vector's offset). unrolled: the number of taps, written out one after
    another (0: a loop over them). A 3x3 kernel's nine taps unrolled ran 0.87-0.90x the loop's time
    (its exit mispredicted after every channel's nine)."""
    from .fusion import compile_kernel
    ob, block = OUT_BLOCK, lane * nv
    acc = [(o, v, f"a{o}_{v}") for o in range(ob) for v in range(nv)]
    rows = _Pixels(lane, nv, per_row, 0, stack).rows
    # where a block starts in its planes, and where its vector v (each half's row, if stacked) does from there
    start = f"task % nqb * {rows * wp}" if per_row else "q0"
    offsets = [((2 * v * wp, (2 * v + 1) * wp) if stack == 2 else
                (v // per_row * wp + v % per_row * lane if per_row else v * lane,)) for v in range(nv)]
    load = "simd.load_halves" if stack == 2 else "simd.load"
    reach = f"(nqb * {rows} - 1) * {wp} + {per_row * lane // stack}" if per_row else "q_len"
    lines = _header() + [
        "def kernel(planes, weights, shifts, out, groups, cin, plane, n_ob, q_len, t0, t1):",
        "    taps = shifts.size",
        f"    nqb = q_len // {block}",
        f"    n_img = out.size // max(1, groups * n_ob * {ob} * q_len)",
        f"    if (q_len % {block} or weights.size != groups * n_ob * cin * taps * {ob} or t0 < 0"
        f" or out.size != n_img * groups * n_ob * {ob} * q_len or t1 > n_img * groups * nqb"
        f" or planes.size < (n_img * groups * cin - 1) * plane + {reach} + shifts.max() or shifts.min() < 0"
        f" or {unrolled} not in (0, taps)):",
        "        raise ValueError('direct conv: the planes, weights and output do not match')"]
    lines += [f"    s{t} = shifts[{t}]" for t in range(unrolled)]
    lines += ["    for task in range(t0, t1):",
              f"        q0 = task % nqb * {block}",
              "        g = task // nqb % groups",
              "        n = task // (nqb * groups)",
              "        for b in range(n_ob):",
              f"            xb = (n * groups + g) * cin * plane + {start}",
              f"            wb = (g * n_ob + b) * cin * taps * {ob}",
              f"            ob = ((n * groups + g) * n_ob + b) * {ob} * q_len + q0",
              f"            for c0 in range(0, cin, {SUM_CHANNELS}):"]
    lines += [f"                {a} = simd.splat(np.{dtype.name}(0), {lane})" for _, _, a in acc]
    lines += [f"                for c in range(c0, min(cin, c0 + {SUM_CHANNELS})):"]

    def tap(indent: str, shift: str, weight: str) -> list[str]:
        body = [f"{indent}x{v} = {load}(planes, {', '.join(f'{shift} + {o}' for o in offsets[v])}, {lane})"
                for v in range(nv)]
        for o in range(ob):
            body.append(f"{indent}w = simd.broadcast(weights, {weight} + {o}, {lane})")
            body += [f"{indent}{a} = simd.fma(w, x{v}, {a})" for oo, v, a in acc if oo == o]
        return body
    if unrolled:
        for t in range(unrolled):
            lines += tap(" " * 20, f"xb + s{t}", f"wb + {t * ob}")
        lines.append(f"                    wb += {unrolled * ob}")
    else:
        lines += ["                    for t in range(taps):"] + tap(" " * 24, "xb + shifts[t]", "wb") + \
            [f"                        wb += {ob}"]
    lines += ["                    xb += plane",
              "                if c0 == 0:"]
    lines += [f"                    simd.store(out, ob + {o} * q_len + {v * lane}, {a})" for o, v, a in acc]
    lines += ["                else:"]
    lines += [f"                    simd.store(out, ob + {o} * q_len + {v * lane}, simd.add(simd.load(out, ob + {o} * q_len"
              f" + {v * lane}, {lane}), {a}))" for o, v, a in acc]
    return compile_kernel("\n".join(lines) + "\n")


def _grad_vectors(og: int, lane: int) -> int:
    """Vectors of output channels in a weight-gradient tile (grad_registers // that many (input
    channel, tap) pairs): of 4, 3, 2, the one that pads og least, the larger where two tie."""
    vectors = -(-og // lane)
    return min((4, 3, 2, 1), key=lambda v: (_round_up(vectors, v), -v)) if vectors > 1 else 1


@cache
def _weight_grad_kernel(dtype: np.dtype, lane: int, vectors: int, nk: int):
    """kernel(planes, cot, offsets, partial, groups, cin, plane, og, ho, wo, wp, n0, n1): partial
    (groups, pairs, og) += the products of images n0 .. n1, for planes (N * groups * cin planes of
    `plane` elements, rows of wp), cot (N, groups, ho * wo, og) channels-last, og a multiple of
    `vectors` vectors, and offsets (pairs,): each (input channel, tap) pair's c * plane + shift,
    pairs a multiple of nk. Only the ho x wo real pixels are summed (q = y * wp + x, x < wo): the
    discarded columns' products are never formed, so the sums hold exactly im2col's terms (an
    infinity in the input gives its IEEE result). A tile of accumulators is `vectors` vectors of
    `lane` output channels by nk pairs, from zero over each run of about PIXEL_CHUNK pixels (whose
    cotangents and planes stay in cache for every tile), then added to partial: two short chains of
    float32 sums instead of one over all the range's pixels (against float64, 2.4-3.2x less error
    on MNIST's conv2 and at 8x8 and 56x56, in the same time). The pairs go in runs whose sums take
    SUMS_BYTES, each run over all the images (the sums stay in cache too)."""
    from .fusion import compile_kernel
    width = vectors * lane
    acc = [(k, v, f"a{k}_{v}") for k in range(nk) for v in range(vectors)]
    lines = _header() + [
        "def kernel(planes, cot, offsets, partial, groups, cin, plane, og, ho, wo, wp, n0, n1):",
        "    pairs = offsets.size",
        "    n_img = cot.size // max(1, groups * og * ho * wo)",
        f"    if (og % {width} or pairs % {nk} or partial.size != groups * pairs * og or n0 < 0 or n1 > n_img"
        " or cot.size != n_img * groups * og * ho * wo or wo > wp or (pairs and offsets.min() < 0)"
        " or planes.size < (n_img * groups * cin - 1) * plane + (ho - 1) * wp + wo"
        " + (offsets.max() - (cin - 1) * plane if pairs else 0)):",
        "        raise ValueError('direct conv weight gradient: the planes, cotangent and sums do not match')",
        f"    run = max({nk}, {SUMS_BYTES // (dtype.itemsize * nk)} // max(1, og) * {nk})",
        "    skip = wp - wo",
        "    for k0 in range(0, pairs, run):",
        "        for n in range(n0, n1):",
        "            for g in range(groups):",
        "                xg = (n * groups + g) * cin * plane",
        "                cg = (n * groups + g) * ho * wo * og",
        f"                for p0 in range(0, ho * wo, {PIXEL_CHUNK}):",
        f"                    p1 = min(ho * wo, p0 + {PIXEL_CHUNK})",
        "                    q0, z0 = p0 // wo * wp + p0 % wo, p0 % wo",
        f"                    for b in range(0, og, {width}):",
        f"                        for kb in range(k0, min(pairs, k0 + run), {nk}):",
        "                            pb = (g * pairs + kb) * og + b"]
    indent = " " * 28
    lines += [f"{indent}{a} = simd.splat(np.{dtype.name}(0), {lane})" for _, _, a in acc]
    lines += [f"{indent}x{k} = xg + offsets[kb + {k}]" for k in range(nk)]
    lines += [f"{indent}q, z = q0, z0",
              f"{indent}for p in range(p0, p1):  # pixel p = y * wo + x is at q = y * wp + x of the planes",
              f"{indent}    c = cg + p * og + b"]
    lines += [f"{indent}    g{v} = simd.load(cot, c + {v * lane}, {lane})" for v in range(vectors)]
    for k in range(nk):
        lines.append(f"{indent}    x = simd.broadcast(planes, x{k} + q, {lane})")
        lines += [f"{indent}    {a} = simd.fma(x, g{v}, {a})" for kk, v, a in acc if kk == k]
    lines += [f"{indent}    z += 1",
              f"{indent}    wrap = z == wo  # selects, not a branch: no mispredicted exit at each row's end",
              f"{indent}    q += 1 + (skip if wrap else 0)",
              f"{indent}    z = 0 if wrap else z"]
    lines += [f"{indent}simd.store(partial, pb + {k} * og + {v * lane}, simd.add(simd.load(partial, pb + {k} * og + "
              f"{v * lane}, {lane}), {a}))" for k, v, a in acc]
    return compile_kernel("\n".join(lines) + "\n")


@cache
def _row_weight_grad_kernel(dtype: np.dtype, lane: int, per_row: int, wp: int, shifts: tuple, k: int):
    """kernel(planes, cot, partial, groups, cin, plane, og, ho, n0, n1): partial (groups, ogp, cin,
    taps) += the products of images n0 .. n1, for planes (N * groups * cin planes of `plane`
    elements, rows of wp) and cot (N, groups * og, ho, per_row * lane) as NumPy lays it out; ogp: og
    rounded up to k (the extra channels' sums repeat the last one's, and are dropped).
    The vectors run along the output rows, as the forward pass's whole rows: a tile's accumulators
    are k output channels by up to ROW_GRAD_TAPS taps of one input channel, and per
    vector of a row it loads each channel's cotangent and each tap's shifted input once (no
    broadcast, no channels-last copy of the cotangent) and forms their product in every lane.
    Each lane sums its pixels of all the images n0 .. n1, and the lanes are added (in order) to
    partial once, at the end. shifts: each tap's offset in a plane, constants of the code."""
    from .fusion import compile_kernel
    taps = len(shifts)
    wo = per_row * lane
    lines = _header() + [
        "def kernel(planes, cot, partial, groups, cin, plane, og, ho, n0, n1):",
        f"    ogp = -(-og // {k}) * {k}",
        f"    n_img = cot.size // max(1, groups * og * ho * {wo})",
        f"    if (partial.size != groups * ogp * cin * {taps} or n0 < 0 or n1 > n_img or og < 1"
        f" or cot.size != n_img * groups * og * ho * {wo} or ho < 1"
        f" or planes.size < (n_img * groups * cin - 1) * plane + (ho - 1) * {wp} + {wo + max(shifts)}):",
        "        raise ValueError('direct conv weight gradient: the planes, cotangent and sums do not match')",
        "    for g in range(groups):",
        "        for c in range(cin):",
        f"            for o0 in range(0, ogp, {k}):"]
    lines += [f"                o{j} = min(og - 1, o0 + {j})" for j in range(k)]
    for t0 in range(0, taps, ROW_GRAD_TAPS):
        chunk = range(t0, min(taps, t0 + ROW_GRAD_TAPS))
        acc = [(j, t, f"a{j}_{t}") for j in range(k) for t in chunk]
        lines += [f"                {a} = simd.splat(np.{dtype.name}(0), {lane})" for _, _, a in acc]
        lines += ["                for n in range(n0, n1):",
                  "                    xb = ((n * groups + g) * cin + c) * plane"]
        lines += [f"                    c{j} = ((n * groups + g) * og + o{j}) * ho * {wo}" for j in range(k)]
        lines += ["                    for y in range(ho):",
                  f"                        for s in range(0, {wo}, {lane}):"]
        lines += [f"                            g{j} = simd.load(cot, c{j} + s, {lane})" for j in range(k)]
        for t in chunk:
            lines.append(f"                            x = simd.load(planes, xb + s + {shifts[t]}, {lane})")
            lines += [f"                            {a} = simd.fma(g{j}, x, {a})" for j, tt, a in acc if tt == t]
        lines += [f"                        xb += {wp}"]
        lines += [f"                        c{j} += {wo}" for j in range(k)]
        for j, t, a in acc:
            lines += [f"                if o0 + {j} < og:",
                      f"                    partial[((g * ogp + o0 + {j}) * cin + c) * {taps} + {t}] += simd.total({a})"]
    return compile_kernel("\n".join(lines) + "\n")


@cache
def _layout_kernels():
    """to_planes, from_planes, to_rows and to_blocks: the copies between NumPy's layout and the kernels'.
    Each takes its arrays flat (C-contiguous) and runs tasks t0 .. t1, a plane or an image each;
    a plane's rows are copied as runs of contiguous elements and its padding zeroed in one fill
    (2-D indexing of each element ran at 2-3 ns an element: a third of an 8x8 forward pass)."""
    from numba import njit
    _u = np.uint64  # an unsigned index: no wrap-around test of negative ones, so the row loops vectorise (2-3x)

    @njit(cache=True, nogil=True)
    def to_planes(x, count, h, w, crop, planes, top, left, wp, plane, t0, t1):
        """Planes t0 .. t1 of x (count planes of h x w): rows crop[0] .. crop[0] + crop[2], columns
        crop[1] .. crop[1] + crop[3] of each at (top, left) of its flat plane of `plane` elements,
        zeros around."""
        y0, x0, hk, wk = crop[0], crop[1], crop[2], crop[3]
        if (x.size != count * h * w or planes.size < count * plane or min(y0, x0, hk, wk, top, left, t0) < 0
                or y0 + hk > h or x0 + wk > w or left + wk > wp or (top + hk) * wp > plane or t1 > count):
            raise ValueError("direct conv: the images do not fit their planes")
        for d in range(t0, t1):
            base = d * plane
            planes[base:base + plane] = 0
            for y in range(hk):
                src = (d * h + y0 + y) * w + x0
                dst = base + (top + y) * wp + left
                for z in range(wk):
                    planes[_u(dst + z)] = x[_u(src + z)]

    @njit(cache=True, nogil=True)
    def from_planes(planes, out, keep, every, ho, wo, wp, t0, t1):
        """out (planes of ho x wo) from runs of `every` planes whose first `keep` hold its planes,
        each row read from the start of its plane's row (their stride: planes.size // their count)."""
        count = out.size // max(1, ho * wo)
        plane = planes.size // max(1, count // max(1, keep) * every)
        if count % max(1, keep) or keep > every or wo > wp or ho * wp > plane or t0 < 0 or t1 > count:
            raise ValueError("direct conv: the planes do not hold the output")
        for p in range(t0, t1):
            base = (p // keep * every + p % keep) * plane
            for y in range(ho):
                src, dst = base + y * wp, (p * ho + y) * wo
                for z in range(wo):
                    out[_u(dst + z)] = planes[_u(src + z)]

    @njit(cache=True, nogil=True)
    def to_rows(g, n, o, pixels, rows, groups, og, t0, t1):
        """rows (n, groups, pixels, og) = g (n, groups * o, pixels) channels-last, the channels
        from o to og zero; tasks: (image, group) pairs t0 .. t1."""
        if g.size != n * groups * o * pixels or rows.size != n * groups * pixels * og or o > og or t0 < 0 \
                or t1 > n * groups:
            raise ValueError("direct conv: the cotangent does not fit its rows")
        for task in range(t0, t1):
            base, src = task * pixels * og, task * o * pixels
            if o < og:
                rows[base:base + pixels * og] = 0
            # 8 pixels of every channel in turn: the writes run along the rows and each line read
            # serves two turns (a plane at a time, or a pixel at a time, ran 2-3.5x as long)
            for p0 in range(0, pixels, 8):
                for p in range(p0, min(pixels, p0 + 8)):
                    for c in range(o):
                        rows[_u(base + p * og + c)] = g[_u(src + c * pixels + p)]
    @njit(cache=True, nogil=True)
    def to_blocks(weight, groups, og, cin, taps, swap, blocks, block):
        """blocks (groups, n_ob, channels, taps, block): a forward pass's weights by blocks of
        `block` output channels (zeros past the last), from weight (groups * og, cin, taps) as the
        conv holds it; swap: the input gradient's pass (each group's channel axes swapped, taps reversed)."""
        produced, reduced = (cin, og) if swap else (og, cin)
        step = -1 if swap else 1  # along a kernel's taps, in the conv's order
        n_ob = (produced + block - 1) // block
        if weight.size != groups * og * cin * taps or blocks.size != groups * n_ob * reduced * taps * block:
            raise ValueError("direct conv: the weights do not fit their blocks")
        blocks[:] = 0
        for g in range(groups):
            for o in range(produced):
                dst = (g * n_ob + o // block) * reduced * taps * block + o % block
                for c in range(reduced):
                    src = ((g * og + c) * cin + o) * taps + taps - 1 if swap else ((g * og + o) * cin + c) * taps
                    for t in range(taps):
                        blocks[_u(dst + (c * taps + t) * block)] = weight[src + t * step]
    return to_planes, from_planes, to_rows, to_blocks


# ---- planes -------------------------------------------------------------------------------------
def _planes(name: str, x: np.ndarray, padding, plane: int, dtype):
    """(flat, wp, lay): scratch memory for x (N, C, H, W) zero-padded by padding (negative: cropped)
    as flat planes of `plane` elements (rows of wp; plane >= hp * wp, so that what a kernel reads past
    a plane's pixels is its own zeros, never another image's plane, which may not be laid out yet),
    and lay(p0, p1), which writes planes p0 .. p1 there."""
    (top, bottom), (left, right) = padding
    n, c, h, w = x.shape
    wp = w + left + right
    crop = np.array([max(0, -top), max(0, -left), max(0, h - max(0, -top) - max(0, -bottom)),
                     max(0, w - max(0, -left) - max(0, -right))], np.int64)
    flat = scratch(name, (n * c * plane,), dtype)
    source, to_planes = np.ascontiguousarray(x, dtype).reshape(-1), _layout_kernels()[0]

    def lay(p0: int, p1: int) -> None:
        to_planes(source, n * c, h, w, crop, flat, max(0, top), max(0, left), wp, plane, p0, p1)
    return flat, wp, lay


def _shifts(kernel, dilation, wp: int) -> np.ndarray:
    (kh, kw), (dh, dw) = kernel, dilation
    return np.array([i * dh * wp + j * dw for i in range(kh) for j in range(kw)], np.int64)


def _over_images(n: int, work: int, stages, per_thread: int = threads.CHUNKS_PER_THREAD) -> None:
    """stages(n0, n1, spread) for images 0 .. n: each stage of a pass (lay out, compute, copy out)
    runs spread(fn, t0, t1, work), fn over its tasks t0 .. t1 for those images. With images enough
    for every thread to take a few, one split over the images, each thread running all the stages
    of its own (one hand-off to the pool a pass instead of one a stage, 60-90 us each on this
    project's 2-core VM, and each image's planes still in cache for the next stage); else every
    stage split over its own tasks. Either way in at most `per_thread` ranges a thread."""
    if n >= PIPELINE_IMAGES * threads.THREADS:
        threads.split(lambda n0, n1: stages(n0, n1, _inline), n, work, per_thread)
    else:
        stages(0, n, lambda fn, t0, t1, stage_work: threads.split(
            lambda a, b: fn(t0 + a, t0 + b), t1 - t0, stage_work, per_thread))


def _inline(fn, t0: int, t1: int, work: int) -> None:
    fn(t0, t1)


# ---- the passes ---------------------------------------------------------------------------------
def _correlate(x, weight, padding, dilation, groups: int, out, dtype, swap: bool = False) -> np.ndarray:
    """The stride-1 cross-correlation of x (N, C, H, W) with weight (O, C / groups, kh, kw) under
    padding (negative: cropped), into out (N, O, Ho, Wo) where given. swap: the input gradient's
    pass, x a conv's cotangent (N, O, H, W) and weight the conv's own (O, C / groups, kh, kw), taken
    flipped and with each group's channel axes swapped: out (N, C, Ho, Wo)."""
    n, c = x.shape[:2]
    kh, kw = weight.shape[2:]
    og, cin = (weight.shape[1], weight.shape[0] // groups) if swap else (weight.shape[0] // groups, weight.shape[1])
    out_ch = groups * og
    hp, wp = (x.shape[2] + sum(padding[0]), x.shape[3] + sum(padding[1]))
    ho, wo = hp - dilation[0] * (kh - 1), wp - dilation[1] * (kw - 1)
    out = np.empty((n, out_ch, ho, wo), dtype) if out is None else out
    if out.size == 0 or cin == 0:
        out[...] = 0
        return out
    n_ob = -(-og // OUT_BLOCK)
    pixels = _pixel_layout(ho, wo, wp, dtype)
    block, q_len = pixels.lane * pixels.vectors, pixels.q_len
    shifts = _shifts((kh, kw), dilation, wp)
    reach = (q_len // wo - 1) * wp + wo if pixels.per_row else q_len  # of a plane, what a pass reads from a tap's shift
    plane = max(hp * wp, reach + int(shifts[-1]))
    planes, wp, lay = _planes("direct planes", x, padding, plane, dtype)
    w = np.empty(groups * n_ob * cin * kh * kw * OUT_BLOCK, dtype)
    _layout_kernels()[3](np.ascontiguousarray(weight, dtype).reshape(-1), groups, weight.shape[0] // groups,
                         weight.shape[1], kh * kw, swap, w, OUT_BLOCK)
    kernel = _forward_kernel(np.dtype(dtype), pixels.lane, pixels.vectors, pixels.per_row,
                             wp if pixels.per_row else 0, kh * kw if kh * kw <= UNROLL_TAPS else 0, pixels.stack)
    target = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
    result, from_planes = target.reshape(-1), _layout_kernels()[1]
    # whole rows of whole blocks of output channels are the output's own layout: written there
    computed_there = q_len == ho * wo and og % OUT_BLOCK == 0
    sums = result if computed_there else scratch("direct sums", (n * groups * n_ob * OUT_BLOCK * q_len,), dtype)
    tasks, work = groups * (q_len // block), out_ch * cin * kh * kw * q_len  # an image's

    def stages(n0: int, n1: int, spread) -> None:
        spread(lay, n0 * c, n1 * c, (n1 - n0) * c * plane * threads.ELEMENT_WORK)
        spread(lambda t0, t1: kernel(planes, w, shifts, sums, groups, cin, plane, n_ob, q_len, t0, t1),
               n0 * tasks, n1 * tasks, (n1 - n0) * work)
        if not computed_there:
            spread(lambda t0, t1: from_planes(sums, result, og, n_ob * OUT_BLOCK, ho, wo,
                                              wo if pixels.per_row else wp, t0, t1),
                   n0 * out_ch, n1 * out_ch, (n1 - n0) * out_ch * ho * wo * threads.ELEMENT_WORK)
    _over_images(n, n * work, stages)
    if target is not out:
        out[...] = target
    return out


def conv(x, weight, padding, dilation, groups: int, out=None) -> np.ndarray:
    """Stride-1 cross-correlation: (N, O, Ho, Wo), into out (C-contiguous, of the operands' dtype) where given."""
    return _correlate(x, weight, padding, dilation, groups, out, np.result_type(x, weight))


def conv_input_grad(g, weight, padding, dilation, groups: int, out=None) -> np.ndarray:
    """The gradient of a stride-1 conv's input for output cotangent g (N, O, Ho, Wo): the correlation
    of g, padded by d * (k - 1) - p on each side, with the flipped kernel of swapped channel axes."""
    kh, kw = weight.shape[2:]
    span = (dilation[0] * (kh - 1), dilation[1] * (kw - 1))
    pads = tuple((s - lo, s - hi) for s, (lo, hi) in zip(span, padding))
    return _correlate(g, weight, pads, dilation, groups, out, np.result_type(g, weight), swap=True)


def conv_weight_grad(x, g, kernel, padding, dilation, groups: int) -> np.ndarray:
    """The gradient of a stride-1 conv's weight for output cotangent g (N, O, Ho, Wo): (O, C / groups,
    kh, kw), summed over the real pixels only (as im2col's terms, non-finite inputs included), each range
    of images into sums of its own, added in a fixed order (run to run the same bits). Outputs of
    whole rows of vectors (the forward pass's layout, _pixel_layout; not two rows a vector) take
    _row_weight_grad_kernel."""
    dtype = np.result_type(x, g)
    n, out_ch, ho, wo = g.shape
    cin = x.shape[1] // groups
    if g.size == 0 or cin == 0:
        return np.zeros((out_ch, cin) + tuple(kernel), dtype)
    hp, wp = x.shape[2] + sum(padding[0]), x.shape[3] + sum(padding[1])
    shifts = _shifts(kernel, dilation, wp)
    planes, wp, lay = _planes("direct planes", x, padding, hp * wp, dtype)  # a real pixel's taps stay in its plane
    cot = np.ascontiguousarray(g, dtype).reshape(-1)
    pixels = _pixel_layout(ho, wo, wp, dtype)
    if pixels.per_row and pixels.stack == 1:
        run, prepare, finish, size, per_thread = _row_weight_grad(planes, cot, shifts, g.shape, cin, hp * wp, wp,
                                                                 groups, dtype, pixels)
    else:
        run, prepare, finish, size, per_thread = _tile_weight_grad(planes, cot, shifts, g.shape, cin, hp * wp, wp,
                                                                  groups, dtype)
    partials: dict[int, np.ndarray] = {}  # the sums of each range of images, by its first
    work = out_ch * cin * shifts.size * ho * wo  # an image's

    def accumulate(n0: int, n1: int) -> None:
        partials[n0] = partial = np.zeros(size, dtype)  # dict assignment is atomic
        run(partial, n0, n1)

    def stages(n0: int, n1: int, spread) -> None:
        spread(lay, n0 * x.shape[1], n1 * x.shape[1], (n1 - n0) * x.shape[1] * hp * wp * threads.ELEMENT_WORK)
        if prepare is not None:
            prepare(n0, n1, spread)
        spread(accumulate, n0, n1, (n1 - n0) * work)
    held = threads.THREADS * size * np.dtype(dtype).itemsize  # a set of sums for each thread
    _over_images(n, n * work, stages, max(1, min(per_thread, SUMS_HELD // held)))
    # added in the ranges' order, whichever thread took each: the same sums every run
    return finish(sum(partials[k] for k in sorted(partials))).reshape(out_ch, cin, *kernel)


def _row_weight_grad(planes, cot, shifts, g_shape, cin: int, plane: int, wp: int, groups: int, dtype,
                     pixels: _Pixels):
    """(run, prepare, finish, size, per_thread) of conv_weight_grad over whole rows of vectors:
    _row_weight_grad_kernel from the cotangent as it is (no prepare), into sums of `size` (groups,
    og, cin, taps), one range of images a thread (each lane's sums are added once a range)."""
    n, out_ch, ho, wo = g_shape
    channels = registers.host().row_grad_channels
    og = _round_up(out_ch // groups, channels)
    kernel_fn = _row_weight_grad_kernel(np.dtype(dtype), pixels.lane, pixels.per_row, wp, tuple(map(int, shifts)),
                                        channels)

    def run(partial, n0: int, n1: int) -> None:
        kernel_fn(planes, cot, partial, groups, cin, plane, out_ch // groups, ho, n0, n1)

    def finish(sums: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(sums.reshape(groups, og, -1)[:, :out_ch // groups])
    return run, None, finish, groups * og * cin * shifts.size, 1


def _tile_weight_grad(planes, cot, shifts, g_shape, cin: int, plane: int, wp: int, groups: int, dtype):
    """(run, prepare, finish, size, per_thread) of conv_weight_grad over runs of q: _weight_grad_kernel's
    tiles, from the cotangent copied channels-last (prepare), into sums of `size` (groups, pairs, og)."""
    n, out_ch, ho, wo = g_shape
    lane = lanes(dtype)
    vectors = _grad_vectors(out_ch // groups, lane)
    nk = registers.host().grad_registers // vectors  # (channel, tap) pairs a tile
    og = _round_up(out_ch // groups, vectors * lane)
    taps = shifts.size
    pairs = _round_up(cin * taps, nk)  # the extra pairs' sums are dropped
    offsets = np.zeros(pairs, np.int64)
    offsets[:cin * taps] = (np.arange(cin)[:, None] * plane + shifts).reshape(-1)
    rows = scratch("direct cotangent rows", (n * groups * ho * wo * og,), dtype)
    to_rows, kernel_fn = _layout_kernels()[2], _weight_grad_kernel(np.dtype(dtype), lane, vectors, nk)

    def prepare(n0: int, n1: int, spread) -> None:
        spread(lambda t0, t1: to_rows(cot, n, out_ch // groups, ho * wo, rows, groups, og, t0, t1),
               n0 * groups, n1 * groups, (n1 - n0) * groups * ho * wo * og * threads.ELEMENT_WORK)

    def run(partial, n0: int, n1: int) -> None:
        kernel_fn(planes, rows, offsets, partial, groups, cin, plane, og, ho, wo, wp, n0, n1)

    def finish(sums: np.ndarray) -> np.ndarray:
        by_pair = sums.reshape(groups, pairs, og)[:, :cin * taps, :out_ch // groups].reshape(groups, cin, taps, -1)
        return np.ascontiguousarray(by_pair.transpose(0, 3, 1, 2))
    return run, prepare, finish, groups * pairs * og, threads.CHUNKS_PER_THREAD

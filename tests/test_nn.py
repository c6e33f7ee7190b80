"""Layers and losses: values against NumPy references, gradients by finite differences."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.nn import functional as F
from funcgrad.ops import attention as A
from funcgrad.ops import conv as C

from .helpers import assert_close

RNG = np.random.default_rng(0)


def np_conv2d(x, w, b, stride, padding, dilation=1, groups=1):
    """Direct-loop reference convolution (cross-correlation), NCHW / OIHW; dilation an int or one
    per axis."""
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    dh, dw = (dilation, dilation) if np.ndim(dilation) == 0 else dilation
    ho = (h - dh * (kh - 1) - 1) // stride + 1
    wo = (wd - dw * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(ho):
            for j in range(wo):
                patch = x[:, g * cg:(g + 1) * cg, i * stride:i * stride + dh * (kh - 1) + 1:dh,
                          j * stride:j * stride + dw * (kw - 1) + 1:dw]
                out[:, oc, i, j] = np.sum(patch * w[oc], axis=(1, 2, 3)) + (b[oc] if b is not None else 0)
    return out


@pytest.fixture(params=["rows", "image-major", "direct"])
def conv_layout(request, monkeypatch):
    """The CPU convolution's three ways: window matrices as channels-last rows (taken from ROW_RUN
    channels per group up) or image-major windows (thin inputs), and the direct passes of stride-1
    convs (from MIN_CHANNELS channels per group and MIN_USE of the computed outputs up); these
    tests' small sizes take image-major windows unless the thresholds are changed."""
    from funcgrad.cpu import conv as cpu_conv, direct
    monkeypatch.setattr(direct, "MIN_CHANNELS", 1 if request.param == "direct" else 1 << 30)
    monkeypatch.setattr(direct, "MIN_USE", 0.0)
    if request.param == "rows":
        monkeypatch.setattr(cpu_conv, "ROW_RUN", 1)
    return request.param


AVX512, AVX512_IN_HALVES, AVX2 = (64, 32, False), (64, 32, True), (32, 16, False)


@pytest.fixture(params=[AVX512, AVX2], ids=["AVX-512", "AVX2"])
def register_file(request):
    """The direct passes with their tiles sized for AVX-512's registers (run whole, or in halves as
    on Zen 4) and for AVX2's (cpu/registers), whichever CPU runs the tests: LLVM splits or joins the
    kernels' vectors into its own registers, so each gives the same numbers here, at another speed."""
    from funcgrad.cpu import registers
    regs = registers.Registers(*request.param)
    with pytest.MonkeyPatch.context() as m:  # apart from the tests' own monkeypatch, which they undo
        m.setattr(registers, "host", lambda: regs)
        yield regs


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (1, 1, 1, 2)])
def test_conv2d_matches_direct_loops_and_finite_differences(stride, padding, dilation, groups, conv_layout):
    x = RNG.standard_normal((2, 4, 6, 5))
    w = RNG.standard_normal((4, 4 // groups, 3, 2))
    b = RNG.standard_normal(4)
    out = F.conv2d(x, w, b, stride, padding, dilation, groups)
    assert_close(out, np_conv2d(x, w, b, stride, padding, dilation, groups), atol=1e-10)
    fg.check_grads(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups), (x, w, b), order=1)


def test_conv2d_second_order_and_same_padding(conv_layout):
    x, w = RNG.standard_normal((1, 2, 4, 4)), RNG.standard_normal((3, 2, 3, 3))
    fg.check_grads(lambda x, w: F.conv2d(x, w, padding=1), (x, w), order=2)
    assert F.conv2d(x, w, padding="same").shape == (1, 3, 4, 4)
    assert F.conv2d(x[0], w).shape == (3, 2, 2)  # unbatched input


def test_conv2d_all_three_primitives_to_second_order(conv_layout):
    """conv, conv_input_grad and conv_weight_grad are each other's derivatives: second-order
    checks cover all three, with groups, stride, dilation and the uneven padding of 'same'."""
    x, w = RNG.standard_normal((2, 4, 5, 6)), RNG.standard_normal((6, 2, 2, 3))
    fg.check_grads(lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=1, dilation=(1, 2), groups=2), (x, w), order=2)
    fg.check_grads(lambda x, w: F.conv2d(x, w, padding="same", groups=2), (x, w), order=2)
    assert_close(F.conv2d(x, w, padding="same", groups=2),
                 np_conv2d(np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 1))), w, None, 1, 0, 1, 2), atol=1e-10)
    xt = RNG.standard_normal((2, 4, 3, 4))
    wt = RNG.standard_normal((4, 3, 3, 2))
    fg.check_grads(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2),
                   (xt, wt), order=2)


def test_conv2d_chunks_of_images_give_the_whole_batch(monkeypatch, conv_layout):
    """The CPU kernels work through the batch a few images at a time: chunks of one image give
    what one chunk for the whole batch gives, for the value and both gradients."""
    from funcgrad.cpu import conv as cpu_conv
    x, w = RNG.standard_normal((5, 6, 7, 6)), RNG.standard_normal((4, 3, 3, 3))

    def run():
        return fg.value_and_grad(lambda x, w: fnp.sum(F.conv2d(x, w, stride=2, padding=1, groups=2) ** 2),
                                 argnums=(0, 1))(x, w)
    whole = run()
    monkeypatch.setattr(cpu_conv, "CHUNK_BYTES", 1)
    chunked = run()
    for a, b in zip(fg.tree_leaves(whole), fg.tree_leaves(chunked)):
        assert_close(a, b, rtol=1e-12)


def test_conv2d_low_precision_and_integer_inputs(conv_layout):
    x, w = RNG.standard_normal((2, 3, 5, 5)), RNG.standard_normal((4, 3, 3, 3))
    ref = np_conv2d(x, w, None, 1, 1)
    for dtype in (fnp.float16, fnp.bfloat16):
        out = F.conv2d(fnp.asarray(x, dtype), fnp.asarray(w, dtype), padding=1)
        assert out.dtype == dtype
        assert_close(fnp.astype(out, fnp.float64), ref, rtol=0.05, atol=0.1)
    xi, wi = RNG.integers(-3, 4, (2, 3, 5, 5)), RNG.integers(-3, 4, (4, 3, 3, 3))
    out = F.conv2d(xi, wi, padding=1)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np_conv2d(xi, wi, None, 1, 1).astype(np.int64))


def test_conv2d_direct_passes_match_direct_loops(monkeypatch, register_file):
    """Stride-1 convs over 8 channels a group and up run the direct passes (cpu/direct.py): float64
    values and both gradients against the direct loops and finite differences (groups, dilation,
    uneven padding, padding past the kernel's reach, whose input gradient crops the cotangent); the
    same results with tasks split over three threads, the weight gradient's sums in many runs and
    pixels in short chunks; a non-finite input or weight giving im2col's IEEE results; and float32
    about as accurate as im2col's GEMMs against the float64 result."""
    from funcgrad.cpu import conv as cpu_conv, direct, threads
    calls = []
    for name in ("conv", "conv_input_grad", "conv_weight_grad"):
        real = getattr(direct, name)
        monkeypatch.setattr(direct, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    for reduced, produced, hw, width, dtype, taken in [
            (32, 64, (28, 28), 30, np.float32, True), (32, 64, (8, 8), 10, np.float64, True),
            (3, 16, (28, 28), 30, np.float32, False),      # a thin first layer
            (32, 1, (28, 28), 30, np.float32, False),      # and its input gradient
            (256, 256, (7, 7), 9, np.float32, False),      # wide channels: im2col's GEMM
            (32, 64, (2, 2), 4, np.float32, False),        # rows of 4 padded to whole vectors
            (32, 64, (28, 28), 30, np.float16, False)]:    # (half precision computes in float32 first)
        assert direct.applies((1, 1), dtype, reduced, produced, hw, width) == taken
    assert not direct.applies((2, 1), np.float32, 32, 64, (14, 28), 30)
    x, w, b = RNG.standard_normal((3, 16, 17, 16)), RNG.standard_normal((16, 8, 3, 3)), RNG.standard_normal(16)
    out = F.conv2d(x, w, b, padding=1, groups=2)
    assert calls == ["conv"]  # at the default thresholds
    assert_close(out, np_conv2d(x, w, b, 1, 1, groups=2), atol=1e-10)
    fg.check_grads(lambda x, w: F.conv2d(x, w, padding=1, groups=2), (x[:1], w), order=1)
    assert {"conv_input_grad", "conv_weight_grad"} <= set(calls)

    xs, ws = x[:2, :, :9, :8], RNG.standard_normal((12, 16, 3, 2))
    wide = RNG.standard_normal((8, 16, 5, 5))  # 25 taps: a loop over them, where up to 9 are written out
    for padding, dilation, wk in [(((0, 2), (2, 1)), (1, 1), ws), (((3, 3), (1, 4)), (2, 1), ws),
                                  (((2, 2), (3, 1)), (1, 1), wide)]:
        def f(x, w):
            return C.conv_p(x, w, stride=(1, 1), padding=padding, dilation=dilation, groups=1)
        padded = np.pad(xs, ((0, 0), (0, 0)) + padding)
        assert_close(f(xs, wk), np_conv2d(padded, wk, None, 1, 0, dilation), atol=1e-10)
        calls.clear()
        fg.check_grads(f, (xs, wk), order=1)
        assert {"conv_input_grad", "conv_weight_grad"} <= set(calls)

    def passes(x, w):
        y, pullback = fg.vjp(lambda x, w: F.conv2d(x, w, padding=1, dilation=(1, 2), groups=2), x, w)
        return [y, *pullback(fnp.ones_like(y))]
    whole = passes(xs, ws[:, :8])
    for pipeline in (1 << 30, 0):  # each stage split over its own tasks; the images split, a thread running every stage of its own
        monkeypatch.setattr(threads, "THREADS", 3)
        monkeypatch.setattr(threads, "MIN_TASK_WORK", 1)
        monkeypatch.setattr(direct, "SUMS_BYTES", 1)
        monkeypatch.setattr(direct, "PIXEL_CHUNK", 5)
        monkeypatch.setattr(direct, "PIPELINE_IMAGES", pipeline)
        direct._weight_grad_kernel.cache_clear()
        for a, b in zip(whole, passes(xs, ws[:, :8])):
            assert_close(a, b, rtol=1e-12, atol=1e-12)
        monkeypatch.undo()
    direct._weight_grad_kernel.cache_clear()

    # an infinity or a NaN: im2col's IEEE results (the weight gradient sums the real pixels only,
    # so no discarded column's zero cotangent meets them)
    bad_x, bad_w = xs.copy(), ws[:, :8].copy()
    bad_x[0, 3, 2, 2], bad_x[1, 0, 4, 5], bad_w[2, 1, 1, 1] = np.inf, np.nan, -np.inf
    with np.errstate(invalid="ignore"):
        got = [passes(bad_x, ws[:, :8]), passes(xs, bad_w)]
        monkeypatch.setattr(threads, "MIN_TASK_WORK", 1)
        monkeypatch.setattr(direct, "PIPELINE_IMAGES", 0)
        got += [passes(bad_x, ws[:, :8]), passes(xs, bad_w)]
        monkeypatch.undo()
        monkeypatch.setattr(direct, "MIN_CHANNELS", 1 << 30)
        want = 2 * [passes(bad_x, ws[:, :8]), passes(xs, bad_w)]
    for results, want in zip(got, want):
        for a, b in zip(results, want):
            a, b = np.asarray(a), np.asarray(b)
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
            np.testing.assert_array_equal(a[np.isinf(a)], b[np.isinf(a)])
            finite = np.isfinite(a)
            assert finite.any() and np.abs(a[finite] - b[finite]).max() < 1e-9
    monkeypatch.undo()

    # float32: the error against the float64 result within twice im2col's
    x32 = RNG.standard_normal((2, 32, 16, 16)).astype(np.float32)
    w32 = RNG.standard_normal((32, 32, 3, 3)).astype(np.float32)
    exact = direct.conv(x32.astype(np.float64), w32.astype(np.float64), ((1, 1), (1, 1)), (1, 1), 1)
    got32 = direct.conv(x32, w32, ((1, 1), (1, 1)), (1, 1), 1)
    monkeypatch.setattr(direct, "MIN_CHANNELS", 1 << 30)
    im2col_error = np.abs(cpu_conv.conv(x32, w32, (1, 1), ((1, 1), (1, 1)), (1, 1), 1) - exact).max()
    assert got32.dtype == np.float32 and np.abs(got32 - exact).max() <= 2 * im2col_error
    # and the weight gradient's sums over 16 images of 28 x 28 (values of nonzero mean, so the sums
    # grow): within 3x im2col's, where one chain over a range's pixels was 23x
    monkeypatch.undo()
    x32 = RNG.standard_normal((16, 8, 28, 28)).astype(np.float32) + 1
    g32 = RNG.standard_normal((16, 16, 28, 28)).astype(np.float32) + 0.5
    pads = ((1, 1), (1, 1))
    exact = direct.conv_weight_grad(x32.astype(np.float64), g32.astype(np.float64), (3, 3), pads, (1, 1), 1)
    got32 = direct.conv_weight_grad(x32, g32, (3, 3), pads, (1, 1), 1)
    monkeypatch.setattr(direct, "MIN_CHANNELS", 1 << 30)
    im2col_error = np.abs(cpu_conv.conv_weight_grad(x32, g32, (3, 3), (1, 1), pads, (1, 1), 1) - exact).max()
    assert got32.dtype == np.float32 and np.abs(got32 - exact).max() <= 3 * im2col_error
    # the input gradient's sums over 128 channels' 9 taps: within 2x im2col's (one chain over them
    # all, before each 16 channels' sums were added apart: 6x)
    monkeypatch.undo()
    g32 = RNG.standard_normal((2, 128, 12, 12)).astype(np.float32) + 0.5
    w32 = RNG.standard_normal((128, 32, 3, 3)).astype(np.float32) + 0.5
    exact = direct.conv_input_grad(g32.astype(np.float64), w32.astype(np.float64), pads, (1, 1), 1)
    got32 = direct.conv_input_grad(g32, w32, pads, (1, 1), 1)
    monkeypatch.setattr(direct, "MIN_CHANNELS", 1 << 30)
    im2col_error = np.abs(cpu_conv.conv_input_grad(g32, w32, (12, 12), (1, 1), pads, (1, 1), 1) - exact).max()
    assert got32.dtype == np.float32 and np.abs(got32 - exact).max() <= 2 * im2col_error


@pytest.mark.parametrize("register_file", [AVX512_IN_HALVES, AVX512, AVX2], ids=["AVX-512 in halves", "AVX-512", "AVX2"],
                         indirect=True)
def test_conv2d_direct_passes_over_whole_rows_of_vectors(monkeypatch, register_file):
    """Outputs whose rows are whole vectors (8 wide: with AVX-512's registers in halves float32's half
    vectors and float64's whole ones, with whole AVX-512's two rows of float32 a vector, with AVX2's
    float32's whole ones and two of float64's) run the direct passes a few whole rows a task (cpu/direct's
    _pixel_layout), computing no discarded column, and the weight gradient (but for two rows a vector)
    from the cotangent as NumPy lays it out (_row_weight_grad_kernel). float64
    and float32 values against the direct loops, both gradients against im2col's and, in
    float64, finite differences: rows padded to whole tasks or not, output channels in whole blocks
    (written in place) or not (an odd count: copied out), groups, dilation, a 5x5 kernel (taps in
    chunks), and the same numbers split over three threads."""
    from funcgrad.cpu import direct, threads
    if register_file.half_vectors:  # whole rows of half vectors (ymm halves of a zmm) pay
        assert direct._pixel_layout(8, 8, 10, np.float32) == (8, 4, 1, 64, 1)  # runs of q: 80 for 64 pixels
        assert direct._pixel_layout(8, 8, 10, np.float64) == (8, 4, 1, 64, 1)
        assert direct._pixel_layout(16, 16, 18, np.float32) == (16, 4, 1, 256, 1)
        assert direct._pixel_layout(17, 16, 18, np.float32) == (16, 6, 1, 288, 1)  # 3 tasks of 6 rows, the last 1 past Ho
        assert direct._pixel_layout(17, 16, 18, np.float64) == (4, 4, 4, 272, 1)
        assert direct._pixel_layout(28, 28, 30, np.float32) == (16, 6, 0, 864, 1)  # 28: no whole vectors
    elif register_file.vector_bytes == 64:  # whole AVX-512 vectors: rows of 8 float32 two a vector
        assert direct._pixel_layout(8, 8, 10, np.float32) == (16, 4, 1, 64, 2)  # a task 8 rows in 4 vectors
        assert direct._pixel_layout(7, 8, 10, np.float32) == (16, 4, 1, 64, 2)  # the 8th row past Ho
        assert direct._pixel_layout(8, 8, 10, np.float64) == (8, 4, 1, 64, 1)
        assert direct._pixel_layout(8, 4, 6, np.float64) == (8, 4, 1, 32, 2)  # runs of q: 48 for 32
        assert direct._pixel_layout(4, 4, 6, np.float64) == (8, 4, 0, 32, 1)  # runs of q as few: they stay
        assert direct._pixel_layout(16, 16, 18, np.float32) == (16, 4, 1, 256, 1)
    else:  # AVX2: tasks of 3, 2 or 1 vectors; no half vectors (SSE: half the work in the same time)
        assert direct._pixel_layout(8, 8, 10, np.float32) == (8, 2, 1, 64, 1)  # 3 rows a task: 72 for 64
        assert direct._pixel_layout(8, 8, 10, np.float64) == (4, 2, 2, 64, 1)
        assert direct._pixel_layout(16, 16, 18, np.float32) == (8, 2, 2, 256, 1)
        assert direct._pixel_layout(12, 12, 14, np.float32) == (8, 3, 0, 168, 1)  # not 3 half vectors a row
        assert direct._pixel_layout(28, 28, 30, np.float32) == (8, 3, 0, 840, 1)
        assert direct._pixel_layout(4, 4, 6, np.float32) == (8, 2, 1, 16, 2)  # runs of q: 24 for 16
    layouts, row_grads = [], []
    forward, row_grad = direct._forward_kernel, direct._row_weight_grad_kernel
    monkeypatch.setattr(direct, "_forward_kernel", lambda *a: layouts.append((a[1], a[3], a[6])) or forward(*a))
    monkeypatch.setattr(direct, "_row_weight_grad_kernel", lambda *a: row_grads.append(a[1:3]) or row_grad(*a))

    def passes(x, w, padding, dilation, groups):
        def f(x, w):
            return C.conv_p(x, w, stride=(1, 1), padding=padding, dilation=dilation, groups=groups)
        y, pullback = fg.vjp(f, x, w)
        return [np.asarray(v) for v in (y, *pullback(fnp.asarray(cot.astype(x.dtype))))]
    for shape, wshape, padding, dilation, groups in [
            ((5, 16, 8, 8), (12, 16, 3, 3), ((1, 1), (1, 1)), (1, 1), 1),  # 2 tasks of 4 rows, in place
            ((3, 16, 7, 8), (18, 8, 3, 3), ((1, 1), (1, 1)), (1, 1), 2),   # 7 rows, 9 channels a group
            ((2, 8, 8, 8), (8, 8, 3, 3), ((2, 2), (1, 1)), (2, 1), 1),     # dilated rows
            ((2, 8, 8, 8), (9, 8, 5, 5), ((2, 2), (2, 2)), (1, 1), 1)]:    # 25 taps
        x, w = RNG.standard_normal(shape), RNG.standard_normal(wshape)
        padded = np.pad(x, ((0, 0), (0, 0)) + padding)
        want_y = np_conv2d(padded, w, None, 1, 0, dilation, groups)
        cot = RNG.standard_normal(want_y.shape)
        for dtype, tol in [(np.float64, 1e-10), (np.float32, 2e-4)]:
            layouts.clear()
            row_grads.clear()
            got = passes(x.astype(dtype), w.astype(dtype), padding, dilation, groups)
            stacked = register_file == AVX512 and dtype == np.float32
            assert {lane * per_row // stack for lane, per_row, stack in layouts} == {8} and len(layouts) == 2
            assert {stack for _, _, stack in layouts} == {2 if stacked else 1} and len(row_grads) == (0 if stacked else 1)
            with monkeypatch.context() as m:
                m.setattr(direct, "MIN_CHANNELS", 1 << 30)
                want = passes(x, w, padding, dilation, groups)
            assert_close(want[0], want_y, atol=1e-10)
            for a, b in zip(got, want):
                assert a.dtype == dtype
                assert_close(a, b, rtol=tol, atol=tol * np.abs(b).max())
            with monkeypatch.context() as m:  # three threads, each stage split over its own tasks or the images
                m.setattr(threads, "THREADS", 3)
                m.setattr(threads, "MIN_TASK_WORK", 1)
                for pipeline in (1 << 30, 0):
                    m.setattr(direct, "PIPELINE_IMAGES", pipeline)
                    for a, b in zip(got, passes(x.astype(dtype), w.astype(dtype), padding, dilation, groups)):
                        assert_close(a, b, rtol=tol, atol=tol * np.abs(b).max())
    fg.check_grads(lambda x, w: F.conv2d(x, w, padding=1), (x[:1], RNG.standard_normal((8, 8, 3, 3))), order=1)
    assert any(lane * per_row == 8 for lane, per_row in row_grads)


def test_conv2d_wide_channels_take_rows_and_match_direct_loops():
    """At ROW_RUN channels per group and up the default picks channels-last rows: float32 values (as
    a training step runs them) and complex ones against the direct loops, both gradients against
    finite differences."""
    from funcgrad.cpu import conv as cpu_conv
    x, w = RNG.standard_normal((3, 16, 7, 6)), RNG.standard_normal((6, 8, 3, 2))
    assert cpu_conv._by_rows(8, np.float32) and not cpu_conv._by_rows(3, np.float32)
    out = F.conv2d(fnp.asarray(x, fnp.float32), fnp.asarray(w, fnp.float32), stride=(2, 1), padding=1, groups=2)
    assert_close(out, np_conv2d(x, w, None, 1, 1, groups=2)[:, :, ::2], rtol=1e-4, atol=1e-4)
    fg.check_grads(lambda x, w: F.conv2d(x, w, padding=2, dilation=2, groups=2), (x, w), order=1)
    xc, wc = x + 1j * RNG.standard_normal(x.shape), w - 0.5j * RNG.standard_normal(w.shape)
    ref = sum(np_conv2d(a, b, None, 1, 1, groups=2) * f for a, b, f in
              ((xc.real, wc.real, 1), (xc.imag, wc.imag, -1), (xc.real, wc.imag, 1j), (xc.imag, wc.real, 1j)))
    np.testing.assert_allclose(np.asarray(F.conv2d(xc, wc, padding=1, groups=2)), ref, atol=1e-10)


def test_conv2d_of_empty_batches_and_channels(conv_layout):
    """Size-0 batches and channel counts give empty results and zero gradients, as in PyTorch
    (zero out-channels failed to reshape the weight before)."""
    for x_shape, w_shape in [((0, 8, 5, 5), (4, 8, 3, 3)), ((2, 8, 5, 5), (0, 8, 3, 3)), ((2, 0, 5, 5), (4, 0, 3, 3))]:
        x, w = np.ones(x_shape, np.float32), np.ones(w_shape, np.float32)
        out = F.conv2d(x, w, padding=1)
        assert out.shape == (x_shape[0], w_shape[0], 5, 5)
        np.testing.assert_array_equal(np.asarray(out), np.zeros(out.shape))
        gx, gw = fg.grad(lambda x, w: fnp.sum(F.conv2d(x, w, padding=1)), argnums=(0, 1))(x, w)
        assert gx.shape == x_shape and gw.shape == w_shape
        np.testing.assert_array_equal(np.asarray(gx), np.zeros(x_shape))
        np.testing.assert_array_equal(np.asarray(gw), np.zeros(w_shape))


def test_conv2d_names_what_does_not_fit():
    with pytest.raises(ValueError, match="conv2d.*window.*does not fit"):
        F.conv2d(np.ones((1, 1, 2, 2)), np.ones((1, 1, 3, 3)))
    with pytest.raises(ValueError, match="channels"):
        F.conv2d(np.ones((1, 3, 4, 4)), np.ones((2, 2, 3, 3)))
    with pytest.raises(ValueError, match="padding"):
        F.conv2d(np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)), padding=-1)
    for fn in (lambda: F.conv2d(np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)), stride=0),
               lambda: F.max_pool2d(np.ones((1, 1, 4, 4)), 2, stride=(1, 0))):
        with pytest.raises(ValueError, match="must be positive"):
            fn()


def np_pool(x, k, s, pad, fn, pad_value):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=pad_value)
    ho, wo = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    return np.array([[[[fn(x[n, c, i * s:i * s + k, j * s:j * s + k]) for j in range(wo)] for i in range(ho)]
                      for c in range(x.shape[1])] for n in range(x.shape[0])])


@pytest.mark.parametrize("k,s,pad", [(2, 2, 0), (3, 2, 1), (2, 1, 0)])
def test_pooling(k, s, pad):
    # distinct values 0.02 apart: max pooling's derivatives jump at ties, and a finite difference
    # across a near-tie (random normals, now and then) fails the second-order check
    x = np.random.default_rng(k * 10 + s).permutation(2 * 3 * 5 * 6).reshape(2, 3, 5, 6) / 50.0 - 1.8
    assert_close(F.max_pool2d(x, k, s, pad), np_pool(x, k, s, pad, np.max, -np.inf))
    assert_close(F.avg_pool2d(x, k, s, pad), np_pool(x, k, s, pad, np.mean, 0.0))
    fg.check_grads(lambda v: F.max_pool2d(v, k, s, pad), (x,), order=2)
    fg.check_grads(lambda v: F.avg_pool2d(v, k, s, pad), (x,), order=2)


def _pytorch_windows(size, k, s, pad, ceil_mode):
    """PyTorch's windows along one axis, as (start, end) in the unpadded image (a transcription of
    its output-size rule: ceil_mode keeps a last, partial window that starts inside the image or
    its leading padding)."""
    span = size + 2 * pad - k
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + pad:
        out -= 1
    return [(i * s - pad, i * s - pad + k) for i in range(out)]


@pytest.mark.parametrize("k,s,pad", [(3, 2, 1), (2, 2, 0), (3, 3, 1), (2, 3, 1)])
def test_pool_ceil_mode_count_include_pad_and_indices_against_loops(k, s, pad):
    x = np.random.default_rng(k + 7 * s).permutation(2 * 2 * 7 * 6).reshape(2, 2, 7, 6) / 40.0 - 1.3
    rows, cols = _pytorch_windows(7, k, s, pad, True), _pytorch_windows(6, k, s, pad, True)
    want_max = np.empty((2, 2, len(rows), len(cols)))
    want_at = np.empty(want_max.shape, np.int64)
    sums, with_pad, inside = (np.empty(want_max.shape[2:]) for _ in range(3))
    for i, (r0, r1) in enumerate(rows):
        for j, (c0, c1) in enumerate(cols):
            window = x[:, :, max(r0, 0):r1, max(c0, 0):c1]
            want_max[:, :, i, j] = window.max((2, 3))
            flat = window.reshape(2, 2, -1).argmax(-1)
            width = window.shape[3]
            want_at[:, :, i, j] = (max(r0, 0) + flat // width) * 6 + max(c0, 0) + flat % width
            with_pad[i, j] = (min(r1, 7 + pad) - r0) * (min(c1, 6 + pad) - c0)  # not ceil's overhang
            inside[i, j] = (min(r1, 7) - max(r0, 0)) * (min(c1, 6) - max(c0, 0))
    window_sums = np.array([[x[:, :, max(r0, 0):r1, max(c0, 0):c1].sum((2, 3)) for c0, c1 in cols] for r0, r1 in rows])
    window_sums = window_sums.transpose(2, 3, 0, 1)
    out, at = F.max_pool2d(x, k, s, pad, ceil_mode=True, return_indices=True)
    assert_close(out, want_max)
    np.testing.assert_array_equal(np.asarray(at), want_at)
    assert np.asarray(at).dtype == np.int64
    assert_close(F.avg_pool2d(x, k, s, pad, ceil_mode=True), window_sums / with_pad)
    assert_close(F.avg_pool2d(x, k, s, pad, ceil_mode=True, count_include_pad=False), window_sums / inside)
    assert_close(F.avg_pool2d(x, k, s, pad, ceil_mode=True, divisor_override=3), window_sums / 3)
    floor_rows = _pytorch_windows(7, k, s, pad, False)
    assert F.max_pool2d(x, k, s, pad).shape[2] == len(floor_rows)
    fg.check_grads(lambda v: F.max_pool2d(v, k, s, pad, ceil_mode=True), (x,), order=2)
    fg.check_grads(lambda v: F.avg_pool2d(v, k, s, pad, ceil_mode=True, count_include_pad=False), (x,), order=2)


def test_pool_modules_take_pytorchs_argument_orders():
    x = RNG.standard_normal((2, 3, 6, 7))
    out, at = nn.MaxPool2d(3, 2, 1, 1, True, True)(x)  # (..., dilation, return_indices, ceil_mode)
    want, want_at = F.max_pool2d(x, 3, 2, 1, 1, True, True)  # (..., dilation, ceil_mode, return_indices)
    assert_close(out, want)
    np.testing.assert_array_equal(np.asarray(at), np.asarray(want_at))
    assert_close(nn.AvgPool2d(3, 2, 1, True, False, 4)(x), F.avg_pool2d(x, 3, 2, 1, True, False, 4))
    line = x[0]
    out, at = nn.MaxPool1d(3, 2, 1, 1, True, True)(line)
    assert out.shape == at.shape == (3, 6, 4)
    assert_close(out, np.asarray(F.max_pool2d(line[:, None], (1, 3), (1, 2), (0, 1), ceil_mode=True))[:, 0])
    assert_close(nn.AvgPool1d(3, 2, 1, True, False)(line),
                 np.asarray(F.avg_pool2d(line[:, None], (1, 3), (1, 2), (0, 1), True, False))[:, 0])
    with pytest.raises(ValueError, match="divisor_override must be a positive int"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(ValueError, match="does not fit"):
        F.max_pool2d(np.ones((1, 1, 2, 2)), 3, 2)  # floor mode: no window (ceil mode has one, as PyTorch)
    assert F.max_pool2d(np.ones((1, 1, 2, 2)), 3, 2, ceil_mode=True).shape == (1, 1, 1, 1)


_CACHED_ARGMAX = """
import numpy as np
from funcgrad.cpu import windows
from funcgrad.cpu.argmax_kernels import fast_argmax
x = np.asarray({x}, np.float32)
at = windows.window_argmax(x, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), (3, 3))
stats = fast_argmax(3, 3, 2, 2, 1, 1).stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()), at.tolist())
"""


def test_max_pool_argmax_kernel_is_loaded_from_numbas_cache_in_a_new_process(tmp_path):
    """A kernel whose closure holds a numba dispatcher misses numba's disk cache in every process
    (3.5 s of compiling at the start of each `funcgrad train cnn`, before cpu/argmax_kernels)."""
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)  # the reference argmax sees the kernel's values
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    rows, cols = np.unravel_index(windows.reshape(1, 2, 3, 3, 9).argmax(-1), (3, 3))
    want = ((np.arange(3)[:, None] * 2 + rows - 1) * 6 + np.arange(3) * 2 + cols - 1).tolist()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", _CACHED_ARGMAX.format(x=x.tolist())], env=env,
                           capture_output=True, text=True, check=True).stdout.split(" ", 2) for _ in range(2)]
    assert [run[:2] for run in runs] == [["0", "1"], ["1", "0"]]  # compiled once, then loaded
    assert all(json.loads(run[2]) == want for run in runs)


def test_max_pool_gives_tied_gradient_to_the_first_maximum():
    x = np.zeros((1, 1, 2, 2))
    assert_close(fg.grad(lambda v: fnp.sum(F.max_pool2d(v, 2)))(x), [[[[1, 0], [0, 0]]]])


def test_max_pool_nan_wins_padding_never_does_and_dilation():
    """A NaN is its window's maximum (PyTorch); padding is never chosen, even over -inf; dilated
    windows against a loop."""
    x = np.full((1, 1, 3, 3), -np.inf)
    x[0, 0, 1, 1] = np.nan
    out = np.asarray(F.max_pool2d(x, 3, 1, 1))
    assert np.isnan(out).all()
    grad = np.asarray(fg.grad(lambda v: fnp.sum(F.max_pool2d(v, 2, 1, 1)[..., :1, :1]))(np.full((1, 1, 3, 3), -np.inf)))
    assert grad[0, 0, 0, 0] == 1 and grad.sum() == 1  # the one real element of the corner window
    y = RNG.standard_normal((2, 2, 9, 8))
    ref = np.array([[[[y[n, c, i:i + 5:2, j:j + 3:1].max() for j in range(6)] for i in range(5)]
                     for c in range(2)] for n in range(2)])
    assert_close(F.max_pool2d(y, (3, 3), 1, 0, (2, 1)), ref)
    fg.check_grads(lambda v: F.max_pool2d(v, (3, 3), 1, 0, (2, 1)), (y,), order=2)


def test_layer_norm_against_formula():
    x = RNG.standard_normal((3, 4, 5))
    w, b = RNG.standard_normal(5), RNG.standard_normal(5)
    mean = x.mean(-1, keepdims=True)
    ref = (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b
    assert_close(F.layer_norm(x, 5, w, b), ref, atol=1e-10)
    fg.check_grads(lambda x, w, b: F.layer_norm(x, 5, w, b), (x, w, b), order=2)
    layer = nn.LayerNorm((4, 5))
    assert_close(layer(x), (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5),
                 atol=1e-6)
    unbiased = nn.LayerNorm(5, bias=False, dtype=fg.float64).replace(weight=fg.asarray(w))  # PyTorch's bias=False
    assert unbiased.bias is None and list(unbiased.state_dict()) == ["weight"]
    assert_close(unbiased(x), (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w, atol=1e-10)
    encoder = nn.TransformerEncoderLayer(8, 2, 16, bias=False, key=fg.random.key(0))  # its norms follow bias
    assert not any(n.endswith("bias") for n in encoder.state_dict())


def test_float32_norms_accumulate_accurately_in_float32():
    """float32 rows sum in float32 (as PyTorch's CPU layer norm): long rows far from 0 still
    normalise, and differentiate, to float32 accuracy against float64 NumPy (a float32 mean alone
    is off by up to half its ulp, 3e-5 here: PyTorch's result is off by 4e-5)."""
    x = (1000 + RNG.standard_normal((3, 4099))).astype(np.float32)  # a mean 1000x the spread
    g = RNG.standard_normal(x.shape).astype(np.float32)
    wide = x.astype(np.float64)
    xhat = (wide - wide.mean(-1, keepdims=True)) / np.sqrt(wide.var(-1, keepdims=True) + 1e-5)
    assert_close(F.layer_norm(x, 4099), xhat, rtol=2e-6, atol=2e-6)
    rstd = 1 / np.sqrt(wide.var(-1, keepdims=True) + 1e-5)
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    assert_close(fg.grad(lambda v: fnp.sum(F.layer_norm(v, 4099) * g))(x), dx, rtol=1e-5, atol=1e-5)
    rms = wide / np.sqrt((wide ** 2).mean(-1, keepdims=True) + 1e-5)
    assert_close(F.rms_norm(x, 4099), rms, rtol=1e-5, atol=1e-5)


def test_rms_norm_of_bfloat16_defaults_eps_to_its_machine_epsilon():
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(fg.bfloat16)  # NumPy's finfo rejects bfloat16
    wide = x.astype(np.float64)
    want = wide / np.sqrt((wide ** 2).mean(-1, keepdims=True) + 2.0 ** -7)
    got = F.rms_norm(x, 8)
    assert got.dtype == fg.bfloat16
    assert_close(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)


@pytest.fixture(params=["kept weights", "fused"])
def attention_form(request, monkeypatch):
    """Attention tests run in both forms: the weights kept for the backward pass (the CPU's choice
    for small operands being differentiated) and the fused primitive, whose backward pass
    recomputes them."""
    if request.param == "fused":
        monkeypatch.setattr(A, "KEEP_WEIGHTS_BYTES", 0)
    return request.param


def test_attention_against_numpy(attention_form):
    q, k, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4)), RNG.standard_normal((2, 5, 4))
    s = q @ k.transpose(0, 2, 1) / 2.0
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    assert_close(F.scaled_dot_product_attention(q, k, v), p @ v, atol=1e-12)
    q2 = RNG.standard_normal((1, 4, 4))
    causal = F.scaled_dot_product_attention(q2, q2, q2, is_causal=True)
    assert_close(causal[0, 0], q2[0, 0], atol=1e-12)  # the first position sees only itself
    fg.check_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=False), (q, k, v), order=1)


def test_attention_takes_pytorchs_keywords():
    """attn_mask (PyTorch's name for mask), enable_gqa (query heads sharing key heads) and dropout_p
    with a key (the weights dropped, the rest scaled by 1 / (1 - p))."""
    q, k, v = RNG.standard_normal((2, 4, 3, 5)), RNG.standard_normal((2, 2, 6, 5)), RNG.standard_normal((2, 2, 6, 5))
    mask = RNG.standard_normal((3, 6)) > -0.5
    shared_k, shared_v = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    bias = np.where(mask, 0.0, -np.inf)
    assert_close(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True),
                 _np_attention(q, shared_k, shared_v, bias, False, 1 / np.sqrt(5)), atol=1e-12)
    with pytest.raises(fg.ShapeError, match="4 query heads do not split evenly over 3 key heads"):
        F.scaled_dot_product_attention(q, k[:, :1].repeat(3, 1), v, enable_gqa=True)
    with pytest.raises(TypeError, match="give the mask once"):
        F.scaled_dot_product_attention(q, q, q, mask, attn_mask=mask)
    key = fg.random.key(3)
    dropped = F.scaled_dot_product_attention(q, shared_k, shared_v, attn_mask=mask, dropout_p=0.25, key=key)
    s = q @ np.swapaxes(shared_k, -1, -2) / np.sqrt(5) + bias
    weights = np.exp(s - s.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    keep = np.asarray(fg.random.bernoulli(key, 0.75, weights.shape))
    assert_close(dropped, (weights * keep / 0.75) @ shared_v, atol=1e-12)
    assert_close(F.scaled_dot_product_attention(q, shared_k, shared_v, dropout_p=0.25),  # no key: evaluation
                 F.scaled_dot_product_attention(q, shared_k, shared_v))
    fg.check_grads(lambda a, b: F.scaled_dot_product_attention(a, b, b, dropout_p=0.5, key=key), (q, shared_k), order=1)


def test_attention_names_the_shapes_that_do_not_fit():
    """Vectors (PyTorch needs (..., L, E)) and leading dims that do not broadcast are refused with the
    shapes named, and the hint to enable_gqa only where the key has a divisor of the query's heads."""
    with pytest.raises(fg.ShapeError, match=r"at least 2 dimensions .*\(8,\), \(8,\), \(8,\)"):
        F.scaled_dot_product_attention(np.ones(8), np.ones(8), np.ones(8))
    q, kv = np.ones((1, 4, 5, 8)), np.ones((1, 2, 7, 8))
    with pytest.raises(fg.ShapeError, match=r"query \(1, 4, 5, 8\), key \(1, 2, 7, 8\).*need enable_gqa=True"):
        F.scaled_dot_product_attention(q, kv, kv)
    with pytest.raises(fg.ShapeError, match=r"query \(2, 5, 8\), key \(3, 7, 8\), value \(3, 7, 8\) do not broadcast$"):
        F.scaled_dot_product_attention(np.ones((2, 5, 8)), np.ones((3, 7, 8)), np.ones((3, 7, 8)))
    with pytest.raises(fg.ShapeError, match=r"and the mask \(3, 5, 7\) do not broadcast"):
        F.scaled_dot_product_attention(np.ones((2, 5, 8)), np.ones((2, 7, 8)), np.ones((2, 7, 8)),
                                       attn_mask=np.ones((3, 5, 7), bool))


def _np_attention(q, k, v, bias, causal, scale):
    s = q @ np.swapaxes(k, -1, -2) * scale + bias
    if causal:
        s = np.where(np.tri(q.shape[-2], k.shape[-2], dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("causal", [False, True])
def test_attention_masks_bias_scale_and_all_derivatives(causal, attention_form):
    """Attention against NumPy with a boolean mask, an additive bias with its own gradient, a scale
    and more keys than queries (PyTorch's top-left causal alignment); first derivatives take the
    fused backward pass (second ones the composition) or the kept weights' rules: against finite
    differences, forward and reverse mode."""
    q, k = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((2, 3, 6, 5))
    v, bias = RNG.standard_normal((2, 3, 6, 2)), RNG.standard_normal((3, 4, 6))
    mask = RNG.random((4, 6)) > 0.4
    mask[:, 0] = True
    assert_close(F.scaled_dot_product_attention(q, k, v, bias, causal, scale=0.3),
                 _np_attention(q, k, v, bias, causal, 0.3), atol=1e-12)
    assert_close(F.scaled_dot_product_attention(q, k, v, mask, causal),
                 _np_attention(q, k, v, np.where(mask, 0.0, -np.inf), causal, 1 / np.sqrt(5)), atol=1e-12)
    fg.check_grads(lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, b, causal, scale=0.3),
                   (q, k, v, bias), order=2)


def test_fused_attention_blocks_of_queries_give_the_whole(monkeypatch):
    """Long sequences are done a block of query rows at a time: blocks of one row give what one
    block gives, for the value and every gradient."""
    from funcgrad.cpu import attention as cpu_attention
    q, k, v = (RNG.standard_normal((2, 7, 3)) for _ in range(3))

    def run():
        return fg.value_and_grad(lambda q, k, v: fnp.sum(F.scaled_dot_product_attention(q, k, v, is_causal=True) ** 2),
                                 argnums=(0, 1, 2))(q, k, v)
    monkeypatch.setattr(A, "KEEP_WEIGHTS_BYTES", 0)  # the fused form's backward pass, blocked too
    whole = run()
    monkeypatch.setattr(cpu_attention, "BLOCK_BYTES", 1)
    for a, b in zip(fg.tree_leaves(whole), fg.tree_leaves(run())):
        assert_close(a, b, rtol=1e-12)


def test_attention_edge_cases(attention_form):
    q = RNG.standard_normal((1, 3, 4))
    none_seen = np.zeros((3, 3), bool)
    none_seen[1:] = True  # query 0 may attend to no key: zeros there, as PyTorch 2.5+ (NaN before)
    out = np.asarray(F.scaled_dot_product_attention(q, q, q, none_seen))
    assert (out[0, 0] == 0).all() and np.isfinite(out[0, 1:]).all()
    assert_close(out[0, 1:], _np_attention(q, q, q, np.where(none_seen, 0.0, -np.inf), False, 0.5)[0, 1:])
    grad = np.asarray(fg.grad(lambda q: fnp.sum(F.scaled_dot_product_attention(q, q, q, none_seen) ** 2))(q))
    assert np.isfinite(grad).all()  # no NaN from the masked row reaches any gradient
    fg.check_grads(lambda q: F.scaled_dot_product_attention(q, q, q, none_seen), (q,), order=2)
    half = F.scaled_dot_product_attention(*(fnp.asarray(q, fnp.bfloat16) for _ in range(3)), is_causal=True)
    assert half.dtype == fnp.bfloat16
    assert_close(fnp.astype(half, fnp.float64), _np_attention(q, q, q, 0.0, True, 0.5), atol=0.05)
    assert F.scaled_dot_product_attention(q, q, q, np.ones((2, 3, 3))).shape == (2, 3, 4)  # the mask's batch too
    with pytest.raises(ValueError, match="broadcast"):
        F.scaled_dot_product_attention(q, q, q, np.ones((3, 2)))
    with pytest.raises(ValueError, match="q .*k .*v"):
        F.scaled_dot_product_attention(q, q[..., :3], q)
    with pytest.raises(TypeError, match="mask is boolean .* not int64"):
        F.scaled_dot_product_attention(q, q, q, np.ones((3, 3), np.int64))
    with pytest.raises(TypeError, match="is_causal must be a bool, got 0.0 .*dropout_p"):
        F.scaled_dot_product_attention(q, q, q, None, 0.0, True)  # PyTorch's order: dropout_p, is_causal
    with pytest.raises(ValueError, match="weights take q .*k .*got shapes \\(1, 3, 4\\), \\(1, 3, 3\\)"):
        A.attention_weights_p(q, q[..., :3], 0.0, scale=1.0, causal=False)
    for causal in (False, True):  # no keys: softmax over none, zeros out (as the composition), zero dq
        none, w = np.zeros((1, 0, 4)), RNG.standard_normal((1, 3, 2))
        out, grads = fg.value_and_grad(lambda q, k, v: fnp.sum(F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                                               * w), argnums=(0, 1, 2))(q, none, none[..., :2])
        np.testing.assert_array_equal(np.asarray(out), 0.0)
        assert [g.shape for g in grads] == [(1, 3, 4), (1, 0, 4), (1, 0, 2)]
        np.testing.assert_array_equal(np.asarray(grads[0]), 0.0)
        assert F.scaled_dot_product_attention(q, none, none, is_causal=causal).shape == (1, 3, 4)
        assert F.scaled_dot_product_attention(none, q, q, is_causal=causal).shape == (1, 0, 4)  # no queries
        no_queries = fg.grad(lambda q, k, v: fnp.sum(F.scaled_dot_product_attention(q, k, v, is_causal=causal)),
                             argnums=(0, 1, 2))(none, q, q)
        for g, shape in zip(no_queries, [(1, 0, 4), (1, 3, 4), (1, 3, 4)]):  # dk, dv: sums over no queries
            assert g.shape == shape
            np.testing.assert_array_equal(np.asarray(g), 0.0)
    v = RNG.standard_normal((1, 4, 2))  # no features: q.k = 0, uniform weights (PyTorch's result), not 1 / sqrt(0)
    assert_close(F.scaled_dot_product_attention(np.zeros((1, 3, 0)), np.zeros((1, 4, 0)), v),
                 np.broadcast_to(v.mean(axis=1, keepdims=True), (1, 3, 2)))
    jitted = fg.jit(fg.grad(lambda q: fnp.sum(F.scaled_dot_product_attention(q, q, q, is_causal=True) ** 2)))
    assert_close(jitted(q), fg.grad(lambda q: fnp.sum(F.scaled_dot_product_attention(q, q, q, is_causal=True) ** 2))(q),
                 rtol=1e-12)
    per_example = fg.vmap(fg.grad(lambda q: fnp.sum(F.scaled_dot_product_attention(q, q, q, is_causal=True) ** 3)))
    batch = RNG.standard_normal((3, 1, 3, 4))
    assert_close(per_example(batch), np.stack([fg.grad(lambda q: fnp.sum(
        F.scaled_dot_product_attention(q, q, q, is_causal=True) ** 3))(b) for b in batch]), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_rows_longer_than_a_vector(dtype, attention_form):
    """19 keys, so the probabilities' loops run whole vectors of 8 and a remainder, and each causal
    query sees its own count: against NumPy with a mask that hides every key from one query (a row
    of zeros, as PyTorch's attention), a NaN score and an infinite bias (NaN rows, as PyTorch's);
    gradients (with the bias's) against the unfused composition."""
    q, k = RNG.standard_normal((2, 11, 6)).astype(dtype), RNG.standard_normal((2, 19, 6)).astype(dtype)
    v, bias = RNG.standard_normal((2, 19, 3)).astype(dtype), RNG.standard_normal((2, 11, 19)).astype(dtype)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for causal in (False, True):
        assert_close(F.scaled_dot_product_attention(q, k, v, bias, causal), _np_attention(
            q.astype(np.float64), k, v, bias, causal, 1 / np.sqrt(6)), rtol=tol, atol=tol)
    odd = bias.copy()
    odd[0, 4] = -np.inf  # query 4 of the first batch element sees no key
    odd[1, 2, 1] = np.nan
    odd[1, 7, 5] = np.inf
    with np.errstate(invalid="ignore"):
        expected = _np_attention(q.astype(np.float64), k, v, odd, True, 1 / np.sqrt(6))
    expected[0, 4] = 0  # NumPy's softmax of an all -inf row is NaN
    out = np.asarray(F.scaled_dot_product_attention(q, k, v, odd, is_causal=True))
    assert (out[0, 4] == 0).all() and np.isnan(out[1, 2]).all() and np.isnan(out[1, 7]).all()
    assert_close(out, expected, rtol=tol, atol=tol)

    def loss(attend):
        def f(q, k, v, b):
            return fnp.sum(attend(q, k, v, b) * fnp.cos(fnp.arange(3.0, dtype=dtype)))
        return fg.grad(f, argnums=(0, 1, 2, 3))(q, k, v, bias)

    def composed(q, k, v, b):
        s = fnp.matmul(q, fnp.swapaxes(k, -1, -2)) / np.sqrt(6).astype(dtype) + b
        s = fnp.where(np.tri(11, 19, dtype=bool), s, -np.inf)
        return fnp.matmul(nn.softmax(s), v)
    for fused, unfused in zip(loss(lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, b, True)),
                              loss(composed)):
        assert_close(fused, unfused, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("mask_shape", [(5, 5), (1, 5), (5,), (2, 5, 5)])
def test_attention_under_vmap_with_a_mask_per_example(mask_shape, attention_form):
    """vmap over examples that each have their own additive mask, of fewer dims than the scores or
    not: each example's mask broadcasts over that example's heads (it failed to broadcast before),
    values and every gradient equal to the per-example loop's."""
    q, k, v = (RNG.standard_normal((3, 2, 5, 4)) for _ in range(3))
    masks = RNG.standard_normal((3,) + mask_shape)

    def loss(q, k, v, b):
        return fnp.sum(F.scaled_dot_product_attention(q, k, v, b, is_causal=True) ** 2)
    grads = fg.vmap(fg.grad(loss, argnums=(0, 1, 2, 3)))(q, k, v, masks)
    per_example = [fg.grad(loss, argnums=(0, 1, 2, 3))(q[i], k[i], v[i], masks[i]) for i in range(3)]
    for j, g in enumerate(grads):
        assert_close(g, np.stack([np.asarray(each[j]) for each in per_example]), rtol=1e-12, atol=1e-12)
    outs = fg.vmap(lambda q, b: F.scaled_dot_product_attention(q, k[0], v[0], b), in_axes=(None, 0))(q[0], masks)
    assert_close(outs, np.stack([np.asarray(F.scaled_dot_product_attention(q[0], k[0], v[0], m)) for m in masks]),
                 rtol=1e-12, atol=1e-12)


def test_multi_head_attention_is_causal():
    mha = nn.MultiHeadAttention(8, 2, key=fg.random.key(0))
    x = fg.random.normal(fg.random.key(1), (1, 5, 8))
    full = mha(x, causal=True)
    prefix = mha(x[:, :3], causal=True)
    assert_close(full[:, :3], prefix, atol=1e-6)  # later tokens do not change earlier outputs
    assert not np.allclose(np.asarray(mha(x)[:, :3]), np.asarray(prefix), atol=1e-4)


def test_losses_against_pytorch_formulas():
    logits = RNG.standard_normal((4, 3))
    labels = np.array([0, 2, 1, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    nll = -logp[np.arange(4), labels]
    assert_close(nn.cross_entropy(logits, labels), nll.mean())
    assert_close(nn.cross_entropy(logits, labels, reduction="sum"), nll.sum())
    assert_close(nn.cross_entropy(logits, labels, reduction="none"), nll)
    smooth = 0.9 * nll - 0.1 * logp.mean(1)
    assert_close(nn.cross_entropy(logits, labels, label_smoothing=0.1), smooth.mean())
    ignored = np.array([0, -100, 1, 2])
    keep = ignored != -100
    assert_close(nn.cross_entropy(logits, ignored), (-logp[np.arange(4)[keep], ignored[keep]]).mean())
    assert_close(nn.nll_loss(logp, labels), nll.mean())
    seq_logits = RNG.standard_normal((2, 3, 4))  # (N, C, d)
    seq_labels = np.array([[0, 1, 2, 0], [2, 2, 1, 0]])
    seq_logp = seq_logits - np.log(np.exp(seq_logits).sum(1, keepdims=True))
    ref = -np.take_along_axis(seq_logp, seq_labels[:, None], 1).mean()
    assert_close(nn.cross_entropy(seq_logits, seq_labels), ref)
    pred, target = RNG.standard_normal(5), RNG.standard_normal(5)
    assert_close(nn.mse_loss(pred, target), np.mean((pred - target) ** 2))
    assert_close(nn.l1_loss(pred, target), np.mean(np.abs(pred - target)))
    y = (RNG.random(5) > 0.5).astype(np.float64)
    sig = 1 / (1 + np.exp(-pred))
    bce = -(y * np.log(sig) + (1 - y) * np.log(1 - sig))
    assert_close(nn.binary_cross_entropy_with_logits(pred, y), bce.mean())
    weighted = -(2.0 * y * np.log(sig) + (1 - y) * np.log(1 - sig))
    assert_close(nn.binary_cross_entropy_with_logits(pred, y, pos_weight=2.0), weighted.mean())
    assert np.isfinite(float(nn.binary_cross_entropy_with_logits(np.array([1000.0, -1000.0]), np.array([0.0, 1.0]))))
    fg.check_grads(lambda l: nn.cross_entropy(l, labels, label_smoothing=0.2), (logits,), order=2)


def test_loss_input_errors():
    with pytest.raises(fg.ShapeError, match=r"labels of shape \(3,\)"):
        nn.cross_entropy(np.zeros((4, 3)), np.zeros(3, int))
    with pytest.raises(IndexError, match="label out of range"):
        nn.cross_entropy(np.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(ValueError, match="reduction"):
        nn.mse_loss(np.zeros(2), np.zeros(2), reduction="avg")


def test_linear_and_conv_use_pytorch_initialisation():
    layer = nn.Linear(100, 50, key=fg.random.key(0))
    assert layer.weight.shape == (50, 100) and layer.bias.shape == (50,)
    bound = 1 / math.sqrt(100)
    w = np.asarray(layer.weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01  # uniform(-b, b) has std b / sqrt(3)
    conv = nn.Conv2d(4, 8, 3, key=fg.random.key(1))
    assert np.abs(np.asarray(conv.weight)).max() <= 1 / math.sqrt(36)
    x = nn.init.xavier_uniform(fg.random.key(2), (200, 300))
    assert abs(np.asarray(x).std() - math.sqrt(2 / 500)) < 0.003
    assert_close(nn.Linear(3, 2, key=fg.random.key(0))(np.ones((1, 3))),
                 np.ones((1, 3)) @ np.asarray(nn.Linear(3, 2, key=fg.random.key(0)).weight).T +
                 np.asarray(nn.Linear(3, 2, key=fg.random.key(0)).bias), atol=1e-6)


def test_init_functions_follow_pytorchs_formulas():
    init, key = nn.init, fg.random.key(3)
    w = np.asarray(init.kaiming_uniform(key, (200, 300)))  # torch's default a = 0: bound sqrt(6 / fan_in)
    assert 0.95 * math.sqrt(6 / 300) < np.abs(w).max() <= math.sqrt(6 / 300)
    w = np.asarray(init.kaiming_normal(key, (256, 64, 3, 3), mode="fan_out", nonlinearity="relu"))
    assert abs(w.std() / math.sqrt(2 / (256 * 9)) - 1) < 0.02
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04) and init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("conv2d") == 1.0 and init.calculate_gain("selu") == 0.75
    t = np.asarray(init.trunc_normal(key, (20000,), mean=1.0, std=0.5, a=0.5, b=2.0))
    assert t.min() >= 0.5 and t.max() <= 2.0 and abs(t.mean() - 1.1148) < 0.01  # N(1, 0.25) cut to [0.5, 2]
    assert np.array_equal(init.eye(key, (2, 3)), np.eye(2, 3))
    assert np.array_equal(np.asarray(init.dirac(key, (4, 2, 3, 3), groups=2))[:, :, 1, 1], np.tile(np.eye(2), (2, 1)))
    assert np.array_equal(init.constant(key, (2,), value=0.5), [0.5, 0.5])
    with pytest.raises(ValueError, match="unsupported nonlinearity 'gelu'"):
        init.kaiming_uniform(key, (3, 4), nonlinearity="gelu")
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        init.kaiming_normal(key, (3, 4), mode="fan")


def test_modules_are_pytrees_with_named_parameters():
    k1, k2 = fg.random.split(fg.random.key(0))
    model = nn.Sequential([nn.Linear(4, 8, key=k1), nn.relu, nn.Dropout(0.1), nn.Linear(8, 2, key=k2)])
    names = [n for n, _ in model.named_parameters()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.3.weight", "layers.3.bias"]
    assert model.num_parameters() == 4 * 8 + 8 + 8 * 2 + 2
    assert len(fg.tree_leaves(model)) == 4
    x, y = np.ones((3, 4), np.float32), np.array([0, 1, 1])
    grads = fg.grad(lambda m: nn.cross_entropy(m(x), y))(model)
    assert isinstance(grads, nn.Sequential) and grads.layers[1] is nn.relu
    assert grads.layers[0].weight.shape == (8, 4)
    doubled = fg.tree_map(lambda p: p * 2, model)
    assert_close(doubled.layers[3].bias, 2 * np.asarray(model.layers[3].bias))
    assert "Linear(in_features=4" in repr(model) and "relu" in repr(model)


def test_modules_are_immutable_once_constructed():
    class Scaled(nn.Module):
        def __init__(self, key):
            self.inner = nn.Linear(2, 3, key=key)  # fields, sub-modules included, are set while __init__ runs
            self.scale = 2.0

        def __call__(self, x):
            return self.inner(x) * self.scale

    model = Scaled(fg.random.key(0))
    with pytest.raises(AttributeError, match="immutable.*replace"):
        model.scale = 3.0
    with pytest.raises(AttributeError, match="immutable"):
        model.inner.weight = fnp.zeros((3, 2))
    with pytest.raises(AttributeError, match="immutable"):
        del model.scale
    bigger = model.replace(scale=3.0)
    assert model.scale == 2.0 and bigger.scale == 3.0
    x = fnp.ones((1, 2))
    assert_close(bigger(x), model(x).numpy() * 1.5, rtol=1e-6)
    leaves, treedef = fg.tree_flatten(model)
    rebuilt = treedef.unflatten(leaves)  # jit and the optimisers rebuild modules: they stay immutable
    with pytest.raises(AttributeError, match="immutable"):
        rebuilt.scale = 1.0


def test_state_dict_round_trip_and_errors():
    model = nn.MLP(3, [5], 2, key=fg.random.key(0))
    other = nn.MLP(3, [5], 2, key=fg.random.key(1))
    restored = other.load_state_dict(model.state_dict())
    for (n1, p1), (n2, p2) in zip(model.named_parameters(), restored.named_parameters()):
        assert n1 == n2 and np.array_equal(p1, p2)
    sd = model.state_dict()
    with pytest.raises(KeyError, match=r"missing keys \['linears.1.bias'\]"):
        other.load_state_dict({k: v for k, v in sd.items() if k != "linears.1.bias"})
    with pytest.raises(KeyError, match=r"unexpected keys \['extra'\]"):
        other.load_state_dict({**sd, "extra": np.zeros(1)})
    with pytest.raises(ValueError, match=r"'linears.0.weight' has shape \(5, 4\)"):
        other.load_state_dict({**sd, "linears.0.weight": np.zeros((5, 4))})


def test_sequential_takes_pytorchs_arguments_and_loads_its_state_dict_names():
    keys = fg.random.split(fg.random.key(0), 3)

    class Net(nn.Module):  # torch: features.0.weight, features.2.weight, head.weight
        def __init__(self, key):
            self.features = nn.Sequential(nn.Linear(3, 4, key=keys[0]), nn.ReLU(), nn.Linear(4, 4, key=keys[1]))
            self.head = nn.Linear(4, 2, key=key)

        def __call__(self, x, *, key=None):
            return self.head(self.features(x))

    net = Net(keys[2])
    assert list(net.state_dict()) == ["features.layers.0.weight", "features.layers.0.bias", "features.layers.2.weight",
                                      "features.layers.2.bias", "head.weight", "head.bias"]
    pytorch_names = [n for n, _ in net.named_parameters(pytorch_names=True)]
    assert pytorch_names == ["features.0.weight", "features.0.bias", "features.2.weight", "features.2.bias",
                             "head.weight", "head.bias"]
    rng = np.random.default_rng(0)
    torch_state = {n: rng.standard_normal(p.shape).astype(np.float32) for n, p in zip(pytorch_names, net.parameters())}
    loaded = net.load_state_dict(torch_state)  # strict, by PyTorch's names
    for (_, p), want in zip(loaded.named_parameters(), torch_state.values()):
        assert np.array_equal(p, want)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    hidden = np.maximum(x @ torch_state["features.0.weight"].T + torch_state["features.0.bias"], 0)
    hidden = hidden @ torch_state["features.2.weight"].T + torch_state["features.2.bias"]
    assert_close(loaded(x), hidden @ torch_state["head.weight"].T + torch_state["head.bias"], rtol=1e-5)
    assert np.array_equal(net.load_state_dict(loaded.state_dict()).parameters()[0], torch_state["features.0.weight"])
    with pytest.raises(KeyError, match=r"missing keys \['features.layers.2.bias'\]"):
        net.load_state_dict({k: v for k, v in torch_state.items() if k != "features.2.bias"})
    as_list = nn.Sequential([nn.Linear(3, 4, key=keys[0]), nn.ReLU()])  # equinox's form still works
    assert len(as_list) == 2 and len(nn.Sequential(nn.ReLU(), nn.ReLU(), nn.ReLU())) == 3


def test_dropout_only_with_a_key():
    layer = nn.Dropout(0.5)
    x = np.ones((1000,), np.float32)
    assert_close(layer(x), x)
    out = np.asarray(layer(x, key=fg.random.key(0)))
    assert set(np.unique(out)) == {0.0, 2.0} and abs((out == 0).mean() - 0.5) < 0.05


def test_dropout_multiplies_as_pytorch_so_a_dropped_nan_still_shows():
    x = np.array([np.nan, np.inf, 1.0, -2.0] * 50)
    key = fg.random.key(3)
    out = np.asarray(F.dropout(x, 0.5, key))
    kept = np.asarray(F.dropout(np.ones_like(x), 0.5, key)) != 0  # the same key drops the same places
    assert 0 < kept.sum() < x.size
    assert np.isnan(out[0::4]).all()  # NaN * 0 and NaN * 2
    assert np.array_equal(np.isnan(out[1::4]), ~kept[1::4])  # inf * 0 is NaN, inf * 2 stays inf
    assert_close(out[2::4], np.where(kept[2::4], 2.0, 0.0))
    mask = np.asarray(F.dropout(np.ones(8), 0.5, key))
    assert_close(fg.grad(lambda v: fnp.sum(F.dropout(v, 0.5, key)))(np.ones(8)), mask)
    every = nn.Dropout(1.0)  # PyTorch's p=1: x * 0
    assert_close(every(np.array([1.0, -3.0]), key=key), [0.0, 0.0])
    assert np.isnan(np.asarray(every(np.array([np.inf]), key=key))).all()
    assert_close(fg.grad(lambda v: fnp.sum(every(v, key=key)))(np.ones(3)), np.zeros(3))
    with pytest.raises(ValueError, match=r"dropout rate must be in \[0, 1\], got 1.5"):
        F.dropout(x, 1.5, key)


def test_embedding_and_one_hot():
    emb = nn.Embedding(10, 3, key=fg.random.key(0))
    idx = np.array([[1, 2], [9, 1]])
    assert_close(emb(idx), np.asarray(emb.weight)[idx])
    g = fg.grad(lambda m: fnp.sum(m(idx)))(emb)
    assert_close(g.weight[1], [2, 2, 2])  # row 1 is used twice: the scatter-add accumulates
    with pytest.raises(IndexError, match="embedding index out of range"):
        emb(np.array([10]))
    assert_close(nn.one_hot(np.array([0, 2]), 3), [[1, 0, 0], [0, 0, 1]])
    assert_close(nn.one_hot(np.array([[0], [2]])), [[[1, 0, 0]], [[0, 0, 1]]])  # -1: the largest label + 1
    with pytest.raises(IndexError, match=r"labels span \[-1, 2\], outside the 3 classes"):
        nn.one_hot(np.array([-1, 2]), 3)  # PyTorch raises; an all-zero target row would train silently wrong
    with pytest.raises(fg.ConcretizationError, match="pass num_classes"):
        fg.jit(lambda y: nn.one_hot(y))(np.array([0, 1]))


def test_embedding_max_norm_and_gradient_scaling_by_frequency():
    table = RNG.standard_normal((6, 3)) * 2
    idx = np.array([[0, 5, 2], [5, 5, 1]])
    cotangent = RNG.standard_normal((2, 3, 3))
    for ord_, limit in ((2.0, 1.0), (1.0, 0.5), (np.inf, 1.5)):
        norms = np.linalg.norm(table, ord=ord_, axis=1, keepdims=True)
        want = table * np.where(norms > limit, limit / (norms + 1e-7), 1.0)
        out, pullback = fg.vjp(lambda w: F.embedding(idx, w, max_norm=limit, norm_type=ord_), table)
        assert_close(out, want[idx], rtol=1e-12)
        plain = np.zeros_like(table)
        np.add.at(plain, idx, cotangent)
        assert_close(pullback(cotangent)[0], plain)  # the rescaling passes the gradient as an identity (PyTorch's)
    counts = np.bincount(idx.ravel(), minlength=6)
    scaled = fg.grad(lambda w: fnp.sum(F.embedding(idx, w, scale_grad_by_freq=True) * cotangent))(table)
    assert_close(scaled, plain / np.maximum(counts, 1)[:, None])
    layer = nn.Embedding(6, 3, max_norm=1.0, key=fg.random.key(1))
    assert np.linalg.norm(np.asarray(layer(idx)), axis=-1).max() <= 1.0 + 1e-6


def test_embedding_padding_idx_passes_no_gradient_and_starts_at_zero():
    table = RNG.standard_normal((6, 4))
    idx = np.array([[0, 5, 2], [5, 5, 1]])
    cotangent = RNG.standard_normal((2, 3, 4))
    for padding_idx in (5, -1):  # PyTorch counts a negative one from the end
        assert_close(F.embedding(idx, table, padding_idx), table[idx])  # the values are the row's
        grad = fg.grad(lambda w: fnp.sum(F.embedding(idx, w, padding_idx) * cotangent))(table)
        want = np.zeros_like(table)
        np.add.at(want, idx[idx != 5], cotangent[idx != 5])
        assert_close(grad, want)
    emb = nn.Embedding(6, 4, -2, key=fg.random.key(1))
    assert emb.padding_idx == 4 and not np.asarray(emb.weight)[4].any() and np.asarray(emb.weight)[3].all()
    assert not np.asarray(fg.grad(lambda m: fnp.sum(m(np.array([4, 4, 3]))))(emb).weight)[4].any()
    with pytest.raises(IndexError, match="padding_idx 6 is not a row of a table of 6 rows"):
        F.embedding(idx, table, 6)
    with pytest.raises(fg.ShapeError, match=r"weight must be a \(num_embeddings, embedding_dim\) table"):
        F.embedding(idx, table[0])


def test_transformer_block_and_flatten_shapes():
    block = nn.TransformerBlock(8, 2, key=fg.random.key(0))
    x = fg.random.normal(fg.random.key(1), (2, 5, 8))
    assert block(x).shape == (2, 5, 8)
    assert block(x, key=fg.random.key(2)).shape == (2, 5, 8)
    assert nn.Flatten()(np.zeros((2, 3, 4))).shape == (2, 12)
    seq = nn.Sequential([nn.Conv2d(1, 2, 3, padding=1, key=fg.random.key(0)), nn.ReLU(), nn.MaxPool2d(2),
                         nn.AvgPool2d(2), nn.Flatten(), nn.GELU(), nn.Tanh(), nn.Sigmoid(), nn.Softmax()])
    out = seq(np.ones((3, 1, 8, 8)))
    assert out.shape == (3, 8) and np.allclose(np.asarray(out).sum(1), 1, atol=1e-6)

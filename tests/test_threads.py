"""The CPU's own threads (cpu/threads.py): task ranges split over them, BLAS kept on one thread
meanwhile, GEMMs cut along each of their extents (cpu/gemm.py), the programs that own the cores
(jit), and the SIMD vectors the direct convolutions are written in (cpu/simd.py)."""
import threading

import numpy as np
import pytest
from numba import njit

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.cpu import direct, fusion, gemm, registers, simd, threads

from .helpers import assert_close

RNG = np.random.default_rng(11)


@pytest.fixture
def three_threads(monkeypatch):
    """Splits over three threads from one task's work up (the pool may hold fewer: its threads
    then take more ranges)."""
    monkeypatch.setattr(threads, "THREADS", 3)
    monkeypatch.setattr(threads, "MIN_TASK_WORK", 1)


def test_a_split_hands_a_thread_and_a_range_at_least_min_task_work(monkeypatch):
    """A hand-off to a thread on another core costs 60-90 us here: a second thread takes part only
    for MIN_TASK_WORK of work a thread, and the ranges carry at least that on average (each claim
    takes the GIL)."""
    monkeypatch.setattr(threads, "THREADS", 2)
    least = threads.MIN_TASK_WORK
    assert threads.ranges(100, 2 * least - 1) == (1, [0, 100])  # one thread: one range
    assert threads.ranges(100, 2 * least) == (2, [0, 50, 100])
    for tasks, work, per_thread in ((64, 9 * least, 8), (64, 1000 * least, 8), (7, 1000 * least, 1), (3, 5 * least, 8)):
        count, bounds = threads.ranges(tasks, work, per_thread)
        chunks = len(bounds) - 1
        assert count == 2 and bounds[0] == 0 and bounds[-1] == tasks and sorted(set(bounds)) == bounds
        assert chunks == min(tasks, 2 * per_thread, work // least)  # ranges of MIN_TASK_WORK or more, on average


@pytest.mark.parametrize("tasks,per_thread", [(1, 8), (7, 1), (100, 8), (5, 3)])
def test_split_runs_every_task_once_on_several_threads(three_threads, tasks, per_thread):
    seen, names, helped = [], set(), threading.Event()
    main = threading.current_thread()

    def run(t0, t1):
        names.add(threading.current_thread().name)
        if threading.current_thread() is not main:
            helped.set()
        elif tasks > 1:  # the calling thread's ranges wait (at most 30 s) for a pool thread to take one
            helped.wait(30)
        seen.extend(range(t0, t1))
    threads.split(run, tasks, 10 ** 9, per_thread=per_thread)
    assert sorted(seen) == list(range(tasks))
    assert len(names) == 1 if tasks == 1 else len(names) >= 2


def test_split_stays_on_the_calling_thread_below_its_work_threshold():
    names = set()
    threads.split(lambda t0, t1: names.add(threading.current_thread().name), 50, threads.MIN_TASK_WORK)
    assert names == {threading.current_thread().name}


def test_split_raises_a_ranges_error_after_every_range_has_ended(three_threads):
    def run(t0, t1):
        if t0 == 0:
            raise ValueError("range 0 failed")
    with pytest.raises(ValueError, match="range 0 failed"):
        threads.split(run, 12, 10 ** 9, per_thread=4)
    # a split inside a pool thread runs there, inline, instead of waiting on the pool it occupies
    inner = []
    threads.split(lambda t0, t1: threads.split(lambda a, b: inner.extend(range(a, b)), 4, 10 ** 9), 2, 10 ** 9,
                  per_thread=1)
    assert sorted(inner) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_serial_blas_holds_blas_at_one_thread_and_gives_its_count_back():
    """Every BLAS library loaded when funcgrad first needs one (NumPy's among them) runs on one
    thread inside the outermost block and has its own count back after it."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threads.serial_blas:
        controlled = threads.serial_blas.libraries
    if not controlled:
        pytest.skip("no BLAS library found")
    paths = {lib.filepath for lib in controlled}

    def counts():
        return {lib["filepath"]: lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["filepath"] in paths}
    original = [lib.get_num_threads() for lib in controlled]
    try:
        for lib in controlled:
            lib.set_num_threads(3)  # as a user might have it
        with threads.serial_blas:
            with threads.serial_blas:  # nested: the outermost block restores
                assert set(counts().values()) == {1}
            assert set(counts().values()) == {1}
        assert counts() == {path: 3 for path in paths}
    finally:
        for lib, count in zip(controlled, original):
            lib.set_num_threads(count)


@pytest.mark.parametrize("a_shape,b_shape", [
    ((8, 5, 6), (8, 6, 7)),     # the batch
    ((90, 6), (6, 7)),          # the rows of a
    ((5, 6), (6, 90)),          # the columns of b
    ((5, 300), (300, 7)),       # the contraction, summed
    ((3, 5, 300), (300, 4)),    # the contraction of a broadcast stack
    ((2, 1, 40, 6), (3, 6, 5)),  # broadcast batch dimensions: the rows
])
def test_gemm_cuts_every_extent_and_equals_numpy(three_threads, a_shape, b_shape, monkeypatch):
    a, b = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
    want = np.matmul(a, b)
    cuts = []
    real = threads.split
    monkeypatch.setattr(threads, "split", lambda run, tasks, *rest, **k: cuts.append(tasks) or real(run, tasks, *rest, **k))
    with threads.serial_blas:
        assert_close(gemm.matmul(a, b), want, rtol=1e-12, atol=1e-12)
        out = np.full(want.shape, np.nan)
        assert gemm.matmul(a, b, out=out) is out
        assert_close(out, want, rtol=1e-12, atol=1e-12)
        ints = gemm.matmul(a.astype(np.int64), b.astype(np.int64))
        np.testing.assert_array_equal(ints, np.matmul(a.astype(np.int64), b.astype(np.int64)))
    assert len(cuts) == 3 and cuts[0] in (a_shape[0], a_shape[-2], b_shape[-1], a_shape[-1])
    assert_close(gemm.matmul(a, b), want, rtol=1e-12, atol=1e-12)  # outside: BLAS's own threads
    assert len(cuts) == 3


def test_split_sums_add_their_parts_in_the_ranges_order_whichever_thread_ran_them(three_threads, monkeypatch):
    """The direct conv's weight gradient and a GEMM cut along its contraction give the same bits
    when the ranges run in reverse on one thread (as a slow thread would have them claimed) as
    over the pool: each range's sums are its own, added in the ranges' order. They were the
    threads' own once, so a training run's weights differed in their last bits from run to run.
    So do a jitted program's fused sums, split over rows."""
    from funcgrad.cpu import direct
    from funcgrad.nn import functional as F
    monkeypatch.setattr(direct, "MIN_USE", 0.0)
    monkeypatch.setattr(fusion, "PARALLEL_SUM_ELEMENTS", 64)
    x, g = RNG.standard_normal((12, 8, 6, 7)), RNG.standard_normal((12, 8, 6, 7))
    a, b = RNG.standard_normal((4, 600)), RNG.standard_normal((600, 3))
    sums = fg.jit(lambda x, w: (fnp.sum(fnp.tanh(F.conv2d(x, w, padding=1)), axis=0),
                                fnp.sum(F.conv2d(x, w, padding=1) ** 2, axis=(0, 2, 3))))

    def results():
        with threads.serial_blas:
            wgrad, product = direct.conv_weight_grad(x, g, (3, 3), ((1, 1), (1, 1)), (1, 1), 1), gemm.matmul(a, b)
        return (wgrad, product, *sums(x, g[:8, :, :3, :3]))
    pooled = results()

    def reversed_split(run, tasks, work, per_thread=threads.CHUNKS_PER_THREAD):
        bounds = threads.ranges(tasks, work, per_thread)[1]  # split's ranges
        for k in reversed(range(len(bounds) - 1)):
            run(bounds[k], bounds[k + 1])
    monkeypatch.setattr(threads, "split", reversed_split)
    for got, want in zip(results(), pooled):
        np.testing.assert_array_equal(got, want)
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), (2, 3))
    want = np.einsum("nohw,nchwij->ocij", g, windows)
    assert_close(pooled[0], want, rtol=1e-12, atol=1e-12)
    assert_close(pooled[1], a @ b, rtol=1e-12, atol=1e-12)
    y = np.einsum("nchwij,ocij->nohw", windows, g[:8, :, :3, :3])
    assert_close(pooled[2], np.tanh(y).sum(0), rtol=1e-12, atol=1e-12)
    assert_close(pooled[3], (y * y).sum((0, 2, 3)), rtol=1e-12, atol=1e-12)

    # sums that would outgrow SUMS_HELD: one range a thread, so one set of sums each
    monkeypatch.undo()
    monkeypatch.setattr(threads, "THREADS", 3)
    monkeypatch.setattr(threads, "MIN_TASK_WORK", 1)
    monkeypatch.setattr(direct, "SUMS_HELD", 1)
    ranges, real = [], threads.split
    monkeypatch.setattr(threads, "split", lambda run, tasks, work, per_thread=8: ranges.append(per_thread) or real(run, tasks, work, per_thread))
    assert_close(direct.conv_weight_grad(x, g, (3, 3), ((1, 1), (1, 1)), (1, 1), 1), want, rtol=1e-12, atol=1e-12)
    assert ranges == [1]


def test_a_program_with_a_threaded_step_owns_the_cores(three_threads, monkeypatch):
    """A jitted program with a step whose CPU implementation splits its work (a direct
    convolution) runs with BLAS on one thread, its GEMMs split over the kernel threads and its
    fused kernels over PARALLEL_ELEMENTS run as ranges of their elements (or outer rows), reading
    every operand layout as the unsplit kernel: a full operand, a bias row (inner), a per-row
    column (outer), a per-channel (C, 1, 1) bias (cycle), a scalar; and summing as it does: over
    the leading axes (a bias gradient), over all but the channels (a conv bias's), over all, over
    each row (a softmax's Jacobian). A
    program without one leaves its GEMMs to BLAS's own threads and splits nothing."""
    from funcgrad.cpu import direct
    from funcgrad.nn import functional as F
    monkeypatch.setattr(direct, "MIN_USE", 0.0)
    monkeypatch.setattr(fusion, "PARALLEL_ELEMENTS", 64)
    monkeypatch.setattr(fusion, "PARALLEL_SUM_ELEMENTS", 64)
    ranged, owned = [], []
    real_split, real_matmul = fusion.split_kernel, gemm.matmul
    monkeypatch.setattr(fusion, "split_kernel", lambda kernel, tasks, *rest: ranged.append(tasks) or
                        real_split(kernel, tasks, *rest))
    real_source, summing = fusion.kernel_source, set()  # the kinds of sums ranged kernels make
    monkeypatch.setattr(fusion, "kernel_source", lambda *a, sums=(), ranged=False, **k: summing.update(
        how for _, how in sums if ranged) or real_source(*a, sums=sums, ranged=ranged, **k))
    monkeypatch.setattr(gemm, "matmul", lambda *a, **k: owned.append(threads.serial_blas.active) or real_matmul(*a, **k))
    x = RNG.standard_normal((3, 8, 5, 6)).astype(np.float32)
    w = RNG.standard_normal((8, 8, 3, 3)).astype(np.float32)
    row, col, channel = (RNG.standard_normal(s).astype(np.float32) for s in [(6,), (3, 8, 5, 1), (8, 1, 1)])
    dense = RNG.standard_normal((240, 7)).astype(np.float32)

    def f(x, w, row, col, channel, s):
        y = F.conv2d(x, w, padding=1)
        return [fnp.tanh(y * s + row) - col, fnp.exp(y) * channel + 1.0, fnp.reshape(y, (3, -1)) @ dense,
                fnp.sum(fnp.tanh(fnp.reshape(y, (3, -1))) * s, axis=0), fnp.sum(y * y * channel, axis=(0, 2, 3)), fnp.sum(fnp.exp(y * s)),
                fnp.sum(fnp.reshape(y, (3, -1)) * 3.0, axis=-1)]
    args = (x, w, row, col, channel, np.float32(0.5))
    jitted = fg.jit(f)(*args)
    assert ranged and summing == {"lead", "cycle", "all", "rows"} and owned and all(owned) and not threads.serial_blas.active
    for got, want in zip(jitted, f(*args)):
        assert_close(got, want, rtol=1e-5, atol=1e-5)
    ranged.clear(), owned.clear()
    assert_close(fg.jit(lambda x: fnp.tanh(x @ dense[:6, :6]) + 1.0)(x), np.tanh(x @ dense[:6, :6]) + 1.0, rtol=1e-5)
    assert owned and not any(owned) and not ranged


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_simd_vectors_load_broadcast_fuse_add_and_store(dtype):
    lanes = direct.lanes(dtype)  # the vectors the direct convolutions use: one of the host's registers
    assert lanes * np.dtype(dtype).itemsize == registers.host().vector_bytes

    @njit
    def axpy(a, x, y, out):  # out = a[1] * x + y over whole vectors, from any offset
        for i in range(0, out.size - lanes + 1, lanes):
            simd.store(out, i, simd.fma(simd.broadcast(a, 1, lanes), simd.load(x, i + 1, lanes), simd.load(y, i, lanes)))
        simd.store(out, out.size - lanes, simd.splat(a[0], lanes))
    a, x, y = np.array([7.0, 3.0], dtype), RNG.standard_normal(4 * lanes + 1).astype(dtype), \
        RNG.standard_normal(4 * lanes).astype(dtype)
    out = np.zeros(4 * lanes, dtype)
    axpy(a, x, y, out)
    assert_close(out[:3 * lanes], 3.0 * x[1:3 * lanes + 1] + y[:3 * lanes], rtol=1e-6)
    np.testing.assert_array_equal(out[3 * lanes:], np.full(lanes, 7.0, dtype))

    @njit
    def add(x, y, out):
        simd.store(out, 0, simd.add(simd.load(x, 0, lanes), simd.load(y, 1, lanes)))
    add(x, y, out)
    np.testing.assert_array_equal(out[:lanes], x[:lanes] + y[1:lanes + 1])  # one rounding, as NumPy's

    @njit
    def halves(x, first, second, out):  # two short rows joined in one vector, then added to itself
        v = simd.load_halves(x, first, second, lanes)
        simd.store(out, 0, simd.add(v, v))
    half = lanes // 2
    halves(x, 3, 2 * lanes + 1, out)
    np.testing.assert_array_equal(out[:lanes], 2 * np.concatenate([x[3:3 + half], x[2 * lanes + 1:2 * lanes + 1 + half]]))


def test_register_files_read_off_the_cpu_and_tiles_that_fit_them(monkeypatch):
    """cpu/registers reads the host's vector registers off LLVM's features of its CPU (a CPU whose
    features llvmlite cannot read: the narrowest; NUMBA_CPU_FEATURES or NUMBA_CPU_NAME=generic: the
    CPU they tell numba to compile for; AVX-512 in halves on Zen 4 alone), and every tile the direct
    passes size by them fits: its accumulators, the vectors it loads beside them and a broadcast value."""
    from llvmlite import binding
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    avx512 = {"avx512f": True, "avx2": True, "fma": True}
    for machine, features, cpu, want in [("x86_64", avx512, "znver5", (64, 32, False)),
                                         ("x86_64", avx512, "sapphirerapids", (64, 32, False)),
                                         ("x86_64", avx512, "znver4", (64, 32, True)),  # 64 bytes in two halves
                                         ("x86_64", {"avx512f": False, "avx2": True, "fma": True}, "znver3", (32, 16, False)),
                                         ("AMD64", {"avx2": True}, "x86-64", (16, 16, False)),  # no FMA: SSE's registers
                                         ("x86_64", RuntimeError, "", (16, 16, False)),
                                         ("aarch64", {"neon": True}, "neoverse-v2", (16, 32, False)),
                                         ("arm64", RuntimeError, "", (16, 32, False)),
                                         ("ppc64le", {"altivec": True}, "pwr9", (16, 16, False))]:
        def read(features=features):
            if features is RuntimeError:
                raise RuntimeError("no features of this CPU")
            return features
        monkeypatch.setattr(registers.platform, "machine", lambda machine=machine: machine)
        monkeypatch.setattr(binding, "get_host_cpu_features", read)
        monkeypatch.setattr(binding, "get_host_cpu_name", lambda cpu=cpu: cpu)
        registers.host.cache_clear()
        assert registers.host() == want, (machine, cpu)
    for variable, value, want in [("NUMBA_CPU_FEATURES", "+avx2, +fma,-avx512f", (32, 16, False)),
                                  ("NUMBA_CPU_FEATURES", "+avx512f", (64, 32, False)),
                                  ("NUMBA_CPU_NAME", "znver4", (64, 32, True)),  # what numba compiles for
                                  ("NUMBA_CPU_NAME", "host", (64, 32, False)),
                                  ("NUMBA_CPU_NAME", "generic", (16, 16, False))]:
        with monkeypatch.context() as m:
            m.setattr(registers.platform, "machine", lambda: "x86_64")
            m.setattr(binding, "get_host_cpu_features", lambda: avx512)
            m.setattr(binding, "get_host_cpu_name", lambda: "znver5")
            m.setenv(variable, value)
            registers.host.cache_clear()
            assert registers.host() == want, value
    monkeypatch.undo()
    registers.host.cache_clear()
    assert registers.Registers(64, 32).out_vectors == (6, 5, 4) and registers.Registers(32, 16).out_vectors == (3, 2, 1)
    # whole AVX-512 vectors (Zen 5, Xeons): no half vectors, so 8-wide float32 rows go two to a vector
    whole, halves = registers.Registers(64, 32), registers.Registers(64, 32, half_vectors=True)
    assert not whole.half_vectors and halves.half_vectors and not registers.Registers(32, 16).half_vectors
    assert direct._layout_for(8, 8, 10, np.dtype(np.float32), whole) == (16, 4, 1, 64, 2)  # 2 rows a vector
    assert direct._layout_for(8, 8, 10, np.dtype(np.float32), halves) == (8, 4, 1, 64, 1)
    assert direct._layout_for(8, 8, 10, np.dtype(np.float64), whole) == (8, 4, 1, 64, 1)  # float64's whole vectors
    assert direct._layout_for(17, 16, 18, np.dtype(np.float64), whole) == (8, 6, 2, 288, 1)  # 2 of 8 a row, 3 rows a task
    assert direct._layout_for(12, 12, 14, np.dtype(np.float32), whole) == (16, 6, 0, 192, 1)  # 12: runs of q
    for regs in [registers.Registers(*r) for r in [(64, 32), (32, 16), (16, 32), (16, 16)]]:
        most = max(regs.out_vectors)
        assert registers.OUT_BLOCK * most + most + 1 <= regs.count < registers.OUT_BLOCK * (most + 1) + most + 2
        assert regs.grad_registers + 4 + 1 <= regs.count  # up to 4 vectors of cotangents (_grad_vectors)
        assert regs.row_grad_channels * (registers.ROW_GRAD_TAPS + 1) + 1 <= regs.count

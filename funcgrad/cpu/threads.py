"""The cores for funcgrad's CPU kernels: a range of tasks split over the calling thread and a few
pool threads, and BLAS kept on one thread meanwhile.

A numba kernel runs on the thread that calls it. One that takes its work as a range of
independent tasks (t0, t1) is split here into contiguous ranges, which the calling thread and the
pool's threads claim in turn, so a thread that another process slows takes fewer. The pool's
threads wait on a queue (no spinning), so between calls the cores are free; numba's OpenMP pool
spins after each kernel and took the cores from the GEMMs that followed (cpu/fusion.py).

OpenBLAS's threads spin too, for ~0.1 s after each threaded GEMM: a kernel split over the cores
in that time shares one with the spinner. So a jitted program whose steps split their work runs
inside `with serial_blas:` (lowering.py), and its GEMMs are split here as well, each part on one
BLAS thread (cpu/gemm.py): serial_blas sets every BLAS library loaded when funcgrad first needs
one (NumPy's among them; threadpoolctl finds them) to one thread and gives each its own count
back when the outermost such block ends, so NumPy code outside funcgrad keeps its threads.

THREADS is OMP_NUM_THREADS where it is set (as PyTorch and OpenBLAS read it; launchers set it to
1 a process), else the cores this process may run on.
"""
from __future__ import annotations

import itertools
import os
import queue
import threading
from typing import Callable

# Multiply-adds a thread (and a range) below which a split does not pay: handing a range to a
# thread on another core and being woken when it is done cost 60-90 us on this project's 2-core
# VM (two wake-ups across cores, 15-45 us each; on one core 6 us), so a thread's share must be
# worth ~150 us of work (8M multiply-adds of a kernel, 0.5M elements of an elementwise pass).
MIN_TASK_WORK = 1 << 23
CHUNKS_PER_THREAD = 8
ELEMENT_WORK = 16  # the multiply-adds an element a kernel copies, compares or maps counts as (~1 ns)


def _threads() -> int:
    configured = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


THREADS = _threads()


class _Pool:
    """Daemon threads that run (fn, done) jobs; made at the first split, after a fork too."""

    def __init__(self, size: int) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.pid = os.getpid()
        for k in range(size):
            threading.Thread(target=self._serve, daemon=True, name=f"funcgrad-kernel-{k}").start()

    def _serve(self) -> None:
        _inside.pool = True
        while True:
            fn, done = self.jobs.get()
            try:
                fn()
            except BaseException as error:  # noqa: BLE001 - handed to the caller, which raises it
                done.put(error)
            else:
                done.put(None)


_pool: _Pool | None = None
_lock = threading.Lock()
_inside = threading.local()  # .pool on the pool's threads: a split there runs inline (no thread waits on itself)


def _get_pool() -> _Pool:
    global _pool
    with _lock:
        if _pool is None or _pool.pid != os.getpid():  # a forked child has none of its parent's threads
            _pool = _Pool(THREADS - 1)
        return _pool


def ranges(tasks: int, work: int, per_thread: int = CHUNKS_PER_THREAD) -> tuple[int, list[int]]:
    """(threads, bounds): how split divides [0, tasks) of `work` multiply-adds: the threads that
    take part and the ranges' bounds: one range where one thread runs, else up to `per_thread` a
    thread and none below MIN_TASK_WORK (each range's claim takes the GIL, which may wake a thread
    on the other core)."""
    threads = max(1, min(THREADS, tasks, work // MIN_TASK_WORK))
    chunks = 1 if threads == 1 else min(tasks, threads * per_thread, work // MIN_TASK_WORK)  # >= threads
    return threads, [tasks * k // chunks for k in range(chunks + 1)]


def split(run: Callable[[int, int], None], tasks: int, work: int, per_thread: int = CHUNKS_PER_THREAD) -> None:
    """run(t0, t1) over [0, tasks), in the contiguous ranges that ranges() gives for `work`
    multiply-adds, which the calling thread and the pool's claim in turn as each finishes its last.
    An exception in any range is raised here, after every range has ended."""
    threads, bounds = ranges(tasks, work, per_thread)
    if threads == 1 or getattr(_inside, "pool", False):
        run(0, tasks)
        return
    chunks = len(bounds) - 1
    claims = itertools.count()  # next() is atomic under the GIL
    stop = []

    def take() -> None:
        while not stop and (k := next(claims)) < chunks:
            run(bounds[k], bounds[k + 1])
    pool, done = _get_pool(), queue.SimpleQueue()
    for _ in range(1, threads):
        pool.jobs.put((take, done))
    error = None
    try:
        take()
    except BaseException as mine:  # noqa: BLE001 - raised once the other threads are done with the buffers
        error = mine
        stop.append(True)
    for _ in range(1, threads):
        error = done.get() or error
    if error is not None:
        raise error


def split_parts(run: Callable[[int, int], object], tasks: int, work: int,
                per_thread: int = CHUNKS_PER_THREAD) -> list:
    """split(run, ...) keeping each range's run(t0, t1): the values in the ranges' order, whichever
    thread ran each, so sums made of them come out the same bits every run."""
    parts: dict[int, object] = {}

    def keep(t0: int, t1: int) -> None:
        parts[t0] = run(t0, t1)  # dict assignment is atomic
    split(keep, tasks, work, per_thread)
    return [parts[t0] for t0 in sorted(parts)]


class _SerialBlas:
    """`with serial_blas:` runs its block with every BLAS library at one thread (see the module)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.libraries: list | None = None
        self.saved: list[int] = []

    def __enter__(self) -> None:
        with self.lock:
            if self.depth == 0:
                if self.libraries is None:
                    self.libraries = _blas_libraries()
                self.saved = [lib.get_num_threads() for lib in self.libraries]
                for lib in self.libraries:
                    lib.set_num_threads(1)
            self.depth += 1

    @property
    def active(self) -> bool:
        return self.depth > 0

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                for lib, count in zip(self.libraries, self.saved):
                    lib.set_num_threads(count)


def _blas_libraries() -> list:
    from threadpoolctl import ThreadpoolController  # ~2 ms: it reads the process's loaded libraries
    return ThreadpoolController().select(user_api="blas").lib_controllers


def blas_libraries() -> list[str]:
    """One line per BLAS library loaded (NumPy's, which funcgrad's GEMMs call): its name, version,
    the kernel it picked for this CPU and its threads. The kernel sets a GEMM's speed more than
    anything funcgrad does: OpenBLAS's Haswell kernel ran the MLP's GEMMs at 2/3 of the speed of
    its SkylakeX one on an AVX-512 CPU, and OPENBLAS_CORETYPE in the environment picks it."""
    lines = []
    for lib in _blas_libraries():
        info = lib.info()
        kernel = f"{info['architecture']} kernel, " if info.get("architecture") else ""
        forced = os.environ.get("OPENBLAS_CORETYPE") if info["internal_api"] == "openblas" else None
        lines.append(f"{info['internal_api']} {info['version']} ({kernel}{info['num_threads']} threads"
                     f"{f'; OPENBLAS_CORETYPE={forced} chose the kernel' if forced else ''})")
    return lines


serial_blas = _SerialBlas()

"""The parts of one kernel call shared across the cores.

OpenBLAS threads a large GEMM itself, but runs each of a batch of small ones (attention's
per-head 64 x 32 x 64 products) on the calling thread, as a numba loop runs: such calls split
their independent parts (batch elements) over a pool of threads, one part per core, the calling
thread taking the first part. NumPy's GEMMs and the numba kernels release the GIL, so the parts
run at once. A part runs nested calls serially (no oversubscription, no pool waiting on itself);
a forked child (a DataLoader worker) starts with no pool and makes its own when it needs one.
`funcgrad.config.cpu_threads` caps the parts (None: the cores this process may run on).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from ..config import config

_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def cores() -> int:
    """How many parts a call may split into: config.cpu_threads, or the usable cores."""
    if config.cpu_threads is not None:
        return max(1, int(config.cpu_threads))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def spans(n: int, parts: int) -> list[tuple[int, int]]:
    """(start, stop) of `parts` near-equal consecutive ranges covering range(n), none empty."""
    parts = max(1, min(parts, n))
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def _run_inside(fn: Callable, args: tuple) -> None:
    _local.inside = True
    try:
        fn(*args)
    finally:
        _local.inside = False


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers < workers:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="funcgrad-cpu")
        return _pool


def run_parts(fn: Callable, parts: Sequence[tuple]) -> None:
    """fn(*args) for every args in parts, concurrently where there are several and this thread is
    not itself running a part; every part finishes before the first error (if any) is raised."""
    if len(parts) <= 1 or getattr(_local, "inside", False):
        for args in parts:
            fn(*args)
        return
    futures = [_get_pool(len(parts) - 1).submit(_run_inside, fn, args) for args in parts[1:]]
    try:
        _run_inside(fn, parts[0])
    finally:
        errors = [f.exception() for f in futures]  # waits for every part
    for error in errors:
        if error is not None:
            raise error


def _forget_pool() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)

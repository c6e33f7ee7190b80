"""Keep freed host memory in the process instead of giving it back to the OS after every step:
an application's choice, which the funcgrad command line makes. Importing funcgrad changes nothing:
a library must not change the allocator of its user's process, and jitted programs do not need it
(their intermediates live in planned buffers, arena.py, and the convolutions' scratch in
cpu/workspace.py). Eager code that frees and allocates megabytes each step does benefit.

NumPy arrays live in glibc malloc's memory. glibc serves blocks above its mmap threshold with a
fresh mmap and unmaps them when freed, and hands the free top of its heap back once it passes the
trim threshold. An eager training loop frees the previous step's activations and allocates the
next step's, so every step faults its megabytes back in, page by page; on a virtual machine a
fault costs microseconds (the eager MNIST-size CNN step: 134 ms instead of 114). Raising both
thresholds keeps freed blocks in malloc's free lists for reuse, as jemalloc and tcmalloc (which
PyTorch's tuning guide recommends preloading) do by default; blocks above MMAP_THRESHOLD still
come and go with mmap, and a free heap top above TRIM_THRESHOLD is still returned.

keep_freed_memory() applies this on glibc only; with FUNCGRAD_MALLOC=system it leaves malloc as it
was (the memory a process holds then follows its live arrays more closely).
"""
from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD = 512 << 20

applied = False  # whether keep_freed_memory changed malloc's settings in this process


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds (see the module docstring); True if applied."""
    global applied
    if applied or os.environ.get("FUNCGRAD_MALLOC", "").lower() == "system":
        return applied
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return applied

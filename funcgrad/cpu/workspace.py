"""Scratch memory that CPU kernels reuse from call to call (cuDNN's workspace, oneDNN's
scratchpad): a convolution's window matrix of a chunk of images is megabytes that live only inside
one call, and asking malloc for them each time faults them in page by page once glibc has handed
the previous ones back to the OS. Each thread keeps one buffer per named use, grown as needed;
buffers above MAX_BYTES are not kept, so what stays held is bounded."""
from __future__ import annotations

import threading

import numpy as np

MAX_BYTES = 32 << 20

_local = threading.local()


def scratch(name: str, shape: tuple, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array: the calling thread's buffer for `name`, which the next
    call with this name overwrites (so a kernel takes one per use it holds at once)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes > MAX_BYTES:
        return np.empty(shape, dtype)
    buffers = _local.__dict__.setdefault("buffers", {})
    buffer = buffers.get(name)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = buffers[name] = np.empty(max(nbytes, 1), np.uint8)
    return buffer[:nbytes].view(dtype).reshape(shape)


def image_chunks(n: int, image_bytes: int, budget: int):
    """(start, stop) for chunks of n images whose scratch, image_bytes each, fits budget (at least
    one image a chunk)."""
    step = max(1, budget // max(1, image_bytes))
    for start in range(0, n, step):
        yield start, min(n, start + step)


def target(out: np.ndarray | None, dtype) -> np.ndarray | None:
    """out, where the kernel may write there itself: jit's planned buffer of its working dtype."""
    return out if out is not None and out.dtype == dtype else None


def deliver(result: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """result, or result written into out where the caller gave one (jit's planned buffers) and
    the kernel could not write there itself."""
    if out is None or result is out:
        return result
    out[...] = result
    return out

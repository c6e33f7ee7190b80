"""Counts the host buffers Arrays hold: every NumPy buffer of 1 KiB or more that an Array owns is
counted from the moment the Array wraps it until it is freed (a weak reference's callback), so
`fg.max_memory_allocated()` measures what a training step keeps alive: activations on the tape,
gradients, optimiser state. Below array.py, which calls track() for each buffer it wraps."""
from __future__ import annotations

import weakref

import numpy as np

TRACK_MIN_BYTES = 1024  # smaller buffers are too cheap to count and too many to follow


class _Stats:
    """live: the buffers counted now, by id, each with its weak reference, whose callback takes
    the buffer's bytes off when it is freed. A weakref (with the id and size on it) and one dict
    entry: a jitted step wraps a dozen buffers per call, and weakref.finalize costs three times as
    much."""
    __slots__ = ("allocated", "peak", "live")

    def __init__(self):
        self.allocated = 0
        self.peak = 0
        self.live: dict[int, _BufferRef] = {}  # id(buffer) -> its weak reference

    def reset_peak(self) -> None:
        self.peak = self.allocated


class _BufferRef(weakref.ref):
    __slots__ = ("key", "nbytes")


stats = _Stats()


def _release(ref: _BufferRef) -> None:
    del stats.live[ref.key]
    stats.allocated -= ref.nbytes


def track(value) -> None:
    """Count value's buffer (called when an Array wraps it)."""
    if type(value) is not np.ndarray or value.base is not None:
        return
    nbytes = value.nbytes
    key = id(value)
    if nbytes < TRACK_MIN_BYTES or key in stats.live:
        return
    ref = _BufferRef(value, _release)
    ref.key, ref.nbytes = key, nbytes
    stats.live[key] = ref
    stats.allocated += nbytes
    if stats.allocated > stats.peak:
        stats.peak = stats.allocated

"""Memory statistics per device: the bytes held by the buffers funcgrad hands out.

On the CPU every NumPy buffer of 1 KiB or more that an Array owns is counted from the moment it
is wrapped until it is freed (a weakref finaliser), so `max_memory_allocated` measures what a
training step really keeps alive: activations on the tape, gradients, optimiser state.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import array
from .array import Device, parse_device

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


_cpu = _Stats()


def _release(ref: _BufferRef) -> None:
    del _cpu.live[ref.key]
    _cpu.allocated -= ref.nbytes


def track(value) -> None:
    """Count value's buffer (called when an Array wraps it)."""
    if type(value) is not np.ndarray or value.base is not None:
        return
    nbytes = value.nbytes
    key = id(value)
    if nbytes < TRACK_MIN_BYTES or key in _cpu.live:
        return
    ref = _BufferRef(value, _release)
    ref.key, ref.nbytes = key, nbytes
    _cpu.live[key] = ref
    _cpu.allocated += nbytes
    if _cpu.allocated > _cpu.peak:
        _cpu.peak = _cpu.allocated


class _DeviceStats:
    """The CUDA caching allocator's counters, seen through the same three names."""

    @property
    def allocated(self) -> int:
        from .cuda.allocator import allocator
        return allocator.allocated

    @property
    def peak(self) -> int:
        from .cuda.allocator import allocator
        return allocator.peak

    def reset_peak(self) -> None:
        from .cuda.allocator import allocator
        allocator.reset_peak()


def _stats(device):
    dev = parse_device(device) if device is not None else Device("cpu")
    if dev.platform == "cuda":
        return _DeviceStats()
    return _cpu


def memory_allocated(device="cpu") -> int:
    """Bytes currently held by arrays on device ('cpu' or 'cuda': the caching allocator's blocks)."""
    return _stats(device).allocated


def max_memory_allocated(device="cpu") -> int:
    """The most bytes held at once since the start or the last reset_peak_memory_stats."""
    return _stats(device).peak


def reset_peak_memory_stats(device="cpu") -> None:
    _stats(device).reset_peak()


array._track = track

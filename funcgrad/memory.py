"""Memory statistics per device: the bytes held by the buffers funcgrad hands out (on the CPU,
counted by host_buffers.py; on a GPU, the caching allocator's)."""
from __future__ import annotations

from .array import Device, parse_device
from .host_buffers import stats as host_stats


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
    return host_stats


def memory_allocated(device="cpu") -> int:
    """Bytes currently held by arrays on device ('cpu' or 'cuda': the caching allocator's blocks)."""
    return _stats(device).allocated


def max_memory_allocated(device="cpu") -> int:
    """The most bytes held at once since the start or the last reset_peak_memory_stats."""
    return _stats(device).peak


def reset_peak_memory_stats(device="cpu") -> None:
    _stats(device).reset_peak()


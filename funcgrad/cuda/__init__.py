"""The CUDA backend: device arrays, a kernel for every primitive, a caching allocator.

    x = fg.device_put(x, "cuda")        # or x.to("cuda")
    fg.cuda.memory_allocated(), fg.cuda.max_memory_allocated(), fg.cuda.launch_count()
    print(fg.cuda.memory_summary())

Importing this package is free; numba.cuda loads when the backend is first used. Set
NUMBA_ENABLE_CUDASIM=1 before funcgrad is imported to run every kernel in numba's simulator.
"""
from __future__ import annotations


def _runtime():
    from . import runtime
    return runtime


def _allocator():
    from .allocator import allocator
    return allocator


def is_available() -> bool:
    """Whether an NVIDIA GPU (or numba's CUDA simulator) can run funcgrad's kernels here."""
    return _runtime().is_available()


def device_count() -> int:
    return _runtime().device_count()


def synchronize() -> None:
    """Wait until every kernel launched so far has finished (for timing)."""
    _runtime().synchronize()


def simulator() -> bool:
    """Whether kernels run in numba's CPU simulator (NUMBA_ENABLE_CUDASIM=1)."""
    return _runtime().SIMULATOR


def memory_allocated() -> int:
    """Bytes in device blocks held by live arrays (rounded to the allocator's size classes)."""
    return _allocator().allocated


def max_memory_allocated() -> int:
    """The most bytes held at once since the start or reset_peak_memory_stats()."""
    return _allocator().peak


def reset_peak_memory_stats() -> None:
    _allocator().reset_peak()


def memory_reserved() -> int:
    """Bytes the allocator holds from the driver: in use plus cached for reuse."""
    return _allocator().reserved


def empty_cache() -> None:
    """Give cached (unused) blocks back to the driver."""
    _allocator().empty_cache()


def memory_summary() -> str:
    """A readable table of the allocator's statistics."""
    return _allocator().summary("cuda:0")


def memory_stats() -> dict:
    a = _allocator()
    return {"allocated_bytes": a.allocated, "peak_allocated_bytes": a.peak, "reserved_bytes": a.reserved,
            "peak_reserved_bytes": a.peak_reserved, "requested_bytes": a.requested, **a.counts}


def transfer_counts() -> dict:
    """Copies funcgrad made between host and device: {'host_to_device': n, 'device_to_host': m}."""
    t = _runtime().transfers
    return {"host_to_device": t.host_to_device, "device_to_host": t.device_to_host}


def reset_transfer_counts() -> None:
    _runtime().transfers.reset()


def launch_count() -> int:
    """Kernels launched since the start or reset_launch_count(): each costs 5-50 us of dispatch."""
    return _runtime().launches.count


def reset_launch_count() -> None:
    _runtime().launches.count = 0


def from_cuda_array(obj):
    """An fg.Array viewing a CuPy array, PyTorch CUDA tensor or any object with
    ``__cuda_array_interface__`` or a CUDA ``__dlpack__``: no copy, the owner is kept alive."""
    from ..array import Array
    from .buffer import from_foreign
    return Array(from_foreign(obj))


__all__ = ["from_cuda_array", "is_available", "device_count", "synchronize", "simulator", "memory_allocated", "max_memory_allocated",
           "reset_peak_memory_stats", "memory_reserved", "empty_cache", "memory_summary", "memory_stats",
           "transfer_counts", "reset_transfer_counts", "launch_count", "reset_launch_count"]

"""A caching allocator for device memory, after the idea of PyTorch's.

Asking the driver for memory (cudaMalloc) synchronises the device and costs microseconds to
milliseconds; a training step frees and re-requests the same sizes every iteration. So a freed
block goes to a pool keyed by its size class and the next request of that class takes it back.
`empty_cache()` returns the pool to the driver. The statistics are kept here, in Python, so they
are the same in numba's simulator and on a GPU.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .runtime import SIMULATOR, cuda

SMALL_ROUND = 512            # requests up to 1 MiB round up to a multiple of 512 bytes
LARGE_ROUND = 1 << 20        # larger ones to a multiple of 1 MiB
SMALL_LIMIT = 1 << 20


def size_class(nbytes: int) -> int:
    step = SMALL_ROUND if nbytes <= SMALL_LIMIT else LARGE_ROUND
    return max(step, -(-nbytes // step) * step)


class Block:
    """One device allocation; when the last array using it goes away it returns to the pool.

    The allocator holds `raw` too, for as long as the block lives: a block dropped inside a
    reference cycle (arrays in an autodiff graph) is collected by the cycle collector, which runs
    the weakref callbacks of everything unreachable before any __del__. numba frees its device
    memory from such a callback, so a raw reachable only through the block would be freed and then
    put back in the pool by __del__, where the next malloc would hand out freed memory."""
    __slots__ = ("raw", "size", "requested", "allocator", "__weakref__")

    def __init__(self, raw, size: int, requested: int, allocator: "CachingAllocator"):
        self.raw = raw  # a flat uint8 numba device array of `size` bytes
        self.size = size
        self.requested = requested
        self.allocator = allocator

    def __del__(self):
        self.allocator._release(self)


class CachingAllocator:
    def __init__(self):
        self.pool: dict[int, list] = defaultdict(list)
        self.allocated = 0          # bytes in blocks handed out (size classes, as PyTorch reports)
        self.requested = 0          # bytes asked for
        self.peak = 0
        self.cached = 0             # bytes in the pool
        self.peak_reserved = 0
        self.counts = {"allocations": 0, "frees": 0, "cache_hits": 0, "device_mallocs": 0,
                       "device_frees": 0, "oom_retries": 0}
        self.in_use: dict[int, object] = {}  # id(block) -> its raw array (see Block)

    @property
    def reserved(self) -> int:
        return self.allocated + self.cached

    def malloc(self, nbytes: int) -> Block:
        size = size_class(nbytes)
        free_list = self.pool.get(size)
        if free_list:
            raw = free_list.pop()
            self.cached -= size
            self.counts["cache_hits"] += 1
        else:
            raw = self._device_malloc(size, nbytes)
        self.counts["allocations"] += 1
        self.allocated += size
        self.requested += nbytes
        self.peak = max(self.peak, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        block = Block(raw, size, nbytes, self)
        self.in_use[id(block)] = raw
        return block

    def _device_malloc(self, size: int, nbytes: int):
        try:
            raw = cuda.device_array(size, np.uint8)
        except Exception as first:  # out of memory: give the pool back and try once more
            if not self.cached:
                raise MemoryError(f"CUDA out of memory allocating {nbytes} bytes "
                                  f"({self.allocated} allocated, nothing cached): {first}") from None
            self.counts["oom_retries"] += 1
            self.empty_cache()
            try:
                raw = cuda.device_array(size, np.uint8)
            except Exception as second:
                raise MemoryError(f"CUDA out of memory allocating {nbytes} bytes "
                                  f"({self.allocated} allocated after emptying the cache): {second}") from None
        self.counts["device_mallocs"] += 1
        return raw

    def _release(self, block: Block) -> None:
        self.allocated -= block.size
        self.requested -= block.requested
        self.counts["frees"] += 1
        self.pool[block.size].append(self.in_use.pop(id(block)))
        self.cached += block.size
        self.peak_reserved = max(self.peak_reserved, self.reserved)

    def empty_cache(self) -> None:
        """Return every cached block to the driver (arrays in use keep theirs)."""
        for raws in self.pool.values():
            self.counts["device_frees"] += len(raws)
        self.pool.clear()
        self.cached = 0
        if not SIMULATOR:  # numba defers the frees until its queue fills: hand the memory back now
            cuda.current_context().memory_manager.deallocations.clear()

    def reset_peak(self) -> None:
        self.peak = self.allocated
        self.peak_reserved = self.reserved

    def summary(self, device: str) -> str:
        """A readable table of the statistics, like torch.cuda.memory_summary()."""
        def mib(n):
            for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
                if n >= scale:
                    return f"{n / scale:10.2f} {unit}"
            return f"{n:10d} B  "
        rows = [("allocated (in use)", mib(self.allocated)), ("allocated (peak)", mib(self.peak)),
                ("requested (in use)", mib(self.requested)),
                ("reserved (in use + cached)", mib(self.reserved)), ("reserved (peak)", mib(self.peak_reserved)),
                ("cached blocks", f"{sum(len(v) for v in self.pool.values()):10d}"),
                ("allocations", f"{self.counts['allocations']:10d}"),
                ("frees", f"{self.counts['frees']:10d}"),
                ("served from cache", f"{self.counts['cache_hits']:10d}"),
                ("device mallocs", f"{self.counts['device_mallocs']:10d}"),
                ("device frees (empty_cache)", f"{self.counts['device_frees']:10d}"),
                ("out-of-memory retries", f"{self.counts['oom_retries']:10d}")]
        width = max(len(name) for name, _ in rows)
        rule = "=" * (width + 17)
        lines = [rule, f"funcgrad CUDA memory summary, device {device}", rule]
        lines += [f"{name:<{width}}  {value}" for name, value in rows]
        return "\n".join(lines + [rule])


allocator = CachingAllocator()

"""Device buffers: a strided view (offset, shape, strides) over a block from the allocator.

Like a NumPy array over its memory, so reshape of contiguous data, transpose, broadcasting,
basic slicing (negative steps included) and sliding windows are views that cost no kernel; the
kernels read any strides. bfloat16 lives on the device as its 16 bits in a uint16 array (numba has
no bfloat16 array type); kernels widen it to float32 to compute.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .. import dtypes
from ..array import Device, ExternalValue
from .allocator import Block, allocator
from .runtime import synchronize, transfers

STORAGE = {np.dtype(dtypes.bfloat16): np.dtype(np.uint16)}


def storage_dtype(dtype: np.dtype) -> np.dtype:
    return STORAGE.get(np.dtype(dtype), np.dtype(dtype))


@lru_cache(maxsize=4096)
def contiguous_strides(shape: tuple) -> tuple:
    """A C-contiguous array's strides, in elements (remembered: every new device array asks)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


class DeviceValue(ExternalValue):
    """An array's data on a CUDA device. Strides and offset count elements, not bytes."""
    __slots__ = ("block", "data", "offset", "shape", "strides", "dtype")
    device = Device("cuda", 0)

    def __init__(self, block: Block, data, offset: int, shape: tuple, strides: tuple, dtype: np.dtype):
        self.block = block      # keeps the memory alive while any view of it lives
        self.data = data        # the block as a flat numba device array of the storage dtype
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def is_contiguous(self) -> bool:
        return all(s == c for s, c, d in zip(self.strides, contiguous_strides(self.shape), self.shape) if d != 1)

    def view(self, shape: tuple, strides: tuple, offset: int | None = None, dtype: np.dtype | None = None) -> "DeviceValue":
        data = self.data
        if dtype is not None and storage_dtype(dtype) != storage_dtype(self.dtype):
            data = self.block.raw.view(storage_dtype(dtype))
        return DeviceValue(self.block, data, self.offset if offset is None else offset,
                           tuple(shape), tuple(strides), np.dtype(dtype or self.dtype))

    def to_host(self) -> np.ndarray:
        return to_host(self)

    def synchronize(self) -> None:
        synchronize()

    def cuda_array_interface(self) -> dict:
        """The CUDA Array Interface (v3) of this view, for CuPy, PyTorch, numba: no copy."""
        if self.dtype == dtypes.bfloat16:
            raise TypeError("the CUDA array interface has no bfloat16 type; convert to float32 first")
        itemsize = self.dtype.itemsize
        base = self.block.raw.__cuda_array_interface__["data"][0] if self.size else 0
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (base + self.offset * itemsize if self.size else 0, False),
                "strides": None if self.is_contiguous() else tuple(s * itemsize for s in self.strides),
                "stream": 1}  # funcgrad launches on the legacy default stream

    def __repr__(self) -> str:
        return f"DeviceValue({self.dtype}{list(self.shape)} on {self.device})"


def empty(shape: tuple, dtype) -> DeviceValue:
    """Uninitialised contiguous device memory for an array of this shape and dtype."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    nbytes = math.prod(shape) * dtype.itemsize
    block = allocator.malloc(nbytes)
    return DeviceValue(block, block.raw.view(storage_dtype(dtype)), 0, shape, contiguous_strides(shape), dtype)


def from_host(host: np.ndarray) -> DeviceValue:
    """Copy a host array to the device (counted in runtime.transfers)."""
    host = np.asarray(host)
    host = np.ascontiguousarray(host).reshape(host.shape)  # ascontiguousarray alone makes 0-d arrays 1-d
    out = empty(host.shape, host.dtype)
    if host.size:
        out.data[:host.size].copy_to_device(host.reshape(-1).view(storage_dtype(host.dtype)))
    transfers.host_to_device += 1
    return out


class ForeignBlock:
    """Device memory another library owns; holding `owner` keeps it alive, nothing returns to the pool."""
    __slots__ = ("raw", "owner", "__weakref__")

    def __init__(self, raw, owner):
        self.raw, self.owner = raw, owner


def dlpack_stream() -> int:
    """DLPack's number for the stream numba launches on: 1 is CUDA's legacy default stream, 2 the
    per-thread default stream (NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM=1)."""
    from numba import config
    return 2 if config.CUDA_PER_THREAD_DEFAULT_STREAM else 1


def from_foreign(obj) -> DeviceValue:
    """A view of a CUDA array owned by another library (``__cuda_array_interface__`` or
    ``__dlpack__``), without a copy."""
    from .runtime import cuda
    if not hasattr(obj, "__cuda_array_interface__") and hasattr(obj, "__dlpack__"):
        from cuda.core.utils import StridedMemoryView  # numba-cuda's own DLPack importer
        # The stream funcgrad's kernels run on, so the producer orders its pending writes first.
        view = StridedMemoryView.from_dlpack(obj, stream_ptr=dlpack_stream())
        if not view.is_device_accessible:
            raise TypeError("from_cuda_array: this __dlpack__ object lives on the host; use fg.asarray")
        dtype = np.dtype(view.dtype)
        strides = None if view.strides is None else tuple(s * dtype.itemsize for s in view.strides)  # elements
        desc = {"shape": tuple(view.shape), "typestr": dtype.str, "data": (view.ptr, False),
                "strides": strides, "version": 3}
        dev = cuda.from_cuda_array_interface(desc, owner=obj, sync=False)
    elif hasattr(obj, "__cuda_array_interface__"):
        dev = cuda.as_cuda_array(obj)
    else:
        raise TypeError(f"from_cuda_array: {type(obj).__name__} has neither __cuda_array_interface__ nor __dlpack__")
    dtype = np.dtype(dev.dtype)
    itemsize = dtype.itemsize
    if any(s % itemsize for s in dev.strides):
        raise ValueError(f"from_cuda_array: strides {dev.strides} are not whole elements of {dtype}")
    strides = tuple(s // itemsize for s in dev.strides)
    if not all(s >= 0 for s in strides):
        raise ValueError("from_cuda_array: negative strides are not supported; make the array contiguous first")
    span = 1 + sum((d - 1) * s for d, s in zip(dev.shape, strides)) if dev.size else 0
    flat = cuda.from_cuda_array_interface({"shape": (span,), "typestr": dtype.str, "version": 3, "strides": None,
                                           "data": (dev.__cuda_array_interface__["data"][0], False)},
                                          owner=obj, sync=False)
    return DeviceValue(ForeignBlock(flat, obj), flat, 0, tuple(dev.shape), strides, dtype)


def to_host(value: DeviceValue) -> np.ndarray:
    """Copy device data back to a new host array (counted in runtime.transfers). A strided view
    copies the span of storage it covers, whose elements NumPy's strides then pick on the host:
    one transfer and no kernel, so this module needs none."""
    storage = storage_dtype(value.dtype)
    out = np.empty(value.shape, storage)
    if value.size:
        low = value.offset + sum((d - 1) * s for d, s in zip(value.shape, value.strides) if s < 0)
        high = value.offset + sum((d - 1) * s for d, s in zip(value.shape, value.strides) if s > 0) + 1
        span = np.empty(high - low, storage)
        value.data[low:high].copy_to_host(span)
        itemsize = storage.itemsize
        out[...] = np.lib.stride_tricks.as_strided(span[value.offset - low:], value.shape,
                                                   tuple(s * itemsize for s in value.strides), writeable=False)
    transfers.device_to_host += 1
    return out.view(value.dtype)

"""Explicit placement of arrays on devices. Nothing moves between devices behind your back:
a primitive given arrays on two devices raises an error naming both."""
from __future__ import annotations

from typing import Any

import numpy as np

from .array import CPU, Array, Device, ExternalValue, host, parse_device, to_numpy
from .trace import Tracer
from .tree import tree_map


def _cuda_backend():
    """The CUDA backend's runtime and buffers, loaded on first use."""
    from .cuda import buffer, runtime
    return runtime, buffer


def devices() -> list[Device]:
    """The devices arrays can live on in this process ('cpu', then any CUDA devices)."""
    from . import cuda
    return [CPU] + [Device("cuda", i) for i in range(cuda.device_count())]


def full(shape: tuple, value, dtype, device: Device = CPU) -> Array:
    """A constant array made where it is needed: on a GPU by a fill kernel, with no host copy."""
    if device.platform == "cpu":
        return Array(np.full(shape, value, dtype))
    _cuda_backend()
    from .cuda.kernels.copy import fill
    return Array(fill(tuple(shape), np.dtype(dtype), value))


def arange(n: int, dtype, device: Device = CPU) -> Array:
    """0, 1, ..., n-1 made on device (index arrays for gathers stay off the host-device link)."""
    if device.platform == "cpu":
        return Array(np.arange(n, dtype=dtype))
    _cuda_backend()
    from .cuda.kernels.copy import arange as device_arange
    return Array(device_arange(n, np.dtype(dtype)))


def device_of(x) -> Device:
    value = x._value if type(x) is Array else None
    return value.device if isinstance(value, ExternalValue) else CPU


def device_put(tree: Any, device: "str | Device" = "cpu") -> Any:
    """Every array leaf of tree, on `device` ('cpu', 'cuda' or 'cuda:N'): a copy when it is
    elsewhere, the same array when it is already there."""
    target = parse_device(device)
    if target.platform == "cuda":
        runtime, buffer = _cuda_backend()
        runtime.require(target.index)
        if target.index != 0:
            raise RuntimeError(f"{target}: funcgrad's CUDA backend drives one GPU per process (cuda:0); "
                               f"choose the GPU with CUDA_VISIBLE_DEVICES and run a process per GPU")

    def put(x):
        if isinstance(x, Tracer):
            if x.device == target:
                return x
            raise TypeError(f"device_put of a value being transformed ({type(x).__name__}) to {target}: "
                            f"move arrays to the device before calling grad/jit/vmap on them")
        if type(x) is Array and device_of(x) == target:
            return x
        # device data copies back here; host data is copied so that writing to it cannot change the Array
        data = host(x._value) if type(x) is Array else to_numpy(x, copy=target.platform == "cpu")
        return Array(data) if target.platform == "cpu" else Array(buffer.from_host(data))
    return tree_map(put, tree)


def device_get(tree: Any) -> Any:
    """Every array leaf of tree as a NumPy array on the host (jax.device_get); other leaves as they are."""
    return tree_map(lambda x: host(x._value) if type(x) is Array else x, tree)


def local_devices() -> list[Device]:
    """The devices of the default backend (jax.local_devices): the GPUs where there are, else the CPU."""
    return devices()[1:] or [CPU]


def device_count() -> int:
    """How many devices the default backend has in this process (jax.device_count)."""
    return len(local_devices())


def default_backend() -> str:
    """'gpu' where a CUDA device is present, else 'cpu' (jax.default_backend). funcgrad still makes
    arrays on the CPU until they are moved (device_put)."""
    return "gpu" if len(devices()) > 1 else "cpu"

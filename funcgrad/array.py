"""Array: an immutable value on a device. Its operators and NumPy-style methods (x + y, x @ w, x.sum())
are funcgrad.numpy's functions, which sit above this module: funcgrad/_methods.py attaches them
when funcgrad is imported, as JAX attaches jax.numpy's to its arrays."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import dtypes
from .host_buffers import track


class Device:
    """A place where array data lives: `cpu` or `cuda:N`. Compares equal to its name."""
    __slots__ = ("platform", "index")

    def __init__(self, platform: str, index: int = 0):
        self.platform = platform
        self.index = index

    def __str__(self) -> str:
        return self.platform if self.platform == "cpu" else f"{self.platform}:{self.index}"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = parse_device(other)
        return isinstance(other, Device) and (self.platform, self.index) == (other.platform, other.index)

    def __hash__(self) -> int:
        return hash((self.platform, self.index))


CPU = Device("cpu")


def parse_device(spec: "str | Device") -> Device:
    if isinstance(spec, Device):
        return spec
    name, _, index = str(spec).partition(":")
    if name not in ("cpu", "cuda") or (index and not index.isdigit()):
        raise ValueError(f"unknown device {spec!r}; expected 'cpu', 'cuda' or 'cuda:N'")
    return Device(name, int(index or 0))


class Shaped:
    """What anything with a shape derives from it."""
    __slots__ = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


class ExternalValue(Shaped):
    """Base of array data that lives off the host (funcgrad.cuda's device buffers). Such a value
    has shape, dtype and device, and becomes NumPy only through to_host(), an explicit copy:
    np.asarray on it raises, so no code path copies data back behind the user's back."""
    __slots__ = ()
    device: Device

    def to_host(self) -> np.ndarray:
        raise TypeError(f"{type(self).__name__} must define to_host()")

    def synchronize(self) -> None:
        """Wait until the work producing this value has finished (for timing)."""

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"array data on {self.device} must be copied to the host explicitly "
                        f"(x.numpy(), fg.device_put(x, 'cpu') or x.to('cpu'))")


def host(value):
    """The value as host data: a copy back for device data (an Array's explicit conversions)."""
    return value.to_host() if isinstance(value, ExternalValue) else value


class ArrayBase(Shaped):
    """What Array and the tracers share: shape queries here, operators from funcgrad.numpy."""
    __slots__ = ()
    __array_priority__ = 100  # NumPy defers to our operators: np_array * fg_array -> fg_array

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = None  # arrays are values compared elementwise, like NumPy's


class _Deleted:
    """What a deleted Array holds instead of data: every use raises, saying why it was deleted."""
    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __getattr__(self, name):
        raise RuntimeError(f"this array was deleted: {self.reason}")

    def __array__(self, *args, **kwargs):
        self.__getattr__("data")


class Array(ArrayBase):
    """An immutable n-dimensional array. Build one with fg.array / fg.asarray, not directly."""
    __slots__ = ("_value",)

    def __init__(self, value: Any):
        self._value = value
        if type(value) is np.ndarray and value.nbytes >= 1024:  # memory statistics (host_buffers.py)
            track(value)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def device(self) -> Device:
        value = self._value
        return value.device if isinstance(value, ExternalValue) else CPU

    def delete(self, reason: str = "Array.delete() was called") -> None:
        """Release this array's data now (jax.Array.delete); any later use raises. jit deletes the
        arrays donated to it, whose buffers it may have reused."""
        self._value = _Deleted(reason)

    def is_deleted(self) -> bool:
        return type(self._value) is _Deleted

    def numpy(self) -> np.ndarray:
        """A read-only NumPy view of the data (copy it to modify)."""
        out = np.asarray(host(self._value)).view()
        out.flags.writeable = False
        return out

    @property
    def __cuda_array_interface__(self) -> dict:
        """Device arrays hand their memory to CuPy / PyTorch / numba without a copy."""
        value = self._value
        if not isinstance(value, ExternalValue):
            raise AttributeError("an array on the cpu has no __cuda_array_interface__")
        return value.cuda_array_interface()

    def __array__(self, dtype=None, copy=None):
        out = self.numpy()
        if dtype is not None and out.dtype != dtype:
            return out.astype(dtype)
        return out.copy() if copy else out

    def item(self, *index):
        """The element as a Python number: of a one-element array, or at a flat or per-axis index."""
        return np.asarray(host(self._value)).item(*index)

    def tolist(self):
        return np.asarray(host(self._value)).tolist()

    def __bool__(self) -> bool:
        return bool(host(self._value))

    def __float__(self) -> float:
        return float(host(self._value))

    def __int__(self) -> int:
        return int(host(self._value))

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return int(host(self._value))

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(host(self._value)), separator=", ", prefix="Array(")
        where = "" if self.device == CPU else f", device={self.device}"
        return f"Array({body}, dtype={self.dtype}{where})"

    def __str__(self) -> str:
        return str(np.asarray(host(self._value)))

    def __format__(self, spec: str) -> str:
        if self.shape == ():
            return format(self.item(), spec)
        return format(str(self), spec)

    def __reduce__(self):  # pickles (checkpoints, other processes) carry host data
        return (Array, (np.asarray(host(self._value)),))


def to_numpy(x: Any, dtype: np.dtype | None = None, copy: bool = False) -> np.ndarray:
    """Host data (list, scalar, ndarray) as an ndarray of a supported dtype.

    Python floats become float32, complex numbers complex64 and ints int64 (PyTorch's defaults);
    NumPy arrays keep their dtype unless one is asked for. copy=True: the result never shares
    memory with x (an array made here from a list or scalar is not copied again).
    """
    fresh = False
    if isinstance(x, Array):
        value = np.asarray(host(x._value))
    elif isinstance(x, (np.ndarray, np.generic)):
        value = np.asarray(x)
    else:
        try:
            value = np.asarray(x)
            fresh = value.base is None and value is not x  # not a view of x's buffer (a tensor, a memoryview)
        except (ValueError, TypeError) as e:
            raise TypeError(f"cannot make an array from {type(x).__name__}: {e}") from None
        if dtype is None and value.dtype == np.float64:
            value = value.astype(dtypes.default_float)
        elif dtype is None and value.dtype == np.complex128:
            value = value.astype(dtypes.default_complex)
        elif dtype is None and value.dtype.kind == "i":
            value = value.astype(dtypes.default_int)
    if dtype is not None:
        dtype = dtypes.canonicalize(dtype)
        if value.dtype != dtype:
            return value.astype(dtype)
    elif value.dtype.kind in "OUSVmM" and value.dtype != dtypes.bfloat16:
        raise TypeError(f"funcgrad arrays hold numbers and booleans; a {type(x).__name__} "
                        f"of {value.dtype.name} cannot become one")
    else:
        dtypes.canonicalize(value.dtype)
    return value.copy() if copy and not fresh else value

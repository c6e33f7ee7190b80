"""Copies: a strided view made contiguous, a constant fill, a copy into a strided destination."""
from __future__ import annotations

import numpy as np

from ..buffer import DeviceValue
from . import elementwise


def contiguous(value: DeviceValue) -> DeviceValue:
    """value itself when its elements are already laid out row-major, else a contiguous copy."""
    if value.is_contiguous():
        return value
    return elementwise.apply(elementwise.copy, [value], value.dtype)


def compact(value: DeviceValue) -> DeviceValue:
    """Contiguous and starting at element 0 of its storage, for kernels that index it flat."""
    if value.is_contiguous() and value.offset == 0:
        return value
    return elementwise.apply(elementwise.copy, [value], value.dtype)


def fill(shape: tuple, dtype: np.dtype, value) -> DeviceValue:
    return elementwise.apply(elementwise.copy, [np.asarray(value).item()], np.dtype(dtype), shape=tuple(shape))


def copy_into(dest: DeviceValue, src) -> None:
    """dest[...] = src (broadcast), for dest a view into a larger array."""
    elementwise.apply(elementwise.copy, [src], dest.dtype, out=dest, shape=dest.shape)


def arange(n: int, dtype: np.dtype) -> DeviceValue:
    """0, 1, ..., n-1, computed on the device."""
    return elementwise.apply(elementwise.iota, [], np.dtype(dtype), shape=(int(n),))

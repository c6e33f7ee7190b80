"""The Array API standard's names that NumPy spells otherwise or lacks: the inverse trigonometric
and power aliases, isdtype, unstack, unique_*, from_dlpack and __array_namespace_info__."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import dtypes
from ..array import CPU, Array, parse_device
from . import _base as fnp
from ._scalar_types import ScalarType
from ._statistics import unique

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "pow", "bitwise_left_shift", "bitwise_right_shift",
    "isdtype", "unstack", "unique_all", "unique_counts", "unique_inverse", "unique_values", "from_dlpack",
]
__array_api_version__ = "2024.12"
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")  # what __array_namespace__ may be asked for

acos, acosh, asin, asinh = fnp.arccos, fnp.arccosh, fnp.arcsin, fnp.arcsinh
atan, atan2, atanh = fnp.arctan, fnp.arctan2, fnp.arctanh
pow = fnp.power  # noqa: A001
bitwise_left_shift, bitwise_right_shift = fnp.left_shift, fnp.right_shift

_KINDS = {
    "bool": lambda d: d == dtypes.bool_,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": dtypes.is_float,
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iuc" or dtypes.is_float(d),
}


def isdtype(dtype, kind) -> bool:
    """Whether dtype is of kind: a dtype, a kind name ('real floating', 'integral', ...) or a
    tuple of either."""
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    dtype = dtypes.canonicalize(dtype)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; one of {sorted(_KINDS)}")
        return bool(_KINDS[kind](dtype))
    return dtype == dtypes.canonicalize(kind)


def unstack(x, /, *, axis: int = 0) -> tuple:
    """The slices of x along axis, as a tuple (the inverse of stack)."""
    x = fnp.asarray(x)
    axis = fnp._normalize_axis(axis, x.ndim)
    return tuple(fnp.take(x, i, axis=axis) for i in range(x.shape[axis]))


class UniqueAll(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCounts(NamedTuple):
    values: Array
    counts: Array


class UniqueInverse(NamedTuple):
    values: Array
    inverse_indices: Array


def unique_all(x, /) -> UniqueAll:
    """Sorted unique values, first indices, the inverse (x's shape) and counts; NaNs are distinct."""
    x = fnp.asarray(x)
    values, indices, inverse, counts = unique(x, return_index=True, return_inverse=True, return_counts=True,
                                              equal_nan=False)
    return UniqueAll(values, indices, fnp.reshape(inverse, x.shape), counts)


def unique_counts(x, /) -> UniqueCounts:
    values, counts = unique(x, return_counts=True, equal_nan=False)
    return UniqueCounts(values, counts)


def unique_inverse(x, /) -> UniqueInverse:
    x = fnp.asarray(x)
    values, inverse = unique(x, return_inverse=True, equal_nan=False)
    return UniqueInverse(values, fnp.reshape(inverse, x.shape))


def unique_values(x, /) -> Array:
    return unique(x, equal_nan=False)


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Array:
    """An Array of another library's array through DLPack: host memory is shared unless copy=True;
    GPU memory through fg.cuda.from_cuda_array (shared)."""
    if hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] != 1:  # not kDLCPU
        from ..cuda import from_cuda_array
        out = from_cuda_array(x)
        return out if device is None else fnp._placed(out, device)
    host = np.from_dlpack(x)
    return fnp._placed(Array(host.copy() if copy else host), device)


class Info:
    """What funcgrad.numpy.__array_namespace_info__() reports: devices, dtypes, capabilities."""

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return CPU

    def devices(self) -> list:
        from ..cuda import is_available
        return [CPU] + ([parse_device("cuda:0")] if is_available() else [])

    def default_dtypes(self, *, device=None) -> dict:
        return {"real floating": ScalarType(dtypes.default_float),
                "complex floating": ScalarType(dtypes.default_complex),
                "integral": ScalarType(dtypes.default_int), "indexing": ScalarType(dtypes.int64)}

    def dtypes(self, *, device=None, kind=None) -> dict:
        every = {d.name: ScalarType(d) for d in sorted(dtypes._supported, key=str)
                 if d not in dtypes.low_precision}  # float16 and bfloat16 are not the standard's
        return {name: d for name, d in every.items() if kind is None or isdtype(d, kind)}


def __array_namespace_info__() -> Info:
    return Info()


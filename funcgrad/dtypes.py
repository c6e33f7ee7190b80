"""dtypes (NumPy dtype objects, bfloat16 from ml_dtypes) and PyTorch-style type promotion."""
from __future__ import annotations

from functools import lru_cache

import ml_dtypes
import numpy as np

float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
int16 = np.dtype(np.int16)
uint16 = np.dtype(np.uint16)
int32 = np.dtype(np.int32)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)
float0 = np.dtype([("float0", np.void, 0)])  # JAX's: the gradient of an integer input (allow_int), no data

default_float = float32
default_complex = complex64
default_int = int64
low_precision = frozenset({float16, bfloat16})
float_dtypes = frozenset({float16, bfloat16, float32, float64})
complex_dtypes = frozenset({complex64, complex128})
inexact_dtypes = float_dtypes | complex_dtypes  # what derivatives flow through
_supported = frozenset({float16, bfloat16, float32, float64, complex64, complex128, int8, uint8, int16, uint16,
                        int32, uint32, int64, uint64, bool_})


def canonicalize(dtype) -> np.dtype:
    """Accept fg.float32, np.float32, 'float32', 'bfloat16', float, int, bool."""
    if dtype is float:
        return default_float
    if dtype is int:
        return default_int
    if dtype is bool:
        return bool_
    if dtype is complex:
        return default_complex
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a dtype funcgrad knows") from None
    if d not in _supported:
        raise TypeError(f"dtype {d} is not supported; use one of "
                        f"{sorted(str(s) for s in _supported)}")
    return d


def is_float(dtype: np.dtype) -> bool:
    """Real floating point (the standard's 'real floating')."""
    return dtype in float_dtypes


def is_complex(dtype: np.dtype) -> bool:
    return dtype in complex_dtypes


def is_inexact(dtype: np.dtype) -> bool:
    """Real or complex floating point: the dtypes gradients flow through."""
    return dtype in inexact_dtypes


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a complex dtype's parts (complex64 -> float32); other dtypes are their own."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype whose parts are `dtype` (float64 -> complex128; narrower floats and
    integers -> complex64, as PyTorch's default)."""
    return complex128 if dtype in (float64, complex128) else complex64


def _category(dtype: np.dtype) -> int:
    if dtype == bool_:
        return 0
    if is_complex(dtype):
        return 3
    return 2 if is_float(dtype) else 1


@lru_cache(maxsize=None)
def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's rule: a higher category (bool < int < float) wins outright; within one, widen.

    So int64 with float32 gives float32 (NumPy would give float64), float16 with bfloat16 gives
    float32, and complex with a float has the wider of the two parts (complex64 with float64 gives
    complex128, as in PyTorch).
    """
    if a == b:
        return a
    ca, cb = _category(a), _category(b)
    if max(ca, cb) == 3 and min(ca, cb) == 2:
        return complex_dtype(promote(real_dtype(a), real_dtype(b)))
    if ca != cb:
        return a if ca > cb else b
    if {a, b} == {float16, bfloat16}:
        return float32
    return np.promote_types(a, b)


def scalar_dtype(x) -> np.dtype:
    """The dtype a Python scalar takes when it stands alone."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int
    return default_complex if isinstance(x, complex) else default_float


def scalar_category(x) -> int:
    return 0 if isinstance(x, bool) else 1 if isinstance(x, int) else 3 if isinstance(x, complex) else 2

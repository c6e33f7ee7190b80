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
int32 = np.dtype(np.int32)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)

default_float = float32
default_int = int64
low_precision = frozenset({float16, bfloat16})
float_dtypes = frozenset({float16, bfloat16, float32, float64})
_supported = frozenset({float16, bfloat16, float32, float64, int8, uint8, int16, int32, uint32, int64, uint64,
                        bool_})


def canonicalize(dtype) -> np.dtype:
    """Accept fg.float32, np.float32, 'float32', 'bfloat16', float, int, bool."""
    if dtype is float:
        return default_float
    if dtype is int:
        return default_int
    if dtype is bool:
        return bool_
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a dtype funcgrad knows") from None
    if d not in _supported:
        raise TypeError(f"dtype {d} is not supported; use one of "
                        f"{sorted(str(s) for s in _supported)}")
    return d


def is_float(dtype: np.dtype) -> bool:
    return dtype in float_dtypes


def _category(dtype: np.dtype) -> int:
    if dtype == bool_:
        return 0
    return 2 if is_float(dtype) else 1


@lru_cache(maxsize=None)
def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's rule: a higher category (bool < int < float) wins outright; within one, widen.

    So int64 with float32 gives float32 (NumPy would give float64), and float16 with bfloat16
    gives float32.
    """
    if a == b:
        return a
    ca, cb = _category(a), _category(b)
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
    return default_float


def scalar_category(x) -> int:
    return 0 if isinstance(x, bool) else 1 if isinstance(x, int) else 2

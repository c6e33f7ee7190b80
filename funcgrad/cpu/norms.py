"""Layer and RMS normalisation over the last axis in one numba pass per row (cpu/norm_kernels.py),
forward and backward: the composition of means, a square root and broadcasts took eight NumPy
calls and as many temporaries each way (the dim-128 GPT step spent ~9 ms of 34 in them)."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from .workspace import deliver, target


def _kernels():
    from . import norm_kernels  # numba loads on first use
    return norm_kernels


def _rows(x) -> tuple[np.ndarray, np.dtype]:
    """x as contiguous float32/float64 rows of its last axis, and the dtype to return."""
    x = np.asarray(x)
    work = np.dtype(np.float32) if x.dtype in dtypes.low_precision else x.dtype
    return np.ascontiguousarray(x, work).reshape(-1, x.shape[-1]), x.dtype


def normalize(x, eps: float, center: bool, out: np.ndarray | None = None) -> np.ndarray:
    """(Into out, a C-contiguous array of x's shape and dtype, where one is given: jit's planned
    buffer, written in place when it has the working dtype.)"""
    rows, dtype = _rows(x)
    result = _into(out, np.shape(x), rows.dtype)
    if rows.size:
        _kernels().normalize(rows, result.reshape(rows.shape), eps, center)
    return deliver(result.astype(dtype, copy=False), out)


def normalize_grad(x, g, eps: float, center: bool, out: np.ndarray | None = None) -> np.ndarray:
    rows, dtype = _rows(x)
    g_rows = np.ascontiguousarray(g, rows.dtype).reshape(rows.shape)  # the shape rule: g has x's shape
    result = _into(out, np.shape(x), rows.dtype)
    if rows.size:
        _kernels().normalize_grad(rows, g_rows, result.reshape(rows.shape), eps, center)
    return deliver(result.astype(np.result_type(dtype, np.asarray(g).dtype), copy=False), out)


def _into(out: np.ndarray | None, shape: tuple, work: np.dtype) -> np.ndarray:
    """Where the kernel writes: out where it has the working dtype, else a new array."""
    into = target(out, work)
    return np.empty(shape, work) if into is None else into

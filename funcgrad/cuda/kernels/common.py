"""What the kernel modules share: compiling generated source, widening and rounding half types in
generated code, broadcasting strided operands and collapsing their dimensions, and the numba
types of kernel arguments (for compiling to PTX without a GPU)."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...cpu.fusion import compile_kernel
from ..buffer import DeviceValue, storage_dtype

HALF = (dtypes.float16, dtypes.bfloat16)

HEADER = """import math
import numpy as np
from funcgrad.cuda.runtime import cuda
from funcgrad.cuda import scalar as S
"""


def compile_source(body: str):
    """The kernel named `kernel` in this generated source (numba caches it on disk on a GPU)."""
    return compile_kernel(HEADER + body)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """Half types compute in float32 (float32 accumulation, as PyTorch)."""
    return np.dtype(np.float32) if dtype in HALF else np.dtype(dtype)


def cast(dtype: np.dtype) -> str:
    return "np.bool_" if dtype == dtypes.bool_ else f"np.{np.dtype(dtype).name}"


def widen(expr: str, dtype: np.dtype) -> str:
    """Source reading a stored element of dtype as its compute type."""
    if dtype == dtypes.bfloat16:
        return f"S.bf16_to_f32({expr})"
    if dtype == dtypes.float16:
        return f"np.float32({expr})"
    return expr


def narrow(expr: str, dtype: np.dtype) -> str:
    """Source rounding a computed value to dtype's storage."""
    if dtype == dtypes.bfloat16:
        return f"S.f32_to_bf16(np.float32({expr}))"
    if dtype.kind in "iu" and dtype.itemsize < 8:
        # Through int64, so a float truncates and then wraps as on the CPU (NumPy, PyTorch):
        # a GPU's direct conversion saturates (-1.5 -> uint8 gave 0, not 255).
        return f"{cast(dtype)}(np.int64({expr}))"
    return f"{cast(dtype)}({expr})"


def round_to(expr: str, dtype: np.dtype | None) -> str:
    """expr (float32) rounded to dtype and widened back, as autocast rounds its operands."""
    if dtype == dtypes.bfloat16:
        return f"S.bf16_to_f32(S.f32_to_bf16({expr}))"
    if dtype == dtypes.float16:
        return f"np.float32(np.float16({expr}))"
    return expr


def _float_text(v: float) -> str:
    return repr(v) if np.isfinite(v) else ("math.nan" if v != v else f"{'-' if v < 0 else ''}math.inf")


def literal(value, dtype: np.dtype) -> str:
    v = np.asarray(value).astype(dtype).item()
    if isinstance(v, complex):
        text = f"complex({_float_text(v.real)}, {_float_text(v.imag)})"
    else:
        text = _float_text(v) if isinstance(v, float) else repr(v)
    return f"{cast(dtype)}({text})"


def broadcast_strides(value: DeviceValue, shape: tuple) -> tuple:
    """value's strides seen at the broadcast shape (0 where it is stretched or absent)."""
    if value.shape == shape:
        return value.strides
    lead = len(shape) - value.ndim
    return (0,) * lead + tuple(0 if d == 1 and n != 1 else s
                              for s, d, n in zip(value.strides, value.shape, shape[lead:]))


def collapse(shape: tuple, *strides_list: tuple) -> tuple[tuple, list[tuple]]:
    """Merge dimensions that every operand walks as one (TensorIterator's trick), drop size-1
    dimensions: contiguous operands become one flat loop. Always at least one dimension."""
    dims = [(n, [s[d] for s in strides_list]) for d, n in enumerate(shape) if n != 1]
    merged: list = []
    for n, st in dims:
        if merged and all(prev == cur * n for prev, cur in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * n, st)
        else:
            merged.append((n, st))
    if not merged:
        merged = [(1, [0] * len(strides_list))]
    return tuple(n for n, _ in merged), [tuple(st[k] for _, st in merged) for k in range(len(strides_list))]


# ---- numba argument types, for compiling kernels to PTX ahead of any GPU --------------------------
def array_type(dtype):
    from numba import types
    from numba.np.numpy_support import from_dtype
    return types.Array(from_dtype(storage_dtype(dtype)), 1, "C")


def tuple_type(n: int):
    from numba import types
    return types.UniTuple(types.int64, n)


def scalar_type(dtype):
    from numba.np.numpy_support import from_dtype
    return from_dtype(np.dtype(dtype))


INDEX = np.dtype(np.int64)

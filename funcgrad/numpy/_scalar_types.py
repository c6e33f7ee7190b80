"""The dtype names of funcgrad.numpy (fnp.float32, fnp.int64, ...): dtypes that also cast when
called, as jax.numpy's do."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..array import ArrayBase
from ._creation import asarray, astype

__all__ = ["bfloat16", "bool_", "complex64", "complex128", "float16", "float32", "float64", "int8", "int16", "int32",
           "int64", "uint8", "uint16", "uint32", "uint64", "float_", "int_", "uint", "double", "single", "cdouble",
           "csingle", "complex_"]


class ScalarType:
    """A dtype wherever one is taken (np.dtype(fnp.float32), fnp.zeros(3, fnp.float32),
    x.dtype == fnp.float32, a dict key beside np.dtype('float32')), and a cast when called:
    fnp.int64(x) is x as an int64 Array (as jnp.int64(x); NumPy's np.int64(x) makes a scalar)."""
    __slots__ = ("dtype",)

    def __init__(self, dtype: np.dtype):
        self.dtype = np.dtype(dtype)

    def __call__(self, x):
        return astype(x, self.dtype) if isinstance(x, ArrayBase) else asarray(x, self.dtype)

    def __eq__(self, other):
        if other is None:  # np.dtype(None) is float64, so the dtype itself would say float64 == None
            return False
        return self.dtype == (other.dtype if isinstance(other, ScalarType) else other)

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __getattr__(self, name: str):  # name, kind, itemsize, ...: the dtype's
        return getattr(self.dtype, name)

    def __reduce__(self):
        return ScalarType, (self.dtype,)

    def __repr__(self) -> str:
        return f"funcgrad.numpy.{self.dtype.name}"

    def __str__(self) -> str:
        return self.dtype.name


bfloat16, bool_, float16, float32, float64 = (ScalarType(d) for d in (
    dtypes.bfloat16, dtypes.bool_, dtypes.float16, dtypes.float32, dtypes.float64))
int8, int16, int32, int64 = (ScalarType(d) for d in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64))
uint8, uint16, uint32, uint64 = (ScalarType(d) for d in (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64))
complex64, complex128 = ScalarType(dtypes.complex64), ScalarType(dtypes.complex128)
# NumPy's C-style aliases, as jax.numpy has them (the widths NumPy gives them on 64-bit machines)
float_ = double = float64
single = float32
int_ = int64
uint = uint64
complex_ = cdouble = complex128
csingle = complex64

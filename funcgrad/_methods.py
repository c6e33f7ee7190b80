"""Operators and methods of Array and of every tracer, defined once on their common base."""
from __future__ import annotations

from . import numpy as fnp
from ._indexing import at, getitem
from .array import ArrayBase
from .devices import device_put
from .numpy._array_api import API_VERSIONS


def _plain(fn):
    """The function under a ufunc object (fnp.add, ...): operators call it directly, one frame less."""
    return fn._func if isinstance(fn, fnp.ufunc) else fn


def _swap(fn):
    fn = _plain(fn)
    return lambda self, other: fn(other, self)


def _reshape(self, *shape):
    return fnp.reshape(self, shape[0] if len(shape) == 1 else shape)


def _transpose(self, *axes):
    return fnp.transpose(self, (axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes) or None)


def _immutable(self, index, value):
    raise TypeError("funcgrad arrays are immutable; use x = x.at[index].set(value) "
                    "(or .add(value)) to get an updated copy")


def _numpy_method(fn):
    """A method NumPy's functions call with out=None (np.sum(x) is x.sum(axis=None, dtype=None,
    out=None)): accepted, and any other out refused, since funcgrad arrays are immutable."""
    def method(self, *args, out=None, **kwargs):
        if out is not None:
            raise TypeError(f"{fn.__name__}: funcgrad arrays are immutable, so out= cannot be written; "
                            f"use the returned array")
        return fn(self, *args, **kwargs)
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """DLPack export of host data (NumPy's); device arrays go by __cuda_array_interface__. A
    consumer of DLPack before 1.0 cannot be told the data is read-only, so it gets a copy (copy=None
    allows one; copy=False then raises)."""
    if self.device.platform != "cpu":
        raise BufferError(f"__dlpack__ of an array on {self.device}: use __cuda_array_interface__ "
                          f"(CuPy, PyTorch and numba read it without a copy) or move it with .to('cpu')")
    legacy = max_version is None or tuple(max_version) < (1, 0)
    if legacy and copy is False:
        raise BufferError("__dlpack__(copy=False): funcgrad arrays are read-only and DLPack before 1.0 cannot "
                          "mark an export read-only; pass max_version=(1, 0) or allow a copy")
    kwargs = {} if max_version is None else {"max_version": max_version}
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    return self.numpy().__dlpack__(copy=True if legacy else copy, **kwargs)


def _array_namespace(self, /, *, api_version=None):
    """funcgrad.numpy: the Array API namespace of every funcgrad array."""
    if api_version is not None and api_version not in API_VERSIONS:
        raise ValueError(f"funcgrad.numpy implements the Array API up to {API_VERSIONS[-1]}, not {api_version!r}")
    return fnp


def _block_until_ready(self):
    """JAX's wait for the device; returns the array."""
    value = getattr(self, "_value", None)
    if hasattr(value, "synchronize"):
        value.synchronize()
    return self


_METHODS = {
    "__add__": fnp.add, "__radd__": _swap(fnp.add),
    "__sub__": fnp.subtract, "__rsub__": _swap(fnp.subtract),
    "__mul__": fnp.multiply, "__rmul__": _swap(fnp.multiply),
    "__truediv__": fnp.divide, "__rtruediv__": _swap(fnp.divide),
    "__floordiv__": fnp.floor_divide, "__rfloordiv__": _swap(fnp.floor_divide),
    "__mod__": fnp.remainder, "__rmod__": _swap(fnp.remainder),
    "__divmod__": fnp.divmod, "__rdivmod__": _swap(fnp.divmod),
    "__pow__": fnp.power, "__rpow__": _swap(fnp.power),
    "__matmul__": fnp.matmul, "__rmatmul__": _swap(fnp.matmul),
    "__neg__": fnp.negative, "__pos__": lambda self: self, "__abs__": fnp.abs,
    "__invert__": lambda self: fnp.logical_not(self) if self.dtype == fnp.bool_ else fnp.invert(self),
    "__eq__": fnp.equal, "__ne__": fnp.not_equal, "__lt__": fnp.less, "__le__": fnp.less_equal,
    "__gt__": fnp.greater, "__ge__": fnp.greater_equal,
    "__and__": fnp.bitwise_and, "__rand__": _swap(fnp.bitwise_and),
    "__or__": fnp.bitwise_or, "__ror__": _swap(fnp.bitwise_or),
    "__xor__": fnp.bitwise_xor, "__rxor__": _swap(fnp.bitwise_xor),
    "__lshift__": fnp.left_shift, "__rlshift__": _swap(fnp.left_shift),
    "__rshift__": fnp.right_shift, "__rrshift__": _swap(fnp.right_shift),
    "__getitem__": getitem, "__setitem__": _immutable,
    "reshape": _reshape, "transpose": _transpose, "astype": fnp.astype,
    "sum": fnp.sum, "mean": fnp.mean, "max": fnp.max, "min": fnp.min, "prod": fnp.prod,
    "var": fnp.var, "std": fnp.std, "argmax": fnp.argmax, "argmin": fnp.argmin,
    "all": fnp.all, "any": fnp.any, "cumsum": fnp.cumsum, "clip": fnp.clip,
    "squeeze": fnp.squeeze, "ravel": fnp.ravel, "flatten": fnp.ravel, "swapaxes": fnp.swapaxes,
    "dot": fnp.dot, "round": fnp.round, "logsumexp": fnp.logsumexp, "to": device_put,
    "cumprod": fnp.cumprod, "sort": fnp.sort, "argsort": fnp.argsort, "repeat": fnp.repeat, "take": fnp.take,
    "diagonal": fnp.diagonal, "trace": fnp.trace, "nonzero": fnp.nonzero, "ptp": fnp.ptp,
    "searchsorted": fnp.searchsorted, "choose": lambda self, choices, mode="raise": fnp.choose(self, choices, mode),
    "compress": lambda self, condition, axis=None: fnp.compress(condition, self, axis),
    "conj": fnp.conj, "conjugate": fnp.conj, "copy": fnp.copy, "clone": fnp.copy,
    "argpartition": fnp.argpartition, "devices": lambda self: {self.device},
    "__contains__": lambda self, value: bool(fnp.any(fnp.equal(self, value))),
    "cpu": lambda self: device_put(self, "cpu"),
    "to_device": lambda self, device, /, *, stream=None: device_put(self, device),
    "__complex__": lambda self: complex(self.item()),
    "__array_namespace__": _array_namespace,
    "__dlpack__": _dlpack,
    "__dlpack_device__": lambda self: (1, 0) if self.device.platform == "cpu" else (2, self.device.index),
    "block_until_ready": _block_until_ready,
    "tobytes": lambda self, order="C": self.numpy().tobytes(order),
}
_REDUCTIONS = ("sum", "mean", "max", "min", "prod", "var", "std", "argmax", "argmin", "all", "any", "cumsum",
               "cumprod", "clip", "round", "ptp", "trace")  # the methods NumPy's functions call with out=
for _name, _fn in _METHODS.items():
    setattr(ArrayBase, _name, _numpy_method(_fn) if _name in _REDUCTIONS else _plain(_fn))

ArrayBase.T = property(lambda self: fnp.transpose(self))
ArrayBase.mT = property(lambda self: fnp.swapaxes(self, -1, -2))
ArrayBase.at = property(at)
ArrayBase.real = property(fnp.real)
ArrayBase.imag = property(fnp.imag)
ArrayBase.itemsize = property(lambda self: self.dtype.itemsize)
ArrayBase.nbytes = property(lambda self: self.size * self.dtype.itemsize)

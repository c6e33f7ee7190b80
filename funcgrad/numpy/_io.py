"""NumPy's array input, output and printing, for funcgrad Arrays: save, savez, load (.npy as an
Array, .npz as NumPy's lazy archive), frombuffer, fromiter, fromstring, array_repr, array_str, the
print options, and iterable. The data passes through NumPy on the host."""
from __future__ import annotations

import numpy as np

from ..array import Array, ArrayBase, to_numpy
from ._creation import asarray

__all__ = ["save", "savez", "savez_compressed", "load", "frombuffer", "fromfile", "fromiter", "fromstring",
           "array_repr", "array_str", "get_printoptions", "set_printoptions", "printoptions", "iterable"]

get_printoptions, set_printoptions, printoptions, iterable = (np.get_printoptions, np.set_printoptions,
                                                              np.printoptions, np.iterable)


def _host(x) -> np.ndarray:
    return to_numpy(x) if isinstance(x, ArrayBase) else np.asarray(x)


def save(file, arr, allow_pickle: bool = True) -> None:
    np.save(file, _host(arr), allow_pickle=allow_pickle)


def savez(file, *args, **kwds) -> None:
    np.savez(file, *map(_host, args), **{k: _host(v) for k, v in kwds.items()})


def savez_compressed(file, *args, **kwds) -> None:
    np.savez_compressed(file, *map(_host, args), **{k: _host(v) for k, v in kwds.items()})


def load(file, *args, **kwargs):
    """A .npy file as an Array; an .npz archive as NumPy's NpzFile (its members load on access)."""
    data = np.load(file, *args, **kwargs)
    return asarray(data) if isinstance(data, np.ndarray) else data


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0) -> Array:
    """The buffer's bytes read as dtype (float: NumPy's float64), copied into an Array."""
    return asarray(np.frombuffer(buffer, np.dtype(dtype), count, offset).copy())


def fromfile(file, dtype=float, count: int = -1, sep: str = "", offset: int = 0) -> Array:
    """A file's contents read as dtype (float: NumPy's float64): raw bytes, or text numbers between
    sep; NumPy's reader on the host (JAX refuses it as impure: funcgrad reads eagerly)."""
    return asarray(np.fromfile(file, np.dtype(dtype), count, sep, offset))


def fromiter(iterable, dtype, count: int = -1) -> Array:
    return asarray(np.fromiter(iterable, np.dtype(dtype), count))


def fromstring(string: str, dtype=float, count: int = -1, *, sep: str) -> Array:
    """Numbers parsed from text separated by sep (NumPy's binary mode, without sep, is gone)."""
    return asarray(np.fromstring(string, np.dtype(dtype), count, sep=sep))


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None) -> str:
    return np.array_repr(_host(arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None) -> str:
    return np.array_str(_host(a), max_line_width, precision, suppress_small)

"""NumPy's index tricks r_ and c_: concatenation written as indexing (differentiable, as in
jax.numpy): fnp.r_[a, 0.0, 1:4, b], fnp.c_[x, y] (1-D arrays as columns); and s_ / index_exp,
which build index tuples (NumPy's own objects: an index is the same whatever the array)."""
from __future__ import annotations

import builtins

import numpy as np

from ..array import ArrayBase
from ._creation import _is_scalar, arange, asarray, astype, linspace
from ._layout import concatenate, reshape, transpose
from ._math import result_type

__all__ = ["c_", "index_exp", "r_", "s_"]


def _at_least(a, ndmin: int, trans1d: int):
    """a with ndmin dimensions: NumPy's array(a, ndmin=) prepends axes, then trans1d says where
    the original axes go (-1: last, 0: first)."""
    have = a.ndim
    if have >= ndmin:
        return a
    a = reshape(a, (1,) * (ndmin - have) + tuple(a.shape))
    if trans1d == -1:
        return a
    k1, k2 = trans1d if trans1d >= 0 else trans1d + ndmin - have + 1, ndmin - have
    axes = list(range(ndmin))
    return transpose(a, axes[:k1] + axes[k2:] + axes[k1:k2])


class _Concatenator:
    def __init__(self, axis: int, ndmin: int, trans1d: int):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        parts = []  # arrays, and Python scalars whose dtype waits for the arrays' (weak, as NumPy's)
        for i, item in enumerate(items):
            if isinstance(item, str):
                if i:
                    raise ValueError(f"only the first item of an index trick may be a directive string, got {item!r}")
                try:
                    numbers = [int(v) for v in item.split(",")]
                except ValueError:
                    raise ValueError(f"the directive {item!r} is not 'axis[,ndmin[,trans1d]]' (the matrix "
                                     f"directives 'r' and 'c' make numpy.matrix, which funcgrad has not)") from None
                if not 1 <= len(numbers) <= 3:
                    raise ValueError(f"the directive {item!r} has {len(numbers)} numbers; at most 3")
                axis, ndmin, trans1d = (numbers + [ndmin, trans1d][len(numbers) - 1:])[:3]
                continue
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, complex):  # 0:1:5j is five points from 0 to 1, ends included
                    part = linspace(start, item.stop, int(builtins.abs(step)))
                else:
                    part = arange(start, item.stop, step)
            else:
                part = item if isinstance(item, ArrayBase) or _is_scalar(item) else asarray(item)
            parts.append(part)
        if not parts:
            return asarray([])
        if not any(isinstance(p, ArrayBase) for p in parts):
            parts = [asarray(p) for p in parts]
        common = result_type(*parts)  # Python scalars weak beside the arrays, as everywhere
        return concatenate([_at_least(astype(p, common), builtins.max(ndmin, 1), trans1d) for p in parts], axis=axis)

    def __len__(self) -> int:
        return 0


r_ = _Concatenator(0, 1, -1)
c_ = _Concatenator(-1, 2, 0)

s_, index_exp = np.s_, np.index_exp

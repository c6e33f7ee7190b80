"""funcgrad.numpy: the jax.numpy of this project (import funcgrad.numpy as fnp).

Functions take Arrays, NumPy arrays, lists and Python scalars; they promote dtypes as PyTorch
does (Python scalars are weak: x_float32 * 2.5 stays float32) and bind primitives. Everything
here is composed from the primitives in funcgrad.ops, so it is differentiable where math allows.
The modules, each on the ones before it: _creation (conversion, promotion, constructors),
_elementwise, _layout, _reductions, _contractions (the primitive-backed functions, gathered in
_base), then _shapes, _math, _bessel, _statistics, _signal, _polynomial, _editing, _index_tricks, linalg and fft,
composed from those; _io reads, writes and prints Arrays through NumPy;
_scalar_types makes the dtype names (fnp.float32) callable casts, and _array_api adds the Array
API standard's own names (acos, isdtype, unique_all, __array_namespace_info__, ...).
"""
from . import (_array_api, _bessel, _contractions, _creation, _editing, _elementwise, _index_tricks, _io, _layout,
               _math, _polynomial, _quantiles, _reductions, _shapes, _signal, _statistics, _ufunc)
from . import fft, linalg
from ._base import *  # noqa: F401,F403
from ._util import _beside, _concrete  # noqa: F401  (a constant beside an array; host values of an operand)
# for funcgrad's own layers (nn, lax):
from ._base import (_array_pair, _arrays, _axes, _common, _complex_arg, _float_arg, _float_args, _float_pair,  # noqa: F401
                    _index_array, _narrowed, _normalize_axis, _pair, _placed, _precision, _weak, _widened,
                    autocast_to_float32, concrete_or_none, follow)
from ._math import *  # noqa: F401,F403
from ._bessel import *  # noqa: F401,F403
from ._shapes import *  # noqa: F401,F403
from ._signal import *  # noqa: F401,F403
from ._polynomial import *  # noqa: F401,F403
from ._editing import *  # noqa: F401,F403
from ._statistics import *  # noqa: F401,F403
from ._quantiles import *  # noqa: F401,F403
from ._index_tricks import *  # noqa: F401,F403
from ._io import *  # noqa: F401,F403
from ._scalar_types import *  # noqa: F401,F403  (after _base: the dtype names that also cast)
from ._array_api import *  # noqa: F401,F403
from ._ufunc import *  # noqa: F401,F403  (last: add, maximum, ... become ufunc objects with NumPy's methods)
from ._array_api import __array_api_version__, __array_namespace_info__  # noqa: F401

bool = bool_  # noqa: A001  (the standard's name; left out of __all__, so a star import keeps the builtin)

__all__ = sorted(["fft", "linalg", *_creation.__all__, *_elementwise.__all__, *_layout.__all__, *_reductions.__all__,
                  *_contractions.__all__, *_shapes.__all__, *_math.__all__, *_statistics.__all__, *_signal.__all__,
                  *_polynomial.__all__, *_editing.__all__, *_index_tricks.__all__, *_io.__all__, *_array_api.__all__])

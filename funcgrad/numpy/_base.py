"""The primitive-backed functions as one namespace, for the modules composed from them
(`from . import _base as fnp`): conversion, elementwise math, reductions, layout, contractions."""
from ._contractions import *  # noqa: F401,F403
from ._creation import *  # noqa: F401,F403
from ._creation import (_array_pair, _arrays, _axes, _common, _complex_arg, _float_arg, _float_args, _float_pair,  # noqa: F401
                        _narrowed, _normalize_axis, _pair, _placed, _precision, _scalar_result_dtype, _weak, _widened,
                        autocast_to_float32, concrete_or_none, follow)
from ._elementwise import *  # noqa: F401,F403
from ._elementwise import _abs_squared  # noqa: F401
from ._layout import *  # noqa: F401,F403
from ._layout import _index_array  # noqa: F401
from ._reductions import *  # noqa: F401,F403

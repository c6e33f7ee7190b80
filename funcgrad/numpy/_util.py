"""Helpers the composed functions share: reading concrete values, placing constants beside the data."""
from __future__ import annotations

import numpy as np

from ..array import ArrayBase
from ..devices import device_put
from ..errors import ConcretizationError
from ..trace import Tracer
from . import _base as fnp


def _concrete(x, what: str) -> np.ndarray:
    """x's values on the host; inside jit this raises ConcretizationError naming `what`."""
    if isinstance(x, Tracer):
        try:
            x = x.concrete(what)  # a value being differentiated is read on purpose: it only sets a shape
        except ConcretizationError as e:
            raise ConcretizationError(f"{what} needs concrete values (its output shape depends on them): {e}") from None
    if isinstance(x, ArrayBase) and x.device.platform != "cpu":
        x = device_put(x, "cpu")
    return np.asarray(x)


def _beside(values, ref):
    """values as an Array on ref's device: constants the caller passes as numbers, lists or NumPy
    arrays (quantiles, test elements, fill values) follow the data, as index constants do, and
    Python floats among them take its float precision (fnp._arrays)."""
    return values if isinstance(values, ArrayBase) else fnp._arrays(ref, values)[1]


def _axis_index(ndim: int, axis: int, index) -> tuple:
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)

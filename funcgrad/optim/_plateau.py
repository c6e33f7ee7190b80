"""Reducing the learning rate when a metric stops improving: optax.contrib.reduce_on_plateau, the
functional form of PyTorch's ReduceLROnPlateau. Its update takes the metric as value=."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import numpy as fnp
from ..array import Array
from ..control import cond
from ..tree import tree_leaves, tree_map
from ._base import GradientTransformationExtraArgs


class ReduceLROnPlateauState(NamedTuple):
    scale: Array
    best_value: Array
    plateau_count: Array
    cooldown_count: Array
    count: Array
    avg_value: Array


def reduce_on_plateau(factor: float = 0.1, patience: int = 10, rtol: float = 1e-4, atol: float = 0.0,
                      cooldown: int = 0, accumulation_size: int = 1,
                      min_scale: float = 0.0) -> GradientTransformationExtraArgs:
    """Scale the updates by `scale`, multiplied by factor once the average of accumulation_size
    values has not improved (fallen below (1 - rtol) * best - atol) for patience checks in a row,
    then left alone for cooldown checks; never below min_scale. Chain it after the optimiser and
    pass the metric: opt.update(grads, state, params, value=loss)."""
    if not 0.0 < factor < 1.0:
        raise ValueError(f"Factor must be in the range (0, 1), got factor = {factor}.")
    if rtol < 0.0 or atol < 0.0 or (rtol == 0.0 and atol == 0.0) or rtol > 1.0:
        raise ValueError(f"rtol and atol must be non-negative, not both 0, and rtol <= 1; got rtol = {rtol} and "
                         f"atol = {atol}.")

    def init(params):
        dtype = max((leaf.dtype for leaf in tree_leaves(params)), key=lambda d: np.dtype(d).itemsize,
                    default=np.float32)
        return ReduceLROnPlateauState(fnp.ones((), dtype), fnp.full((), np.inf, dtype), fnp.zeros((), np.int32),
                                      fnp.zeros((), np.int32), fnp.zeros((), np.int32), fnp.zeros((), dtype))

    def checked(state):
        improved = state.avg_value < (1 - rtol) * state.best_value - atol
        best = fnp.where(improved, state.avg_value, state.best_value)
        plateau = fnp.where(improved, 0, state.plateau_count + 1)
        cooling = state.cooldown_count > 0
        reduce = ~cooling & (plateau == patience)
        scale = fnp.where(reduce, fnp.maximum(state.scale * factor, min_scale), state.scale)
        plateau = fnp.where(cooling | reduce, 0, plateau)
        cooldown_count = fnp.where(cooling, state.cooldown_count - 1, fnp.where(reduce, cooldown, 0))
        return ReduceLROnPlateauState(fnp.astype(scale, state.scale.dtype), best, fnp.astype(plateau, np.int32),
                                      fnp.astype(cooldown_count, np.int32), state.count * 0, state.avg_value * 0)

    def update(updates, state, params=None, *, value):
        count = state.count + 1
        average = (state.count * state.avg_value + fnp.astype(value, state.avg_value.dtype)) / count
        state = state._replace(avg_value=average, count=count)
        state = cond(count == accumulation_size, lambda: checked(state), lambda: state)
        return tree_map(lambda u: u * fnp.astype(state.scale, u.dtype), updates), state

    return GradientTransformationExtraArgs(init, update)

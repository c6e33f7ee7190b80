"""Wrappers around an optimiser: gradient accumulation over steps, skipping non-finite steps."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..array import Array
from ..control import concrete_int, cond
from ..tree import tree_leaves, tree_map
from ._base import GradientTransformation, _count, _tree_zeros_like, over_shards

class MultiStepsState(NamedTuple):
    mini_step: Array
    accumulated: Any
    inner: Any


def multi_steps(inner: GradientTransformation, every_k: int) -> GradientTransformation:
    """Gradient accumulation: average the gradients of every_k micro-batches, then take one
    step of `inner`; the micro-steps in between return zero updates."""
    if every_k < 1:
        raise ValueError(f"every_k must be >= 1, got {every_k}")

    def init(params):
        return MultiStepsState(_count(), _tree_zeros_like(params), inner.init(params))

    def update(updates, state, params=None):
        k = concrete_int(state.mini_step) + 1
        acc = tree_map(lambda a, g: a + (g - a) * (1.0 / k), state.accumulated, updates)

        def accumulate():
            return _tree_zeros_like(updates), MultiStepsState(state.mini_step + 1, acc, state.inner)

        def step():
            out, inner_state = inner.update(acc, state.inner, params)
            return out, MultiStepsState(state.mini_step * 0, _tree_zeros_like(acc), inner_state)

        return cond(k < every_k, accumulate, step)

    return GradientTransformation(init, update)


class FiniteState(NamedTuple):
    inner: Any
    notfinite_count: Array
    total_notfinite: Array


def apply_if_finite(inner: GradientTransformation) -> GradientTransformation:
    """Skip (zero updates, unchanged state) any step whose gradients hold inf or nan."""
    def init(params):
        return FiniteState(inner.init(params), _count(), _count())

    def update(updates, state, params=None):
        bad = sum((fnp.sum(fnp.astype(~fnp.isfinite(g), np.int32)) for g in tree_leaves(updates)),
                  fnp.zeros((), np.int32))
        finite = over_shards(bad) == 0

        def skip():
            return _tree_zeros_like(updates), FiniteState(state.inner, state.notfinite_count + 1,
                                                           state.total_notfinite + 1)

        def step():
            out, inner_state = inner.update(updates, state.inner, params)
            return out, FiniteState(inner_state, state.notfinite_count * 0, state.total_notfinite)

        return cond(finite, step, skip)

    return GradientTransformation(init, update)

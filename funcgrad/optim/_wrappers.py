"""Wrappers around an optimiser: gradient accumulation over steps, skipping non-finite steps,
applying transformations to some parameters (masked, freeze) or each group its own
(multi_transform), and optax's running averages and accumulators (ema, apply_every), lookahead and
flatten."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..array import Array
from ..control import concrete_int, cond
from ..tree import tree_flatten, tree_leaves, tree_map
from ._base import (GradientTransformation, GradientTransformationExtraArgs, _count, _debiased, _step_number,
                    _tree_zeros_like, _update, over_shards)
from ._edits import set_to_zero

class MultiStepsState(NamedTuple):
    mini_step: Array
    accumulated: Any
    inner: Any
    gradient_step: Array  # inner steps taken so far (what a callable every_k reads)


def multi_steps(inner: GradientTransformation, every_k, use_grad_mean: bool = True) -> GradientTransformation:
    """Gradient accumulation: average (or, use_grad_mean=False, sum) the gradients of every_k
    micro-batches, then take one step of `inner`; the micro-steps in between return zero updates.
    every_k may be a function of the inner step count (optax's every_k_schedule)."""
    schedule = every_k if callable(every_k) else None
    if schedule is None and (isinstance(every_k, bool) or not isinstance(every_k, (int, np.integer)) or every_k < 1):
        raise ValueError(f"every_k must be an int >= 1 (or a function of the step count), got {every_k!r}")

    def init(params):
        return MultiStepsState(_count(), _tree_zeros_like(params), inner.init(params), _count())

    def update(updates, state, params=None):
        k = concrete_int(state.mini_step) + 1
        acc = tree_map(lambda a, g: a + (g - a) * (1.0 / k), state.accumulated, updates)
        due = every_k if schedule is None else concrete_int(schedule(state.gradient_step))

        def accumulate():
            return _tree_zeros_like(updates), state._replace(mini_step=state.mini_step + 1, accumulated=acc)

        def step():
            total = acc if use_grad_mean else tree_map(lambda a: a * k, acc)
            out, inner_state = inner.update(total, state.inner, params)
            return out, MultiStepsState(state.mini_step * 0, _tree_zeros_like(acc), inner_state,
                                        state.gradient_step + 1)

        return cond(k < due, accumulate, step)

    return GradientTransformation(init, update)


class MultiSteps:
    """optax.MultiSteps: multi_steps as an object, with its init / update, gradient_transformation()
    and has_updated(state) (whether the last update stepped the inner optimiser)."""

    def __init__(self, opt: GradientTransformation, every_k_schedule, use_grad_mean: bool = True):
        self.inner_opt = opt
        self._transformation = multi_steps(opt, every_k_schedule, use_grad_mean)
        self.init, self.update = self._transformation.init, self._transformation.update

    def gradient_transformation(self) -> GradientTransformation:
        return self._transformation

    @staticmethod
    def has_updated(state: MultiStepsState):
        return fnp.logical_and(state.mini_step == 0, state.gradient_step > 0)


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


def _labelled(labels, tree, what: str) -> list:
    """One label per leaf of tree: labels is a pytree of tree's structure or a function of tree."""
    leaves, structure = tree_flatten(tree)
    given = labels(tree) if callable(labels) else labels
    label_leaves, label_structure = tree_flatten(given)
    if label_structure != structure:
        raise ValueError(f"{what} does not have the parameters' structure: {structure.difference(label_structure)}")
    return label_leaves


def _pick(leaves: list, labels: list, label) -> list:
    return [leaf for leaf, mine in zip(leaves, labels) if mine == label]


def _put(leaves: list, labels: list, label, values: list) -> list:
    values = iter(values)
    return [next(values) if mine == label else leaf for leaf, mine in zip(leaves, labels)]


class MultiTransformState(NamedTuple):
    inner_states: dict


def multi_transform(transforms: dict, param_labels) -> GradientTransformation:
    """A transformation per group of parameters (optax.multi_transform; PyTorch's parameter groups):
    param_labels gives each parameter a key of transforms (a pytree of labels shaped like the
    parameters, or a function of them); each transformation sees only its group's leaves, as a
    list, so statistics such as a global norm are the group's."""
    def labels_of(tree):
        labels = _labelled(param_labels, tree, "multi_transform: param_labels")
        unknown = sorted({str(label) for label in labels if label not in transforms})
        if unknown:
            raise KeyError(f"multi_transform: labels {unknown} have no transformation; the transforms are for "
                           f"{sorted(map(str, transforms))}")
        return labels

    def init(params):
        labels, leaves = labels_of(params), tree_leaves(params)
        return MultiTransformState({label: t.init(_pick(leaves, labels, label)) for label, t in transforms.items()})

    def update(updates, state, params=None):
        labels, (leaves, structure) = labels_of(updates), tree_flatten(updates)
        param_leaves = None if params is None else tree_leaves(params)
        new_states = {}
        for label, t in transforms.items():
            group = _pick(leaves, labels, label)
            group_params = None if param_leaves is None else _pick(param_leaves, labels, label)
            out, new_states[label] = t.update(group, state.inner_states[label], group_params)
            leaves = _put(leaves, labels, label, out)
        return structure.unflatten(leaves), MultiTransformState(new_states)

    return GradientTransformation(init, update)


class MaskedState(NamedTuple):
    inner_state: Any


def masked(inner: GradientTransformation, mask) -> GradientTransformation:
    """inner applied to the leaves where mask is True; the others' updates pass through unchanged
    (optax.masked: weight decay on weights but not on biases or norms). mask: a pytree of bools
    shaped like the parameters, or a function of them, or one bool for every parameter."""
    if isinstance(mask, (bool, np.bool_)):
        mask = (lambda flag: lambda tree: tree_map(lambda _: flag, tree))(bool(mask))

    def init(params):
        leaves, flags = tree_leaves(params), [bool(m) for m in _labelled(mask, params, "masked: the mask")]
        return MaskedState(inner.init(_pick(leaves, flags, True)))

    def update(updates, state, params=None):
        (leaves, structure), flags = tree_flatten(updates), [bool(m) for m in _labelled(mask, updates,
                                                                                        "masked: the mask")]
        group_params = None if params is None else _pick(tree_leaves(params), flags, True)
        out, inner_state = inner.update(_pick(leaves, flags, True), state.inner_state, group_params)
        return structure.unflatten(_put(leaves, flags, True, out)), MaskedState(inner_state)

    return GradientTransformation(init, update)


partition = multi_transform  # optax's newer name for it


def freeze(mask) -> GradientTransformation:
    """Zero updates for the parameters where mask is True (a pytree of bools, a function of the
    parameters, or one bool for all): they stay as they are."""
    return masked(set_to_zero(), mask)


class EmaState(NamedTuple):
    count: Array
    ema: Any


def ema(decay: float, debias: bool = True, accumulator_dtype=None) -> GradientTransformation:
    """The exponential moving average of the updates, decay * ema + (1 - decay) * g, divided by
    1 - decay^t where debias; kept in accumulator_dtype where one is given."""
    def init(params):
        return EmaState(_count(), tree_map(lambda p: fnp.zeros_like(p, dtype=accumulator_dtype), params))

    def update(updates, state, params=None):
        new = tree_map(lambda g, m: (1 - decay) * g + decay * m, updates, state.ema)
        t = _step_number(state.count)
        out = _debiased(new, decay, t) if debias else new
        kept = new if accumulator_dtype is None else tree_map(lambda m: fnp.astype(m, accumulator_dtype), new)
        return out, EmaState(state.count + 1, kept)
    return GradientTransformation(init, update)


class ApplyEveryState(NamedTuple):
    count: Array
    grad_acc: Any


def apply_every(k: int = 1) -> GradientTransformation:
    """Sum the updates of k steps and emit the sum on the k-th, zeros in between (optax's; compare
    multi_steps, which averages and steps an inner optimiser)."""
    if k < 1:
        raise ValueError(f"apply_every: k must be >= 1, got {k}")

    def update(updates, state, params=None):
        phase = state.count % k
        acc = tree_map(lambda g, a: fnp.where(phase != 0, a, 0.0) + g, updates, state.grad_acc)
        emit = phase == k - 1
        return tree_map(lambda a: fnp.where(emit, a, 0.0), acc), ApplyEveryState((state.count + 1) % k, acc)
    return GradientTransformation(lambda params: ApplyEveryState(_count(), _tree_zeros_like(params)), update)


class LookaheadParams(NamedTuple):
    """Lookahead's two copies of the parameters: the fast ones the gradients are taken at, and the
    slow ones they are pulled back to every sync_period steps (evaluate with slow)."""
    fast: Any
    slow: Any

    @classmethod
    def init_synced(cls, params) -> "LookaheadParams":
        return cls(fast=params, slow=params)


class LookaheadState(NamedTuple):
    fast_state: Any
    steps_since_sync: Array


def lookahead(fast_optimizer: GradientTransformation, sync_period: int, slow_step_size: float,
              reset_state: bool = False) -> GradientTransformation:
    """Lookahead (Zhang et al. 2019): fast_optimizer steps the fast parameters; every sync_period-th
    step the slow ones move slow_step_size of the way to the fast ones, and the fast ones restart
    there (and the fast optimiser's state, with reset_state). update takes the gradients at the fast
    parameters and LookaheadParams, and returns LookaheadParams of updates."""
    if sync_period < 1:
        raise ValueError(f"lookahead: sync_period must be >= 1, got {sync_period}")

    def init(params):  # the fast parameters alone do too: the state depends on nothing else
        return LookaheadState(fast_optimizer.init(params.fast if isinstance(params, LookaheadParams) else params),
                              _count())

    def update(updates, state, params=None):
        if not isinstance(params, LookaheadParams):
            raise TypeError("lookahead.update needs params=LookaheadParams(fast=..., slow=...): "
                            "optim.LookaheadParams.init_synced(params) to start")
        updates, fast_state = fast_optimizer.update(updates, state.fast_state, params.fast)
        sync = state.steps_since_sync == sync_period - 1
        difference = tree_map(lambda f, u, s: f + u - s, params.fast, updates, params.slow)
        slow = tree_map(lambda d: fnp.where(sync, slow_step_size * d, 0.0), difference)
        fast = tree_map(lambda u, d: u - fnp.where(sync, (1 - slow_step_size) * d, 0.0), updates, difference)
        if reset_state:
            fast_state = tree_map(lambda now, fresh: fnp.where(sync, fresh, now), fast_state,
                                  fast_optimizer.init(params.fast))
        return LookaheadParams(fast, slow), LookaheadState(fast_state, (state.steps_since_sync + 1) % sync_period)
    return GradientTransformation(init, update)


def flatten(inner: GradientTransformation) -> GradientTransformationExtraArgs:
    """inner applied to all parameters raveled into one vector (fewer, larger operations for a
    model of many small arrays), the result split back into the parameters' shapes."""
    def ravel(tree):
        leaves = tree_leaves(tree)
        return fnp.concatenate([fnp.reshape(x, (-1,)) for x in leaves]) if leaves else fnp.zeros((0,))

    def unravel(like, flat):
        leaves, structure = tree_flatten(like)
        sizes = np.cumsum([int(np.prod(x.shape)) for x in leaves])[:-1]
        parts = fnp.split(flat, [int(s) for s in sizes]) if leaves else []
        return structure.unflatten([fnp.reshape(p, x.shape) for p, x in zip(parts, leaves)])

    def update(updates, state, params=None, **extra_args):
        flat, state = _update(inner, ravel(updates), state, None if params is None else ravel(params), extra_args)
        return unravel(updates, flat), state
    return GradientTransformationExtraArgs(lambda params: inner.init(ravel(params)), update)

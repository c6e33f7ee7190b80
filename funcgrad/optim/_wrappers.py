"""Wrappers around an optimiser: gradient accumulation over steps, skipping non-finite steps, and
applying transformations to some parameters (masked) or each group its own (multi_transform)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..array import Array
from ..control import concrete_int, cond
from ..tree import tree_flatten, tree_leaves, tree_map
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
    shaped like the parameters, or a function of them."""
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

"""State a forward pass updates (BatchNorm's running statistics), carried out functionally.

A module is an immutable value, so a layer cannot store what it learns while training. It records
the new values of its state leaves instead, and the training step applies them to the model after
the optimiser's update (flax's mutable batch_stats, equinox's State, with a PyTorch-style module):

    def loss(m, x, y, key):
        with nn.collect_state(m) as state:
            logits = m(x, key=key)                   # a key: training mode
        return nn.cross_entropy(logits, y), state.updates()
    (value, updates), grads = fg.value_and_grad(loss, has_aux=True)(model, x, y, key)
    model = nn.apply_state(optim.apply_updates(model, deltas), updates)

fit and make_train_step do this. Updates are keyed by the leaf's position in the model's
flattened leaves, which an optimiser step does not change; they never carry a gradient.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from ..numpy import astype, stop_gradient
from ..tree import tree_flatten

_local = threading.local()


class StateCollector:
    """The state updates one forward pass records, for the leaves of one model."""

    def __init__(self, model: Any):
        leaves, _ = tree_flatten(model)
        self._positions = {id(leaf): k for k, leaf in enumerate(leaves)}
        self._leaves = leaves  # keeps the ids valid while the pass runs
        self._updates: dict[int, Any] = {}

    def record(self, old, new) -> None:
        position = self._positions.get(id(old))
        if position is None:
            raise ValueError("a layer updated state that is not a leaf of the model given to nn.collect_state: "
                             "collect with the model whose layers run")
        self._updates[position] = stop_gradient(new)

    def updates(self) -> dict[int, Any]:
        """{leaf position: new value}: pass it through jit, grad's aux, all-reduces, then apply_state."""
        return dict(self._updates)


@contextlib.contextmanager
def collect_state(model: Any) -> Iterator[StateCollector]:
    """Record the state updates of model's layers during the forward passes inside the block."""
    stack = _local.__dict__.setdefault("stack", [])
    collector = StateCollector(model)
    stack.append(collector)
    try:
        yield collector
    finally:
        stack.pop()


def record_state(layer: str, old, new) -> None:
    """Called by a layer in training mode with a state leaf and its new value."""
    stack = _local.__dict__.get("stack")
    if not stack:
        raise RuntimeError(f"{layer} in training mode computes new running statistics, which need somewhere "
                           f"to go: run the forward pass inside `with nn.collect_state(model)` and apply them with "
                           f"nn.apply_state (fit and make_train_step do), or call it without a key (evaluation: "
                           f"running statistics), or set training=False")
    stack[-1].record(old, new)


def apply_state(model: Any, updates: dict[int, Any]) -> Any:
    """model with the recorded state leaves replaced (each keeps its dtype)."""
    if not updates:
        return model
    leaves, treedef = tree_flatten(model)
    for position, value in updates.items():
        leaves[int(position)] = astype(value, leaves[int(position)].dtype)
    return treedef.unflatten(leaves)

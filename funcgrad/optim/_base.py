"""The interface (optax's): a GradientTransformation is two pure functions, init and update;
chain composes them, apply_updates adds updates to parameters; the helpers the transformations
share."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..array import Array
from ..control import concrete_int
from ..tree import keystr, tree_flatten, tree_flatten_with_path, tree_map

Schedule = Callable[[int], float]
ScalarOrSchedule = float | Schedule


class GradientTransformation(NamedTuple):
    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


class GradientTransformationExtraArgs(GradientTransformation):
    """A transformation whose update takes keyword arguments beyond (updates, state, params), such
    as reduce_on_plateau's value= (optax's); chain hands them to these alone."""


def _update(t: GradientTransformation, updates, state, params, extra: dict):
    return t.update(updates, state, params, **extra) if isinstance(t, GradientTransformationExtraArgs) else \
        t.update(updates, state, params)


_over_shards: Callable[[Any], Any] = lambda x: x  # noqa: E731  (the identity: whole gradients)


@contextlib.contextmanager
def sharded(total: Callable[[Any], Any]) -> Iterator[None]:
    """Within it, the gradients a transformation sees are one process's shards, and total(x) sums
    a per-shard statistic over the processes (ZeRO sets it to a psum), so that statistics over all
    gradients (a global norm, whether every gradient is finite) are the whole model's."""
    global _over_shards
    previous, _over_shards = _over_shards, total
    try:
        yield
    finally:
        _over_shards = previous


def over_shards(x):
    """x summed over the processes sharing the gradients (inside sharded), else x itself."""
    return _over_shards(x)


def _count() -> Array:
    return fnp.zeros((), dtype=np.int64)


def _tree_zeros_like(tree):
    return tree_map(lambda p: fnp.zeros_like(p), tree)


def _value(lr: ScalarOrSchedule, count):
    """The learning rate at step count: a float eagerly, a traced scalar inside jit."""
    if not callable(lr):
        return float(lr)
    count = concrete_int(count)
    return float(lr(count)) if isinstance(count, int) else lr(count)


def _at_least(value: float, lowest: float, what: str) -> None:
    """PyTorch's check and message for a hyperparameter that must not fall below `lowest`."""
    if not float(value) >= lowest:  # NaN fails too
        raise ValueError(f"Invalid {what}: {value}")


def _betas(b1: float, b2: float) -> None:
    for index, beta in enumerate((b1, b2)):
        if not 0.0 <= float(beta) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")


def _check_fits(updates, params) -> None:
    """Gradients of another model (or of one whose sizes changed) name their first difference."""
    g_leaves, g_def = tree_flatten(updates)
    p_leaves, p_def = tree_flatten(params)
    if g_def != p_def:
        raise ValueError(f"opt.update: the gradients do not have the parameters' structure: "
                         f"{p_def.difference(g_def)}")
    for g, p in zip(g_leaves, p_leaves):
        if tuple(np.shape(g)) != tuple(np.shape(p)):
            path, _ = next((path, leaf) for (path, leaf) in tree_flatten_with_path(params)[0] if leaf is p)
            raise ValueError(f"opt.update: the gradient of parameter {keystr(path)} has shape {tuple(np.shape(g))}, "
                             f"the parameter {tuple(np.shape(p))}")


def _need_params(params, name: str):
    if params is None:
        raise ValueError(f"{name} needs the current parameters: call update(grads, state, params)")
    return params


def apply_updates(params, updates):
    """params + updates, leaf by leaf, keeping each parameter's dtype."""
    return tree_map(lambda p, u: fnp.add(p, fnp.astype(u, p.dtype)), params, updates)


def chain(*transforms: GradientTransformation) -> GradientTransformationExtraArgs:
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None, **extra_args):
        if state is None:
            raise TypeError("opt.update(grads, state, params) needs the optimiser's state: opt.init(params) "
                            "for the first step, then the state each update returns")
        if params is not None:
            _check_fits(updates, params)
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = _update(t, updates, s, params, extra_args)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformationExtraArgs(init, update)

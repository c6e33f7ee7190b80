"""The interface (optax's): a GradientTransformation is two pure functions, init and update;
chain composes them, apply_updates adds updates to parameters; the helpers the transformations
share."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..array import Array, ArrayBase
from ..control import concrete_int
from ..errors import ConcretizationError
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


def _concrete_float(x) -> "float | None":
    """x as a Python float, or None where x is traced (a hyperparameter that inject_hyperparams
    keeps in the state, inside jit)."""
    try:
        return float(x)
    except ConcretizationError:
        return None


def _nonzero(x) -> bool:
    """Whether hyperparameter x may be nonzero. One held as an array (inject_hyperparams' state)
    may change between steps, so the rule it switches on stays in, and the state's structure with it."""
    return isinstance(x, ArrayBase) or float(x) != 0.0


def _value(lr: ScalarOrSchedule, count):
    """The learning rate at step count: a float eagerly, a traced scalar inside jit."""
    if isinstance(lr, ArrayBase):  # a hyperparameter held in inject_hyperparams' state
        value = _concrete_float(lr)
        return lr if value is None else value
    if not callable(lr):
        return float(lr)
    count = concrete_int(count)
    return float(lr(count)) if isinstance(count, int) else lr(count)


def _step_number(count):
    """count + 1: a Python int eagerly (PyTorch's exact arithmetic), a float64 scalar under jit (an
    int64 one would combine with Python floats in float32)."""
    t = concrete_int(count)
    return t + 1 if isinstance(t, int) else fnp.astype(count, np.float64) + 1


def _in_dtype(x, leaf):
    """A Python float stays one; a traced scalar takes the leaf's dtype (optax's cast)."""
    return x if isinstance(x, (int, float)) else fnp.astype(x, leaf.dtype)


def _debiased(moments, decay, t):
    """optax's bias_correction: m / (1 - decay^t)."""
    return tree_map(lambda m: m / _in_dtype(1 - decay ** t, m), moments)


def _at_least(value: float, lowest: float, what: str) -> None:
    """PyTorch's check and message for a hyperparameter that must not fall below `lowest` (a traced
    one, unknown until it runs, is not checked)."""
    number = _concrete_float(value)
    if number is not None and not number >= lowest:  # NaN fails too
        raise ValueError(f"Invalid {what}: {value}")


def _betas(b1: float, b2: float) -> None:
    for index, beta in enumerate((b1, b2)):
        number = _concrete_float(beta)
        if number is not None and not 0.0 <= number < 1.0:
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


def named_chain(*transforms: tuple[str, GradientTransformation]) -> GradientTransformationExtraArgs:
    """chain whose state is a dict by the given names (optax.named_chain), so a step's state reads
    state["adam"] rather than state[1]."""
    names = [name for name, _ in transforms]
    if len(set(names)) != len(names):
        raise ValueError(f"named_chain: the names {names} repeat")
    inner = chain(*(t for _, t in transforms))

    def update(updates, state, params=None, **extra_args):
        updates, states = inner.update(updates, tuple(state[name] for name in names), params, **extra_args)
        return updates, dict(zip(names, states))
    return GradientTransformationExtraArgs(lambda params: dict(zip(names, inner.init(params))), update)


def stateless(f: Callable[[Any, Any], Any]) -> GradientTransformation:
    """A transformation without state: updates = f(updates, params) (optax.stateless)."""
    return GradientTransformation(lambda params: (), lambda updates, state, params=None: (f(updates, params), state))


def stateless_with_tree_map(f: Callable[[Any, Any], Any]) -> GradientTransformation:
    """stateless, f applied leaf by leaf: f(g, p), p None without params (optax's)."""
    return stateless(lambda updates, params: tree_map(lambda g: f(g, None), updates) if params is None else
                     tree_map(f, updates, params))

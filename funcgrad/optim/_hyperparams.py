"""inject_hyperparams (optax's): an optimiser's numeric hyperparameters held in its state, where a
training loop can read them (the learning rate a schedule gave this step) and change them between
steps without rebuilding the optimiser or recompiling a jitted step."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Iterable, NamedTuple

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array, ArrayBase
from ..tree import tree_leaves
from ._base import GradientTransformation, GradientTransformationExtraArgs, _count, _update, _value


class InjectHyperparamsState(NamedTuple):
    count: Array
    hyperparams: dict  # name -> 0-d array: read it, or replace an entry before the next update
    inner_state: Any


def _float_dtype(params, given):
    """The hyperparameters' float dtype: the one given, else the widest float among the parameters."""
    if given is not None:
        return dtypes.canonicalize(given)
    floats = [np.dtype(p.dtype) for p in tree_leaves(params) if dtypes.is_float(p.dtype)]
    return max(floats, key=lambda d: d.itemsize, default=np.dtype(np.float32))


def _as_hyperparam(value, dtype):
    """A float (or float array) as a 0-d array of dtype; integers and others as they are."""
    if isinstance(value, ArrayBase):
        return fnp.astype(value, dtype) if dtypes.is_float(value.dtype) else value
    if isinstance(value, float) or (isinstance(value, np.ndarray) and dtypes.is_float(value.dtype)):
        return fnp.asarray(value, dtype)
    return fnp.asarray(value) if isinstance(value, (int, np.ndarray)) else value


def inject_hyperparams(inner_factory: Callable[..., GradientTransformation], static_args: str | Iterable[str] = (),
                       hyperparam_dtype=None) -> Callable[..., GradientTransformationExtraArgs]:
    """inject_hyperparams(optim.adamw)(learning_rate=schedule, weight_decay=1e-2): the factory's
    numeric arguments become state.hyperparams entries (arrays, in the parameters' float dtype or
    hyperparam_dtype), schedules are evaluated at each step's count and their values kept there too;
    booleans and the names in static_args stay Python values. Each update builds the inner
    optimiser from the current hyperparameters and steps its state."""
    static = {static_args} if isinstance(static_args, str) else set(static_args)
    signature = inspect.signature(inner_factory)
    if not static <= set(signature.parameters):
        raise ValueError(f"inject_hyperparams: static_args {sorted(static - set(signature.parameters))} are not "
                         f"parameters of {getattr(inner_factory, '__name__', inner_factory)}: "
                         f"{sorted(signature.parameters)}")

    @functools.wraps(inner_factory)
    def wrapped(*args, **kwargs) -> GradientTransformationExtraArgs:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        schedules, numeric, fixed = {}, {}, {}
        for name, value in bound.arguments.items():
            if name in static or isinstance(value, (bool, np.bool_)):
                fixed[name] = value
            elif callable(value):
                schedules[name] = value
            elif isinstance(value, (int, float, np.ndarray, ArrayBase)):
                numeric[name] = value
            else:
                fixed[name] = value

        def current(hyperparams: dict, count, dtype) -> dict:
            values = {k: _as_hyperparam(v, dtype) for k, v in hyperparams.items() if k not in schedules}
            values.update({k: _as_hyperparam(_value(f, count), dtype) for k, f in schedules.items()})
            return values

        def init(params):
            values = current(numeric, _count(), _float_dtype(params, hyperparam_dtype))
            return InjectHyperparamsState(_count(), values, inner_factory(**fixed, **values).init(params))

        def update(updates, state, params=None, **extra_args):
            if not isinstance(state, InjectHyperparamsState):
                raise TypeError("inject_hyperparams: update takes the state its init returned")
            unknown = sorted(set(state.hyperparams) - set(numeric) - set(schedules))
            if unknown:
                raise KeyError(f"inject_hyperparams: state.hyperparams has {unknown}, which "
                               f"{getattr(inner_factory, '__name__', 'the optimiser')} was not given as numbers")
            values = current(state.hyperparams, state.count,
                             _float_dtype(updates if params is None else params, hyperparam_dtype))
            inner = inner_factory(**fixed, **values)
            updates, inner_state = _update(inner, updates, state.inner_state, params, extra_args)
            return updates, InjectHyperparamsState(state.count + 1, values, inner_state)
        return GradientTransformationExtraArgs(init, update)
    return wrapped

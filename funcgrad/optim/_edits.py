"""Transformations that edit the updates rather than scale them by statistics (optax's): pass them
on or zero them, replace NaNs, keep parameters non-negative, subtract each row's mean, clip each
parameter's RMS or each unit's norm relative to its weights, and add annealed Gaussian noise."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from .. import random
from ..array import Array, ArrayBase
from ..tree import tree_flatten, tree_map
from ._base import GradientTransformation, _count, _need_params, _step_number


def identity() -> GradientTransformation:
    """The updates unchanged (a group of parameters left to plain gradient steps elsewhere)."""
    return GradientTransformation(lambda params: (), lambda updates, state, params=None: (updates, state))


def set_to_zero() -> GradientTransformation:
    """Zero updates: the parameters stay where they are (frozen groups in multi_transform)."""
    return GradientTransformation(lambda params: (), lambda updates, state, params=None: (
        tree_map(fnp.zeros_like, updates), state))


class ZeroNansState(NamedTuple):
    found_nan: Any  # per parameter, whether its last update held a NaN


def zero_nans() -> GradientTransformation:
    """NaN entries of the updates replaced by 0; the state records which parameters had any."""
    def update(updates, state, params=None):
        found = tree_map(lambda g: fnp.any(fnp.isnan(g)), updates)
        return tree_map(lambda g: fnp.where(fnp.isnan(g), 0.0, g), updates), ZeroNansState(found)
    return GradientTransformation(lambda params: ZeroNansState(tree_map(lambda p: fnp.zeros((), bool), params)),
                                  update)


def keep_params_nonnegative() -> GradientTransformation:
    """An update that would take a parameter below 0 takes it to 0 instead (-p)."""
    def update(updates, state, params=None):
        params = _need_params(params, "keep_params_nonnegative")
        return tree_map(lambda p, u: fnp.where(p + u < 0.0, -p, u), params, updates), state
    return GradientTransformation(lambda params: (), update)


def centralize() -> GradientTransformation:
    """Gradient centralisation (Yong et al. 2020): each parameter of two or more axes has the mean over
    all axes but the first subtracted; vectors pass unchanged."""
    def centred(g):
        return g - fnp.mean(g, axis=tuple(range(1, g.ndim)), keepdims=True) if g.ndim > 1 else g
    return GradientTransformation(lambda params: (), lambda updates, state, params=None: (
        tree_map(centred, updates), state))


def clip_by_block_rms(threshold: float) -> GradientTransformation:
    """Each parameter's update divided by max(1, rms(update) / threshold)."""
    def clipped(u):
        return u / fnp.maximum(1.0, fnp.sqrt(fnp.mean(fnp.abs(u) ** 2)) / threshold)
    return GradientTransformation(lambda params: (), lambda updates, state, params=None: (
        tree_map(clipped, updates), state))


_UNIT_AXES = {2: (0,), 3: (0,), 4: (0, 1, 2), 5: (0, 1, 2, 3)}  # optax's: (in, out) and HWIO layouts


def _unitwise_norm(x, axis):
    """The 2-norm of each unit of x, broadcast to x's shape: over `axis`, or by x's rank as optax
    lays weights out (a vector whole; a matrix over axis 0; HWIO kernels over all but the last)."""
    if axis is None:
        if sum(d != 1 for d in x.shape) <= 1:  # a scalar or a vector, however many axes of 1
            axis = tuple(range(x.ndim))
        elif x.ndim in _UNIT_AXES:
            axis = _UNIT_AXES[x.ndim]
        else:
            raise ValueError(f"adaptive_grad_clip: a parameter of shape {tuple(x.shape)} has no default units; "
                             f"pass axis= (the axes one unit spans)")
    return fnp.broadcast_to(fnp.sqrt(fnp.sum(fnp.abs(x) ** 2, axis=axis, keepdims=True)), x.shape)


def adaptive_grad_clip(clipping: float, eps: float = 1e-3, axis: int | tuple | None = None) -> GradientTransformation:
    """Adaptive gradient clipping (Brock et al. 2021, NFNets): each unit's gradient is clipped to norm
    clipping * max(|unit's weights|, eps)."""
    def clipped(g, p):
        g_norm, max_norm = _unitwise_norm(g, axis), clipping * fnp.maximum(_unitwise_norm(p, axis), eps)
        return fnp.where(g_norm < max_norm, g, g * (max_norm / fnp.maximum(g_norm, 1e-6)))

    def update(updates, state, params=None):
        return tree_map(clipped, updates, _need_params(params, "adaptive_grad_clip")), state
    return GradientTransformation(lambda params: (), update)


class AddNoiseState(NamedTuple):
    count: Array
    rng_key: Array


def add_noise(eta: float, gamma: float, key=None, *, seed: int | None = None) -> GradientTransformation:
    """Gaussian noise of variance eta / t^gamma added to step t's updates (Neelakantan et al. 2015),
    drawn as optax draws it: the state's key split into the next key and one per parameter.
    key: a PRNG key or an integer seed (seed= is optax's older name for it)."""
    if seed is not None:
        if key is not None:
            raise ValueError("add_noise: give key or seed, not both")
        key = seed
    if key is None:
        raise ValueError("add_noise needs a key: add_noise(eta, gamma, key=fg.random.key(0)) or an integer seed")

    def init(params):
        return AddNoiseState(_count(), key if isinstance(key, ArrayBase) else random.key(int(key)))

    def update(updates, state, params=None):
        std = fnp.sqrt(eta / fnp.asarray(_step_number(state.count), np.float64) ** gamma)
        next_key, sample_key = random.split(state.rng_key)
        leaves, structure = tree_flatten(updates)
        keys = random.split(sample_key, len(leaves))
        noisy = [g + fnp.astype(std, g.dtype) * random.normal(keys[i], g.shape, g.dtype) for i, g in enumerate(leaves)]
        return structure.unflatten(noisy), AddNoiseState(state.count + 1, next_key)
    return GradientTransformation(init, update)

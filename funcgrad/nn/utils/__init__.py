"""torch.nn.utils, functionally: gradient clipping returns the clipped gradients with the norm
(nothing is changed in place), parameters convert to and from one vector, nn.utils.rnn packs
variable-length sequences for the recurrent layers, weight_norm / spectral_norm wrap a layer
(weight_norms.py), and fusion.py folds an evaluation-mode batch norm into the layer before it."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as fnp
from ...array import Array
from ...flatten_util import ravel_pytree
from ...tree import tree_leaves, tree_map
from . import fusion, parametrizations, rnn
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .weight_norms import (SpectralNorm, WeightNorm, remove_spectral_norm, remove_weight_norm, spectral_norm,
                           weight_norm)

__all__ = ["clip_grad_norm", "clip_grad_value", "get_total_norm", "parameters_to_vector", "vector_to_parameters",
           "rnn", "parametrizations", "SpectralNorm", "WeightNorm", "remove_spectral_norm", "remove_weight_norm",
           "spectral_norm", "weight_norm", "fusion", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Array:
    """The norm_type-norm of all leaves of tensors together (the norm of their norms), as
    torch.nn.utils.get_total_norm; inf is the largest magnitude."""
    norm_type = float(norm_type)
    leaves = [fnp.asarray(t) for t in tree_leaves(tensors)]
    if not leaves:
        return fnp.zeros(())
    if norm_type == math.inf:
        total = fnp.max(fnp.stack([fnp.max(fnp.abs(t)) if t.size else fnp.zeros((), t.dtype) for t in leaves]))
    else:
        total = fnp.linalg.norm(fnp.stack([fnp.linalg.norm(fnp.ravel(t), norm_type) for t in leaves]), norm_type)
    known = fnp.concrete_or_none(total)
    if error_if_nonfinite and known is not None and not np.isfinite(known):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm(grads, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False
                   ) -> tuple[Any, Array]:
    """(grads scaled by min(1, max_norm / (total norm + 1e-6)), the total norm before clipping):
    torch.nn.utils.clip_grad_norm_'s numbers, returned instead of written in place."""
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    coef = fnp.minimum(max_norm / (total + 1e-6), 1.0)
    return tree_map(lambda g: g * fnp.astype(coef, fnp.asarray(g).dtype), grads), total


def clip_grad_value(grads, clip_value: float) -> Any:
    """Every gradient entry clipped to [-clip_value, clip_value] (torch's clip_grad_value_)."""
    return tree_map(lambda g: fnp.clip(g, -float(clip_value), float(clip_value)), grads)


def parameters_to_vector(parameters) -> Array:
    """All parameters raveled and concatenated in flattening order (one dtype: their promotion)."""
    return ravel_pytree(parameters)[0]


def vector_to_parameters(vec, parameters) -> Any:
    """parameters' structure, shapes and dtypes filled from vec (the inverse of
    parameters_to_vector; a new tree, nothing written in place)."""
    vec = fnp.asarray(vec)
    total = sum(int(np.prod(np.shape(p))) for p in tree_leaves(parameters))
    if vec.ndim != 1 or vec.shape[0] != total:
        raise ValueError(f"vector_to_parameters: the parameters hold {total} values, the vector has shape "
                         f"{tuple(vec.shape)}")
    return ravel_pytree(parameters)[1](vec)

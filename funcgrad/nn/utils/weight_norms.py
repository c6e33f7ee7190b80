"""Weight and spectral normalisation (torch.nn.utils.weight_norm / spectral_norm, equinox's
WeightNorm / SpectralNorm) as wrapper modules: the wrapped layer's weight is computed from other
parameters at every call, and the layer runs with it.

PyTorch re-registers the parameters on the layer itself; here the wrapper holds them beside the
layer (whose weight field is None), under PyTorch's names, so state_dict(pytorch_names=True) has
PyTorch's keys: weight_g and weight_v; weight_orig, weight_u and weight_v. Spectral norm's u and v
are state, updated by a power iteration in training mode through nn.state as BatchNorm's running
statistics are; no gradient flows into them."""
from __future__ import annotations

from typing import Any

from ... import numpy as fnp
from ... import random
from ..module import Module
from ..state import record_state

__all__ = ["SpectralNorm", "WeightNorm", "remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]


def _weight_of(module: Module, name: str):
    weight = getattr(module, name, None)
    if weight is None or not hasattr(weight, "shape"):
        raise ValueError(f"{type(module).__name__} has no array parameter {name!r} to normalise; it has "
                         f"{sorted(k for k, v in vars(module).items() if hasattr(v, 'shape'))}")
    return weight


def _norm_except(v, dim: int | None):
    """The 2-norm of v over every axis but dim, keeping dims (over all of v, a 0-d array, for None)."""
    if dim is None:
        return fnp.sqrt(fnp.sum(v * v))
    axes = tuple(i for i in range(v.ndim) if i != dim)
    return fnp.sqrt(fnp.sum(v * v, axis=axes, keepdims=True))


class WeightNorm(Module):
    """weight = g * v / |v|, the norm over every axis but `dim` (over all axes for dim=None, and for
    dim=-1 as PyTorch reads it): direction and length as separate parameters (Salimans and Kingma 2016)."""
    static_fields = ("name", "dim")
    unnamed_fields = ("module",)

    def __init__(self, module: Module, name: str = "weight", dim: int | None = 0):
        weight = _weight_of(module, name)
        dim = None if dim == -1 else dim  # PyTorch's _weight_norm: -1 is the whole tensor, not the last axis
        if dim is not None:
            if not -weight.ndim <= dim < weight.ndim:
                raise ValueError(f"weight_norm: dim {dim} is out of range for {name} of shape {tuple(weight.shape)}")
            dim %= weight.ndim
        self.module, self.name, self.dim = module.replace(**{name: None}), name, dim
        setattr(self, f"{name}_g", _norm_except(weight, dim))
        setattr(self, f"{name}_v", weight)

    def weight(self):
        v = getattr(self, f"{self.name}_v")
        return v * (getattr(self, f"{self.name}_g") / _norm_except(v, self.dim))

    def __call__(self, *args, **kwargs):
        return self.module.replace(**{self.name: self.weight()})(*args, **kwargs)


def _normalized(x, eps: float):
    """x / max(|x|, eps) (torch.nn.functional.normalize)."""
    return x / fnp.maximum(fnp.sqrt(fnp.sum(x * x)), eps)


class SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value of the weight as a matrix (its axis `dim`
    first, the rest flattened), estimated by power iteration (Miyato et al. 2018): in training mode
    (a key given, or training=True) n_power_iterations steps refine u and v, recorded as state; in
    evaluation mode the stored ones give sigma = u . W v."""
    static_fields = ("name", "dim", "n_power_iterations", "eps", "training")
    unnamed_fields = ("module",)

    def __init__(self, module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                 dim: int | None = None, *, key, training: bool | None = None):
        weight = _weight_of(module, name)
        if n_power_iterations < 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be >= 0, got {n_power_iterations}")
        if dim is None:
            dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
        if not -weight.ndim <= dim < weight.ndim:
            raise ValueError(f"spectral_norm: dim {dim} is out of range for {name} of shape {tuple(weight.shape)}")
        self.module, self.name, self.dim = module.replace(**{name: None}), name, dim % weight.ndim
        self.n_power_iterations, self.eps, self.training = n_power_iterations, eps, training
        rows, cols = self._matrix(weight).shape
        key_u, key_v = random.split(key)
        setattr(self, f"{name}_orig", weight)
        setattr(self, f"{name}_u", _normalized(random.normal(key_u, (rows,), weight.dtype), eps))
        setattr(self, f"{name}_v", _normalized(random.normal(key_v, (cols,), weight.dtype), eps))

    def _matrix(self, weight):
        moved = fnp.moveaxis(weight, self.dim, 0)
        return fnp.reshape(moved, (moved.shape[0], -1))

    def weight(self, training: bool = False):
        """The normalised weight; in training mode the power iteration's new u and v are recorded."""
        w = getattr(self, f"{self.name}_orig")
        u, v = getattr(self, f"{self.name}_u"), getattr(self, f"{self.name}_v")
        matrix = self._matrix(w)
        if training and self.n_power_iterations:
            frozen = fnp.stop_gradient(matrix)
            for _ in range(self.n_power_iterations):
                v = _normalized(fnp.matmul(fnp.swapaxes(frozen, 0, 1), u), self.eps)
                u = _normalized(fnp.matmul(frozen, v), self.eps)
            record_state(type(self).__name__, getattr(self, f"{self.name}_u"), u)
            record_state(type(self).__name__, getattr(self, f"{self.name}_v"), v)
            u, v = fnp.stop_gradient(u), fnp.stop_gradient(v)
        return w / fnp.dot(u, fnp.matmul(matrix, v))

    def __call__(self, *args, **kwargs):
        training = kwargs.get("key") is not None if self.training is None else self.training
        return self.module.replace(**{self.name: self.weight(training)})(*args, **kwargs)


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> WeightNorm:
    """module with its `name` parameter split into a length weight_g and a direction weight_v
    (torch.nn.utils.weight_norm; g starts as the weight's norm, so the layer computes what it did)."""
    return WeightNorm(module, name, dim)


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None, *, key) -> SpectralNorm:
    """module with its `name` parameter divided by its spectral norm (torch.nn.utils.spectral_norm;
    dim defaults to 1 for transposed convolutions, else 0). key draws u and v's starting points."""
    return SpectralNorm(module, name, n_power_iterations, eps, dim, key=key)


def remove_weight_norm(module: WeightNorm) -> Module:
    """The wrapped layer with its current weight as a plain parameter."""
    return _unwrapped(module, WeightNorm, "weight_norm")


def remove_spectral_norm(module: SpectralNorm) -> Module:
    """The wrapped layer with its current (evaluation-mode) normalised weight as a plain parameter."""
    return _unwrapped(module, SpectralNorm, "spectral_norm")


def _unwrapped(module: Any, kind: type, what: str) -> Module:
    if not isinstance(module, kind):
        raise ValueError(f"remove_{what}: {type(module).__name__} is not a {what} wrapper")
    return module.module.replace(**{module.name: module.weight()})

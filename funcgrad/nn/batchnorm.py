"""Batch normalisation with running statistics (torch.nn.BatchNorm1d/2d/3d) and its functional
form (torch.nn.functional.batch_norm).

Training mode (a key given, as dropout's, or training=True) normalises with the batch's mean and
biased variance and records new running statistics through nn.state; evaluation mode (no key, or
training=False) normalises with the running ones. momentum=None averages every batch so far.
float16 and bfloat16 inputs are normalised in float32 and rounded once to their dtype (PyTorch's).
"""
from __future__ import annotations

from .. import dtypes
from .. import numpy as fnp
from ..errors import ShapeError
from .module import Module
from .state import record_state


class _BatchNorm(Module):
    """Normalises over every axis but the channel axis 1 of an input of rank in `ranks`."""
    ranks: tuple[int, ...] = ()
    counter_fields = ("num_batches_tracked",)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, training: bool | None = None, key=None,
                 dtype=dtypes.float32):
        if momentum is not None and not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum must be in [0, 1] or None, got {momentum}")
        self.num_features, self.eps, self.momentum, self.training = num_features, eps, momentum, training
        self.weight = fnp.ones(num_features, dtype) if affine else None
        self.bias = fnp.zeros(num_features, dtype) if affine else None
        self.running_mean = fnp.zeros(num_features, dtype) if track_running_stats else None
        self.running_var = fnp.ones(num_features, dtype) if track_running_stats else None
        # a float leaf, so models stay differentiable pytrees (exact to 2**53 batches)
        self.num_batches_tracked = fnp.zeros((), dtypes.float64) if track_running_stats else None

    def __call__(self, x, *, key=None):
        x = fnp.autocast_to_float32(fnp._float_arg(x))
        if x.ndim not in self.ranks or x.shape[1] != self.num_features:
            ranks = " or ".join(map(str, self.ranks)) if len(self.ranks) < 4 else f"{self.ranks[0]} or more"
            raise ShapeError(f"{type(self).__name__}({self.num_features}) needs an input of rank {ranks} with "
                             f"{self.num_features} channels on axis 1, got shape {x.shape}")
        narrow, x = x.dtype, fnp._widened(x)
        training = key is not None if self.training is None else self.training
        if training or self.running_mean is None:
            mean, var, count = self._statistics(x, type(self).__name__ if training else None)
            if training and self.running_mean is not None:
                self._record(mean, var * _bessel(count, var.dtype))
        else:
            mean, var = self.running_mean, self.running_var
        return fnp._narrowed(_normalized(x, mean, var, self.weight, self.bias, self.eps), narrow)

    def _statistics(self, x, training_caller: str | None):
        """Each channel's mean and biased variance, and the number of values they are over."""
        return _batch_statistics(x, training_caller) + (_per_channel_count(x),)

    def _record(self, mean, unbiased_var) -> None:
        count = self.num_batches_tracked + 1.0
        factor = 1.0 / count if self.momentum is None else self.momentum
        name = type(self).__name__
        record_state(name, self.running_mean, (1.0 - factor) * self.running_mean + factor * mean)
        record_state(name, self.running_var, (1.0 - factor) * self.running_var + factor * unbiased_var)
        record_state(name, self.num_batches_tracked, count)


class BatchNorm1d(_BatchNorm):
    """Over (N, C) or (N, C, L) inputs."""
    ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Over (N, C, H, W) inputs."""
    ranks = (4,)


class BatchNorm3d(_BatchNorm):
    """Over (N, C, D, H, W) inputs."""
    ranks = (5,)


def _per_channel_count(x) -> int:
    return x.size // x.shape[1] if x.shape[1] else 0


def _batch_statistics(x, training_caller: str | None):
    """The mean and biased variance (PyTorch's) of each channel of x (N, C, ...); a caller that
    trains needs two values per channel (the running variance is unbiased: it divides by n - 1)."""
    if training_caller is not None and _per_channel_count(x) < 2:
        raise ValueError(f"{training_caller}: expected more than 1 value per channel when training, got input of "
                         f"shape {x.shape}")
    axes = channel_axes(x.ndim)
    mean = fnp.mean(x, axis=axes)
    return mean, fnp.mean(fnp.square(x - _per_channel(mean, x.ndim)), axis=axes)


def _bessel(count, dtype):
    """n / (n - 1), which makes a biased variance of n values unbiased: a Python float for an int n,
    for an array n (a count summed over processes) an array of dtype."""
    if isinstance(count, int):
        return count / max(count - 1, 1)
    return fnp.astype(count / fnp.maximum(count - 1.0, 1.0), dtype)


def channel_axes(ndim: int) -> tuple[int, ...]:
    """Every axis but the channel axis 1."""
    return (0,) + tuple(range(2, ndim))


def _per_channel(v, ndim: int):
    return fnp.reshape(v, (1, -1) + (1,) * (ndim - 2))


def _normalized(x, mean, var, weight, bias, eps: float):
    mean, var = fnp._widened(mean), fnp._widened(var)  # half running statistics: eps added in float32
    out = (x - _per_channel(mean, x.ndim)) * _per_channel(1.0 / fnp.sqrt(var + eps), x.ndim)
    if weight is not None:
        out = out * _per_channel(weight, x.ndim)
    return out if bias is None else out + _per_channel(bias, x.ndim)


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """torch.nn.functional.batch_norm over (N, C, ...) input: training normalises each channel by
    the batch's mean and biased variance, evaluation by running_mean and running_var. Arrays are
    immutable, so training cannot update running statistics in place as PyTorch's does: pass None
    for them then (BatchNorm1d/2d/3d record them through nn.state), rather than lose the update."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    if x.ndim < 2:
        raise ShapeError(f"batch_norm expects (N, C, ...) input, got shape {x.shape}")
    x, running_mean, running_var, weight, bias = fnp.follow(x, running_mean, running_var, weight, bias)
    for name, v in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if v is not None and tuple(v.shape) != (x.shape[1],):
            raise ShapeError(f"batch_norm: {name} should have shape ({x.shape[1]},) for the {x.shape[1]} channels "
                             f"of input {x.shape}, got {tuple(v.shape)}")
    narrow, x = x.dtype, fnp._widened(x)
    if training:
        if running_mean is not None or running_var is not None:
            raise ValueError("batch_norm: running statistics cannot be updated in place (arrays are immutable); "
                             "pass None for them when training, or use nn.BatchNorm1d/2d/3d, which records them")
        mean, var = _batch_statistics(x, "batch_norm")
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var must be given in evaluation mode "
                             "(training=False)")
        mean, var = running_mean, running_var
    return fnp._narrowed(_normalized(x, mean, var, weight, bias, eps), narrow)

"""Batch normalisation with running statistics (torch.nn.BatchNorm1d/2d/3d).

Training mode (a key given, as dropout's, or training=True) normalises with the batch's mean and
biased variance and records new running statistics through nn.state; evaluation mode (no key, or
training=False) normalises with the running ones. momentum=None averages every batch so far.
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
            raise ShapeError(f"{type(self).__name__}({self.num_features}) needs an input of rank "
                             f"{' or '.join(map(str, self.ranks))} with {self.num_features} channels on axis 1, "
                             f"got shape {x.shape}")
        axes = (0,) + tuple(range(2, x.ndim))
        shape = (1, self.num_features) + (1,) * (x.ndim - 2)
        training = key is not None if self.training is None else self.training
        if training or self.running_mean is None:
            mean = fnp.mean(x, axis=axes)
            var = fnp.mean(fnp.square(x - fnp.reshape(mean, shape)), axis=axes)  # biased, as PyTorch
            if training and self.running_mean is not None:
                self._record(mean, var, x.size // self.num_features)
        else:
            mean, var = self.running_mean, self.running_var
        out = (x - fnp.reshape(mean, shape)) * fnp.reshape(1.0 / fnp.sqrt(var + self.eps), shape)
        if self.weight is not None:
            out = out * fnp.reshape(self.weight, shape) + fnp.reshape(self.bias, shape)
        return out

    def _record(self, mean, var, n: int) -> None:
        if n < 2:
            raise ValueError(f"{type(self).__name__}: expected more than 1 value per channel when training, got "
                             f"{n} (an unbiased running variance needs two)")
        count = self.num_batches_tracked + 1.0
        factor = 1.0 / count if self.momentum is None else self.momentum
        unbiased = var * (n / max(n - 1, 1))
        name = type(self).__name__
        record_state(name, self.running_mean, (1.0 - factor) * self.running_mean + factor * mean)
        record_state(name, self.running_var, (1.0 - factor) * self.running_var + factor * unbiased)
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

"""torch.nn.AdaptiveLogSoftmaxWithLoss (Grave et al. 2017, efficient softmax for large
vocabularies): the frequent classes (below cutoffs[0]) and one entry per cluster of rarer ones in a
head, each cluster's classes in a smaller tail projection of in_features / div_value^(i + 1)."""
from __future__ import annotations

from typing import NamedTuple

from .. import dtypes
from .. import numpy as fnp
from .. import random
from ..array import Array
from ..errors import ShapeError
from ._functional import log_softmax
from .layers import Linear, ModuleList, Sequential
from .module import Module


class ASMoutput(NamedTuple):
    output: Array  # each row's log-probability of its target
    loss: Array  # their negative mean


class AdaptiveLogSoftmaxWithLoss(Module):
    """head: Linear(in_features, cutoffs[0] + clusters); tail[i]: Linear(in_features, hidden) then
    Linear(hidden, cluster size), no biases (PyTorch's parameters and names). Every cluster's
    log-probabilities are computed for every row and the target's picked, so shapes never depend on
    the labels (jit, vmap); PyTorch runs each cluster on its rows only, the same numbers."""
    static_fields = ("in_features", "n_classes", "cutoffs", "div_value", "head_bias")

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 *, key, dtype=dtypes.float32):
        cutoffs = list(cutoffs)
        if not cutoffs or cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 \
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             f"order, where each value is between 1 and n_classes-1, got {cutoffs} for {n_classes}")
        self.in_features, self.n_classes, self.div_value, self.head_bias = in_features, n_classes, div_value, head_bias
        self.cutoffs = tuple(int(c) for c in cutoffs) + (n_classes,)
        keys = random.split(key, len(self.cutoffs))
        self.head = Linear(in_features, self.cutoffs[0] + len(self.cutoffs) - 1, bias=head_bias, key=keys[0],
                           dtype=dtype)
        tails = []
        for i in range(len(self.cutoffs) - 1):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            k1, k2 = random.split(keys[i + 1])
            tails.append(Sequential(Linear(in_features, hidden, bias=False, key=k1, dtype=dtype),
                                    Linear(hidden, size, bias=False, key=k2, dtype=dtype)))
        self.tail = ModuleList(tails)

    shortlist_size = property(lambda self: self.cutoffs[0])
    n_clusters = property(lambda self: len(self.cutoffs) - 1)

    def _rows(self, x, what: str):
        x = fnp.asarray(x)
        if x.ndim not in (1, 2) or x.shape[-1] != self.in_features:
            raise ShapeError(f"AdaptiveLogSoftmaxWithLoss.{what}: expected input of shape (N, {self.in_features}) "
                             f"or ({self.in_features},), got {tuple(x.shape)}")
        return x

    def log_prob(self, x) -> Array:
        """Log-probabilities of every class: (N, n_classes), or (n_classes,) for one row."""
        x = self._rows(x, "log_prob")
        head = log_softmax(self.head(x), axis=-1)
        parts = [head[..., :self.shortlist_size]]
        for i, tail in enumerate(self.tail.layers):
            cluster = head[..., self.shortlist_size + i:self.shortlist_size + i + 1]
            parts.append(cluster + log_softmax(tail(x), axis=-1))
        return fnp.concatenate(parts, axis=-1)

    def predict(self, x) -> Array:
        """The most probable class of each row."""
        return fnp.argmax(self.log_prob(x), axis=-1)

    def __call__(self, x, target) -> ASMoutput:
        x = self._rows(x, "forward")
        target = fnp.asarray(target)
        if target.ndim != x.ndim - 1 or (target.ndim and target.shape[0] != x.shape[0]):
            raise ShapeError(f"AdaptiveLogSoftmaxWithLoss: input {tuple(x.shape)} and target {tuple(target.shape)} "
                             f"should have the same batch size (a 1-D input takes a 0-d target)")
        known = fnp.concrete_or_none(target)
        if known is not None and ((known < 0).any() or (known >= self.n_classes).any()):
            raise IndexError(f"Target values should be in [0, {self.n_classes - 1}], got values from "
                             f"{known.min()} to {known.max()}")
        picked = fnp.take_along_axis(self.log_prob(x), fnp.expand_dims(fnp.astype(target, fnp.int64), -1), axis=-1)
        output = picked[..., 0]
        return ASMoutput(output, -fnp.mean(output))

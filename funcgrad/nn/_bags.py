"""torch.nn's embedding bags and bilinear forms: embedding_bag (the sum, mean or max of each bag
of looked-up rows, bags given as rows of a 2-D index array or by offsets into a flat one, with
per-sample weights and a padding index) and bilinear (x1^T A x2 + b), with their layers."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import errors as fg_errors
from .. import numpy as fnp
from .. import random
from . import _functional as F
from . import init
from .module import Module

__all__ = ["embedding_bag", "bilinear"]
LAYERS = ["EmbeddingBag", "Bilinear"]


def _bags(indices, offsets, include_last_offset: bool, fname: str):
    """(flat indices, each index's bag, number of bags) from 2-D indices (a bag per row) or 1-D
    indices with the offsets where bags start."""
    idx = fnp._index_array(indices)
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{fname}: offsets are for 1-D input; a 2-D input's rows are its bags")
        bags = idx.shape[0]
        owner = np.repeat(np.arange(bags), idx.shape[1])
        return fnp.reshape(idx, (-1,)), owner, bags
    if idx.ndim != 1 or offsets is None:
        raise fg_errors.ShapeError(f"{fname} takes 2-D indices (a bag per row), or 1-D indices with offsets; got "
                                   f"shape {idx.shape}" + ("" if offsets is not None or idx.ndim != 1 else
                                                           " without offsets"))
    starts = np.asarray(fnp._concrete(offsets, f"{fname}'s offsets")).astype(np.int64).reshape(-1)
    if starts.size == 0 or starts[0] != 0 or (np.diff(starts) < 0).any() or starts[-1] > idx.shape[0]:
        raise ValueError(f"{fname}: offsets must start at 0 and not decrease nor pass the {idx.shape[0]} indices, "
                         f"got {starts.tolist()}")
    if include_last_offset:  # CSR offsets; PyTorch's modes disagree on indices past the last (sum drops them, max not)
        if starts[-1] != idx.shape[0]:
            raise ValueError(f"{fname}: with include_last_offset the last offset ends the last bag and must be the "
                             f"number of indices, {idx.shape[0]}; got {starts[-1]}")
        starts = starts[:-1]
    owner = np.searchsorted(starts, np.arange(idx.shape[0]), side="right") - 1
    return idx, owner, starts.size


def embedding_bag(indices, weight, offsets=None, max_norm=None, norm_type: float = 2.0,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False, padding_idx: int | None = None):
    """torch.nn.functional.embedding_bag: for each bag the sum, mean or max of weight's rows at its
    indices (per_sample_weights scale them, in sum mode); indices at padding_idx are left out and
    an empty bag is zeros. max_norm, which renormalises the table in place in PyTorch, and
    scale_grad_by_freq raise (tables are immutable; no gradient is rescaled)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if max_norm is not None or scale_grad_by_freq:
        raise ValueError("embedding_bag: max_norm (an in-place renormalisation) and scale_grad_by_freq are not "
                         "supported; normalise the table functionally instead")
    weight = fnp.asarray(weight)
    idx, owner, bags = _bags(indices, offsets, include_last_offset, "embedding_bag")
    rows = F.embedding(idx, weight)  # (n, D), with embedding's range check
    keep = np.ones(owner.shape, bool) if padding_idx is None else \
        np.asarray(fnp._concrete(idx, "embedding_bag's indices")) != F._padding_index(padding_idx, weight.shape[0])
    if per_sample_weights is not None:
        if mode != "sum":
            raise ValueError(f"embedding_bag: per_sample_weights need mode='sum', got {mode!r}")
        scale = fnp.reshape(fnp.asarray(fnp.follow(weight, per_sample_weights)[1]), (-1,))
        if scale.shape != (owner.size,):
            raise fg_errors.ShapeError(f"embedding_bag: per_sample_weights of shape {scale.shape} for "
                                       f"{owner.size} indices")
        rows = rows * fnp.expand_dims(fnp.astype(scale, rows.dtype), -1)
    counts = np.bincount(owner[keep], minlength=bags).astype(np.float64)
    owner_kept = fnp.asarray(owner[keep], device=weight.device)
    picked = rows[fnp.asarray(np.flatnonzero(keep), device=weight.device)]
    empty = fnp.zeros((bags, weight.shape[1]), rows.dtype, device=weight.device)
    if mode == "max":
        out = fnp.full((bags, weight.shape[1]), -np.inf, rows.dtype, device=weight.device).at[owner_kept].max(picked)
        return fnp.where(fnp.asarray(counts[:, None] > 0, device=weight.device), out, empty)
    out = empty.at[owner_kept].add(picked)
    if mode == "mean":
        out = out / fnp.asarray(np.maximum(counts, 1)[:, None].astype(rows.dtype), device=weight.device)
    return out


def bilinear(x1, x2, weight, bias=None):
    """x1^T A_o x2 + b_o for each output o: x1 (..., in1), x2 (..., in2), weight (out, in1, in2)
    (torch.nn.functional.bilinear)."""
    x1, x2 = fnp._float_pair(x1, x2)
    weight = fnp.asarray(fnp.follow(x1, weight)[1])
    if weight.ndim != 3 or x1.shape[-1] != weight.shape[1] or x2.shape[-1] != weight.shape[2] \
            or x1.shape[:-1] != x2.shape[:-1]:
        raise fg_errors.ShapeError(f"bilinear: inputs {x1.shape} and {x2.shape} (the same leading shape) need a "
                                   f"weight (out, {x1.shape[-1]}, {x2.shape[-1]}), got {weight.shape}")
    out = fnp.einsum("...i,oij,...j->...o", x1, weight, x2)
    return out if bias is None else out + F._bias_like(bias, out)


class EmbeddingBag(Module):
    """torch.nn.EmbeddingBag: an N(0, 1) table (the padding_idx row zero), called as
    layer(indices, offsets=None, per_sample_weights=None)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 include_last_offset: bool = False, padding_idx: int | None = None, *, key, dtype=dtypes.float32):
        if max_norm is not None or scale_grad_by_freq:
            raise ValueError("EmbeddingBag: max_norm and scale_grad_by_freq are not supported (immutable tables)")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        self.mode, self.include_last_offset = mode, include_last_offset
        self.padding_idx = None if padding_idx is None else F._padding_index(padding_idx, num_embeddings)
        weight = init.normal(key, (num_embeddings, embedding_dim), dtype)
        self.weight = weight if padding_idx is None else weight.at[self.padding_idx].set(0)

    def __call__(self, indices, offsets=None, per_sample_weights=None, *, key=None):
        return embedding_bag(indices, self.weight, offsets, mode=self.mode, per_sample_weights=per_sample_weights,
                             include_last_offset=self.include_last_offset, padding_idx=self.padding_idx)


class Bilinear(Module):
    """torch.nn.Bilinear: weight (out, in1, in2) and bias uniform in +-1/sqrt(in1), as PyTorch's."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, *, key,
                 dtype=dtypes.float32):
        bound = 1 / math.sqrt(in1_features)
        k_w, k_b = random.split(key)
        self.weight = random.uniform(k_w, (out_features, in1_features, in2_features), dtype, -bound, bound)
        self.bias = random.uniform(k_b, (out_features,), dtype, -bound, bound) if bias else None

    def __call__(self, x1, x2, *, key=None):
        return bilinear(x1, x2, self.weight, self.bias)

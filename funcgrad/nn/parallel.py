"""Layers whose computation spans processes (import funcgrad.nn.parallel): Megatron-LM's
tensor-parallel layers over a mesh axis, and SyncBatchNorm for data parallelism.

    mesh = dist.make_mesh({"dp": 2, "tp": 2})
    model = parallel.shard(GPT(...), axis="tp")   # this rank's slices of every split weight
    loss, grads = fg.value_and_grad(parallel.sequence_loss)(model, batch)
    full = parallel.unshard(model)                # the ordinary model again, on every rank

The tp ranks hold the activations between layers alike, and the loss is one value held alike: each
rank's gradient is that loss's gradient for its slices (as on one process), not the sum of the
ranks' copies. So a column layer's input enters through pvary (the identity forward; its
gradient is summed over the ranks) and a row layer's output leaves through psum_invariant (summed
forward, passed through backward): an MLP or an attention block costs one all-reduce forward and
one backward. Parameters outside the split layers (norms, biases of row layers) are held alike
and get identical gradients on every rank.

SyncBatchNorm is data parallelism's: each rank has its own batch and loss, the statistics are the
whole batch's (psums), and psum's cotangent is psummed, so each rank's input gradient counts every
rank's loss, as PyTorch's SyncBatchNorm backward all-reduces; the data-parallel mean of the weight
gradients (all_reduce_tree) then gives the gradient of the mean loss.

Modules here import funcgrad.dist (the collectives); funcgrad.nn itself does not import this.
"""
from __future__ import annotations

from .. import dtypes
from .. import numpy as fnp
from ..dist import collectives as C
from . import _functional as F
from .batchnorm import _BatchNorm, _per_channel, _per_channel_count, channel_axes
from .layers import Embedding, Linear, MultiHeadAttention, TransformerBlock
from .module import Module, rebuilt

__all__ = ["ColumnParallelLinear", "RowParallelLinear", "VocabParallelEmbedding", "ParallelMultiHeadAttention",
           "vocab_parallel_cross_entropy", "shard", "unshard", "sequence_loss", "token_loss", "SyncBatchNorm",
           "convert_sync_batchnorm"]


def _module(cls, **fields) -> Module:
    """A module of class cls with these attributes (from existing arrays: no initialisation)."""
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def _become(module: Module, split: Module) -> None:
    """Fill a constructor's module with the attributes of split, this rank's slice of the layer."""
    for name, value in vars(split).items():
        setattr(module, name, value)


def _part(x, axis: str, dim: int, what: str):
    """This rank's slice of x along dim: the axis_index-th of axis_size equal parts."""
    n, i = C.axis_size(axis), int(C.axis_index(axis))
    if x.shape[dim] % n:
        raise ValueError(f"{what}: size {x.shape[dim]} does not split over the {n} ranks of axis {axis!r}")
    k = x.shape[dim] // n
    return fnp.take(x, fnp.arange(i * k, (i + 1) * k), axis=dim)


class ColumnParallelLinear(Module):
    """y = x @ W.T + b with W's rows (the output features) split over the axis: this rank computes
    out_features / n of the outputs, or all of them gathered with gather_output."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, axis: str = "tp",
                 gather_output: bool = False, key, dtype=dtypes.float32):
        full = Linear(in_features, out_features, bias, key=key, dtype=dtype)  # the unsplit layer's initialisation
        _become(self, ColumnParallelLinear.of(full, axis, gather_output))

    @staticmethod
    def of(linear: Linear, axis: str = "tp", gather_output: bool = False) -> "ColumnParallelLinear":
        """This rank's slice of an ordinary layer."""
        return _module(ColumnParallelLinear, in_features=linear.in_features, out_features=linear.out_features,
                       axis=axis, gather_output=gather_output,
                       weight=_part(linear.weight, axis, 0, "ColumnParallelLinear out_features"),
                       bias=None if linear.bias is None else _part(linear.bias, axis, 0, "ColumnParallelLinear bias"))

    def __call__(self, x, *, key=None):
        return self.local(C.pvary(x, self.axis))

    def local(self, x):
        """The layer on an input already entered into the tensor-parallel region (pvary)."""
        y = F.linear(x, self.weight, self.bias)
        return C.all_gather_invariant(y, self.axis, axis=-1, tiled=True) if self.gather_output else y

    def unsplit(self) -> Linear:
        gather = lambda a: C.all_gather_invariant(a, self.axis, axis=0, tiled=True)  # noqa: E731
        return _module(Linear, in_features=self.in_features, out_features=self.out_features,
                       weight=gather(self.weight), bias=None if self.bias is None else gather(self.bias))


class RowParallelLinear(Module):
    """y = x @ W.T + b with W's columns (the input features) split over the axis: this rank takes
    its in_features / n of the input (already split, as a column layer leaves it, unless
    input_is_parallel=False) and the partial products are summed; the bias is added once."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, axis: str = "tp",
                 input_is_parallel: bool = True, key, dtype=dtypes.float32):
        _become(self, RowParallelLinear.of(Linear(in_features, out_features, bias, key=key, dtype=dtype), axis,
                                           input_is_parallel))

    @staticmethod
    def of(linear: Linear, axis: str = "tp", input_is_parallel: bool = True) -> "RowParallelLinear":
        return _module(RowParallelLinear, in_features=linear.in_features, out_features=linear.out_features,
                       axis=axis, input_is_parallel=input_is_parallel,
                       weight=_part(linear.weight, axis, 1, "RowParallelLinear in_features"), bias=linear.bias)

    def __call__(self, x, *, key=None):
        if not self.input_is_parallel:
            x = _part(C.pvary(x, self.axis), self.axis, -1, "RowParallelLinear input")
        y = C.psum_invariant(F.linear(x, self.weight), self.axis)
        return y if self.bias is None else y + self.bias

    def unsplit(self) -> Linear:
        return _module(Linear, in_features=self.in_features, out_features=self.out_features,
                       weight=C.all_gather_invariant(self.weight, self.axis, axis=1, tiled=True), bias=self.bias)


class VocabParallelEmbedding(Module):
    """An embedding table with its rows (the vocabulary) split over the axis: each rank looks up
    the tokens in its range, zero elsewhere, and the ranks' lookups are summed. padding_idx (a
    global row) passes no gradient, as Embedding's."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, *, axis: str = "tp",
                 key, dtype=dtypes.float32):
        whole = Embedding(num_embeddings, embedding_dim, padding_idx, key=key, dtype=dtype)
        _become(self, VocabParallelEmbedding.of(whole, axis))

    @staticmethod
    def of(embedding: Embedding, axis: str = "tp") -> "VocabParallelEmbedding":
        return _module(VocabParallelEmbedding, num_embeddings=embedding.num_embeddings,
                       embedding_dim=embedding.embedding_dim, padding_idx=embedding.padding_idx, axis=axis,
                       weight=_part(embedding.weight, axis, 0, "VocabParallelEmbedding num_embeddings"))

    def __call__(self, indices, *, key=None):
        indices = fnp.asarray(indices)
        rows = self.weight.shape[0]
        local = indices - int(C.axis_index(self.axis)) * rows
        mine = (local >= 0) & (local < rows)
        found = fnp.where(mine[..., None], F.embedding(fnp.where(mine, local, 0), self.weight), 0.0)
        if self.padding_idx is not None:
            found = F._frozen_padding(found, indices, self.padding_idx)
        return C.psum_invariant(found, self.axis)

    def unsplit(self) -> Embedding:
        return _module(Embedding, num_embeddings=self.num_embeddings, embedding_dim=self.embedding_dim,
                       padding_idx=self.padding_idx, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                       weight=C.all_gather_invariant(self.weight, self.axis, axis=0, tiled=True))


def vocab_parallel_cross_entropy(logits, targets, axis: str = "tp", ignore_index: int = -100):
    """Mean cross-entropy of logits split over the vocabulary (this rank's (..., vocab / n) columns,
    as a column layer without gather_output gives them) without gathering them: the ranks combine
    their maxima, exponential sums and target logits, three small all-reduces."""
    logits = fnp.asarray(logits)
    targets = fnp.asarray(targets)
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets of shape {targets.shape} do not match logits of shape {logits.shape} "
                         f"(one target per row of the last axis)")
    columns = logits.shape[-1]
    local = targets - int(C.axis_index(axis)) * columns
    mine = (local >= 0) & (local < columns)
    peak = fnp.stop_gradient(C.pmax(fnp.max(logits, axis=-1), axis))  # for stability only
    shifted = logits - peak[..., None]
    total = C.psum_invariant(fnp.sum(fnp.exp(shifted), axis=-1), axis)
    picked = fnp.take_along_axis(shifted, fnp.where(mine, local, 0)[..., None], axis=-1)[..., 0]
    target_logit = C.psum_invariant(fnp.where(mine, picked, 0.0), axis)
    counted = targets != ignore_index
    losses = fnp.where(counted, fnp.log(total) - target_logit, 0.0)
    return fnp.sum(losses) / fnp.maximum(fnp.sum(counted), 1)


class ParallelMultiHeadAttention(Module):
    """Self-attention with the heads split over the axis: q, k and v are column layers (this
    rank's heads), the output projection a row layer; the input enters the region once."""

    def __init__(self, attention: MultiHeadAttention, axis: str = "tp"):
        n = C.axis_size(axis)
        if attention.num_heads % n:
            raise ValueError(f"ParallelMultiHeadAttention: {attention.num_heads} heads do not split over the {n} "
                             f"ranks of axis {axis!r}")
        self.embed_dim, self.num_heads, self.dropout, self.axis = attention.embed_dim, attention.num_heads // n, \
            attention.dropout, axis
        self.q_proj, self.k_proj, self.v_proj = (ColumnParallelLinear.of(p, axis) for p in
                                                 (attention.q_proj, attention.k_proj, attention.v_proj))
        self.out_proj = RowParallelLinear.of(attention.out_proj, axis)

    def __call__(self, query, key_value=None, *, mask=None, causal: bool = False, key=None):
        if key_value is not None:
            raise ValueError("ParallelMultiHeadAttention is self-attention: key_value is not supported")
        if key is not None and self.dropout:
            raise ValueError("ParallelMultiHeadAttention has no attention dropout yet: make the model with dropout=0")
        x = C.pvary(query, self.axis)
        b, length, _ = x.shape
        heads = lambda t: fnp.transpose(fnp.reshape(t, (b, length, self.num_heads, -1)), (0, 2, 1, 3))  # noqa: E731
        q, k, v = heads(self.q_proj.local(x)), heads(self.k_proj.local(x)), heads(self.v_proj.local(x))
        out = F.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=causal)
        return self.out_proj(fnp.reshape(fnp.transpose(out, (0, 2, 1, 3)), (b, length, -1)))

    def unsplit(self) -> MultiHeadAttention:
        return _module(MultiHeadAttention, embed_dim=self.embed_dim, num_heads=self.num_heads * C.axis_size(self.axis),
                       dropout=self.dropout, q_proj=self.q_proj.unsplit(), k_proj=self.k_proj.unsplit(),
                       v_proj=self.v_proj.unsplit(), out_proj=self.out_proj.unsplit())


# ---- whole models -------------------------------------------------------------------------------
def shard(model, axis: str = "tp", vocab_parallel: bool | None = True):
    """This rank's tensor-parallel form of an ordinary model (any pytree of modules): every
    TransformerBlock's attention splits its heads and its MLP is a column then a row layer; a
    model with token_embedding and head (the GPT) gets a vocabulary-parallel embedding and head
    (with vocab_parallel=False, a head whose logits are gathered, for an ordinary loss; with None,
    embedding and head stay whole on every rank, for a vocabulary the ranks do not divide).
    Every rank must pass the same model (the same initialisation or checkpoint)."""
    def rule(node):
        if isinstance(node, TransformerBlock):
            return node.replace(attn=ParallelMultiHeadAttention(node.attn, axis),
                                fc1=ColumnParallelLinear.of(node.fc1, axis), fc2=RowParallelLinear.of(node.fc2, axis))
        if vocab_parallel is not None and isinstance(getattr(node, "token_embedding", None), Embedding) and \
                isinstance(getattr(node, "head", None), Linear):
            children = {name: rebuilt(value, rule) for name, value in vars(node).items()}
            return node.replace(**{**children, "token_embedding": VocabParallelEmbedding.of(node.token_embedding, axis),
                                   "head": ColumnParallelLinear.of(node.head, axis, gather_output=not vocab_parallel)})
        return None
    return rebuilt(model, rule)


def unshard(model):
    """The ordinary model that a sharded one splits (every rank of the axis gets all of it)."""
    split = (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding, ParallelMultiHeadAttention)
    return rebuilt(model, lambda node: node.unsplit() if isinstance(node, split) else None)


def sequence_loss(model, batch, key=None):
    """funcgrad.models.gpt.sequence_loss for a GPT sharded with vocab_parallel=True: next-token
    cross-entropy over the answer positions, from logits no rank holds whole."""
    tokens, targets = batch
    return token_loss(model(tokens, key=key), targets, model.head.axis), {}


def token_loss(logits, targets, axis: str = "tp"):
    """funcgrad.models.gpt.token_loss of logits split over the vocabulary along axis."""
    return vocab_parallel_cross_entropy(fnp.reshape(logits, (-1, logits.shape[-1])), fnp.reshape(targets, (-1,)), axis)


class SyncBatchNorm(_BatchNorm):
    """torch.nn.SyncBatchNorm: batch normalisation of inputs (N, C, ...) whose training statistics
    are the whole batch's over the processes of a mesh axis (or the members of a vmap with that
    axis_name): the count, sum and squared deviations of every rank's shard, summed. Ranks may hold
    batches of different sizes (or none). Every rank normalises alike and records the same running
    statistics; evaluation mode uses them and needs no collective."""
    ranks = tuple(range(2, 33))

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, axis_name: str | tuple[str, ...] = "dp",
                 training: bool | None = None, key=None, dtype=dtypes.float32):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, training=training, dtype=dtype)
        self.axis_name = axis_name

    def _statistics(self, x, training_caller: str | None):
        n = _per_channel_count(x)
        if training_caller is not None and n < 2 and C.axis_size(self.axis_name) == 1:
            raise ValueError(f"{training_caller}: expected more than 1 value per channel when training, got input "
                             f"of shape {x.shape} on the only rank of axis {self.axis_name!r}")
        axes = channel_axes(x.ndim)
        count = C.psum(fnp.asarray(float(n), dtypes.float64), self.axis_name)  # exact past float32's 2**24

        def mean_of(values):
            return fnp.astype(C.psum(fnp.sum(values, axis=axes), self.axis_name) / count, x.dtype)
        mean = mean_of(x)
        return mean, mean_of(fnp.square(x - _per_channel(mean, x.ndim))), count


def convert_sync_batchnorm(model, axis_name: str | tuple[str, ...] = "dp"):
    """model with every BatchNorm1d/2d/3d replaced by a SyncBatchNorm over axis_name that keeps its
    parameters, running statistics and settings (torch.nn.SyncBatchNorm.convert_sync_batchnorm)."""
    def synced(node):
        if isinstance(node, _BatchNorm) and not isinstance(node, SyncBatchNorm):
            return _module(SyncBatchNorm, **{**vars(node), "axis_name": axis_name})
        return None
    return rebuilt(model, synced)

"""Hybrid layouts: a job's processes as a dp x pp x tp mesh, and the training step on it.

    layout = Layout(nproc=8, tp=2, pp=2, zero=1, microbatches=4, schedule="1f1b")   # dp = 2
    layout.check(model)                       # a layout that cannot split the model: a one-line error
    trainer = LayoutTrainer(layout, model, optim.adamw(1e-3), token_loss)         # after init_process_group
    loss = trainer.step((tokens, targets))    # this data-parallel replica's batch; the mean loss over dp
    model = trainer.model()                   # the ordinary model, whole, on every process

The mesh puts tp on the fastest axis (tensor-parallel partners are neighbouring ranks, on one node
when the job spans several, as Megatron-LM places them), then pp, then dp. Each process holds its
tensor-parallel slices (funcgrad.nn.parallel) of its pipeline stage (funcgrad.dist.pipeline);
gradients are averaged over dp, or sharded by ZeRO (funcgrad.dist.zero).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import optim
from ..array import Array
from ..jit import jit
from ..nn import TransformerBlock
from ..nn import parallel
from ..tree import tree_leaves, tree_map, tree_structure
from ..vjp import value_and_grad
from . import collectives as C
from . import pipeline, zero

__all__ = ["Layout", "LayoutTrainer", "map_model_trees", "zip_model_trees"]


class Layout:
    """nproc processes as dp x pp x tp: tp-way tensor parallelism, a pp-stage pipeline over
    `microbatches` micro-batches, data parallelism over what remains, ZeRO stage `zero` (0: none)."""

    def __init__(self, nproc: int, tp: int = 1, pp: int = 1, zero: int = 0, microbatches: int = 1,
                 schedule: str = "1f1b"):
        for name, value in (("nproc", nproc), ("tp", tp), ("pp", pp), ("microbatches", microbatches)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if nproc % (tp * pp):
            raise ValueError(f"{nproc} processes do not split into tp={tp} x pp={pp} groups: nproc must be a "
                             f"multiple of tp * pp = {tp * pp}")
        if zero not in (0, 1, 2, 3):
            raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {zero!r}")
        if schedule not in pipeline.SCHEDULES:
            raise ValueError(f"unknown pipeline schedule {schedule!r}: use one of {pipeline.SCHEDULES}")
        self.nproc, self.tp, self.pp, self.zero = nproc, tp, pp, zero
        self.dp, self.microbatches, self.schedule = nproc // (tp * pp), microbatches, schedule

    def __repr__(self) -> str:
        return (f"Layout(dp={self.dp}, tp={self.tp}, pp={self.pp}, zero={self.zero}, "
                f"microbatches={self.microbatches}, schedule={self.schedule!r})")

    def splits_vocab(self, model) -> bool:
        """Whether tp splits model's embedding and head (tp divides the vocabulary); else they stay
        whole on every tp process."""
        vocab = getattr(getattr(model, "head", None), "out_features", None)
        return self.tp > 1 and vocab is not None and vocab % self.tp == 0

    def part(self, model, zero_stage: int | None = None, stage: bool = True):
        """The part of model (or of a tree shaped like it: gradients, Adam's moments) that the
        current mesh position holds: its tp slices, its pp stage, its ZeRO-3 shards. Only slicing:
        no collective runs, so a Place gives any rank's part in one process."""
        zero_stage = self.zero if zero_stage is None else zero_stage
        if self.tp > 1:
            model = parallel.shard(model, "tp", vocab_parallel=True if self.splits_vocab(model) else None)
        if self.pp > 1 and stage:
            model = pipeline.stage(model, "pp")
        if zero_stage == 3:
            model = (model.replace(layers=[zero.shard(layer, "dp") for layer in model.layers]) if self.pp > 1
                     else zero.shard(model, "dp"))
        return model

    def state_part(self, state, model):
        """The part of an optimiser state of the whole model (its inner optimiser's, as init(model)
        gives it) that the current mesh position holds under this layout's ZeRO stage: every
        subtree shaped like the model is split as the model is (flat shards of it at stages 1
        and 2); counts and other leaves are whole everywhere."""
        inner = map_model_trees(state, model, self.tree_part)
        return zero.ZeroState(inner) if self.zero else inner

    def tree_part(self, tree):
        """The part of one subtree of an optimiser state shaped like the model (Adam's first
        moments, say) that the current mesh position holds."""
        if self.zero in (1, 2):
            return zero.shards_of(self.part(tree, zero_stage=0), "dp")
        return self.part(tree)

    def dp_index(self, rank: int) -> int:
        """The data-parallel replica that the job's rank belongs to (its data shard)."""
        return rank // (self.pp * self.tp)

    @property
    def axes(self) -> dict[str, int]:
        return {"dp": self.dp, "pp": self.pp, "tp": self.tp}

    def check(self, model, batch_size: int | None = None) -> None:
        """Raise, naming the size, when this layout cannot split model (or a batch of batch_size)."""
        modules = _modules(model)
        noisy = [m for m in modules if _dropout_rate(m) > 0]
        if noisy:
            raise ValueError(f"{type(noisy[0]).__name__} has dropout {noisy[0].dropout}: a layout's steps pass no random "
                             f"keys yet, so train with dropout=0")
        blocks = [m for m in modules if isinstance(m, TransformerBlock)]
        if self.tp > 1:
            if not blocks:
                raise ValueError(f"tp={self.tp} splits transformer blocks; {type(model).__name__} has none")
            heads, hidden = blocks[0].attn.num_heads, blocks[0].fc1.out_features
            if heads % self.tp or hidden % self.tp:
                raise ValueError(f"tp={self.tp} must divide the attention heads ({heads}) and the MLP's hidden size "
                                 f"({hidden})")
        if self.pp > 1:
            layers = len(pipeline._layers(model))
            if self.pp > layers:
                raise ValueError(f"pp={self.pp} stages exceed the model's {layers} blocks: each stage needs one")
        if batch_size is not None and batch_size % self.microbatches:
            raise ValueError(f"the batch of {batch_size} does not split into {self.microbatches} equal micro-batches")


class LayoutTrainer:
    """One process's part of the model and of the optimiser state under a layout, and its step.
    loss_fn(outputs, targets) is the model's mean loss (funcgrad.models.gpt.token_loss); with
    tp > 1 and a vocabulary that tp divides, the logits are split over the vocabulary and the loss
    is computed without gathering them (nn.parallel.token_loss); otherwise the embedding and the
    head stay whole on every tp process."""

    def __init__(self, layout: Layout, model, optimizer: optim.GradientTransformation, loss_fn: Callable,
                 use_jit: bool = True):
        layout.check(model)
        self.layout = layout
        from . import make_mesh  # the package's: the mesh is closed with the process group
        self.mesh = make_mesh(layout.axes)
        self.like = tree_map(_shape_only, model)  # the whole model's structure, holding no memory
        self.inner = optimizer
        with self.mesh:
            self.params = layout.part(model)
            # this tp rank's whole model, holding no memory: where model() gathers the stages
            self.template = tree_map(_shape_only, layout.part(self.like, zero_stage=0, stage=False))
        split_vocab = layout.splits_vocab(model)
        self.loss_fn = (lambda y, t: parallel.token_loss(y, t, "tp")) if split_vocab else loss_fn
        if layout.pp > 1:
            self.pipe = pipeline.Pipeline(self.loss_fn, axis="pp", microbatches=layout.microbatches,
                                          schedule=layout.schedule, jit=use_jit)
        self.optimizer = zero.zero(optimizer, stage=layout.zero, axis="dp") if layout.zero else optimizer
        self.opt_state = self.optimizer.init(self.params)
        self._grad = (jit if use_jit else (lambda f: f))(value_and_grad(self._loss))
        self._update = (jit if use_jit else (lambda f: f))(self._apply)

    def _loss(self, params, batch):
        inputs, targets = batch
        return self.loss_fn(params(inputs), targets)

    def _apply(self, params, opt_state, grads):
        if self.layout.zero == 0 and self.layout.dp > 1:
            grads = C.pmean(grads, "dp")
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state

    def step(self, batch):
        """One optimiser step on this data-parallel replica's batch; returns the mean loss over dp."""
        with self.mesh:
            if self.layout.pp > 1:
                loss, grads = self.pipe.value_and_grad(self.params, batch)
            else:
                loss, grads = self._grad(self.params, batch)
            self.params, self.opt_state = self._update(self.params, self.opt_state, grads)
            return C.pmean(loss, "dp") if self.layout.dp > 1 else loss

    def model(self):
        """The ordinary model with the trained parameters, on every process (the layout's collectives
        gather it: every process calls this)."""
        with self.mesh:
            part = self.params
            if self.layout.zero == 3:
                part = (part.replace(layers=[zero.unshard(layer) for layer in part.layers]) if self.layout.pp > 1
                        else zero.unshard(part))
            if self.layout.pp > 1:
                part = pipeline.merge(_all_stages(part, self.template, self.mesh), like=self.template)
            return parallel.unshard(part) if self.layout.tp > 1 else part


def map_model_trees(state, model, fn):
    """state with fn applied to every subtree shaped like model (an optimiser's moments)."""
    return zip_model_trees(state, state, model, lambda whole, _: fn(whole), lambda leaf, _: leaf)


def zip_model_trees(state, other, model, on_tree, on_leaf):
    """Walk state and other (a state of the same form: NamedTuples, tuples, lists, dicts) together:
    at a subtree of state shaped like model, on_tree(subtree, other's subtree there); at any other
    leaf, on_leaf(leaf, other's leaf). Rebuilds state's containers around the results."""
    shape = tree_structure(model)

    def walk(a, b):
        if tree_structure(a) == shape:
            return on_tree(a, b)
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(walk(x, y) for x, y in zip(a, b, strict=True)))
        if isinstance(a, (tuple, list)):
            return type(a)(walk(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, dict):
            return {k: walk(v, b[k]) for k, v in a.items()}
        return on_leaf(a, b)
    return walk(state, other)


def _shape_only(x):
    return Array(np.broadcast_to(np.zeros((), x.dtype), tuple(x.shape)))


def _dropout_rate(module) -> float:
    rate = getattr(module, "dropout", 0)
    return rate if isinstance(rate, (int, float)) else 0


def _modules(model) -> list:
    return [m for leaf in tree_leaves(model, is_leaf=lambda x: hasattr(x, "modules")) if hasattr(leaf, "modules")
            for m in leaf.modules()]


def _all_stages(stage: pipeline.Stage, template, mesh) -> list[pipeline.Stage]:
    """Every stage of the pipeline, on every process of the pp axis: each broadcasts its own into
    the others' copies of the template's stage (the shapes, without memory)."""
    group = mesh.group("pp")
    mine = group.rank
    return [group.broadcast_tree(stage if s == mine else other, s)
            for s, other in enumerate(pipeline.split(template, group.world_size))]

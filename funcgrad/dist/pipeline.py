"""Pipeline parallelism over a mesh axis (from funcgrad.dist import pipeline): a model's layers
split into consecutive stages, one per rank of the axis; a batch split into micro-batches flows
through them, activations forward and their gradients back by point-to-point messages.

    mesh = dist.make_mesh({"dp": 2, "pp": 2})
    stage = pipeline.stage(GPT(...), axis="pp")          # this rank's layers: embedding first, head last
    pipe = pipeline.Pipeline(loss_fn, axis="pp", microbatches=4, schedule="1f1b")
    loss, grads = pipe.value_and_grad(stage, (tokens, targets))   # grads: this stage's

The objective is the mean over the micro-batches of loss_fn(outputs, targets): for a loss that
averages over equal micro-batches, the full batch's loss, so the gradients are the unsplit model's.
The schedules have torch.distributed.pipelining's names: "gpipe" runs every micro-batch forward,
then every one backward, so each stage holds M micro-batches of activations; "1f1b" (PipeDream-
Flush) starts the backward passes as soon as the last stage can, so stage s holds at most P - s.
Both leave the bubble (P-1)/(M+P-1) idle. remat=True keeps only a micro-batch's input and
recomputes the stage's forward pass in its backward pass. jit=True compiles a stage's forward
pass and (recomputing the forward, as remat) its backward pass, and the last stage's loss with
its gradients in one program: fewer, fused operations per micro-batch.

Sends are asynchronous (isend): a stage never waits for its neighbour to take an activation,
which lets 1F1B's interleaved sends and receives run without deadlock; every wait is bounded by
the group's timeout.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..custom import checkpoint
from ..jit import jit as compile_jit
from ..nn.layers import Sequential
from ..nn.module import Module
from ..tree import tree_leaves, tree_map
from ..vjp import vjp
from . import mesh as M

__all__ = ["Stage", "Pipeline", "split", "merge", "stage", "schedule", "SCHEDULES"]

SCHEDULES = ("gpipe", "1f1b")


class Stage(Module):
    """Consecutive layers of a model: stage `index` of `count`, whose first layer is the model's
    layer `start`. Called, it applies its layers in order."""

    def __init__(self, layers: Sequence, index: int, count: int, start: int):
        self.layers, self.index, self.count, self.start = list(layers), index, count, start

    def __call__(self, x, *, key=None):
        for layer in self.layers:
            x = layer(x)
        return x


def _layers(model) -> list:
    """The model as a list of layers applied in order: a Sequential's, or model.sequential()'s
    (the GPT's: its blocks, the embedding riding with the first, the head with the last)."""
    if isinstance(model, Sequential):
        return list(model.layers)
    if callable(getattr(model, "sequential", None)):
        return list(model.sequential().layers)
    raise TypeError(f"pipeline.split takes an nn.Sequential or a model with a sequential() method (the GPT), "
                    f"got {type(model).__name__}")


def split(model, stages: int) -> list[Stage]:
    """The model's layers in `stages` consecutive pieces of as equal a number of layers as can be."""
    layers = _layers(model)
    if not isinstance(stages, int) or isinstance(stages, bool) or stages < 1:
        raise ValueError(f"the number of stages must be a positive integer, got {stages!r}")
    if stages > len(layers):
        raise ValueError(f"cannot split {len(layers)} layers ({type(model).__name__}) into {stages} pipeline stages: "
                         f"each stage needs at least one")
    bounds = np.cumsum([0] + [len(part) for part in np.array_split(np.arange(len(layers)), stages)])
    return [Stage(layers[a:b], i, stages, int(a)) for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]


def merge(stages: Sequence[Stage], like=None):
    """The model that split divided: a Sequential of every stage's layers, or like.from_sequential
    of it when like (a model of the same kind, e.g. the GPT) is given. stages may also be the
    gradients of the stages."""
    stages = list(stages)
    count = len(stages)
    for i, s in enumerate(stages):
        if not isinstance(s, Stage) or s.index != i or s.count != count:
            raise ValueError(f"merge needs stages 0..{count - 1} of {count} in order; place {i} holds "
                             f"{f'stage {s.index} of {s.count}' if isinstance(s, Stage) else type(s).__name__}")
    seq = Sequential([layer for s in stages for layer in s.layers])
    return seq if like is None else like.from_sequential(seq)


def stage(model, axis: str = "pp") -> Stage:
    """This rank's stage of the model: the axis_index(axis)-th of axis_size(axis)."""
    mesh = M.current()
    return split(model, mesh.axis_size(axis))[mesh.axis_index(axis)]


def schedule(name: str, stages: int, index: int, microbatches: int) -> list[tuple[str, int]]:
    """The order of stage index's forward ("F", j) and backward ("B", j) passes over micro-batches j."""
    m = microbatches
    if name == "gpipe":
        return [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
    if name == "1f1b":
        warmup = min(stages - 1 - index, m)
        steady = [step for j in range(m - warmup) for step in (("F", warmup + j), ("B", j))]
        return [("F", j) for j in range(warmup)] + steady + [("B", j) for j in range(m - warmup, m)]
    raise ValueError(f"unknown pipeline schedule {name!r}: use one of {SCHEDULES}")


class Pipeline:
    """A pipelined value_and_grad over the mesh axis `axis`, for loss_fn(outputs, targets) -> a
    scalar. After each call, stats holds 'in_flight' (the most micro-batches whose activations this
    stage held at once), 'sent_bytes' (what this stage sent) and 'compute_seconds' (its time in
    forward and backward passes, not waiting: the rest of the step is its share of the bubble)."""

    def __init__(self, loss_fn: Callable, *, axis: str = "pp", microbatches: int = 1, schedule: str = "1f1b",
                 remat: bool = False, jit: bool = False):
        if not isinstance(microbatches, int) or isinstance(microbatches, bool) or microbatches < 1:
            raise ValueError(f"microbatches must be a positive integer, got {microbatches!r}")
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown pipeline schedule {schedule!r}: use one of {SCHEDULES}")
        self.loss_fn, self.axis, self.microbatches, self.schedule = loss_fn, axis, microbatches, schedule
        self.forward = checkpoint(_apply) if remat else _apply
        self.compiled = _Compiled(self._loss) if jit else None
        self.stats: dict[str, int] = {}

    def value_and_grad(self, stage: Stage, batch):
        """(the loss, on every rank of the axis; this stage's gradients). batch is (inputs,
        targets), the same on every rank of the axis: the first stage reads the inputs, the last
        the targets; both split along their first axis into the micro-batches."""
        group = M.current().group(self.axis)
        n, s, m = group.world_size, group.rank, self.microbatches
        if not isinstance(stage, Stage) or (stage.index, stage.count) != (s, n):
            got = f"stage {stage.index} of {stage.count}" if isinstance(stage, Stage) else type(stage).__name__
            raise ValueError(f"this rank is stage {s} of {n} along axis {self.axis!r} but was given {got}: "
                             f"use pipeline.stage(model, {self.axis!r})")
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            raise TypeError(f"the pipeline's batch must be (inputs, targets), got {type(batch).__name__}"
                            f"{f' of {len(batch)}' if isinstance(batch, (tuple, list)) else ''}")
        inputs, targets = batch
        first, last = s == 0, s == n - 1
        xs = _micro(inputs, m, "inputs") if first else None
        ts = _micro(targets, m, "targets") if last else None
        prev, nxt = s - 1, s + 1  # places in the axis's group
        channel = _Channel(group)
        backward, losses, grads, in_flight, busy = {}, [], None, 0, 0.0
        for kind, j in schedule(self.schedule, n, s, m):
            if kind == "F":
                x = xs[j] if first else channel.recv(prev)
                started = time.perf_counter()
                if self.compiled is not None:
                    y, backward[j] = self.compiled.forward(stage, x, ts[j] if last else None, first, last, m)
                    if last:
                        losses.append(y)
                elif last:
                    loss, backward[j] = vjp(self._loss(ts[j]), stage, x)
                    losses.append(loss)
                elif first:
                    y, pullback = vjp(lambda p, x=x: self.forward(p, x), stage)
                    backward[j] = lambda g, pullback=pullback: (*pullback(g), None)
                else:
                    y, backward[j] = vjp(self.forward, stage, x)
                busy += time.perf_counter() - started
                if not last:
                    channel.send(y, nxt)
                in_flight = max(in_flight, len(backward))
            else:
                seed = fnp.full_like(losses[j], 1.0 / m) if last else channel.recv_back(nxt)
                started = time.perf_counter()
                g_stage, g_x = backward.pop(j)(seed)
                grads = g_stage if grads is None else tree_map(lambda a, b: a + b, grads, g_stage)
                busy += time.perf_counter() - started
                if not first:
                    channel.send_back(g_x, prev)
        channel.finish()
        total = sum(losses[1:], losses[0]) / m if last else fnp.zeros((), _float_of(stage))
        self.stats = {"in_flight": in_flight, "sent_bytes": channel.sent_bytes, "compute_seconds": busy}
        return group.broadcast(total, n - 1), grads

    def _loss(self, targets):
        def objective(stage, x):
            loss = self.loss_fn(self.forward(stage, x), targets)
            if not hasattr(loss, "shape") or loss.size != 1 or not dtypes.is_float(loss.dtype):
                raise TypeError(f"the pipeline's loss_fn must return a floating-point scalar, got "
                                f"{getattr(loss, 'shape', type(loss).__name__)}")
            return fnp.reshape(loss, ())
        return objective


def _apply(stage: Stage, x):
    return stage(x)


class _Compiled:
    """The jitted passes of Pipeline(jit=True). forward() returns (output, backward): the last
    stage's loss with its gradients already taken (the seed 1/M is known in advance), the others'
    activations, their backward recomputing the forward inside one compiled program."""

    def __init__(self, loss_of: Callable):
        def last(stage, x, targets, seed):
            loss, pullback = vjp(loss_of(targets), stage, x)
            return loss, pullback(seed)

        def middle(stage, x, g):
            return vjp(_apply, stage, x)[1](g)

        def first(stage, x, g):
            return vjp(lambda p: _apply(p, x), stage)[1](g)[0]
        self.last, self.middle, self.first = compile_jit(last), compile_jit(middle), compile_jit(first)
        self.apply = compile_jit(_apply)

    def forward(self, stage, x, targets, is_first: bool, is_last: bool, m: int):
        if is_last:
            loss, grads = self.last(stage, x, targets, fnp.full((), 1.0 / m, _float_of(stage)))
            return loss, lambda seed: grads
        y = self.apply(stage, x)
        if is_first:
            return y, lambda g: (self.first(stage, x, g), None)
        return y, lambda g: self.middle(stage, x, g)


def _micro(tree, m: int, what: str) -> list:
    """tree's micro-batches: m equal slices of every leaf's first axis."""
    leaves = tree_leaves(tree)
    for leaf in leaves:
        shape = tuple(np.shape(leaf))
        if not shape or shape[0] % m:
            raise ValueError(f"the batch's {what} of shape {shape} do not split into {m} equal micro-batches "
                             f"along their first axis")
    k = np.shape(leaves[0])[0] // m if leaves else 0
    return [tree_map(lambda a, j=j: fnp.asarray(a)[j * k:(j + 1) * k], tree) for j in range(m)]


def _float_of(stage: Stage):
    floats = [p.dtype for p in tree_leaves(stage) if dtypes.is_float(p.dtype)]
    return floats[0] if floats else dtypes.default_float


class _Channel:
    """A stage's messages to its neighbours within one call: activations forward, gradients back.
    The first activation of a call carries its shape and dtype ahead (a stage cannot know what the
    one before it makes); a gradient has the shape of the activation it belongs to."""
    HEADER = 12  # int64s: the dtype's name (16 bytes), ndim, up to 9 dimensions

    def __init__(self, group):
        self.group, self.sent_bytes, self.works = group, 0, []
        self.sent_spec = self.received_spec = self.output_spec = None

    def send(self, y, dst: int) -> None:
        if self.sent_spec is None:
            self.sent_spec = (tuple(y.shape), np.dtype(y.dtype))
            self._isend(_encode(*self.sent_spec), dst)
        elif (tuple(y.shape), np.dtype(y.dtype)) != self.sent_spec:
            raise ValueError(f"stage {self.group.rank} made an activation of shape {tuple(y.shape)} {y.dtype} after "
                             f"one of {self.sent_spec[0]} {self.sent_spec[1]}: micro-batches must be alike")
        self._isend(y, dst)

    def recv(self, src: int):
        if self.received_spec is None:
            self.received_spec = _decode(self._recv(src, np.zeros(self.HEADER, np.int64)))
        return self._recv(src, _Like(*self.received_spec))

    def send_back(self, g, dst: int) -> None:
        self._isend(g, dst)

    def recv_back(self, src: int):
        return self._recv(src, _Like(*self.sent_spec))

    def _isend(self, x, dst: int) -> None:
        self.works.append(self.group.isend(x, dst))
        self.sent_bytes += int(np.asarray(x).nbytes) if isinstance(x, np.ndarray) else x.size * x.dtype.itemsize

    def _recv(self, src: int, like):
        return self.group.recv(src, like)

    def finish(self) -> None:
        for work in self.works:
            work.wait()


class _Like:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _encode(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if len(shape) > _Channel.HEADER - 3:
        raise ValueError(f"a pipeline activation has at most {_Channel.HEADER - 3} dimensions, got shape {shape}")
    header = np.zeros(_Channel.HEADER, np.int64)
    header[:2] = np.frombuffer(dtype.name.encode().ljust(16, b"\0"), np.int64)
    header[2], header[3:3 + len(shape)] = len(shape), shape
    return header


def _decode(header) -> tuple[tuple[int, ...], np.dtype]:
    header = np.asarray(header)
    name = header[:2].tobytes().rstrip(b"\0").decode()
    return tuple(int(d) for d in header[3:3 + int(header[2])]), dtypes.canonicalize(name)

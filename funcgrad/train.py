"""A reusable training loop: epochs, evaluation, schedules, a checkpoint every epoch, exact resume.

    result = fit(model, optim.adamw(1e-3), train_loader, classification_loss, epochs=10,
                 eval_loader=test_loader, checkpoint_dir="runs/mlp", resume=True)

The loop is functional: each step computes (loss, metrics) and gradients with value_and_grad,
updates the optimiser state and returns a new model. The randomness of step s is
fold_in(key, s), so a resumed run draws exactly what an uninterrupted one would.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from . import amp, dtypes, nn, random
from . import checkpoint as ckpt
from . import numpy as fnp
from .control import cond
from .devices import device_put
from .jit import jit as compile_jit
from .optim import GradientTransformation, apply_updates
from .tree import tree_leaves
from .vjp import value_and_grad

LossFn = Callable[..., tuple[Any, dict]]  # (model, batch, key) -> (scalar loss, metrics)


def classification_loss(model, batch, key=None):
    x, y = batch
    logits = model(x, key=key)
    return nn.cross_entropy(logits, y), {"accuracy": fnp.mean(fnp.argmax(logits, axis=-1) == y)}


def regression_loss(model, batch, key=None):
    x, y = batch
    return nn.mse_loss(model(x, key=key), y), {}


class StepInfo(NamedTuple):
    step: int
    epoch: int
    batch: int
    batches: int
    loss: float
    metrics: dict
    samples: int


class FitResult(NamedTuple):
    model: Any
    opt_state: Any
    history: list[dict]
    step: int
    checkpoint: Path | None


PRECISIONS = {"fp32": None, "bf16": dtypes.bfloat16, "fp16": dtypes.float16}


def _autocast(loss_fn: LossFn, precision: str) -> LossFn:
    low = PRECISIONS[precision]
    if low is None:
        return loss_fn

    def mixed(model, batch, key=None):
        with amp.autocast(low):
            return loss_fn(model, batch, key)
    return mixed


def make_train_step(loss_fn: LossFn, optimizer: GradientTransformation, jit: bool = True,
                    precision: str = "fp32", group=None) -> Callable:
    """(model, opt_state, scaler, batch, key) -> (model, opt_state, scaler, loss, metrics): one
    optimiser step, compiled with fg.jit unless jit=False. precision "bf16" or "fp16" runs the loss
    under autocast; fp16 also scales the loss (scaler is a DynamicLossScale) and skips steps whose
    gradients overflow. With fp32 or bf16 the scaler passes through unused.
    With a process group of several ranks, gradients (and the reported loss and metrics) are
    averaged over the ranks between the jitted gradient and update computations; an overflow on any
    rank makes the averaged gradients non-finite on every rank, so all ranks skip the same steps."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    mixed = _autocast(loss_fn, precision)
    scaled = precision == "fp16"

    def gradients(model, scaler, batch, key):
        def objective(m):
            with nn.collect_state(m) as state:  # BatchNorm's running statistics, applied after the update
                loss, metrics = mixed(m, batch, key)
            return ((scaler.scale_loss(fnp.astype(loss, dtypes.float32)) if scaled else loss),
                    (loss, metrics, state.updates()))
        (_, (loss, metrics, state)), grads = value_and_grad(objective, has_aux=True)(model)
        return grads, loss, metrics, state

    def update(model, opt_state, scaler, grads, state):
        if not scaled:
            updates, opt_state = optimizer.update(grads, opt_state, model)
            return nn.apply_state(apply_updates(model, updates), state), opt_state, scaler
        grads, finite = scaler.unscale(grads)
        updates, new_state = optimizer.update(grads, opt_state, model)
        model, opt_state = cond(finite, lambda: (apply_updates(model, updates), new_state),
                                lambda: (model, opt_state))
        return nn.apply_state(model, state), opt_state, scaler.update(finite)

    if group is None or group.world_size == 1:
        def train_step(model, opt_state, scaler, batch, key):
            grads, loss, metrics, state = gradients(model, scaler, batch, key)
            return (*update(model, opt_state, scaler, grads, state), loss, metrics)
        return compile_jit(train_step) if jit else train_step

    gradients, update = (compile_jit(gradients), compile_jit(update)) if jit else (gradients, update)

    def data_parallel_step(model, opt_state, scaler, batch, key):
        grads, loss, metrics, state = gradients(model, scaler, batch, key)
        synced = group.all_reduce_tree({"grads": grads, "loss": loss, "metrics": metrics, "state": state}, op="mean")
        return (*update(model, opt_state, scaler, synced["grads"], synced["state"]), synced["loss"], synced["metrics"])
    return data_parallel_step


def evaluate(model, loader, loss_fn: LossFn, jit: bool = False, precision: str = "fp32") -> dict[str, float]:
    """Mean loss and metrics over a loader (weighted by batch size), with no randomness."""
    totals: dict[str, float] = {}
    count = 0
    eval_fn = _autocast(loss_fn, precision)
    eval_fn = compile_jit(eval_fn) if jit else eval_fn
    for batch in loader:
        loss, metrics = eval_fn(model, batch)
        n = len(batch[0])
        for name, value in {"loss": loss, **metrics}.items():
            totals[name] = totals.get(name, 0.0) + float(value) * n
        count += n
    return {name: total / max(count, 1) for name, total in totals.items()}


def _device_of(tree):
    leaves = [leaf for leaf in tree_leaves(tree) if hasattr(leaf, "device")]
    return leaves[0].device if leaves else "cpu"


def _checkpoint_path(checkpoint_dir) -> Path | None:
    return None if checkpoint_dir is None else Path(checkpoint_dir) / "last.safetensors"


def save_training_state(path: Path, model, opt_state, scaler, step: int, key, loader, history,
                        extra: dict) -> None:
    ckpt.save(path, {"model": model, "opt_state": opt_state, "scaler": scaler},
              metadata={**extra, "step": step, "epoch": loader.epoch, "key": key, "loader": loader.state_dict(),
                        "history": history})


def fit(model, optimizer: GradientTransformation, train_loader, loss_fn: LossFn, *, epochs: int = 1,
        eval_loader=None, key=None, checkpoint_dir: "str | os.PathLike | None" = None, resume: bool = False,
        max_steps: int | None = None, opt_state=None, jit: bool = True, precision: str = "fp32",
        metadata: dict | None = None, group=None, trainer=None,
        on_step: Callable[[StepInfo], None] | None = None,
        on_epoch: Callable[[dict], None] | None = None, read_every: int | None = None) -> FitResult:
    """Train for `epochs` (or until `max_steps` steps in all); see the module docstring.
    jit=True compiles the training step (and evaluation) with fg.jit; precision is "fp32", "bf16"
    or "fp16" (see make_train_step); metadata is stored in every checkpoint. group (a
    funcgrad.dist process group) trains data-parallel: rank 0's parameters are broadcast first,
    gradients are averaged every step, and only rank 0 writes checkpoints. Give each rank its
    shard of the data (a DataLoader with a DistributedSampler). trainer (a
    funcgrad.dist.layout.LayoutTrainer, holding this process's part of model and optimiser)
    trains a hybrid layout instead: each epoch is evaluated on the model it gathers. read_every:
    how many steps' losses and metrics stay on the device before they are read back (each read waits
    for the device); on_step then sees those steps in order. Default: 1 on the CPU, 32 on a GPU."""
    if read_every is not None and read_every < 1:
        raise ValueError(f"read_every must be at least 1, got {read_every}")
    if trainer is not None:
        if precision != "fp32" or group is not None:
            raise ValueError("fit with a layout trainer takes no precision or group (the trainer's layout holds the "
                             "processes)")
        return _fit_layout(trainer, train_loader, loss_fn, epochs, eval_loader, max_steps, jit, on_step, on_epoch,
                           _sharded_path(checkpoint_dir), resume, dict(metadata or {}))
    key = random.key(0) if key is None else key
    opt_state = optimizer.init(model) if opt_state is None else opt_state
    scaler = amp.DynamicLossScale.create()
    step, history, extra = 0, [], dict(metadata or {})
    path = _checkpoint_path(checkpoint_dir)
    if resume and path is not None and path.exists():
        tree, meta = ckpt.load(path, like={"model": model, "opt_state": opt_state, "scaler": scaler})
        tree = device_put(tree, _device_of(model))  # checkpoints load to the host: back where the model lives
        model, opt_state, scaler = tree["model"], tree["opt_state"], tree["scaler"]
        step, key, history = int(meta["step"]), device_put(meta["key"], _device_of(model)), list(meta.get("history", []))
        train_loader.load_state_dict(meta["loader"])
    distributed = group is not None and group.world_size > 1
    if distributed:
        model = group.broadcast_tree(model, src=0)
        opt_state = group.broadcast_tree(opt_state, src=0)
    if distributed and group.rank != 0:
        path = None  # rank 0 writes the checkpoints
    step_fn = make_train_step(loss_fn, optimizer, jit, precision, group)
    batches = len(train_loader)
    if read_every is None:
        read_every = 1 if _device_of(model) == "cpu" else 32
    while train_loader.epoch < epochs and (max_steps is None or step < max_steps):
        epoch, started = train_loader.epoch, time.perf_counter()
        sums, seen, unread = {}, 0, []

        def read_back():
            """Add the unread steps' values to the epoch's sums (in step order: the same float
            arithmetic whatever read_every is) and report them."""
            for info in unread:
                values = {name: float(value) for name, value in {"loss": info.loss, **info.metrics}.items()}
                for name, value in values.items():
                    sums[name] = sums.get(name, 0.0) + value * info.samples
                if on_step is not None:
                    on_step(info._replace(loss=values["loss"]))
            unread.clear()
        for batch in train_loader:
            model, opt_state, scaler, loss, metrics = step_fn(model, opt_state, scaler, batch,
                                                              random.fold_in(key, step))
            step += 1
            n = len(batch[0])
            seen += n
            position = train_loader.state_dict()["batches_consumed"] if on_step is not None else None
            unread.append(StepInfo(step, epoch, position, batches, loss, metrics, n))
            if len(unread) >= read_every:
                read_back()
            if max_steps is not None and step >= max_steps:
                break
        read_back()
        finished_epoch = train_loader.state_dict()["batches_consumed"] == 0
        if not finished_epoch:  # stopped by max_steps mid-epoch: save the position and stop
            if path is not None:
                save_training_state(path, model, opt_state, scaler, step, key, train_loader, history, extra)
            break
        record = {"epoch": epoch + 1, "step": step, "seconds": time.perf_counter() - started,
                  **{f"train_{k}": v / seen for k, v in sums.items()}}
        if eval_loader is not None:
            record.update({f"test_{k}": v for k, v in
                           evaluate(model, eval_loader, loss_fn, jit, precision).items()})
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
        if path is not None:
            save_training_state(path, model, opt_state, scaler, step, key, train_loader, history, extra)
    return FitResult(model, opt_state, history, step, path)


def _sharded_path(checkpoint_dir) -> Path | None:
    """Where fit keeps a layout's checkpoint (funcgrad.dist.checkpoint) in checkpoint_dir."""
    return None if checkpoint_dir is None else Path(checkpoint_dir) / "sharded"


def _fit_layout(trainer, train_loader, loss_fn: LossFn, epochs: int, eval_loader, max_steps: int | None, jit: bool,
                on_step, on_epoch, path: Path | None, resume: bool, extra: dict) -> FitResult:
    from .dist import checkpoint as sharded
    step, history, batches = 0, [], len(train_loader)
    if resume and path is not None and (path / sharded.MANIFEST).exists():
        meta = sharded.load(path, trainer)
        step, history = int(meta["step"]), list(meta["history"])
        train_loader.load_state_dict(meta["loader"])

    def save():
        if path is not None:
            sharded.save(path, trainer, {**extra, "step": step, "epoch": train_loader.epoch,
                                         "loader": train_loader.state_dict(), "history": history})
    while train_loader.epoch < epochs and (max_steps is None or step < max_steps):
        epoch, started, total, seen = train_loader.epoch, time.perf_counter(), 0.0, 0
        for batch in train_loader:
            loss = float(trainer.step(batch))
            step, n = step + 1, len(batch[0])
            total, seen = total + loss * n, seen + n
            if on_step is not None:
                on_step(StepInfo(step, epoch, train_loader.state_dict()["batches_consumed"], batches, loss, {}, n))
            if max_steps is not None and step >= max_steps:
                break
        if train_loader.state_dict()["batches_consumed"] != 0:  # stopped by max_steps mid-epoch
            save()
            break
        record = {"epoch": epoch + 1, "step": step, "seconds": time.perf_counter() - started,
                  "train_loss": total / max(seen, 1)}
        if eval_loader is not None:
            record.update({f"test_{k}": v for k, v in evaluate(trainer.model(), eval_loader, loss_fn, jit).items()})
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
        save()
    return FitResult(trainer.model(), trainer.opt_state, history, step, path)

"""`funcgrad train`: the demo models, single-process, data-parallel or under a hybrid layout."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click
import numpy as np

from .base import DEFAULTS, MODELS, OPTIMIZERS, SCHEDULES, _friendly, main
from .jobs import _layout, _mpi_world_size, _start_workers, _with_step_lines
from .progress import _plot, _progress, _require_matplotlib, _writable_dir, _writable_file

# options a resumed run takes from its checkpoint unless given again on the command line
RESUMED = ("dataset", "epochs", "batch_size", "lr", "optimizer", "schedule", "weight_decay", "precision", "seed",
           "grad_accum")
PER_MODEL = ", ".join(f"{m} {DEFAULTS[m][0]}" for m in MODELS)


def _optimizer(name: str, schedule, weight_decay: float):
    from funcgrad import optim
    if name == "sgd":
        return optim.sgd(schedule, momentum=0.9, weight_decay=weight_decay)
    if name == "adamw":
        return optim.adamw(schedule, weight_decay=weight_decay)
    return getattr(optim, name)(schedule, weight_decay=weight_decay)


def _schedule(name: str, lr: float, total_steps: int):
    from funcgrad import optim
    return {
        "constant": lambda: optim.constant_schedule(lr),
        "cosine": lambda: optim.cosine_schedule(lr, max(total_steps, 1)),
        "step": lambda: optim.step_schedule(lr, max(total_steps // 3, 1), 0.1),
        "warmup_cosine": lambda: optim.warmup_cosine_schedule(lr, max(total_steps // 10, 1), max(total_steps, 2)),
        "exponential": lambda: optim.exponential_schedule(lr, 0.01 ** (1 / max(total_steps, 1))),
    }[name]()


def _resumed(checkpoint_dir: str, model: str, settings: dict, explicit: set) -> tuple[dict, list]:
    """The settings and epoch history of the run to resume: each setting from the checkpoint unless
    given on the command line. Says so when there is no checkpoint yet (a job that resumes on
    every start begins from scratch), and refuses a checkpoint of another model."""
    import funcgrad as fg
    path, sharded = Path(checkpoint_dir) / "last.safetensors", Path(checkpoint_dir) / "sharded" / "manifest.json"
    if sharded.exists():  # a layout's checkpoint (funcgrad.dist.checkpoint): its settings are in the manifest
        path, meta = sharded, json.loads(sharded.read_text()).get("metadata", {})
    elif not path.exists():
        click.echo(f"no checkpoint in {checkpoint_dir} yet: starting from scratch", err=True)
        return settings, []
    else:
        _, meta = fg.checkpoint.load(path)
    if meta.get("model") != model:
        raise click.ClickException(f"{path} was written by `funcgrad train {meta.get('model', '?')}`, not `funcgrad "
                                   f"train {model}`: resume it with that model, or choose another --checkpoint-dir")
    merged = {k: (v if k in explicit or meta.get(k) is None else meta[k]) for k, v in settings.items()}
    changed = [f"--{k.replace('_', '-')} {settings[k]} (was {meta[k]})" for k in explicit
               if k in meta and meta[k] != settings[k]]
    if changed:
        click.echo(f"resuming with {', '.join(changed)}", err=True)
    return merged, list(meta.get("history", []))


@main.command()
@click.argument("model", type=click.Choice(MODELS), default="mlp")
@click.option("--dataset", help="Dataset (default: the model's own: linear, digits for mlp and cnn, sort for gpt; "
                                "see funcgrad.data.NAMES).")
@click.option("--epochs", type=click.IntRange(min=1), help=f"Passes over the training data  [default: {PER_MODEL}]")
@click.option("--batch-size", type=click.IntRange(min=1), help="Examples per step  [default: 256 for linear, else 64]")
@click.option("--lr", type=click.FloatRange(min=0.0, min_open=True),
              help="Peak learning rate  [default: 0.2 for linear (sgd), else 3e-3]")
@click.option("--optimizer", type=click.Choice(OPTIMIZERS), help="Optimizer  [default: sgd for linear, else adamw]")
@click.option("--schedule", type=click.Choice(SCHEDULES), default="cosine", show_default=True,
              help="Learning-rate schedule over the run.")
@click.option("--weight-decay", type=click.FloatRange(min=0.0), default=0.0, show_default=True)
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--precision", type=click.Choice(["fp32", "bf16", "fp16"]), default="fp32", show_default=True,
              help="bf16/fp16 compute matmuls in low precision (fp16 with loss scaling).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for initialisation and shuffling.")
@click.option("--checkpoint-dir", type=click.Path(file_okay=False), help="Save a checkpoint every epoch here.")
@click.option("--resume", is_flag=True, help="Continue from the checkpoint in --checkpoint-dir, with its settings "
                                             "unless given again (none there yet: start from scratch).")
@click.option("--grad-accum", type=click.IntRange(min=1), default=1, show_default=True,
              help="Average gradients over this many micro-batches per step.")
@click.option("--max-steps", type=click.IntRange(min=1), help="Stop after this many steps in all.")
@click.option("--metrics", "metrics_path", type=click.Path(dir_okay=False), help="Write epoch metrics (JSON lines).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="Save loss/accuracy curves (PNG; needs matplotlib).")
@click.option("--no-jit", is_flag=True, help="Run the training step eagerly instead of compiling it with fg.jit.")
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Train data-parallel on this many processes (funcgrad launch; mpiexec for --dist-backend mpi).")
@click.option("--dist-backend", type=click.Choice(["shm", "tcp", "mpi"]), default="shm", show_default=True)
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Tensor-parallel processes per model replica (gpt: heads, MLP and vocabulary split).")
@click.option("--pp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Pipeline stages per model replica (gpt: its blocks split).")
@click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True,
              help="ZeRO stage over the data-parallel processes: 1 optimiser state, 2 gradients, 3 parameters.")
@click.option("--microbatches", type=click.IntRange(min=1), default=1, show_default=True,
              help="Micro-batches per batch in the pipeline.")
@click.option("--pp-schedule", type=click.Choice(["gpipe", "1f1b"]), default="1f1b", show_default=True)
@click.option("--log-every", type=click.IntRange(min=1),
              help="Also write a line (step, train_loss, peak_memory_bytes: the largest of any process) to --metrics "
                   "every this many steps.")
@click.option("--quiet", is_flag=True, help="Print only the summary.")
@_friendly
def train(model, dataset, epochs, batch_size, lr, optimizer, schedule, weight_decay, device, precision, seed,
          checkpoint_dir, resume, grad_accum, max_steps, metrics_path, plot_path, no_jit, nproc, dist_backend,
          tp, pp, zero, microbatches, pp_schedule, log_every, quiet) -> None:
    """Train a demo MODEL (linear, mlp, cnn, gpt) and report test metrics.

    \b
    Examples:
      funcgrad train mlp --epochs 5 --lr 3e-3
      funcgrad train cnn --precision bf16 --checkpoint-dir runs/cnn
      funcgrad train cnn --checkpoint-dir runs/cnn --resume --epochs 30
      funcgrad train gpt --metrics gpt.jsonl --plot gpt.png
      funcgrad train gpt --nproc 8 --tp 2 --pp 2 --zero 1 --microbatches 4   # dp = 8 / (2 * 2) = 2

    
    --batch-size is per data-parallel replica: a job of dp replicas takes dp * batch-size examples
    a step, as one process with dp times the batch size does (and gives the same losses).
    """
    import funcgrad as fg
    from funcgrad import data, optim
    from funcgrad import dist
    from funcgrad.models import RECIPES, check_dataset
    from funcgrad.train import fit

    # every option is checked before any work
    if resume and not checkpoint_dir:
        raise click.ClickException("--resume needs --checkpoint-dir")
    check_dataset(model, dataset or RECIPES[model].dataset)
    if log_every and not metrics_path:
        raise click.ClickException("--log-every writes to --metrics: give both")
    layout = _layout(model, dataset, batch_size, seed, nproc, tp, pp, zero, microbatches, pp_schedule,
                     precision, grad_accum)
    if plot_path:
        _require_matplotlib()
        _writable_file(plot_path, "--plot")
    if metrics_path:
        _writable_file(metrics_path, "--metrics")
    if checkpoint_dir:
        _writable_dir(checkpoint_dir, "--checkpoint-dir")
    launched = "WORLD_SIZE" in os.environ or _mpi_world_size() > 1
    if nproc > 1 and not launched:  # start the workers, each runs this same command
        sys.exit(_start_workers(nproc, dist_backend))
    group = dist.init_process_group(dist_backend) if launched else None
    if group is not None and group.rank != 0:
        quiet, metrics_path, plot_path = True, None, None  # rank 0 logs for the job
    fg.device_put(fg.zeros(()), device)  # a clear error now if the device is missing

    recipe = RECIPES[model]
    d_epochs, d_batch, d_lr, d_opt = DEFAULTS[model]
    settings = {"dataset": dataset or recipe.dataset, "epochs": epochs or d_epochs, "batch_size": batch_size or d_batch,
                "lr": lr or d_lr, "optimizer": optimizer or d_opt, "schedule": schedule, "weight_decay": weight_decay,
                "precision": precision, "seed": seed, "grad_accum": grad_accum}
    history = []
    if resume:
        ctx = click.get_current_context()
        explicit = {k for k in RESUMED if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE}
        settings, history = _resumed(checkpoint_dir, model, settings, explicit)
        check_dataset(model, settings["dataset"])
    dataset, batch_size, seed, precision = (settings[k] for k in ("dataset", "batch_size", "seed", "precision"))
    x_train, y_train = data.load(dataset, "train")
    x_test, y_test = data.load(dataset, "test")
    k_init, k_train = fg.random.split(fg.random.key(seed))
    net, k_train = fg.device_put((recipe.build(x_train, y_train, k_init), k_train), device)
    train_set = data.ArrayDataset(x_train, y_train)
    if layout is not None:
        if group is None or group.world_size != layout.nproc:
            raise click.ClickException(f"the layout needs {layout.nproc} processes; this job has "
                                       f"{1 if group is None else group.world_size}")
        sampler = data.DistributedSampler(train_set, layout.dp, layout.dp_index(group.rank), shuffle=True, seed=seed)
        train_loader = data.DataLoader(train_set, batch_size, sampler=sampler, device=device)
    elif group is not None and group.world_size > 1:
        sampler = data.DistributedSampler(train_set, group.world_size, group.rank, shuffle=True, seed=seed)
        train_loader = data.DataLoader(train_set, batch_size, sampler=sampler, device=device)
    else:
        train_loader = data.DataLoader(train_set, batch_size, shuffle=True, seed=seed, device=device)
    test_loader = data.DataLoader(data.ArrayDataset(x_test, y_test), 512, device=device)
    total_steps = settings["epochs"] * len(train_loader) // settings["grad_accum"]
    opt = _optimizer(settings["optimizer"], _schedule(settings["schedule"], settings["lr"], total_steps),
                     settings["weight_decay"])
    if settings["grad_accum"] > 1:
        opt = optim.multi_steps(opt, settings["grad_accum"])
    metrics_file = open(metrics_path, "w") if metrics_path else None
    if metrics_file is not None:  # a resumed run's file holds its earlier epochs too
        metrics_file.writelines(json.dumps(record) + "\n" for record in history)
    on_step, on_epoch = _progress(quiet, metrics_file)
    if log_every:
        on_step = _with_step_lines(on_step, log_every, metrics_file, group)
    start = time.perf_counter()
    try:
        if layout is not None:
            from funcgrad.dist.layout import LayoutTrainer
            from funcgrad.models.gpt import token_loss
            trainer = LayoutTrainer(layout, net, opt, token_loss, use_jit=not no_jit)
            result = fit(net, opt, train_loader, recipe.loss, epochs=settings["epochs"], eval_loader=test_loader,
                         checkpoint_dir=checkpoint_dir, resume=resume, max_steps=max_steps, jit=not no_jit,
                         trainer=trainer, on_step=on_step, on_epoch=on_epoch, metadata={"model": model, **settings})
        else:
            result = fit(net, opt, train_loader, recipe.loss, epochs=settings["epochs"], eval_loader=test_loader,
                         key=k_train, checkpoint_dir=checkpoint_dir, resume=resume, max_steps=max_steps,
                         jit=not no_jit, precision=precision, on_step=on_step, on_epoch=on_epoch, group=group,
                         metadata={"model": model, **settings})
    finally:
        if metrics_file is not None:
            metrics_file.close()
    if group is not None:
        digest = float(sum(float(fg.numpy.sum(p)) for p in fg.tree_leaves(result.model)))
        same = np.asarray(group.all_gather(np.array([digest])))
        dist.destroy_process_group()
        if group.rank != 0:
            return
        if not (same == same[0]).all():
            raise RuntimeError(f"parameters differ across ranks after training: {same.ravel().tolist()}")
    summary = f"{model} on {dataset}: {result.step} steps in {time.perf_counter() - start:.1f}s"
    if group is not None and group.world_size > 1:
        summary += f" on {group.world_size} processes ({dist_backend}; parameters identical on every rank)"
    if layout is not None:
        summary += f"\nlayout: dp={layout.dp} tp={layout.tp} pp={layout.pp} zero={layout.zero}"
        if layout.pp > 1:
            summary += f", {layout.microbatches} micro-batches ({layout.schedule})"
    if result.history:
        last = result.history[-1]
        summary += f", test loss {last['test_loss']:.4f}"
        if "test_accuracy" in last:
            summary += f", test accuracy {100 * last['test_accuracy']:.2f}%"
    if model == "linear":
        w, b = float(result.model.weight[0, 0]), float(result.model.bias[0])
        summary += f"\nlearned w = {w:.4f}, b = {b:.4f} (target w = 2, b = 1)"
    if result.checkpoint is not None:
        summary += f"\ncheckpoint: {result.checkpoint}"
    if plot_path and result.history:
        _plot(result.history, plot_path)
        summary += f"\nplot: {plot_path}"
    click.echo(summary)

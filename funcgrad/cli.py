"""The `funcgrad` command line (click). `python cli.py ...` from a checkout does the same.

Errors are one line on stderr and a non-zero exit, never a traceback.
"""
from __future__ import annotations

import functools
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import click
import numpy as np

MODELS = ("linear", "mlp", "cnn", "gpt")
DEFAULTS = {  # epochs, batch size, peak learning rate, optimizer
    "linear": (200, 256, 0.2, "sgd"), "mlp": (30, 64, 3e-3, "adamw"),
    "cnn": (20, 64, 3e-3, "adamw"), "gpt": (12, 64, 3e-3, "adamw"),
}
OPTIMIZERS = ("sgd", "adam", "adamw", "rmsprop", "adagrad", "lion")
SCHEDULES = ("constant", "cosine", "step", "warmup_cosine", "exponential")


def _friendly(fn):
    """Turn the errors a user can cause into one-line click errors."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        from funcgrad.checkpoint import CheckpointError
        from funcgrad.errors import FuncgradError
        try:
            return fn(*args, **kwargs)
        except (FuncgradError, CheckpointError, FileNotFoundError, ValueError, KeyError, RuntimeError,
                ImportError) as e:
            raise click.ClickException(str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    return wrapped


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="funcgrad")
def main() -> None:
    """funcgrad: JAX-style autodiff and a training stack.

    \b
    Examples:
      funcgrad train                 the default: an MLP on the bundled digits
      funcgrad train linear          learn y = 2x + 1 with fg.grad
      funcgrad eval runs/mlp/last.safetensors
      funcgrad profile mlp --steps 5 --out trace.json
      funcgrad info
    """


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


def _progress(quiet: bool, metrics_file):
    interactive = sys.stdout.isatty() and not quiet
    state = {"t0": time.perf_counter(), "samples": 0}

    def on_step(info):
        state["samples"] += info.samples
        if not interactive:
            return
        elapsed = max(time.perf_counter() - state["t0"], 1e-9)
        rate = state["samples"] / elapsed
        eta = elapsed / max(info.batch, 1) * (info.batches - info.batch)
        done = int(30 * info.batch / max(info.batches, 1))
        click.echo(f"\repoch {info.epoch + 1} [{'#' * done}{'.' * (30 - done)}] {info.batch}/{info.batches} "
                   f"loss {info.loss:.4f} {rate:,.0f} samples/s eta {eta:.0f}s", nl=False)

    def on_epoch(record):
        state["t0"], state["samples"] = time.perf_counter(), 0
        if metrics_file is not None:
            metrics_file.write(json.dumps(record) + "\n")
            metrics_file.flush()
        if quiet:
            return
        if interactive:
            click.echo()
        metrics = "  ".join(f"{k} {v:.4f}" for k, v in record.items() if k.startswith(("train_", "test_")))
        click.echo(f"epoch {record['epoch']:>3}  {metrics}  ({record['seconds']:.2f}s)")

    return on_step, on_epoch


def _plot(history: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = [r["epoch"] for r in history]
    panels = [k for k in ("loss", "accuracy") if f"train_{k}" in history[0] or f"test_{k}" in history[0]]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.5), squeeze=False)
    for ax, name in zip(axes[0], panels):
        for split in ("train", "test"):
            if f"{split}_{name}" in history[0]:
                ax.plot(epochs, [r[f"{split}_{name}"] for r in history], label=split)
        ax.set_xlabel("epoch")
        ax.set_ylabel(name)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)


# options a resumed run takes from its checkpoint unless given again on the command line
RESUMED = ("dataset", "epochs", "batch_size", "lr", "optimizer", "schedule", "weight_decay", "precision", "seed",
           "grad_accum")
PER_MODEL = ", ".join(f"{m} {DEFAULTS[m][0]}" for m in MODELS)


def _writable_file(path: str, option: str) -> None:
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise click.ClickException(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (Path(path).exists() and not os.access(path, os.W_OK)):
        raise click.ClickException(f"{option} {path}: cannot write there")


def _writable_dir(path: str, option: str) -> None:
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise click.ClickException(f"{option} {path}: cannot create it ({e.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise click.ClickException(f"{option} {path}: cannot write there")


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise click.ClickException("--plot needs matplotlib: pip install 'funcgrad[plot]'") from None


def _mpi_world_size() -> int:
    """The world size mpiexec gave this process (MPICH's hydra, Open MPI), 0 outside mpiexec."""
    return int(os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or 0)


def _start_workers(nproc: int, backend: str) -> int:
    """Run this same command on nproc processes: through mpiexec for the mpi backend (MPI gives the
    ranks), through funcgrad launch otherwise. Returns the job's exit code."""
    if backend != "mpi":
        from funcgrad.dist import launch as launcher
        return launcher.main(["--nproc-per-node", str(nproc), "-m", "funcgrad.cli", *sys.argv[1:]])
    import shutil
    mpiexec = shutil.which("mpiexec", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if mpiexec is None:
        raise click.ClickException("--dist-backend mpi needs mpiexec: pip install 'funcgrad[mpi]'")
    return subprocess.run([mpiexec, "-n", str(nproc), sys.executable, "-m", "funcgrad.cli", *sys.argv[1:]]).returncode


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


def _layout(model, dataset, batch_size, seed, nproc, tp, pp, zero, microbatches, schedule, precision, grad_accum):
    """The hybrid layout asked for (None for plain data parallelism), checked against the model it
    must split before any process starts: a layout that cannot work is one line."""
    if tp == 1 and pp == 1 and zero == 0:
        if microbatches > 1:
            raise click.ClickException("--microbatches splits the batch of a pipeline: give --pp too")
        return None
    from funcgrad import data
    from funcgrad.dist.layout import Layout
    from funcgrad.models import RECIPES
    import funcgrad as fg
    if model != "gpt":
        raise click.ClickException(f"--tp, --pp and --zero train the gpt model, not {model}")
    for flag, given in (("--precision bf16/fp16", precision != "fp32"), ("--grad-accum", grad_accum > 1)):
        if given:
            raise click.ClickException(f"{flag} does not combine with --tp, --pp or --zero yet")
    try:
        layout = Layout(nproc, tp, pp, zero, microbatches, schedule)
        x, y = data.load(dataset or RECIPES[model].dataset, "train")
        layout.check(RECIPES[model].build(x, y, fg.random.key(seed)), batch_size or DEFAULTS[model][1])
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    return layout


def _with_step_lines(on_step, every: int, metrics_file, group):
    """on_step, and every `every` steps a metrics line with the largest peak memory of any process
    (every process takes part in that maximum; rank 0 writes)."""
    import funcgrad as fg

    def step_line(info):
        on_step(info)
        if info.step % every:
            return
        peak = fg.max_memory_allocated()
        if group is not None and group.world_size > 1:
            peak = int(np.asarray(group.all_reduce(np.array([peak], np.int64), "max"))[0])
        if metrics_file is not None:
            metrics_file.write(json.dumps({"step": info.step, "train_loss": info.loss, "peak_memory_bytes": peak}) + "\n")
            metrics_file.flush()
    return step_line


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


@main.command(name="eval")
@click.argument("checkpoint", type=click.Path(dir_okay=False))
@click.option("--batch-size", type=click.IntRange(min=1), default=512, show_default=True)
@_friendly
def evaluate_command(checkpoint: str, batch_size: int) -> None:
    """Loss and accuracy of a checkpoint written by `funcgrad train` on its test split.

    \b
    Example:
      funcgrad eval runs/mlp/last.safetensors
    """
    import funcgrad as fg
    from funcgrad import data
    from funcgrad.models import RECIPES
    from funcgrad.train import evaluate

    flat, meta = fg.checkpoint.load(checkpoint)
    if meta.get("model") not in RECIPES:
        raise ValueError(f"{checkpoint} was not written by `funcgrad train` (no model name in its metadata)")
    recipe = RECIPES[meta["model"]]
    x_train, y_train = data.load(meta["dataset"], "train")
    x_test, y_test = data.load(meta["dataset"], "test")
    net = recipe.build(x_train, y_train, fg.random.key(0))
    net = net.load_state_dict({k[len("model."):]: v for k, v in flat.items() if k.startswith("model.")})
    result = evaluate(net, data.DataLoader(data.ArrayDataset(x_test, y_test), batch_size), recipe.loss,
                      precision=meta.get("precision", "fp32"))
    line = f"{meta['model']} on {meta['dataset']} (step {meta.get('step', '?')}): test loss {result['loss']:.4f}"
    if "accuracy" in result:
        line += f", test accuracy {100 * result['accuracy']:.2f}%"
    click.echo(line)


@main.command()
@click.argument("model", type=click.Choice(MODELS), default="mlp")
@click.option("--steps", type=click.IntRange(min=1), default=5, show_default=True, help="Training steps to profile.")
@click.option("--out", type=click.Path(dir_okay=False), default="trace.json", show_default=True,
              help="Chrome trace file (open in chrome://tracing or ui.perfetto.dev).")
@click.option("--sort-by", type=click.Choice(["cpu_time_total", "self_cpu_time_total", "cuda_time_total",
                                              "self_cpu_memory_usage", "count"]),
              default="self_cpu_time_total", show_default=True)
@click.option("--row-limit", type=int, default=15, show_default=True)
@click.option("--jit", "use_jit", is_flag=True, help="Profile the jitted step (one range per step).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where the model and batches live (cuda: device time per op is recorded too).")
@_friendly
def profile(model: str, steps: int, out: str, sort_by: str, row_limit: int, use_jit: bool, device: str) -> None:
    """Profile a few training steps of MODEL: a table of where the time goes, and a Chrome trace.

    \b
    Example:
      funcgrad profile cnn --steps 3 --out cnn_trace.json
    """
    _writable_file(out, "--out")
    import funcgrad as fg
    from funcgrad import data, optim, profiler
    from funcgrad.models import RECIPES
    from funcgrad.train import make_train_step

    recipe = RECIPES[model]
    x, y = data.load(recipe.dataset, "train")
    net, keys = fg.device_put((recipe.build(x, y, fg.random.key(0)), fg.random.split(fg.random.key(1), steps + 1)),
                              device)
    opt = optim.adamw(1e-3)
    step_fn = make_train_step(recipe.loss, opt, jit=use_jit)
    state, scaler = opt.init(net), fg.amp.DynamicLossScale.create()
    loader = data.DataLoader(data.ArrayDataset(x, y), DEFAULTS[model][1], shuffle=True, prefetch=0, device=device)
    batches = []
    while len(batches) < min(steps + 1, 4):  # epochs of one batch (linear) come round again
        batches += list(itertools.islice(iter(loader), min(steps + 1, 4) - len(batches)))
    net, state, scaler, _, _ = step_fn(net, state, scaler, batches[0], keys[0])  # warm up (jit compiles)
    with profiler.profile(record_shapes=True, profile_memory=True) as prof:
        for i in range(steps):
            with profiler.record_function(f"step {i}"):
                net, state, scaler, loss, _ = step_fn(net, state, scaler, batches[i % len(batches)], keys[i + 1])
    click.echo(prof.key_averages().table(sort_by=sort_by, row_limit=row_limit))
    prof.export_chrome_trace(out)
    click.echo(f"Chrome trace written to {out} ({len(prof.events)} events): open it in chrome://tracing "
               f"or https://ui.perfetto.dev")


@main.command()
@click.option("--quick", is_flag=True, help="Fewer repeats.")
@_friendly
def bench(quick: bool) -> None:
    """Run the benchmarks in benchmarks/ of the source checkout this is run in (or the one the
    package is installed from), with the peers that are installed."""
    folder = _benchmarks_folder()
    runs = [["overhead.py", "--repeats", "5" if quick else "20"],
            ["train_digits.py", "--epochs-mlp", "5" if quick else "30", "--epochs-cnn", "3" if quick else "20"],
            ["step.py", "--rounds", "2" if quick else "7", "--no-compile"],
            ["amp_memory.py"],
            ["allreduce.py", "--max-mib", "16" if quick else "256", "--ranks", "2", "4"]]
    import funcgrad as fg
    if fg.cuda.is_available() and not fg.cuda.simulator():
        runs.append(["gpu_kernels.py"])
    for script, *args in runs:
        click.echo(f"\n=== benchmarks/{script} ===")
        proc = subprocess.run([sys.executable, str(folder / script), *args], capture_output=True, text=True)
        click.echo(proc.stdout.rstrip())
        if proc.returncode:
            raise RuntimeError(f"benchmarks/{script} failed: {proc.stderr.strip().splitlines()[-1:]}")


def _benchmarks_folder() -> Path:
    """benchmarks/ of the checkout around the working directory, else beside the package (an
    editable install); `pip install .` copies only the package, so the checkout is found from here."""
    for folder in [Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parent.parent]:
        if (folder / "benchmarks" / "step.py").is_file():
            return folder / "benchmarks"
    raise click.ClickException("no benchmarks/ folder here: run `funcgrad bench` inside a funcgrad source checkout")


def _nvvm_version() -> str | None:
    """NVVM's version, found in a process without the simulator (which hides numba's NVVM binding)."""
    probe = "from numba.cuda.cudadrv import nvvm; print('.'.join(map(str, nvvm.NVVM().get_version())))"
    try:
        proc = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"},
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


@main.command()
def info() -> None:
    """Versions, devices, and whether the CUDA simulator is on."""
    from importlib import metadata

    import funcgrad as fg
    versions = {}
    for package in ("funcgrad", "numpy", "numba", "numba-cuda", "ml_dtypes", "click"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    click.echo(f"python      {platform.python_version()} ({platform.machine()}, {os.cpu_count()} CPU cores)")
    for package, version in versions.items():
        click.echo(f"{package:<11} {version}")
    click.echo(f"devices     {', '.join(map(str, fg.devices()))}")
    click.echo(f"CUDA sim    {'on' if os.environ.get('NUMBA_ENABLE_CUDASIM') == '1' else 'off'} "
               f"(NUMBA_ENABLE_CUDASIM)")
    try:
        from numba import cuda
        available = cuda.is_available()
        detail = f"available: {available}"
        if available and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
            gpu = cuda.get_current_device()
            detail += (f", {len(cuda.gpus)} GPU(s): {gpu.name.decode() if isinstance(gpu.name, bytes) else gpu.name} "
                       f"(compute capability {gpu.compute_capability[0]}.{gpu.compute_capability[1]}), "
                       f"driver {cuda.cudadrv.driver.driver.get_version()}")
        nvvm = _nvvm_version()
        detail += (f"; NVVM {nvvm} (compiles kernels to PTX)" if nvvm else
                   "; no NVVM (pip install 'funcgrad[cuda]' to compile kernels)")
    except Exception as e:  # noqa: BLE001  (report any numba-cuda problem as text)
        detail = f"unavailable ({type(e).__name__}: {e})"
    click.echo(f"numba.cuda  {detail}")
    from funcgrad.cpu import fusion
    click.echo(f"kernels     {fusion.cache_dir()} (jit's compiled fused kernels)")


@main.command(context_settings={"allow_interspersed_args": False})
@click.option("--nproc-per-node", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes on this node.")
@click.option("--nnodes", type=click.IntRange(min=1), default=1, show_default=True, help="Nodes in the job.")
@click.option("--node-rank", type=click.IntRange(min=0), default=0, show_default=True, help="This node's rank.")
@click.option("--master-addr", default="127.0.0.1", show_default=True, help="Address of rank 0's node.")
@click.option("--master-port", type=click.IntRange(1, 65535), help="Rank 0's port  [default: a free one, one node]")
@click.option("--max-restarts", type=click.IntRange(min=0), default=0, show_default=True,
              help="Restart the whole group this many times after a failure.")
@click.option("-m", "module", help="Run a module, as python -m does, instead of a script.")
@click.argument("script", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def launch(nproc_per_node, nnodes, node_rank, master_addr, master_port, max_restarts, module, script, args) -> None:
    """Start a data-parallel job: SCRIPT [ARGS...] on --nproc-per-node processes of this node, with
    RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (the mpi backend starts with mpiexec instead).

    \b
    Examples:
      funcgrad launch --nproc-per-node 2 train.py
      funcgrad launch --nproc-per-node 4 --max-restarts 2 train.py --resume
      funcgrad launch --nproc-per-node 2 -m funcgrad.cli train mlp
    """
    from funcgrad.dist import launch as launcher
    if module is None and script is None:
        raise click.ClickException("give a script to run, or -m module")
    argv = ["--nproc-per-node", str(nproc_per_node), "--nnodes", str(nnodes), "--node-rank", str(node_rank),
            "--master-addr", master_addr, "--max-restarts", str(max_restarts)]
    argv += ["--master-port", str(master_port)] if master_port is not None else []
    argv += ["-m", module] if module is not None else []
    sys.exit(launcher.main(argv + ([script] if script is not None else []) + list(args)))


if __name__ == "__main__":
    main()

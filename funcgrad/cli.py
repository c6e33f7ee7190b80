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
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'funcgrad[plot]'") from None
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


@main.command()
@click.argument("model", type=click.Choice(MODELS), default="mlp")
@click.option("--dataset", help="Dataset name (default: the model's own; see funcgrad.data.NAMES).")
@click.option("--epochs", type=click.IntRange(min=1), help="Passes over the training data.")
@click.option("--batch-size", type=click.IntRange(min=1), help="Examples per step.")
@click.option("--lr", type=click.FloatRange(min=0.0, min_open=True), help="Peak learning rate.")
@click.option("--optimizer", type=click.Choice(OPTIMIZERS), help="Optimizer.")
@click.option("--schedule", type=click.Choice(SCHEDULES), default="cosine", show_default=True,
              help="Learning-rate schedule over the run.")
@click.option("--weight-decay", type=click.FloatRange(min=0.0), default=0.0, show_default=True)
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--precision", type=click.Choice(["fp32", "bf16", "fp16"]), default="fp32", show_default=True,
              help="bf16/fp16 compute matmuls in low precision (fp16 with loss scaling).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for initialisation and shuffling.")
@click.option("--checkpoint-dir", type=click.Path(file_okay=False), help="Save a checkpoint every epoch here.")
@click.option("--resume", is_flag=True, help="Continue from the checkpoint in --checkpoint-dir.")
@click.option("--grad-accum", type=click.IntRange(min=1), default=1, show_default=True,
              help="Average gradients over this many micro-batches per step.")
@click.option("--max-steps", type=click.IntRange(min=1), help="Stop after this many steps in all.")
@click.option("--metrics", "metrics_path", type=click.Path(dir_okay=False), help="Write epoch metrics (JSON lines).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="Save loss/accuracy curves (PNG).")
@click.option("--no-jit", is_flag=True, help="Run the training step eagerly instead of compiling it with fg.jit.")
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Train data-parallel on this many processes (through funcgrad launch).")
@click.option("--dist-backend", type=click.Choice(["shm", "tcp", "mpi"]), default="shm", show_default=True)
@click.option("--quiet", is_flag=True, help="Print only the summary.")
@_friendly
def train(model, dataset, epochs, batch_size, lr, optimizer, schedule, weight_decay, device, precision, seed,
          checkpoint_dir, resume, grad_accum, max_steps, metrics_path, plot_path, no_jit, nproc, dist_backend,
          quiet) -> None:
    """Train a demo MODEL (linear, mlp, cnn, gpt) and report test metrics.

    \b
    Examples:
      funcgrad train mlp --epochs 5 --lr 3e-3
      funcgrad train cnn --precision bf16 --checkpoint-dir runs/cnn
      funcgrad train cnn --checkpoint-dir runs/cnn --resume --epochs 30
      funcgrad train gpt --metrics gpt.jsonl --plot gpt.png
    """
    import funcgrad as fg
    from funcgrad import data, optim
    from funcgrad import dist
    from funcgrad.models import RECIPES
    from funcgrad.train import fit

    if resume and not checkpoint_dir:
        raise click.UsageError("--resume needs --checkpoint-dir")
    if nproc > 1 and "WORLD_SIZE" not in os.environ:  # start the workers, each runs this same command
        from funcgrad.dist import launch as launcher
        sys.exit(launcher.main(["--nproc-per-node", str(nproc), "-m", "funcgrad.cli", *sys.argv[1:]]))
    group = dist.init_process_group(dist_backend) if "WORLD_SIZE" in os.environ else None
    if group is not None and group.rank != 0:
        quiet, metrics_path, plot_path = True, None, None  # rank 0 logs for the job
    fg.device_put(fg.zeros(()), device)  # a clear error now if the device is missing
    recipe = RECIPES[model]
    d_epochs, d_batch, d_lr, d_opt = DEFAULTS[model]
    epochs, batch_size, lr, optimizer = epochs or d_epochs, batch_size or d_batch, lr or d_lr, optimizer or d_opt
    dataset = dataset or recipe.dataset
    x_train, y_train = data.load(dataset, "train")
    x_test, y_test = data.load(dataset, "test")
    k_init, k_train = fg.random.split(fg.random.key(seed))
    net, k_train = fg.device_put((recipe.build(x_train, y_train, k_init), k_train), device)
    train_set = data.ArrayDataset(x_train, y_train)
    if group is not None and group.world_size > 1:
        sampler = data.DistributedSampler(train_set, group.world_size, group.rank, shuffle=True, seed=seed)
        train_loader = data.DataLoader(train_set, batch_size, sampler=sampler, device=device)
    else:
        train_loader = data.DataLoader(train_set, batch_size, shuffle=True, seed=seed, device=device)
    test_loader = data.DataLoader(data.ArrayDataset(x_test, y_test), 512, device=device)
    total_steps = epochs * len(train_loader) // grad_accum
    opt = _optimizer(optimizer, _schedule(schedule, lr, total_steps), weight_decay)
    if grad_accum > 1:
        opt = optim.multi_steps(opt, grad_accum)
    metrics_file = open(metrics_path, "w") if metrics_path else None
    on_step, on_epoch = _progress(quiet, metrics_file)
    start = time.perf_counter()
    try:
        result = fit(net, opt, train_loader, recipe.loss, epochs=epochs, eval_loader=test_loader, key=k_train,
                     checkpoint_dir=checkpoint_dir, resume=resume, max_steps=max_steps, jit=not no_jit,
                     precision=precision, on_step=on_step, on_epoch=on_epoch, group=group,
                     metadata={"model": model, "dataset": dataset, "seed": seed, "precision": precision})
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
    """Run the benchmarks in benchmarks/ (from a checkout), with the peers that are installed."""
    folder = Path(__file__).resolve().parent.parent / "benchmarks"
    if not folder.is_dir():
        raise FileNotFoundError(f"no benchmarks/ folder next to the package at {folder.parent}: run "
                                f"`funcgrad bench` from a source checkout")
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
        try:
            from numba.cuda.cudadrv import nvvm
            detail += f"; NVVM {'.'.join(map(str, nvvm.NVVM().get_version()))} (compiles kernels to PTX)"
        except Exception:  # noqa: BLE001  (without the cuda extra there is no NVVM)
            detail += "; no NVVM (pip install 'funcgrad[cuda]' to compile kernels)"
    except Exception as e:  # noqa: BLE001  (report any numba-cuda problem as text)
        detail = f"unavailable ({type(e).__name__}: {e})"
    click.echo(f"numba.cuda  {detail}")
    from funcgrad.cpu import fusion
    click.echo(f"kernels     {fusion.cache_dir()} (jit's compiled fused kernels)")


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def launch(args) -> None:
    """Start a data-parallel job: [--nproc-per-node N] [--nnodes M --node-rank K --master-addr A
    --master-port P] [--max-restarts R] SCRIPT [ARGS...]

    \b
    Examples:
      funcgrad launch --nproc-per-node 2 train.py
      funcgrad launch --nproc-per-node 4 --max-restarts 2 train.py --resume
    """
    from funcgrad.dist import launch as launcher
    sys.exit(launcher.main(list(args)))


if __name__ == "__main__":
    main()

"""`funcgrad eval`, `profile`, `bench`, `info` and `launch`."""
from __future__ import annotations

import itertools
import os
import platform
import subprocess
import sys
from pathlib import Path

import click

from .base import DEFAULTS, MODELS, _friendly, main
from .progress import _writable_file


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
    for folder in [Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[2]]:
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
    from funcgrad.cpu import fusion, registers, threads
    for line in threads.blas_libraries() or ["none loaded"]:
        click.echo(f"BLAS        {line}")
    regs = registers.host()
    click.echo(f"CPU vectors {regs.count} registers of {regs.vector_bytes} bytes{', run in halves' if regs.half_vectors else ''} "
               "(the direct convolutions' tiles)")
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

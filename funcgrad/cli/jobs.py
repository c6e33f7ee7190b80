"""Multi-process runs: starting the workers, checking a hybrid layout before any process starts,
and the per-step metrics lines every process takes part in."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import numpy as np

from .base import DEFAULTS


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

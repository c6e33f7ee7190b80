"""What a training run reports: progress lines, metrics files, plots, and the checks that their
paths can be written before any work."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click


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

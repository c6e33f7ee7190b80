"""The `funcgrad` command line (click). `python cli.py ...` from a checkout does the same."""
from __future__ import annotations

import sys
import time

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="funcgrad")
def main() -> None:
    """funcgrad: JAX-style autodiff and a training stack.

    \b
    Examples:
      funcgrad train linear          learn y = 2x + 1 with fg.grad
      funcgrad train linear --steps 500 --lr 0.05
    """


MODELS = ("linear",)


@main.command()
@click.argument("model", type=click.Choice(MODELS), default="linear")
@click.option("--steps", type=click.IntRange(min=1), default=200, show_default=True,
              help="Gradient-descent steps.")
@click.option("--lr", type=click.FloatRange(min=0.0, min_open=True), default=0.1, show_default=True,
              help="Learning rate.")
@click.option("--seed", type=int, default=0, show_default=True, help="PRNG seed for the data.")
@click.option("--quiet", is_flag=True, help="Print only the result.")
def train(model: str, steps: int, lr: float, seed: int, quiet: bool) -> None:
    """Train a demo MODEL and print what it learned.

    \b
    Examples:
      funcgrad train linear
      funcgrad train linear --steps 50 --quiet
    """
    from .models import linear

    start = time.perf_counter()
    interactive = sys.stdout.isatty() and not quiet
    report_every = max(1, steps // 10)
    params, loss = None, float("nan")
    for step, loss, params in linear.train(steps=steps, lr=lr, seed=seed):
        if quiet:
            continue
        if interactive:
            done = int(30 * step / steps)
            click.echo(f"\r[{'#' * done}{'.' * (30 - done)}] step {step}/{steps}  loss {loss:.5f}", nl=False)
            if step == steps:
                click.echo()
        elif step % report_every == 0 or step == steps:
            click.echo(f"step {step:>5}/{steps}  loss {loss:.6f}")
    w, b = float(params["w"][0, 0]), float(params["b"][0])
    click.echo(f"learned w = {w:.4f}, b = {b:.4f} (target w = 2, b = 1); final loss {loss:.6f} "
               f"in {time.perf_counter() - start:.2f}s")

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
      funcgrad train mlp --epochs 20 an MLP on the bundled handwritten digits
    """


MODELS = ("linear", "mlp", "cnn", "gpt")
DEFAULTS = {  # epochs, batch size, peak learning rate, optimizer
    "linear": (200, 256, 0.2, "sgd"), "mlp": (30, 64, 3e-3, "adamw"),
    "cnn": (20, 64, 3e-3, "adamw"), "gpt": (12, 64, 3e-3, "adamw"),
}


def _progress(quiet: bool):
    interactive = sys.stdout.isatty() and not quiet
    state = {"t0": time.perf_counter(), "samples": 0}

    def on_step(info):
        state["samples"] += info.samples
        if not interactive:
            return
        done = int(30 * info.batch / max(info.batches, 1))
        rate = state["samples"] / max(time.perf_counter() - state["t0"], 1e-9)
        click.echo(f"\repoch {info.epoch + 1} [{'#' * done}{'.' * (30 - done)}] {info.batch}/{info.batches} "
                   f"loss {info.loss:.4f} {rate:,.0f} samples/s", nl=False)

    def on_epoch(record):
        if quiet:
            return
        if interactive:
            click.echo()
        metrics = "  ".join(f"{k} {v:.4f}" for k, v in record.items() if k.startswith(("train_", "test_")))
        click.echo(f"epoch {record['epoch']:>3}  {metrics}  ({record['seconds']:.2f}s)")

    return on_step, on_epoch


@main.command()
@click.argument("model", type=click.Choice(MODELS), default="mlp")
@click.option("--epochs", type=click.IntRange(min=1), help="Passes over the training data.")
@click.option("--batch-size", type=click.IntRange(min=1), help="Examples per step.")
@click.option("--lr", type=click.FloatRange(min=0.0, min_open=True), help="Learning rate.")
@click.option("--optimizer", type=click.Choice(["sgd", "adam", "adamw"]), help="Optimizer.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for initialisation and shuffling.")
@click.option("--no-jit", is_flag=True, help="Run the training step eagerly instead of compiling it with fg.jit.")
@click.option("--quiet", is_flag=True, help="Print only the summary.")
def train(model: str, epochs, batch_size, lr, optimizer, seed: int, no_jit: bool, quiet: bool) -> None:
    """Train a demo MODEL (linear, mlp, cnn, gpt) on its default dataset, with a cosine
    learning-rate schedule.

    \b
    Examples:
      funcgrad train linear
      funcgrad train mlp --epochs 5 --lr 3e-3
      funcgrad train gpt --quiet
    """
    import funcgrad as fg
    from funcgrad import data, optim
    from funcgrad.models import RECIPES
    from funcgrad.train import fit

    recipe = RECIPES[model]
    d_epochs, d_batch, d_lr, d_opt = DEFAULTS[model]
    epochs, batch_size, lr, optimizer = epochs or d_epochs, batch_size or d_batch, lr or d_lr, optimizer or d_opt
    x_train, y_train = data.load(recipe.dataset, "train")
    x_test, y_test = data.load(recipe.dataset, "test")
    k_init, k_train = fg.random.split(fg.random.key(seed))
    net = recipe.build(x_train, y_train, k_init)
    train_loader = data.DataLoader(data.ArrayDataset(x_train, y_train), batch_size, shuffle=True, seed=seed)
    schedule = optim.cosine_schedule(lr, decay_steps=epochs * len(train_loader))
    opt = {"sgd": optim.sgd, "adam": optim.adam, "adamw": optim.adamw}[optimizer](schedule)
    test_loader = data.DataLoader(data.ArrayDataset(x_test, y_test), 512)
    on_step, on_epoch = _progress(quiet)
    start = time.perf_counter()
    result = fit(net, opt, train_loader, recipe.loss, epochs=epochs, eval_loader=test_loader, key=k_train,
                 jit=not no_jit, on_step=on_step, on_epoch=on_epoch)
    last = result.history[-1]
    summary = f"{model}: {result.step} steps in {time.perf_counter() - start:.1f}s, test loss {last['test_loss']:.4f}"
    if "test_accuracy" in last:
        summary += f", test accuracy {100 * last['test_accuracy']:.2f}%"
    if model == "linear":
        w, b = float(result.model.weight[0, 0]), float(result.model.bias[0])
        summary += f"\nlearned w = {w:.4f}, b = {b:.4f} (target w = 2, b = 1)"
    click.echo(summary)

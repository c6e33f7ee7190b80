"""What every command shares: the click group, the demo models' defaults, one-line errors."""
from __future__ import annotations

import functools

import click

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
    from funcgrad.cpu import host_memory
    host_memory.keep_freed_memory()  # an application's choice, its own process (cpu/host_memory.py)

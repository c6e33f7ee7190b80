"""Looking at values inside transformed code (jax.debug): print and callback run with the
concrete values where the program runs, eagerly or at each call of a jitted function (where a
plain print would show a tracer once, at trace time), once per member under vmap."""
from __future__ import annotations

import builtins
from typing import Any, Callable

from .array import Array
from .ops.host_callback import host_callback_p
from .tree import tree_flatten

__all__ = ["callback", "print"]


def _is_value(x) -> bool:
    return isinstance(x, Array) or (hasattr(x, "shape") and hasattr(x, "dtype"))


def callback(fun: Callable[..., Any], *args, **kwargs) -> None:
    """fun(*args, **kwargs) with every array leaf as a NumPy array, when the values exist; other
    leaves (numbers, strings) are passed as they are. Its result is ignored."""
    leaves, structure = tree_flatten((args, kwargs))
    positions = [i for i, leaf in enumerate(leaves) if _is_value(leaf)]

    def call(*values):
        filled = list(leaves)
        for i, value in zip(positions, values):
            filled[i] = value
        call_args, call_kwargs = structure.unflatten(filled)
        fun(*call_args, **call_kwargs)

    host_callback_p(*(leaves[i] for i in positions), callback=call)


def print(fmt: str, *args, **kwargs) -> None:  # noqa: A001  (jax.debug.print's name)
    """Print fmt.format(*args, **kwargs) with the arrays' values (NumPy's formatting)."""
    callback(lambda *a, **k: builtins.print(fmt.format(*a, **k)), *args, **kwargs)

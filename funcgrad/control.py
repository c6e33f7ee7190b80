"""Control flow that works both eagerly and under jit (jax.lax.cond's idea).

Eagerly, or when the predicate is known, `cond` runs one branch, like a Python `if`. Inside jit,
where the predicate is an abstract value, it runs both branches and selects leaf by leaf.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import numpy as fnp
from .errors import ConcretizationError
from .tree import tree_flatten, tree_map


def concrete_int(x) -> "int | Any":
    """x as a Python int when its value is known, else x itself (a traced array inside jit)."""
    try:
        return int(x)
    except ConcretizationError:
        return x


def cond(pred, true_fun: Callable, false_fun: Callable, *operands) -> Any:
    """true_fun(*operands) if pred else false_fun(*operands), for a scalar predicate."""
    try:
        chosen = bool(pred)
    except ConcretizationError:
        if np.shape(pred) != ():
            raise TypeError(f"cond needs a scalar predicate, got shape {tuple(np.shape(pred))}") from None
        on_true, on_false = true_fun(*operands), false_fun(*operands)
        if tree_flatten(on_true)[1] != tree_flatten(on_false)[1]:
            raise TypeError(f"cond branches return different structures: {tree_flatten(on_true)[1]} and "
                            f"{tree_flatten(on_false)[1]}") from None
        return tree_map(lambda a, b: fnp.where(pred, a, b), on_true, on_false)
    return true_fun(*operands) if chosen else false_fun(*operands)

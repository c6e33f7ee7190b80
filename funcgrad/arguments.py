"""What the differentiation transforms share: taking the arguments they differentiate (argnums,
flattening, checking each leaf), carrying has_aux outputs, and assembling Jacobians."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .array import CPU, Array, to_numpy
from .devices import device_put, full
from .errors import ShapeError
from .ops import layout
from .ops import shape as S
from .trace import Tracer
from .tree import keystr, tree_flatten, tree_flatten_with_path, tree_structure


def zeros(shape, dtype, device=CPU):
    return full(shape, 0, dtype, device)


def zeros_like(x):
    return zeros(np.shape(x), getattr(x, "dtype", np.result_type(x)), getattr(x, "device", CPU))


def as_input(x, fname: str, where: str, require_float: bool = True):
    """A differentiated leaf as an array, refusing what cannot be differentiated."""
    if not isinstance(x, (Array, Tracer)):
        if x is None or isinstance(x, (str, bytes)) or callable(x):
            raise TypeError(f"{fname}: {where} is a {type(x).__name__}, not an array; "
                            f"mark it static (pass it through a closure) or remove it from the inputs")
        x = Array(to_numpy(x))
    if require_float and not dtypes.is_inexact(x.dtype):
        raise TypeError(f"{fname}: {where} has dtype {x.dtype}; only floating-point inputs can be "
                        f"differentiated (cast it with .astype(fg.float32), or leave it out of argnums)")
    return x


def input_leaves(args: Sequence[Any], fname: str, argnums: Sequence[int], allow_int: bool = False) -> list:
    """Flatten the differentiated arguments, converting and checking every leaf."""
    leaves = []
    for arg, num in zip(args, argnums):
        with_path, _ = tree_flatten_with_path(arg)
        leaves.extend(as_input(x, fname, f"argument {num} at {keystr(path)}" if path else f"argument {num}",
                               require_float=not allow_int) for path, x in with_path)
    return leaves


def normalize_argnums(argnums, n_args: int, fname: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ValueError(f"{fname}: argnums must name at least one argument")
    out = []
    for a in nums:
        if not isinstance(a, int) or not -n_args <= a < n_args:
            raise ValueError(f"{fname}: argnums {argnums!r} is out of range for a call with "
                             f"{n_args} positional argument{'s' if n_args != 1 else ''}")
        out.append(a % n_args)
    return tuple(out)


def flat_transform(fun: Callable, args, kwargs, argnums, fname: str, allow_int: bool = False):
    """(leaves, their structure, fun as a function of those flat leaves): the differentiated
    arguments replaced, the others and the keyword arguments passed through."""
    nums = normalize_argnums(argnums, len(args), fname)
    diff_args = [args[i] for i in nums]
    leaves = input_leaves(diff_args, fname, nums, allow_int)
    in_tree = tree_structure(tuple(diff_args))

    def of_leaves(*xs):
        full_args = list(args)
        for i, d in zip(nums, in_tree.unflatten(xs)):
            full_args[i] = d
        return fun(*full_args, **kwargs)
    return leaves, in_tree, of_leaves


def integers_held(leaves: list, flat: Callable):
    """allow_int's split: (the inexact leaves, flat as a function of those alone with the integer and
    boolean leaves held constant, fill(results, gap) putting gap(leaf) back at each held leaf)."""
    held = [not dtypes.is_inexact(x.dtype) for x in leaves]
    if not any(held):
        return leaves, flat, lambda results, gap: results

    def of_inexact(*xs):
        it = iter(xs)
        return flat(*[x if h else next(it) for x, h in zip(leaves, held)])

    def fill(results, gap):
        it = iter(results)
        return [gap(x) if h else next(it) for x, h in zip(leaves, held)]
    return [x for x, h in zip(leaves, held) if not h], of_inexact, fill


def args_result(in_tree, leaves, argnums):
    """Per-leaf results regrouped by argument: one argument's tree for an int argnums, else a tuple."""
    per_arg = in_tree.unflatten(leaves)
    return per_arg[0] if isinstance(argnums, int) else tuple(per_arg)


def checked_rule_leaf(value, shape, dtype, rule: str, where: str):
    """One leaf of what a custom rule returned, held to the shape and dtype of the primal it stands
    for (JAX's check): NumPy arrays and Python numbers take that dtype, arrays must already have it."""
    if not isinstance(value, (Array, Tracer)):
        value = Array(to_numpy(value, dtype=dtype))
    if tuple(value.shape) != tuple(shape):
        raise ShapeError(f"{rule} returned shape {tuple(value.shape)} for {where}, which has shape {tuple(shape)}")
    if value.dtype != dtype:
        raise TypeError(f"{rule} returned dtype {value.dtype} for {where}, which has dtype {dtype}")
    return value


class Aux:
    """has_aux: the function returns (output, aux); the transform differentiates the output, and
    aux comes back beside its result with every tracer of finished transforms unwrapped."""
    __slots__ = ("values",)

    def __init__(self):
        self.values: list = []

    def split(self, fun: Callable, has_aux: bool, fname: str) -> Callable:
        """fun, returning only its output when has_aux (the aux goes here)."""
        if not has_aux:
            return fun

        def main_output(*args):
            out = fun(*args)
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"{fname} with has_aux=True needs the function to return a pair "
                                f"(output, aux); it returned {type(out).__name__}")
            self.values.append(out[1])
            return out[0]
        return main_output

    def value(self):
        """The last call's aux."""
        def unwrap(x):
            while isinstance(x, Tracer) and not x._trace.alive:
                x = x.primal()
            return x
        leaves, treedef = tree_flatten(self.values[-1])
        return treedef.unflatten(unwrap(x) for x in leaves)


def one_hot(shape, dtype, k, device=CPU):
    basis = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype)
    basis[k] = 1
    return device_put(Array(basis.reshape(shape)), device)


def stack_jacobian(rows, lead_shape, trail_shape, dtype, axis):
    """Stack per-element derivative slices (each of shape lead or trail) into lead + trail."""
    shape = tuple(lead_shape) + tuple(trail_shape)
    if not rows:
        return zeros(shape, dtype)
    if axis == 0:
        pieces = [layout.reshape_p(r, shape=(1,) + tuple(r.shape)) for r in rows]
    else:
        pieces = [layout.reshape_p(r, shape=tuple(r.shape) + (1,)) for r in rows]
    stacked = S.concatenate_p(*pieces, axis=0 if axis == 0 else len(rows[0].shape))
    return layout.reshape_p(stacked, shape=shape)

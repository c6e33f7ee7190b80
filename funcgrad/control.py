"""Control flow that works both eagerly and under jit (jax.lax's cond, switch, loops and scan).

Eagerly, or when the predicate is known, `cond` and `switch` run one branch, like a Python `if`.
Inside jit, where the predicate is an abstract value, they run every branch and select leaf by
leaf. Loops run in Python: tracing happens on concrete values, so a loop with known bounds is
unrolled into the traced program (and differentiates like any code); a loop whose trip count
depends on a value traced by jit cannot be, and says so.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import numpy as fnp
from .errors import ConcretizationError
from .vmap import BatchTracer
from .tree import keystr, tree_flatten, tree_flatten_with_path, tree_map


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
        _same_kind(on_true, on_false, "false_fun's result", "true_fun's", "cond", _BRANCHES)
        return tree_map(lambda a, b: fnp.where(pred, a, b), on_true, on_false)
    return true_fun(*operands) if chosen else false_fun(*operands)


def _select(index, branches_out: list):
    """Leaf-wise choice among branch results by a traced index."""
    for i, out in enumerate(branches_out[1:], 1):
        _same_kind(branches_out[0], out, f"branch {i}'s result", "branch 0's", "switch", _BRANCHES)
    result = branches_out[-1]
    for i in range(len(branches_out) - 2, -1, -1):
        result = tree_map(lambda a, b, i=i: fnp.where(fnp.equal(index, i), a, b), branches_out[i], result)
    return result


def switch(index, branches: Sequence[Callable], *operands) -> Any:
    """branches[index](*operands), the index clamped into range (as jax.lax.switch)."""
    if not branches:
        raise ValueError("switch needs at least one branch")
    n = len(branches)
    known = concrete_int(index)
    if isinstance(known, int):
        return branches[min(max(known, 0), n - 1)](*operands)
    if np.shape(index) != ():
        raise TypeError(f"switch needs a scalar index, got shape {tuple(np.shape(index))}")
    return _select(fnp.clip(index, 0, n - 1), [branch(*operands) for branch in branches])


def _static_bound(value, what: str) -> int:
    bound = concrete_int(value)
    if not isinstance(bound, int):
        raise ConcretizationError(f"fori_loop: the {what} bound is traced by jit, so the loop cannot be unrolled; "
                                  f"pass it as a Python int (or through static_argnums)")
    return bound


def fori_loop(lower, upper, body_fun: Callable, init_val) -> Any:
    """for i in range(lower, upper): val = body_fun(i, val); the bounds must be known."""
    val = init_val
    for i in range(_static_bound(lower, "lower"), _static_bound(upper, "upper")):
        val = body_fun(i, val)
        _same_kind(init_val, val, f"the value body_fun returned at i={i}", "init_val", "fori_loop", _LOOP)
    return val


def while_loop(cond_fun: Callable, body_fun: Callable, init_val) -> Any:
    """while cond_fun(val): val = body_fun(val). The condition must be concrete: eagerly and under
    grad it is; inside jit it raises, since the trip count would depend on a traced value. Under
    vmap, where each batch member has its own condition, the loop runs while any member's holds,
    and a member whose condition fails keeps its value (jax.lax.while_loop's batching)."""
    val = init_val
    while True:
        pred = cond_fun(val)
        if np.shape(pred) != ():
            raise TypeError(f"while_loop: cond_fun must return a scalar boolean, got shape {tuple(np.shape(pred))}")
        try:
            go = bool(pred)
        except ConcretizationError as e:
            if not _batched(pred):
                raise ConcretizationError(f"while_loop: the loop condition depends on a value traced by jit or "
                                          f"vmap, so its trip count is unknown; use fori_loop with static bounds, "
                                          f"or call it outside jit ({e})") from None
            return _batched_while(cond_fun, body_fun, val, pred)
        if not go:
            return val
        val = body_fun(val)
        _same_kind(init_val, val, "the value body_fun returned", "init_val", "while_loop", _LOOP)


def _batched(pred) -> bool:
    return isinstance(pred, BatchTracer)


def _any_member(pred) -> bool:
    """Whether any batch member's condition holds: the batched predicate's values, every vmap level
    stripped (raises ConcretizationError where a level below is jit's abstract trace)."""
    while isinstance(pred, BatchTracer):
        pred = pred.val
    try:
        return bool(fnp.any(pred))
    except ConcretizationError as e:
        raise ConcretizationError(f"while_loop: the batched loop condition depends on a value traced by jit, so "
                                  f"its trip count is unknown ({e})") from None


def _batched_while(cond_fun: Callable, body_fun: Callable, val, pred) -> Any:
    if np.shape(pred) != ():
        raise TypeError(f"while_loop: cond_fun must return a scalar boolean, got shape {tuple(np.shape(pred))}")
    while _any_member(pred):
        stepped = body_fun(val)
        if tree_flatten(stepped)[1] != tree_flatten(val)[1]:
            raise TypeError(f"while_loop: body_fun returned {tree_flatten(stepped)[1]}, not the structure of "
                            f"init_val {tree_flatten(val)[1]}")
        val = tree_map(lambda new, old: fnp.where(pred, new, old), stepped, val)
        pred = cond_fun(val)
    return val


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False, unroll: int = 1):
    """(carry, ys): carry, y = f(carry, x) for each x along the leading axis of xs, with the
    ys stacked (jax.lax.scan). unroll is accepted for compatibility (loops always unroll here)."""
    leaves, structure = tree_flatten(xs)
    lengths = {int(np.shape(leaf)[0]) for leaf in leaves if np.ndim(leaf) > 0}
    if any(np.ndim(leaf) == 0 for leaf in leaves):
        raise ValueError("scan: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"scan: leading axes of xs have lengths {sorted(lengths)}" if lengths else
                         "scan: give xs or length")
    n = lengths.pop()
    if n == 0:  # no step runs: f is called once on zeros only to learn the shapes of its ys
        probe = structure.unflatten([fnp.zeros(np.shape(leaf)[1:], fnp.asarray(leaf).dtype) for leaf in leaves])
        _, y = f(init, probe if leaves else None)
        return init, tree_map(lambda leaf: fnp.zeros((0,) + tuple(np.shape(leaf)), fnp.asarray(leaf).dtype), y)
    carry, ys = init, []
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        x = structure.unflatten([leaf[i] for leaf in leaves]) if leaves else None
        carry, y = f(carry, x)
        _same_kind(init, carry, f"the carry returned at step {i}", "the initial carry")
        if ys:
            _same_kind(ys[0], y, f"the y returned at step {i}", "the first step's")
        ys.append(y)
    if reverse:
        ys.reverse()
    if not tree_flatten(ys[0])[0]:  # f returned None (or an empty structure) as its y
        return carry, ys[0]
    return carry, tree_map(lambda *parts: fnp.stack(parts), *ys)


_SCAN = "the carry and ys keep one shape and dtype across steps"
_LOOP = "the loop value keeps one structure, shape and dtype across iterations"
_BRANCHES = "every branch returns one structure, shape and dtype"


def _same_kind(expected, got, what: str, against: str, where: str = "scan", rule: str = _SCAN) -> None:
    """What a loop carries (or a traced branch returns) keeps one structure, shape and dtype, as in
    jax.lax: a loop that changes it would run eagerly and fail under jit."""
    e_leaves, e_def = tree_flatten(expected)
    g_leaves, g_def = tree_flatten(got)
    if e_def != g_def:
        raise TypeError(f"{where}: {what} differs from {against} in structure, {e_def.difference(g_def)}: {rule}")
    for path_leaf, e, g in zip(tree_flatten_with_path(got)[0], e_leaves, g_leaves):
        e_kind, g_kind = ((tuple(np.shape(v)), fnp.asarray(v).dtype) for v in (e, g))
        weak = any(isinstance(v, (bool, int, float, complex)) for v in (e, g))  # a Python number takes the other's
        if e_kind[0] != g_kind[0] or (e_kind[1] != g_kind[1] and not weak):
            raise TypeError(f"{where}: {what} has shape {g_kind[0]} dtype {g_kind[1]} at {keystr(path_leaf[0])}, "
                            f"but {against} has shape {e_kind[0]} dtype {e_kind[1]}: {rule}")


def map(f: Callable, xs) -> Any:  # noqa: A001  (jax.lax.map)
    """f applied to each slice of xs along the leading axis, results stacked."""
    return scan(lambda carry, x: (carry, f(x)), None, xs)[1]

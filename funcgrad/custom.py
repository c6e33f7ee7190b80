"""User-defined derivative rules (custom_vjp, custom_jvp) and rematerialisation (checkpoint).
Each asks the innermost active transform to treat the whole function as one step: reverse mode
records one node (funcgrad.vjp), forward mode runs the rule (funcgrad.jvp), jit and vmap trace
through the plain function."""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from .arguments import zeros_like
from .jvp import JVPTrace
from .trace import find_top_trace
from .tree import tree_leaves, tree_map
from .vjp import vjp

__all__ = ["custom_vjp", "custom_jvp", "custom_gradient", "checkpoint"]


class custom_vjp:
    """A function with a hand-written reverse-mode rule (jax.custom_vjp).

        f = custom_vjp(f); f.defvjp(fwd, bwd)
        fwd(*args) -> (output, residuals);  bwd(*nondiff_args, residuals, g) -> tuple per argument
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self.fwd, self.bwd = fwd, bwd

    def diff_args(self, args):
        return tuple(a for i, a in enumerate(args) if i not in self.nondiff_argnums)

    def merge_args(self, args, diff_args):
        it = iter(diff_args)
        return [a if i in self.nondiff_argnums else next(it) for i, a in enumerate(args)]

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp function {self.__name__} has no rule: call "
                            f"{self.__name__}.defvjp(fwd, bwd) first")
        top = find_top_trace(tree_leaves(self.diff_args(args)))
        if top is None:
            return self.fun(*args)
        return top.process_custom_vjp(self, args)


class custom_jvp:
    """A function with a hand-written forward-mode rule (jax.custom_jvp).

        f = custom_jvp(f)
        @f.defjvp
        def f_jvp(primals, tangents):  # with nondiff_argnums: f_jvp(*nondiff_args, primals, tangents)
            return f(*primals), tangent_out

    Reverse mode (grad, vjp) needs no second rule: the tangent output is linear in the tangents, so
    its transpose is that map's own vjp, which funcgrad computes.
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp_rule: Callable | None = None
        self._reverse: custom_vjp | None = None

    def defjvp(self, rule: Callable) -> Callable:
        self.jvp_rule = rule
        self._reverse = None
        return rule

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """A reverse-mode rule of its own (after defjvp), where the tangent map's transpose is not
        the way: the inverse of a linear map, whose transpose is another solve (lax.custom_linear_solve)."""
        self._reverse = custom_vjp(self.fun, self.nondiff_argnums)
        self._reverse.defvjp(fwd, bwd)

    diff_args = custom_vjp.diff_args

    def __call__(self, *args):
        if self.jvp_rule is None:
            raise TypeError(f"custom_jvp function {self.__name__} has no rule: decorate one with "
                            f"@{self.__name__}.defjvp first")
        top = find_top_trace(tree_leaves(self.diff_args(args)))
        if top is None:
            return self.fun(*args)
        if isinstance(top, JVPTrace):
            return top.process_custom_jvp(self, args)
        return self._as_custom_vjp()(*args)

    def _as_custom_vjp(self) -> custom_vjp:
        if self._reverse is None:
            nondiff_argnums = self.nondiff_argnums

            def fwd(*args):  # through the rule again: a lower level (a Hessian's) must not differentiate fun
                return self(*args), args

            def bwd(*rest):
                *nondiff, args, g = rest
                primals = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)

                def tangent_map(*tangents):
                    return self.jvp_rule(*nondiff, primals, tangents)[1]
                zeros = [tree_map(zeros_like, p) for p in primals]
                return vjp(tangent_map, *zeros, pytorch_convention=False)[1](g)

            self._reverse = custom_vjp(self.fun, nondiff_argnums)
            self._reverse.defvjp(fwd, bwd)
        return self._reverse


def custom_gradient(fun: Callable) -> Callable:
    """fun returning (value, vjp) made a function whose reverse-mode derivative is that vjp
    (jax.custom_gradient, tf.custom_gradient): vjp(g) gives a cotangent per argument (a tuple, or
    one cotangent for a function of one argument)."""
    def value_only(*args):
        return fun(*args)[0]

    def bwd(pullback, g):
        cts = pullback(g)
        return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)

    rule = custom_vjp(value_only)
    rule.defvjp(lambda *args: fun(*args), bwd)
    functools.update_wrapper(rule, fun)
    return rule


def checkpoint(fun: Callable) -> Callable:
    """fun, differentiated without storing its intermediates: the backward pass recomputes them
    (torch.utils.checkpoint, jax.checkpoint). Trades compute for activation memory."""
    @functools.wraps(fun)
    def checkpointed(*args):
        top = find_top_trace(tree_leaves(args))
        if top is None:
            return fun(*args)
        return top.process_checkpoint(fun, args)

    return checkpointed

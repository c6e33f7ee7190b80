"""Forward mode: jvp, jacfwd, hessian (forward over reverse), linearize. JVPTrace pushes a tangent
along with every value as the function runs."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .arguments import (Aux, args_result, checked_rule_leaf, flat_transform, input_leaves, one_hot, stack_jacobian,
                        zeros, zeros_like)
from .array import Array, to_numpy
from .errors import ShapeError
from .ops import elementwise as E
from .trace import Trace, Tracer, bind, is_differentiable_output
from .tree import tree_flatten, tree_leaves, tree_structure
from .vjp import jacrev

__all__ = ["jvp", "jacfwd", "hessian", "linearize"]


class JVPTracer(Tracer):
    __slots__ = ("_primal", "tangent")
    differentiated = True

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self._primal = primal
        self.tangent = tangent

    def primal(self):
        return self._primal

    shape = property(lambda self: self._primal.shape)
    dtype = property(lambda self: self._primal.dtype)


class JVPTrace(Trace):
    __slots__ = ()

    def unbox(self, args) -> tuple[list, list]:
        """Primals one level down, and this level's tangents (None for constants)."""
        primals, tangents = [], []
        for a in args:
            if type(a) is JVPTracer and a._trace is self:
                primals.append(a._primal)
                tangents.append(a.tangent)
            else:
                primals.append(a)
                tangents.append(None)
        return primals, tangents

    def process(self, prim, args, params):
        self.check_alive()
        primals, tangents = self.unbox(args)
        out = bind(prim, *primals, **params)
        if not is_differentiable_output(prim, out):
            return out
        if prim.jvp_joint is not None:
            t_out = prim.jvp_joint(tangents, out, *primals, **params)
        else:
            t_out = None
            for i, t in enumerate(tangents):
                if t is None:
                    continue
                term = prim.jvp(i, t, out, primals, params)
                if term is not None:
                    t_out = term if t_out is None else E.add_p(t_out, term)
        if t_out is None:
            return out
        if t_out.dtype != out.dtype:
            t_out = E.convert_p(t_out, dtype=out.dtype)
        return JVPTracer(self, out, t_out)

    def process_custom_vjp(self, fn, args):
        raise TypeError(f"can't apply forward-mode autodiff (jvp, jacfwd) to the custom_vjp "
                        f"function {fn.__name__}; use reverse mode (grad, vjp, jacrev)")

    def process_checkpoint(self, fun, args):
        return fun(*args)  # forward mode stores nothing, so there is nothing to rematerialise

    def process_custom_jvp(self, fn, args):
        """Run the user's rule on this level's primals and tangents (zeros for constants)."""
        self.check_alive()
        nondiff = [args[i] for i in fn.nondiff_argnums]
        leaves, in_tree = tree_flatten(fn.diff_args(args))
        primals, tangents = self.unbox(leaves)
        tangents = [zeros_like(p) if t is None else t for p, t in zip(primals, tangents)]
        out, t_out = fn.jvp_rule(*nondiff, tuple(in_tree.unflatten(primals)), tuple(in_tree.unflatten(tangents)))
        out_leaves, out_tree = tree_flatten(out)
        t_leaves, t_tree = tree_flatten(t_out)
        rule = f"the custom_jvp rule of {fn.__name__}"
        if t_tree != out_tree:
            raise TypeError(f"{rule} returned tangents of structure {t_tree} for outputs of structure {out_tree}")
        t_leaves = [checked_rule_leaf(t, np.shape(o), o.dtype, rule, f"output {k}")
                    for k, (o, t) in enumerate(zip(out_leaves, t_leaves))]
        return out_tree.unflatten([JVPTracer(self, o, t) for o, t in zip(out_leaves, t_leaves)])


def _jvp(fun_flat: Callable, primals: list, tangents: list):
    with JVPTrace("jvp") as trace:
        out = fun_flat(*[JVPTracer(trace, p, t) for p, t in zip(primals, tangents)])
        out_leaves, out_tree = tree_flatten(out)
        outs, tans = [], []
        for o in out_leaves:
            if type(o) is JVPTracer and o._trace is trace:
                outs.append(o._primal)
                tans.append(o.tangent)
            else:
                o = o if isinstance(o, (Array, Tracer)) else Array(to_numpy(o))
                outs.append(o)
                tans.append(zeros(o.shape, o.dtype, o.device))
    return out_tree, outs, tans


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]):
    """(fun(*primals), the directional derivative of fun at primals along tangents)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp takes primals and tangents as tuples or lists, one entry per argument")
    p_tree, t_tree = tree_structure(tuple(primals)), tree_structure(tuple(tangents))
    if p_tree != t_tree:
        raise ValueError(f"jvp: primals have structure {p_tree} but tangents have {t_tree}")
    p_leaves = input_leaves(primals, "jvp", range(len(primals)))
    t_leaves = []
    for p, t in zip(p_leaves, tree_leaves(tuple(tangents))):
        t = t if isinstance(t, (Array, Tracer)) else Array(to_numpy(t, dtype=p.dtype))
        if t.shape != p.shape:
            raise ShapeError(f"jvp: a tangent has shape {t.shape} but its primal has shape {p.shape}")
        if t.dtype != p.dtype and dtypes.is_inexact(p.dtype):  # the tangent space is the primal's (jax.jvp's rule)
            raise TypeError(f"jvp: a tangent has dtype {t.dtype} but its primal has dtype {p.dtype}; cast it")
        t_leaves.append(t)
    out_tree, outs, tans = _jvp(lambda *xs: fun(*p_tree.unflatten(xs)), p_leaves, t_leaves)
    return out_tree.unflatten(outs), out_tree.unflatten(tans)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """Jacobian by forward mode, one JVP per input element: out.shape + in.shape per leaf pair;
    holomorphic=True (complex inputs) gives the complex derivatives, which a unit tangent finds."""
    @functools.wraps(fun)
    def jacfwd_f(*args, **kwargs):
        leaves, in_tree, flat = flat_transform(fun, args, kwargs, argnums, "jacfwd")
        if holomorphic and not all(dtypes.is_complex(x.dtype) for x in leaves):
            raise TypeError(f"jacfwd with holomorphic=True needs complex inputs, got "
                            f"{sorted({str(x.dtype) for x in leaves})}")
        if not holomorphic and any(dtypes.is_complex(x.dtype) for x in leaves):
            raise TypeError("jacfwd of a complex input: a one-hot tangent moves only its real part, so the "
                            "Jacobian would miss d/dy; use jacrev (of a real output) or jvp with complex tangents")
        aux = Aux()
        fun_flat = aux.split(flat, has_aux, "jacfwd")

        columns = []  # columns[i][k]: output tangents for element k of input leaf i
        out_tree, outs = None, None
        for i, x in enumerate(leaves):
            cols = []
            for k in range(x.size):
                tangents = [zeros(p.shape, p.dtype, p.device) for p in leaves]
                tangents[i] = one_hot(x.shape, x.dtype, k, x.device)
                out_tree, outs, tans = _jvp(fun_flat, leaves, tangents)
                cols.append(tans)
            columns.append(cols)
        if out_tree is None:  # no input elements at all: evaluate once for the output's shape
            out_tree, outs, _ = _jvp(fun_flat, leaves, [zeros(p.shape, p.dtype, p.device) for p in leaves])
        per_out = []
        for j, o in enumerate(outs):
            blocks = [stack_jacobian([c[j] for c in columns[i]], o.shape, x.shape, o.dtype, -1)
                      for i, x in enumerate(leaves)]
            per_out.append(args_result(in_tree, blocks, argnums))
        jac = out_tree.unflatten(per_out)
        return (jac, aux.value()) if has_aux else jac

    return jacfwd_f


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Second derivatives, forward-over-reverse: jacfwd(jacrev(fun))."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


def linearize(fun: Callable, *primals):
    """(fun(*primals), f_jvp): f_jvp(*tangents) is the JVP at primals (recomputed per call)."""
    out = fun(*primals)
    return out, lambda *tangents: jvp(fun, primals, tangents)[1]

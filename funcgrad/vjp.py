"""Reverse mode (vjp, grad, value_and_grad, jacrev, hessian) and forward mode (jvp, jacfwd),
with custom_vjp and checkpoint. Two small interpreters: VJPTrace records a tape of Nodes while
the function runs; JVPTrace pushes tangents along with the values.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .array import CPU, Array, to_numpy
from .devices import device_put, full
from .errors import ShapeError
from .ops import elementwise as E
from .ops import shape as S
from .trace import Trace, Tracer, annotate, bind, find_top_trace, is_differentiable_output
from .tree import keystr, tree_flatten, tree_flatten_with_path, tree_leaves, tree_map, tree_structure

__all__ = ["vjp", "grad", "value_and_grad", "jvp", "jacrev", "jacfwd", "hessian",
           "custom_vjp", "checkpoint"]


# ==== the tape ====================================================================================
class Node:
    """One recorded primitive: what its VJP rules need, and where its inputs came from.

    parents: (argument index, parent node, parent output index) for each traced argument.
    """
    __slots__ = ("prim", "args", "params", "out", "parents")
    n_out = 1

    def __init__(self, prim, args, params, out, parents):
        self.prim = prim
        self.args = args
        self.params = params
        self.out = out
        self.parents = parents

    def backward(self, cts):
        g, prim, out, args, params = cts[0], self.prim, self.out, self.args, self.params
        return [(node, idx, prim.vjp(i, g, out, args, params)) for i, node, idx in self.parents]

    def release(self):
        """Drop the residuals once this node's cotangents are out (a tape replayed only once)."""
        self.args = self.out = None


def _input_node() -> Node:
    return Node(None, (), None, None, ())


class VJPTracer(Tracer):
    __slots__ = ("_value", "_node", "_index")

    def __init__(self, trace, value, node, index):
        self._trace = trace
        self._value = value
        self._node = node
        self._index = index

    def primal(self):
        return self._value

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)


class VJPTrace(Trace):
    __slots__ = ()

    def process(self, prim, args, params):
        self.check_alive()
        vals, parents = [], []
        for i, a in enumerate(args):
            if type(a) is VJPTracer and a._trace is self:
                vals.append(a._value)
                parents.append((i, a._node, a._index))
            else:
                vals.append(a)
        out = bind(prim, *vals, **params)
        if not prim.differentiable or out.dtype not in dtypes.float_dtypes:
            return out
        return VJPTracer(self, out, Node(prim, vals, params, out, parents), 0)

    def unbox(self, leaves):
        """This trace's tracers replaced by their values, and the parents they came from."""
        vals, parents = [], []
        for i, a in enumerate(leaves):
            if type(a) is VJPTracer and a._trace is self:
                vals.append(a._value)
                parents.append((i, a._node, a._index))
            else:
                vals.append(a)
        return vals, tuple(parents)

    def box_outputs(self, node, out_leaves):
        return [VJPTracer(self, o, node, k) if _is_float_array(o) else o
                for k, o in enumerate(out_leaves)]

    def process_custom_vjp(self, fn, args):
        self.check_alive()
        nondiff = [args[i] for i in fn.nondiff_argnums]
        leaves, in_tree = tree_flatten(fn.diff_args(args))
        vals, parents = self.unbox(leaves)
        out, residuals = fn.fwd(*fn.merge_args(args, in_tree.unflatten(vals)))
        out_leaves, out_tree = tree_flatten(out)
        node = CustomVJPNode(fn, nondiff, residuals, in_tree, out_tree, out_leaves, parents)
        return out_tree.unflatten(self.box_outputs(node, out_leaves))

    def process_checkpoint(self, fun, args):
        self.check_alive()
        leaves, in_tree = tree_flatten(args)
        vals, parents = self.unbox(leaves)
        out = fun(*in_tree.unflatten(vals))  # nothing of fun's inside is recorded at this level
        out_leaves, out_tree = tree_flatten(out)
        node = CheckpointNode(fun, in_tree, vals, out_tree, out_leaves, parents)
        return out_tree.unflatten(self.box_outputs(node, out_leaves))


def _is_float_array(x) -> bool:
    return hasattr(x, "dtype") and dtypes.is_float(x.dtype)


class _MultiOutputNode(Node):
    """A node for a whole function (custom_vjp, checkpoint): several outputs, one backward."""
    __slots__ = ("n_out", "out_tree", "out_avals")

    def __init__(self, out_tree, out_leaves, parents):
        super().__init__(None, (), None, None, parents)
        self.n_out = len(out_leaves)
        self.out_tree = out_tree
        self.out_avals = [(np.shape(o), getattr(o, "dtype", None), getattr(o, "device", CPU)) for o in out_leaves]

    def release(self):
        """Multi-output nodes keep what they need until the pass ends (it is small)."""

    def full_cotangent(self, cts):
        return self.out_tree.unflatten(
            ct if ct is not None else _zeros(*aval) for ct, aval in zip(cts, self.out_avals))


class CustomVJPNode(_MultiOutputNode):
    __slots__ = ("fn", "nondiff", "residuals", "in_tree")

    def __init__(self, fn, nondiff, residuals, in_tree, out_tree, out_leaves, parents):
        super().__init__(out_tree, out_leaves, parents)
        self.fn, self.nondiff, self.residuals, self.in_tree = fn, nondiff, residuals, in_tree

    def backward(self, cts):
        in_cts = self.fn.bwd(*self.nondiff, self.residuals, self.full_cotangent(cts))
        n_args = len(self.in_tree.children)
        if not isinstance(in_cts, (tuple, list)) or len(in_cts) != n_args:
            raise TypeError(f"custom_vjp bwd of {self.fn.__name__} must return a tuple of {n_args} "
                            f"cotangents, one per differentiable argument; got {in_cts!r:.200}")
        flat = []
        for arg_tree, ct in zip(self.in_tree.children, in_cts):
            flat.extend([None] * arg_tree.num_leaves if ct is None else tree_leaves(ct))
        return [(node, idx, flat[i]) for i, node, idx in self.parents]


class CheckpointNode(_MultiOutputNode):
    __slots__ = ("fun", "in_tree", "in_vals")

    def __init__(self, fun, in_tree, in_vals, out_tree, out_leaves, parents):
        super().__init__(out_tree, out_leaves, parents)
        self.fun, self.in_tree, self.in_vals = fun, in_tree, in_vals

    def backward(self, cts):
        """Run the forward again, this time recording it, and pull the cotangents through."""
        diff = [i for i, _, _ in self.parents]
        vals = list(self.in_vals)

        def rerun(*diff_vals):
            for i, v in zip(diff, diff_vals):
                vals[i] = v
            return self.fun(*self.in_tree.unflatten(vals))

        _, rerun_vjp = _vjp(rerun, [self.in_vals[i] for i in diff])
        in_cts = rerun_vjp(self.full_cotangent(cts))
        return [(node, idx, ct) for (_, node, idx), ct in zip(self.parents, in_cts)]


def _toposort(start_nodes):
    """Nodes reachable from start_nodes, each after every node that consumes it."""
    counts: dict[Node, int] = {}
    stack = list(start_nodes)
    while stack:
        node = stack.pop()
        if node in counts:
            counts[node] += 1
        else:
            counts[node] = 1
            stack.extend(p for _, p, _ in node.parents)
    ready = []
    for node in start_nodes:
        counts[node] -= 1
        if counts[node] == 0:
            ready.append(node)
    while ready:
        node = ready.pop()
        yield node
        for _, parent, _ in node.parents:
            counts[parent] -= 1
            if counts[parent] == 0:
                ready.append(parent)


def _accumulate(acc, node, idx, ct):
    slots = acc.get(node)
    if slots is None:
        slots = acc[node] = [None] * node.n_out
    prev = slots[idx]
    slots[idx] = ct if prev is None else E.add_p(prev, ct)


def backward_pass(outputs, cts, release: bool = False):
    """outputs: (node, index) pairs; returns {input node: [cotangent]}. With release, each node's
    residuals are dropped as soon as it is done, so activation memory falls during the pass."""
    acc: dict[Node, list] = {}
    for (node, idx), ct in zip(outputs, cts):
        _accumulate(acc, node, idx, ct)
    for node in _toposort([node for node, _ in outputs]):
        if not node.parents:
            continue  # an input: its cotangent stays in acc
        node_cts = acc.pop(node, None)
        if node_cts is None:
            continue
        for parent, idx, ct in node.backward(node_cts):
            if ct is not None:
                _accumulate(acc, parent, idx, ct)
        if release:
            node.release()
    return acc


# ==== reverse mode =================================================================================
def _zeros(shape, dtype, device=CPU):
    return full(shape, 0, dtype, device)


def _zeros_like(x):
    return _zeros(np.shape(x), getattr(x, "dtype", np.result_type(x)), getattr(x, "device", CPU))


def _as_input(x, fname: str, where: str, require_float: bool = True):
    if not isinstance(x, (Array, Tracer)):
        if x is None or isinstance(x, (str, bytes)) or callable(x):
            raise TypeError(f"{fname}: {where} is a {type(x).__name__}, not an array; "
                            f"mark it static (pass it through a closure) or remove it from the inputs")
        x = Array(to_numpy(x))
    if require_float and not dtypes.is_float(x.dtype):
        raise TypeError(f"{fname}: {where} has dtype {x.dtype}; only floating-point inputs can be "
                        f"differentiated (cast it with .astype(fg.float32), or leave it out of argnums)")
    return x


def _input_leaves(args: Sequence[Any], fname: str, argnums: Sequence[int]):
    """Flatten the differentiated arguments, converting and checking every leaf."""
    leaves = []
    for arg, num in zip(args, argnums):
        with_path, _ = tree_flatten_with_path(arg)
        leaves.extend(_as_input(x, fname, f"argument {num} at {keystr(path)}" if path else f"argument {num}")
                      for path, x in with_path)
    return leaves


def _vjp(fun_flat: Callable, primals: list, name: str = "vjp"):
    """vjp over a flat list of primals; fun_flat may return any pytree."""
    with VJPTrace(name) as trace:
        in_nodes = [_input_node() for _ in primals]
        out = fun_flat(*[VJPTracer(trace, x, n, 0) for x, n in zip(primals, in_nodes)])
        out_leaves, out_tree = tree_flatten(out)
        out_vals, outputs = [], []
        for o in out_leaves:
            if type(o) is VJPTracer and o._trace is trace:
                out_vals.append(o._value)
                outputs.append((o._node, o._index))
            else:
                out_vals.append(o if isinstance(o, (Array, Tracer)) else Array(to_numpy(o)))
                outputs.append(None)

    def vjp_fn(ct, release: bool = False):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise ValueError(f"the cotangent has structure {ct_tree}, but the output has {out_tree}")
        seeds, cts = [], []
        for o, c, out_node in zip(out_vals, ct_leaves, outputs):
            c = c if isinstance(c, (Array, Tracer)) else Array(to_numpy(c, dtype=o.dtype))
            if c.shape != o.shape:
                raise ShapeError(f"the cotangent has shape {c.shape}, but the output has shape {o.shape}")
            if out_node is not None:
                seeds.append(out_node)
                cts.append(c)
        acc = backward_pass(seeds, cts, release) if seeds else {}
        grads = []
        for x, node in zip(primals, in_nodes):
            slots = acc.get(node)
            g = _zeros(x.shape, x.dtype, x.device) if slots is None else slots[0]
            grads.append(g if g.dtype == x.dtype else E.convert_p(g, dtype=x.dtype))
        return grads

    return out_tree.unflatten(out_vals), vjp_fn


def _map_leaves(f, tree):
    leaves, treedef = tree_flatten(tree)
    return treedef.unflatten(f(x) for x in leaves)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False):
    """(fun(*primals), vjp_fn[, aux]); vjp_fn(cotangent) returns one cotangent per primal."""
    leaves = _input_leaves(primals, "vjp", range(len(primals)))
    in_tree = tree_structure(primals)
    aux_box = []

    def fun_flat(*xs):
        out = fun(*in_tree.unflatten(xs))
        if has_aux:
            out, aux = _split_aux(out, "vjp")
            aux_box.append(aux)
        return out

    out, vjp_flat = _vjp(fun_flat, leaves, "vjp")
    vjp_fn = lambda ct: in_tree.unflatten(vjp_flat(ct))  # noqa: E731
    if has_aux:
        return out, vjp_fn, _unbox_aux(aux_box[0])
    return out, vjp_fn


def _split_aux(out, fname):
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{fname} with has_aux=True needs the function to return a pair "
                        f"(output, aux); it returned {type(out).__name__}")
    return out


def _unbox_aux(aux):
    def value(x):
        while isinstance(x, Tracer) and not x._trace.alive:
            x = x.primal()
        return x
    return _map_leaves(value, aux)


def _normalize_argnums(argnums, n_args: int, fname: str) -> tuple[int, ...]:
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


def _partial(fun, args, kwargs, nums):
    def with_diff_args(*diff):
        full = list(args)
        for i, d in zip(nums, diff):
            full[i] = d
        return fun(*full, **kwargs)
    return with_diff_args


def _flat_transform(fun, args, kwargs, argnums, fname):
    """fun as a function of the flat leaves of the differentiated arguments."""
    nums = _normalize_argnums(argnums, len(args), fname)
    diff_args = [args[i] for i in nums]
    leaves = _input_leaves(diff_args, fname, nums)
    in_tree = tree_structure(tuple(diff_args))
    inner = _partial(fun, args, kwargs, nums)
    return leaves, in_tree, lambda *xs: inner(*in_tree.unflatten(xs))


def _args_result(in_tree, leaves, argnums):
    per_arg = in_tree.unflatten(leaves)
    return per_arg[0] if isinstance(argnums, int) else tuple(per_arg)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """f -> (f(*args), gradient of f with respect to args[argnums]); f must return a scalar."""
    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        leaves, in_tree, flat = _flat_transform(fun, args, kwargs, argnums, "grad")
        aux_box = []

        def scalar_fun(*xs):
            out = flat(*xs)
            if has_aux:
                out, aux = _split_aux(out, "grad")
                aux_box.append(aux)
            if not hasattr(out, "shape"):
                out = Array(to_numpy(out))
            if out.shape != () or not dtypes.is_float(out.dtype):
                raise TypeError(f"grad needs {fun.__name__} to return a floating-point scalar; "
                                f"it returned shape {tuple(out.shape)} dtype {out.dtype} "
                                f"(reduce it with .sum() or use jacrev / vjp)")
            return out

        with annotate("forward"):
            value, vjp_flat = _vjp(scalar_fun, leaves, "grad")
        with annotate("backward"):
            grads = _args_result(in_tree, vjp_flat(full((), 1, value.dtype, value.device), release=True), argnums)
        if has_aux:
            return (value, _unbox_aux(aux_box[0])), grads
        return value, grads

    return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """f -> the gradient of scalar-valued f with respect to args[argnums] (same pytree)."""
    vg = value_and_grad(fun, argnums, has_aux)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        (value, grads) = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_f


def _one_hot(shape, dtype, k, device=CPU):
    basis = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype)
    basis[k] = 1
    return device_put(Array(basis.reshape(shape)), device)


def _stack_jacobian(rows, lead_shape, trail_shape, dtype, axis):
    """Stack per-element derivative slices (each of shape lead or trail) into lead + trail."""
    shape = tuple(lead_shape) + tuple(trail_shape)
    if not rows:
        return _zeros(shape, dtype)
    if axis == 0:
        pieces = [S.reshape_p(r, shape=(1,) + tuple(r.shape)) for r in rows]
    else:
        pieces = [S.reshape_p(r, shape=tuple(r.shape) + (1,)) for r in rows]
    stacked = S.concatenate_p(*pieces, axis=0 if axis == 0 else len(rows[0].shape))
    return S.reshape_p(stacked, shape=shape)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Jacobian by reverse mode, one VJP per output element: out.shape + in.shape per leaf pair."""
    @functools.wraps(fun)
    def jacrev_f(*args, **kwargs):
        leaves, in_tree, flat = _flat_transform(fun, args, kwargs, argnums, "jacrev")
        aux_box = []

        def fun_flat(*xs):
            out = flat(*xs)
            if has_aux:
                out, aux = _split_aux(out, "jacrev")
                aux_box.append(aux)
            return out

        out, vjp_flat = _vjp(fun_flat, leaves, "jacrev")
        out_leaves, out_tree = tree_flatten(out)
        per_out = []
        for j, o in enumerate(out_leaves):
            rows = []
            for k in range(o.size):
                ct = [_zeros(p.shape, p.dtype, p.device) for p in out_leaves]
                ct[j] = _one_hot(o.shape, o.dtype, k, o.device)
                rows.append(vjp_flat(out_tree.unflatten(ct)))
            blocks = [_stack_jacobian([r[i] for r in rows], o.shape, x.shape, x.dtype, 0)
                      for i, x in enumerate(leaves)]
            per_out.append(_args_result(in_tree, blocks, argnums))
        jac = out_tree.unflatten(per_out)
        return (jac, _unbox_aux(aux_box[0])) if has_aux else jac

    return jacrev_f


# ==== forward mode =================================================================================
class JVPTracer(Tracer):
    __slots__ = ("_primal", "tangent")

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
        tangents = [_zeros_like(p) if t is None else t for p, t in zip(primals, tangents)]
        out, t_out = fn.jvp_rule(*nondiff, tuple(in_tree.unflatten(primals)), tuple(in_tree.unflatten(tangents)))
        out_leaves, out_tree = tree_flatten(out)
        t_leaves, t_tree = tree_flatten(t_out)
        if t_tree != out_tree:
            raise TypeError(f"custom_jvp rule of {fn.__name__} returned tangents of structure {t_tree} for outputs "
                            f"of structure {out_tree}")
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
                tans.append(_zeros(o.shape, o.dtype, o.device))
    return out_tree, outs, tans


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]):
    """(fun(*primals), the directional derivative of fun at primals along tangents)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp takes primals and tangents as tuples or lists, one entry per argument")
    p_tree, t_tree = tree_structure(tuple(primals)), tree_structure(tuple(tangents))
    if p_tree != t_tree:
        raise ValueError(f"jvp: primals have structure {p_tree} but tangents have {t_tree}")
    p_leaves = _input_leaves(primals, "jvp", range(len(primals)))
    t_leaves = []
    for p, t in zip(p_leaves, tree_leaves(tuple(tangents))):
        t = t if isinstance(t, (Array, Tracer)) else Array(to_numpy(t, dtype=p.dtype))
        if t.shape != p.shape:
            raise ShapeError(f"jvp: a tangent has shape {t.shape} but its primal has shape {p.shape}")
        t_leaves.append(t)
    out_tree, outs, tans = _jvp(lambda *xs: fun(*p_tree.unflatten(xs)), p_leaves, t_leaves)
    return out_tree.unflatten(outs), out_tree.unflatten(tans)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Jacobian by forward mode, one JVP per input element: out.shape + in.shape per leaf pair."""
    @functools.wraps(fun)
    def jacfwd_f(*args, **kwargs):
        leaves, in_tree, flat = _flat_transform(fun, args, kwargs, argnums, "jacfwd")
        aux_box = []

        def fun_flat(*xs):
            out = flat(*xs)
            if has_aux:
                out, aux = _split_aux(out, "jacfwd")
                aux_box.append(aux)
            return out

        columns = []  # columns[i][k]: output tangents for element k of input leaf i
        out_tree, outs = None, None
        for i, x in enumerate(leaves):
            cols = []
            for k in range(x.size):
                tangents = [_zeros(p.shape, p.dtype, p.device) for p in leaves]
                tangents[i] = _one_hot(x.shape, x.dtype, k, x.device)
                out_tree, outs, tans = _jvp(fun_flat, leaves, tangents)
                cols.append(tans)
            columns.append(cols)
        if out_tree is None:  # no input elements at all: evaluate once for the output's shape
            out_tree, outs, _ = _jvp(fun_flat, leaves, [_zeros(p.shape, p.dtype, p.device) for p in leaves])
        per_out = []
        for j, o in enumerate(outs):
            blocks = [_stack_jacobian([c[j] for c in columns[i]], o.shape, x.shape, o.dtype, -1)
                      for i, x in enumerate(leaves)]
            per_out.append(_args_result(in_tree, blocks, argnums))
        jac = out_tree.unflatten(per_out)
        return (jac, _unbox_aux(aux_box[-1])) if has_aux else jac

    return jacfwd_f


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Second derivatives, forward-over-reverse: jacfwd(jacrev(fun))."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


# ==== user-defined rules and rematerialisation ======================================================
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

            def fwd(*args):
                return self.fun(*args), args

            def bwd(*rest):
                *nondiff, args, g = rest
                primals = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)

                def tangent_map(*tangents):
                    return self.jvp_rule(*nondiff, primals, tangents)[1]
                zeros = [tree_map(_zeros_like, p) for p in primals]
                return vjp(tangent_map, *zeros)[1](g)

            self._reverse = custom_vjp(self.fun, nondiff_argnums)
            self._reverse.defvjp(fwd, bwd)
        return self._reverse


def linearize(fun: Callable, *primals):
    """(fun(*primals), f_jvp): f_jvp(*tangents) is the JVP at primals (recomputed per call)."""
    out = fun(*primals)
    return out, lambda *tangents: jvp(fun, primals, tangents)[1]


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

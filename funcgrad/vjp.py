"""Reverse mode: vjp, grad, value_and_grad, jacrev. VJPTrace records a tape while the function
runs on concrete values: each primitive's result is a PrimitiveTracer, its own tape node; inputs,
custom_vjp functions and checkpointed regions (funcgrad.custom) are Nodes. The backward pass walks
the nodes reachable from the outputs in reverse recording order, summing cotangents."""
from __future__ import annotations

import functools
import heapq
import itertools
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .arguments import (Aux, args_result, checked_rule_leaf, flat_transform, input_leaves, integers_held, one_hot,
                        stack_jacobian, zeros)
from .array import CPU, Array, to_numpy
from .devices import device_put, full
from .errors import ShapeError
from .ops import elementwise as E
from .trace import Trace, Tracer, annotate, apply, bind, hooks
from .tree import tree_flatten, tree_map, tree_structure

__all__ = ["vjp", "grad", "value_and_grad", "jacrev", "linear_transpose"]


_creation_order = itertools.count()


class Node:
    """A tape node that is not a primitive's output: an input, or a custom_vjp function or
    checkpointed region (subclasses), whose outputs are NodeTracers pointing at it.

    parents: one flat tuple of (argument index, parent node, parent output index) for each traced
    argument. order: when it was recorded; a node's parents exist before it, so recording order is
    a topological order of every tape.
    """
    __slots__ = ("parents", "order")
    n_out = 1

    def __init__(self, parents: tuple):
        self.parents = parents
        self.order = next(_creation_order)


def edges(parents: tuple):
    """A node's flat parents tuple as (argument index, parent node, parent output index) triples."""
    return zip(parents[0::3], parents[1::3], parents[2::3])


class VJPTracer(Tracer):
    """A value on a reverse-mode tape: the output `_index` of the tape node `_node`."""
    __slots__ = ("_value",)
    differentiated = True

    def primal(self):
        return self._value

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)


class NodeTracer(VJPTracer):
    """An input's value, or one output of a custom_vjp function or checkpointed region."""
    __slots__ = ("_node", "_index")

    def __init__(self, trace, value, node: Node, index: int):
        self._trace = trace
        self._value = value
        self._node = node
        self._index = index


class PrimitiveTracer(VJPTracer):
    """A primitive's output and its tape node in one object, which keeps the primitive, its
    params and its arguments as bind received them (this trace's tracers among them).

    The tape is the objects a forward pass keeps alive, and Python's garbage collector promotes and
    rescans every one of them: a separate node, its list of unboxed values and its tuple of parents
    were three more per operation, and the collector's passes cost more than the operations of a
    long eager chain. The values and the parents are read off the arguments when the backward
    pass needs them.
    """
    __slots__ = ("prim", "inputs", "params", "order")
    n_out = 1
    _index = 0
    _node = property(lambda self: self)

    def __init__(self, trace, value, prim, inputs: tuple, params: dict):
        self._trace = trace
        self._value = value
        self.prim = prim
        self.inputs = inputs
        self.params = params
        self.order = next(_creation_order)

    @property
    def parents(self) -> tuple:
        return self._trace.unbox(self.inputs)[1]

    def backward(self, cts):
        g, prim, out, params, inputs = cts[0], self.prim, self._value, self.params, self.inputs
        rules = prim.vjps
        if len(inputs) == 1 and rules and rules[0] is not None and prim.vjp_joint is None:
            a = inputs[0]  # the one argument: this trace's tracer, or bind would not have come here
            ct = rules[0](g, out, a._value, **params)
            return [(a, 0, ct) if type(a) is PrimitiveTracer else (a._node, a._index, ct)]
        args, parents, i, trace = [], [], 0, self._trace
        for a in inputs:  # unbox's loop, inline and without the _node property's call: the hot path
            if isinstance(a, VJPTracer) and a._trace is trace:
                args.append(a._value)
                parents.append((i, a, 0) if type(a) is PrimitiveTracer else (i, a._node, a._index))
            else:
                args.append(a)
            i += 1
        if prim.vjp_joint is not None:
            joint = prim.vjp_joint(g, out, *args, wanted=tuple(i for i, _, _ in parents), **params)
            return [(node, idx, joint[i]) for i, node, idx in parents]
        if rules is not None and len(parents) == 1:  # the common case, without prim.vjp's call
            i, node, idx = parents[0]
            rule = rules[i] if i < len(rules) else None
            if rule is not None:
                return [(node, idx, rule(g, out, *args, **params))]
        return [(node, idx, prim.vjp(i, g, out, args, params)) for i, node, idx in parents]

    def release(self):
        """Drop the arguments once this node's cotangents are out (a tape replayed only once): the
        parents' values go as soon as nothing else needs them, so activation memory falls during
        the pass. The value stays: whoever holds this tracer may still read it."""
        self.inputs = None


class VJPTrace(Trace):
    __slots__ = ()

    def process(self, prim, args, params):
        if not self.alive:  # used after grad returned: a leak, or a rule reading a closed-over value
            if not hooks.dead_as_constants:
                self.check_alive()
            return bind(prim, *[a._value if isinstance(a, VJPTracer) and a._trace is self else a for a in args],
                        **params)
        vals = []
        nested = False  # a tracer of a lower level among the values (ours may hold one): bind one level down
        for a in args:  # unbox's loop, inline: this is every traced operation's path
            v = a._value if isinstance(a, VJPTracer) and a._trace is self else a
            vals.append(v)
            if type(v) is not Array and isinstance(v, Tracer):
                nested = True
        out = bind(prim, *vals, **params) if nested else apply(prim, vals, params)
        if not prim.differentiable or out.dtype not in dtypes.inexact_dtypes:
            return out
        return PrimitiveTracer(self, out, prim, args, params)

    def unbox(self, leaves):
        """This trace's tracers replaced by their values, and the parents they came from."""
        vals, parents = [], ()
        i = 0
        for a in leaves:
            if isinstance(a, VJPTracer) and a._trace is self:
                vals.append(a._value)
                parents += (i, a._node, a._index)
            else:
                vals.append(a)
            i += 1
        return vals, parents

    def box_outputs(self, node, out_leaves):
        return [NodeTracer(self, o, node, k) if _is_float_array(o) else o
                for k, o in enumerate(out_leaves)]

    def process_custom_vjp(self, fn, args):
        self.check_alive()
        nondiff = [args[i] for i in fn.nondiff_argnums]
        leaves, in_tree = tree_flatten(fn.diff_args(args))
        vals, parents = self.unbox(leaves)
        out, residuals = fn.fwd(*fn.merge_args(args, in_tree.unflatten(vals)))
        out_leaves, out_tree = tree_flatten(out)
        node = CustomVJPNode(fn, nondiff, residuals, in_tree, vals, out_tree, out_leaves, parents)
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
    return hasattr(x, "dtype") and dtypes.is_inexact(x.dtype)


class _MultiOutputNode(Node):
    """A node for a whole function (custom_vjp, checkpoint): several outputs, one backward."""
    __slots__ = ("n_out", "out_tree", "out_avals")

    def __init__(self, out_tree, out_leaves, parents):
        super().__init__(parents)
        self.n_out = len(out_leaves)
        self.out_tree = out_tree
        self.out_avals = [(np.shape(o), getattr(o, "dtype", None), getattr(o, "device", CPU)) for o in out_leaves]

    def release(self):
        """Multi-output nodes keep what they need until the pass ends (it is small)."""

    def full_cotangent(self, cts):
        return self.out_tree.unflatten(
            ct if ct is not None else zeros(*aval) for ct, aval in zip(cts, self.out_avals))


class CustomVJPNode(_MultiOutputNode):
    __slots__ = ("fn", "nondiff", "residuals", "in_tree", "in_avals")

    def __init__(self, fn, nondiff, residuals, in_tree, in_vals, out_tree, out_leaves, parents):
        super().__init__(out_tree, out_leaves, parents)
        self.fn, self.nondiff, self.residuals, self.in_tree = fn, nondiff, residuals, in_tree
        self.in_avals = [(tuple(np.shape(v)), getattr(v, "dtype", None)) for v in in_vals]

    def backward(self, cts):
        """The user's bwd, its cotangents checked against the arguments' structures, shapes and dtypes."""
        in_cts = self.fn.bwd(*self.nondiff, self.residuals, self.full_cotangent(cts))
        rule = f"the custom_vjp bwd rule of {self.fn.__name__}"
        n_args = len(self.in_tree.children)
        if not isinstance(in_cts, (tuple, list)) or len(in_cts) != n_args:
            raise TypeError(f"{rule} must return a tuple of {n_args} cotangents, one per differentiable argument; "
                            f"got {in_cts!r:.200}")
        flat = []
        for k, (arg_tree, ct) in enumerate(zip(self.in_tree.children, in_cts)):
            if ct is None:
                flat.extend([None] * arg_tree.num_leaves)
                continue
            leaves, tree = tree_flatten(ct)
            if tree != arg_tree:
                raise TypeError(f"{rule} returned a cotangent of structure {tree} for argument {k}, "
                                f"whose structure is {arg_tree}")
            for j, leaf in enumerate(leaves):
                shape, dtype = self.in_avals[len(flat)]
                flat.append(checked_rule_leaf(leaf, shape, dtype, rule, f"argument {k} (leaf {j})"))
        return [(node, idx, flat[i]) for i, node, idx in edges(self.parents)]


class CheckpointNode(_MultiOutputNode):
    __slots__ = ("fun", "in_tree", "in_vals")

    def __init__(self, fun, in_tree, in_vals, out_tree, out_leaves, parents):
        super().__init__(out_tree, out_leaves, parents)
        self.fun, self.in_tree, self.in_vals = fun, in_tree, in_vals

    def backward(self, cts):
        """Run the forward again, this time recording it, and pull the cotangents through."""
        diff = self.parents[0::3]
        vals = list(self.in_vals)

        def rerun(*diff_vals):
            for i, v in zip(diff, diff_vals):
                vals[i] = v
            return self.fun(*self.in_tree.unflatten(vals))

        _, rerun_vjp = _vjp(rerun, [self.in_vals[i] for i in diff])
        in_cts = rerun_vjp(self.full_cotangent(cts), pytorch_convention=False)  # a rule: JAX's convention
        return [(node, idx, ct) for (_, node, idx), ct in zip(edges(self.parents), in_cts)]


def backward_pass(outputs, cts, release: bool = False):
    """outputs: (node, index) pairs; returns {id(input node): [cotangent]}.

    The walk pops the latest-recorded node that has received a cotangent (a heap on recording
    order): its consumers were all recorded after it and have given theirs already, so each node's
    cotangents are complete when it runs, without sorting the tape first. Nodes are told apart by
    identity (a PrimitiveTracer is an array, which has no hash). With release, each node drops its
    arguments as soon as it is done, and the walk lets go of it, so activation memory falls during
    the pass."""
    acc: dict[int, list] = {}
    pending: list = []
    for (node, idx), ct in zip(outputs, cts):
        slots = acc.get(id(node))
        if slots is None:
            slots = acc[id(node)] = [None] * node.n_out
            if type(node) is not Node:  # a plain Node is an input: its cotangent stays in acc
                heapq.heappush(pending, (-node.order, node))
        slots[idx] = ct if slots[idx] is None else E.add_p(slots[idx], ct)
    while pending:
        node = heapq.heappop(pending)[1]
        for parent, idx, ct in node.backward(acc.pop(id(node))):
            if ct is None:
                continue
            slots = acc.get(id(parent))
            if slots is None:  # runs once per edge of the tape
                slots = acc[id(parent)] = [None] * parent.n_out
                slots[idx] = ct
                if type(parent) is not Node:
                    heapq.heappush(pending, (-parent.order, parent))
            else:
                prev = slots[idx]
                slots[idx] = ct if prev is None else E.add_p(prev, ct)
        if release:
            node.release()
    return acc


def _pytorch_convention(ct, convert: bool = True):
    """The primitives' rules pass complex cotangents in JAX's convention (the gradient of |z|^2 is
    2 conj(z)); users get PyTorch's (2z, so gradient descent works unchanged). The two are each
    other's conjugates, so a complex cotangent is conjugated on the way in and on the way out
    (convert=False: rules that run reverse mode themselves stay in the rules' convention)."""
    return E.conj_p(ct) if convert and dtypes.is_complex(ct.dtype) else ct


def _vjp(fun_flat: Callable, primals: list, name: str = "vjp"):
    """vjp over a flat list of primals; fun_flat may return any pytree."""
    with VJPTrace(name) as trace:
        in_nodes = [Node(()) for _ in primals]
        out = fun_flat(*[NodeTracer(trace, x, n, 0) for x, n in zip(primals, in_nodes)])
        out_leaves, out_tree = tree_flatten(out)
        out_vals, outputs = [], []
        for o in out_leaves:
            if isinstance(o, VJPTracer) and o._trace is trace:
                out_vals.append(o._value)
                outputs.append((o._node, o._index))
            else:
                out_vals.append(o if isinstance(o, (Array, Tracer)) else Array(to_numpy(o)))
                outputs.append(None)

    def vjp_fn(ct, release: bool = False, pytorch_convention: bool = True):
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
                cts.append(_pytorch_convention(c, pytorch_convention))
        acc = backward_pass(seeds, cts, release) if seeds else {}
        grads = []
        for x, node in zip(primals, in_nodes):
            slots = acc.get(id(node))
            g = zeros(x.shape, x.dtype, x.device) if slots is None else slots[0]
            grads.append(_pytorch_convention(g if g.dtype == x.dtype else E.convert_p(g, dtype=x.dtype),
                                             pytorch_convention))
        return grads

    return out_tree.unflatten(out_vals), vjp_fn


def vjp(fun: Callable, *primals: Any, has_aux: bool = False, pytorch_convention: bool = True):
    """(fun(*primals), vjp_fn[, aux]); vjp_fn(cotangent) returns one cotangent per primal.
    pytorch_convention=False keeps complex cotangents in JAX's convention, the one custom rules
    speak (custom_jvp's reverse mode transposes its tangent map with it)."""
    leaves = input_leaves(primals, "vjp", range(len(primals)))
    in_tree = tree_structure(primals)
    aux = Aux()
    out, vjp_flat = _vjp(aux.split(lambda *xs: fun(*in_tree.unflatten(xs)), has_aux, "vjp"), leaves, "vjp")
    vjp_fn = lambda ct: in_tree.unflatten(vjp_flat(ct, pytorch_convention=pytorch_convention))  # noqa: E731
    return (out, vjp_fn, aux.value()) if has_aux else (out, vjp_fn)


def _holomorphic_inputs(leaves, name: str) -> None:
    if not all(dtypes.is_complex(x.dtype) for x in leaves):
        raise TypeError(f"{name} with holomorphic=True needs complex inputs, got "
                        f"{sorted({str(x.dtype) for x in leaves})}")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """f -> (f(*args), gradient of f with respect to args[argnums]); f must return a real scalar,
    or with holomorphic=True (JAX's) a complex one of complex inputs, whose derivative f'(z) it
    gives (not PyTorch's conjugate, which a real-valued f's gradient follows). allow_int=True takes
    integer and boolean inputs as constants, whose gradients are JAX's float0 zeros (no data)."""
    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        all_leaves, in_tree, all_flat = flat_transform(fun, args, kwargs, argnums, "grad", allow_int)
        leaves, flat, fill = integers_held(all_leaves, all_flat)
        if holomorphic:
            _holomorphic_inputs(leaves, "grad")
        aux = Aux()
        main = aux.split(flat, has_aux, "grad")

        def scalar_fun(*xs):
            out = main(*xs)
            if isinstance(out, (tuple, list)) and not has_aux:
                raise TypeError(f"grad needs {fun.__name__} to return a floating-point scalar; it returned a "
                                f"{type(out).__name__} of {len(out)}: if the values after the first are auxiliary "
                                f"outputs, pass has_aux=True and return (loss, aux)")
            if not hasattr(out, "shape"):
                out = Array(to_numpy(out))
            if out.size != 1 or not (dtypes.is_complex(out.dtype) if holomorphic else dtypes.is_float(out.dtype)):
                hint = ("a complex value has no gradient: differentiate its .real or abs()"
                        if dtypes.is_complex(out.dtype) else "reduce it with .sum() or use jacrev / vjp")
                raise TypeError(f"grad needs {fun.__name__} to return a real floating-point scalar; "
                                f"it returned shape {tuple(out.shape)} dtype {out.dtype} ({hint})")
            return out

        with annotate("forward"):
            value, vjp_flat = _vjp(scalar_fun, leaves, "grad")
        with annotate("backward"):  # a one-element output of any shape is a scalar, as in PyTorch
            seed = full(tuple(value.shape), 1, value.dtype, value.device)
            grads = fill(vjp_flat(seed, release=True, pytorch_convention=not holomorphic),
                         lambda x: np.zeros(x.shape, dtypes.float0))
            grads = args_result(in_tree, grads, argnums)
        return ((value, aux.value()), grads) if has_aux else (value, grads)

    return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """f -> the gradient of scalar-valued f with respect to args[argnums] (same pytree)."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        (value, grads) = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_f


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """Jacobian by reverse mode, one VJP per output element: out.shape + in.shape per leaf pair;
    holomorphic=True (complex inputs and outputs) gives the complex derivatives df_i/dz_j;
    allow_int=True takes integer inputs as constants, their blocks zeros of their dtype (JAX's)."""
    @functools.wraps(fun)
    def jacrev_f(*args, **kwargs):
        all_leaves, in_tree, all_flat = flat_transform(fun, args, kwargs, argnums, "jacrev", allow_int)
        leaves, flat, fill = integers_held(all_leaves, all_flat)
        if holomorphic:
            _holomorphic_inputs(leaves, "jacrev")
        aux = Aux()
        out, vjp_flat = _vjp(aux.split(flat, has_aux, "jacrev"), leaves, "jacrev")
        out_leaves, out_tree = tree_flatten(out)
        if not holomorphic and any(dtypes.is_complex(o.dtype) for o in out_leaves):
            raise TypeError("jacrev of a complex output: each row would be the gradient of its real part "
                            "alone; differentiate .real and .imag (or abs) separately, or use vjp")
        per_out = []
        for j, o in enumerate(out_leaves):
            rows = []
            for k in range(o.size):
                ct = [zeros(p.shape, p.dtype, p.device) for p in out_leaves]
                ct[j] = one_hot(o.shape, o.dtype, k, o.device)
                rows.append(vjp_flat(out_tree.unflatten(ct), pytorch_convention=not holomorphic))
            blocks = fill([stack_jacobian([r[i] for r in rows], o.shape, x.shape, x.dtype, 0)
                           for i, x in enumerate(leaves)], lambda x: zeros(o.shape + x.shape, x.dtype, x.device))
            per_out.append(args_result(in_tree, blocks, argnums))
        jac = out_tree.unflatten(per_out)
        return (jac, aux.value()) if has_aux else jac

    return jacrev_f


def linear_transpose(fun: Callable, *primals: Any) -> Callable:
    """The transpose of a linear fun (jax.linear_transpose): primals give the inputs' shapes and
    dtypes (arrays or ShapeDtypeStructs); the result maps a cotangent shaped like fun's output to a
    tuple shaped like primals. fun's VJP at zero inputs, in JAX's convention (the plain transpose,
    no conjugate). fun must be linear (an affine offset is dropped, as JAX drops it): a fun whose
    derivative at another, random point differs raises, where JAX's transpose rules would."""
    def zeros_like(p):  # an array, a ShapeDtypeStruct (a leaf here, not a tuple) or a Python number
        dtype = np.dtype(p.dtype) if hasattr(p, "dtype") else np.result_type(p)
        return full(tuple(np.shape(p) if not hasattr(p, "shape") else p.shape), 0, dtype,
                    p.device if isinstance(p, Array) else CPU)
    zeros_in = tree_map(zeros_like, primals, is_leaf=lambda p: hasattr(p, "shape") and hasattr(p, "dtype"))
    out, pullback = vjp(fun, *zeros_in, pytorch_convention=False)
    _check_linear(fun, zeros_in, out, pullback)
    return lambda cotangent: tuple(pullback(cotangent))


def _check_linear(fun: Callable, zeros_in, out, pullback) -> None:
    """Raise unless fun's VJP at a random point (and a random cotangent) equals its VJP at zero: a
    linear (or affine) fun has one Jacobian everywhere; sin, squares, abs and ReLU do not."""
    rng = np.random.default_rng(0)

    def draw(z):  # random values where z is (on its device: fun may close over arrays there)
        if not dtypes.is_inexact(z.dtype):
            return z
        return device_put(Array(rng.uniform(0.5, 1.5, np.shape(z)).astype(z.dtype)), z.device)
    cotangent = tree_map(draw, out)
    elsewhere = vjp(fun, *tree_map(draw, zeros_in), pytorch_convention=False)[1](cotangent)
    for k, (a, b) in enumerate(zip(tree_flatten(pullback(cotangent))[0], tree_flatten(elsewhere)[0])):
        a, b = to_numpy(a), to_numpy(b)
        tol = 1e-9 if a.dtype in (np.float64, np.complex128) else 1e-3
        if not np.allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(a), initial=0.0)))):
            raise ValueError(f"linear_transpose: {getattr(fun, '__name__', 'the function')} is not linear: its "
                             f"derivative with respect to input leaf {k} at zero differs from the one at another "
                             f"point (the transpose of a non-linear function is not defined)")

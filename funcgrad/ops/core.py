"""The Primitive: one operation and every rule the transforms and backends read, in one object.

    impl(*args, **params)              the CPU implementation, on NumPy arrays and Python scalars
    shape_rule(*avals, **params)       -> ShapedArray: the output's shape and dtype (jit traces with
                                       it, the GPU allocates by it); it raises on operands that
                                       cannot fit, as the implementation would
    batch_rule(size, prim, vals, dims, **params) -> (out, out_dim): vmap's rule
    cuda                               the name of the CUDA implementation in funcgrad/cuda/impls.py,
                                       imported on first use (numba.cuda loads only for device data)
    scalar(*operands, **params)        elementwise primitives only: the value of one element, written
                                       with ops/scalar.py's symbolic scalars; the CPU fusion and the
                                       CUDA code generator both render their kernels from it
    vjp / jvp rules                    set with defvjp / defjvp / deflinear beside the definition

Derivative rules are written with primitives, so derivatives of derivatives work:

  vjp rule for argument i:  rule(g, out, *args, **params) -> cotangent of args[i]
  jvp rule for argument i:  rule(t, out, *args, **params) -> tangent of the output

Calling a Primitive binds it (funcgrad.trace.bind): it runs under whatever transforms are active.
"""
from __future__ import annotations

import importlib
from typing import Callable

import numpy as np

from ..trace import bind

registry: dict[str, "Primitive"] = {}


class ShapedArray:
    """What is known of a value while tracing abstractly: its shape and dtype."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __eq__(self, other):
        return isinstance(other, ShapedArray) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"


_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64", "int32": "i32",
          "int16": "i16", "int8": "i8", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool"}


def short_dtype(dtype: np.dtype) -> str:
    return _SHORT.get(dtype.name, dtype.name)


def aval(x):
    """What a shape rule sees of an operand: a ShapedArray for anything with a shape and dtype (NumPy
    scalars included: they take part in promotion with their dtype), the value itself for a Python
    scalar or None (weak: a Python float beside a float32 array stays float32)."""
    if x is None or type(x) in (bool, int, float, complex) or isinstance(x, ShapedArray):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(x.shape, x.dtype)
    value = np.asarray(x)
    return ShapedArray(value.shape, value.dtype)


class Primitive:
    """An operation and everything the transforms and backends need to know about it."""
    __slots__ = ("name", "impl", "shape_rule", "batch_rule", "cuda", "_cuda_impl", "scalar", "fresh", "ordered",
                 "writes_into", "differentiable", "threaded", "vjps", "vjp_argnum", "vjp_joint", "jvps", "jvp_argnum", "jvp_joint")

    __call__ = bind  # prim(*args, **params) is bind(prim, *args, **params)

    def __init__(self, name: str, impl: Callable, *, shape_rule: Callable, batch_rule: Callable, cuda: str,
                 scalar: Callable | None = None, fresh: bool = False, ordered: bool = False,
                 writes_into: bool = False, differentiable: bool = True, threaded: Callable | None = None):
        if name in registry:
            raise ValueError(f"primitive {name!r} is defined twice")
        self.name = name
        self.impl = impl
        self.shape_rule = shape_rule
        self.batch_rule = batch_rule
        self.cuda = cuda
        self._cuda_impl: Callable | None = None
        self.scalar = scalar
        # fresh: the output never shares memory with an input, so jit may overwrite it once dead
        self.fresh = fresh
        # ordered: it talks to other processes (a collective), so jit runs it where the program
        # does, in order, never folded, merged or dropped, and moves no work across it
        self.ordered = ordered
        # writes_into: the CPU implementation also takes out=, a C-contiguous array of the output's
        # shape and dtype, and writes its result there (jit's planned buffers, funcgrad/arena.py);
        # one that is not fresh may return a view of an input instead (reshape, where no copy is needed)
        self.writes_into = writes_into
        self.differentiable = differentiable
        # threaded(*avals, **params): whether the CPU implementation splits its work over funcgrad's
        # kernel threads (cpu/threads.py) for operands of those shapes and dtypes; a jitted program
        # with such a step runs with BLAS on one thread and its GEMMs split over the same threads,
        # so that no BLAS worker spins on a core the split needs (lowering.py)
        self.threaded = threaded
        self.vjps: tuple | None = None
        self.vjp_argnum: Callable | None = None
        # vjp_joint(g, out, *args, wanted=(argument indices), **params) -> a cotangent (or None) per
        # argument: one rule for all of them, where they share work (attention's backward pass).
        self.vjp_joint: Callable | None = None
        self.jvps: tuple | None = None
        self.jvp_argnum: Callable | None = None
        # jvp_joint(tangents, out, *args, **params): one rule for all tangents at once, for
        # variadic linear primitives (concatenate) where per-argument rules would waste work.
        self.jvp_joint: Callable | None = None
        registry[name] = self

    def __repr__(self) -> str:
        return f"Primitive({self.name})"

    def impl_for(self, platform: str) -> Callable:
        """The implementation on 'cpu' or 'cuda' (the CUDA one is imported on first use)."""
        if platform == "cpu":
            return self.impl
        if self._cuda_impl is None:
            impl = getattr(importlib.import_module("funcgrad.cuda.impls"), self.cuda)
            self._cuda_impl = impl(self) if getattr(impl, "per_primitive", False) else impl
        return self._cuda_impl

    def vjp(self, i: int, g, out, args, params):
        """Cotangent of argument i; None means zero."""
        if self.vjps is not None:
            rule = self.vjps[i] if i < len(self.vjps) else None
            if rule is None:
                raise TypeError(f"{self.name} is not differentiable with respect to argument {i}")
            return rule(g, out, *args, **params)
        return self.vjp_argnum(i, g, out, *args, **params)

    def jvp(self, i: int, t, out, args, params):
        """Output tangent contributed by argument i's tangent t; None means zero."""
        if self.jvps is not None:
            rule = self.jvps[i] if i < len(self.jvps) else None
            if rule is None:
                raise TypeError(f"{self.name} has no forward-mode rule for argument {i}")
            return rule(t, out, *args, **params)
        return self.jvp_argnum(i, t, out, *args, **params)


def defvjp(prim: Primitive, *rules) -> None:
    prim.vjps = rules


def defjvp(prim: Primitive, *rules) -> None:
    prim.jvps = rules


def deflinear(prim: Primitive, transpose: Callable) -> None:
    """A primitive linear in its first argument: its JVP applies it to the tangent, its VJP
    is `transpose(g, out, *args, **params)`."""
    prim.jvps = (lambda t, out, *args, **params: prim(t, *args[1:], **params),)
    prim.vjps = (transpose,)


def incomplete() -> list[str]:
    """Primitives that lack a rule, as 'name: what is missing' (funcgrad.ops asserts there are none)."""
    problems = []
    for prim in registry.values():
        for attr in ("impl", "shape_rule", "batch_rule", "cuda"):
            if getattr(prim, attr) is None:
                problems.append(f"{prim.name}: no {attr}")
        if prim.differentiable:
            if prim.vjps is None and prim.vjp_argnum is None and prim.vjp_joint is None:
                problems.append(f"{prim.name}: differentiable but no VJP rule")
            if prim.jvps is None and prim.jvp_argnum is None and prim.jvp_joint is None:
                problems.append(f"{prim.name}: differentiable but no JVP rule")
    return problems


def real_only(name: str, fn: Callable) -> Callable:
    """fn (a shape rule or an implementation) refusing complex operands: orderings, rounding, the
    activations and the softmax family have no complex meaning (PyTorch refuses them; NumPy would
    order complex numbers lexicographically)."""
    def checked(*args, **params):
        for a in args:
            if isinstance(a, complex) or getattr(getattr(a, "dtype", None), "kind", None) == "c":
                raise TypeError(f"{name} is defined for real numbers only, not {getattr(a, 'dtype', 'complex')}")
        return fn(*args, **params)
    return checked


def shape_of(x) -> tuple[int, ...]:
    return x.shape if hasattr(x, "shape") else ()


def dtype_of(x) -> np.dtype:
    return x.dtype if hasattr(x, "dtype") else np.result_type(x)

"""The primitive registry: one Primitive per operation, with its rules.

A primitive's implementation works on raw backend values (NumPy arrays on the CPU). Its
derivative rules are written with primitives, so derivatives of derivatives work:

  vjp rule for argument i:  rule(g, out, *args, **params) -> cotangent of args[i]
  jvp rule for argument i:  rule(t, out, *args, **params) -> tangent of the output

funcgrad.trace installs `bind` as Primitive.__call__, so calling a Primitive dispatches through
the active transforms without this layer importing the tracing machinery.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

registry: dict[str, "Primitive"] = {}


def install_bind(bind: Callable) -> None:
    """Called once by funcgrad.trace: prim(*args, **params) becomes bind(prim, *args, **params)."""
    Primitive.__call__ = bind


class Primitive:
    """An operation and everything the transforms need to know about it."""
    __slots__ = ("name", "impls", "impl", "differentiable", "vjps", "vjp_argnum",
                 "jvps", "jvp_argnum", "jvp_joint", "shape_rule")

    def __init__(self, name: str, impl: Callable, differentiable: bool = True):
        if name in registry:
            raise ValueError(f"primitive {name!r} is defined twice")
        self.name = name
        self.impls = {"cpu": impl}  # the CUDA backend adds its kernels under "cuda"
        self.impl = impl
        self.differentiable = differentiable
        self.vjps: tuple | None = None
        self.vjp_argnum: Callable | None = None
        self.jvps: tuple | None = None
        self.jvp_argnum: Callable | None = None
        # jvp_joint(tangents, out, *args, **params): one rule for all tangents at once, for
        # variadic linear primitives (concatenate) where per-argument rules would waste work.
        self.jvp_joint: Callable | None = None
        # shape_rule(*shapes_and_dtypes, **params) -> (shape, dtype), for primitives whose
        # implementation cannot run on stand-in values (a matrix of ones is singular); the rest
        # are evaluated abstractly by running the implementation on stand-ins.
        self.shape_rule: Callable | None = None
        registry[name] = self

    def __call__(self, *args, **params):
        raise RuntimeError("import funcgrad (which installs funcgrad.trace.bind) before calling primitives")

    def __repr__(self) -> str:
        return f"Primitive({self.name})"

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


def shape_of(x) -> tuple[int, ...]:
    return x.shape if hasattr(x, "shape") else ()


def dtype_of(x) -> np.dtype:
    return x.dtype if hasattr(x, "dtype") else np.result_type(x)

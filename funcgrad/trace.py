"""Tracers, trace levels, the tape, and bind(): the single entry to every primitive.

Tracing happens on concrete values (as in HIPS autograd): each transform opens a trace with a
fresh level; a tracer carries its trace and the value one level down. bind() finds the
highest-level tracer among the arguments; with none it runs the backend directly (the fast
path), otherwise that trace unboxes its own tracers, binds one level down and boxes the result.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import sys
from time import perf_counter_ns

import numpy as np

from . import dtypes
from .array import Array, ArrayBase, host
from .config import config
from .errors import NonFiniteError, ShapeError, TracerLeakError
from .ops import core

_levels = itertools.count(1)  # a newer trace is always nested inside the live older ones


class Trace:
    __slots__ = ("level", "alive", "name")

    def __init__(self, name: str):
        self.level = next(_levels)
        self.alive = True
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.alive = False

    def check_alive(self):
        if not self.alive:
            raise TracerLeakError(
                f"a value traced by {self.name} was used after {self.name} returned; "
                f"return it from the function being transformed instead of storing it outside")


class Tracer(ArrayBase):
    """A value seen by a transform. It answers shape/dtype queries and, since tracing is on
    concrete values, also bool()/float()/item(), so Python control flow works under grad."""
    __slots__ = ("_trace",)

    def primal(self):
        raise TypeError(f"{type(self).__name__} must define primal()")

    def concrete(self, what: str = "the value") -> Array:
        """The concrete value under this tracer; `what` names the request for transforms (jit,
        vmap) that have no single concrete value and raise instead."""
        v = self.primal()
        return v.concrete(what) if isinstance(v, Tracer) else v

    @property
    def shape(self):
        return self.primal().shape

    @property
    def dtype(self):
        return self.primal().dtype

    @property
    def device(self):
        return self.primal().device

    def numpy(self):
        return self.concrete(".numpy()").numpy()

    def __array__(self, dtype=None, copy=None):
        return self.concrete("converting to a NumPy array").__array__(dtype, copy)

    def item(self):
        return self.concrete(".item()").item()

    def tolist(self):
        return self.concrete(".tolist()").tolist()

    def __bool__(self):
        return bool(self.concrete("bool()"))

    def __float__(self):
        return float(self.concrete("float()"))

    def __int__(self):
        return int(self.concrete("int()"))

    def __index__(self):
        return self.concrete("using as an index").__index__()

    def __repr__(self):
        return f"{type(self).__name__}({self.concrete()!r})"


# ---- the fast path and its checks --------------------------------------------------------------
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def user_frame() -> str:
    """'file:line in function' of the innermost caller outside funcgrad itself."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def _describe_args(args) -> str:
    parts = []
    for a in args:
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            parts.append(f"{a.dtype}{list(a.shape)}")
        else:
            parts.append(repr(a))
    return ", ".join(parts)


def impl_error(prim, args, e: Exception) -> Exception:
    """A backend's complaint, restated with the primitive and its operands' shapes."""
    message = f"{prim.name}({_describe_args(args)}): {e}"
    if isinstance(e, np.linalg.LinAlgError):  # a singular matrix is not a shape problem
        return np.linalg.LinAlgError(message)
    if isinstance(e, ValueError) and not isinstance(e, IndexError):  # NumPy's shape complaints
        return ShapeError(message)
    return type(e)(message) if type(e) in (IndexError, TypeError, ValueError) else e


def _check_nans(prim, out):
    out = np.asarray(host(out))  # debug_nans reads device results back: a debugging mode, not a fast path
    if dtypes.is_float(out.dtype) and np.isnan(out.astype(np.float32, copy=False)).any():
        raise NonFiniteError(f"primitive '{prim.name}' produced NaN (debug_nans is on), "
                             f"called from {user_frame()}")


class Hooks:
    """Installed by higher layers: the profiler (funcgrad.profiler) observes bind; placement
    (funcgrad.devices, once an array lives on a GPU) picks each call's backend implementation."""
    __slots__ = ("profiler", "placement")

    def __init__(self):
        self.profiler = None
        self.placement = None


hooks = Hooks()


def annotate(name: str):
    """A profiler range named `name` while a profiler records, else nothing."""
    prof = hooks.profiler
    return prof.range(name) if prof is not None else contextlib.nullcontext()


def bind(prim, *args, **params):
    """Run prim on args under the active transforms. The hot path: keep it lean."""
    top = None
    for a in args:
        if isinstance(a, Tracer):
            t = a._trace
            if top is None or t.level > top.level:
                top = t
    if top is not None:
        return top.process(prim, args, params)
    if len(args) == 2:  # unrolled: a comprehension costs more than the NumPy call on small arrays
        a, b = args
        vals = (a._value if type(a) is Array else a, b._value if type(b) is Array else b)
    elif len(args) == 1:
        a = args[0]
        vals = (a._value if type(a) is Array else a,)
    else:
        vals = [a._value if type(a) is Array else a for a in args]
    impl = prim.impl if hooks.placement is None else hooks.placement(prim, args)
    prof = hooks.profiler
    if prof is not None:
        start = perf_counter_ns()
    try:
        out = impl(*vals, **params)
    except (ValueError, IndexError, TypeError) as e:
        raise impl_error(prim, args, e) from None
    if config.debug_nans:
        _check_nans(prim, out)
    if prof is not None:
        prof.record_op(prim.name, start, perf_counter_ns(), vals, out)
    return Array(out)


core.install_bind(bind)


def is_differentiable_output(prim, out) -> bool:
    return prim.differentiable and out.dtype in dtypes.float_dtypes


def find_top_trace(leaves):
    top = None
    for a in leaves:
        if isinstance(a, Tracer) and (top is None or a._trace.level > top.level):
            top = a._trace
    return top

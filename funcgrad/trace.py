"""Tracers, trace levels and bind(): the single entry to every primitive.

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
import warnings
from time import perf_counter_ns

import numpy as np

from . import dtypes
from .array import CPU, Array, ArrayBase, ExternalValue, host
from .config import config
from .errors import DeviceMismatchError, GradientCutWarning, NonFiniteError, ShapeError, TracerLeakError

# NumPy's floating-point warnings (log(0), 0/0, overflow) would name funcgrad's own lines, not the
# user's: as in jax.numpy the results are the defined values (-inf, nan, inf), and
# fg.config.debug_nans is the tool that finds where a NaN comes from.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"funcgrad(\.|$)")

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
    # VJP and JVP tracers: a host copy of their value is a constant that cuts the gradient, so
    # .numpy() and np.asarray() refuse (as PyTorch's do) and float() / .item() warn
    differentiated = False
    abstract = False  # jit's tracers: a shape and dtype, wrapping no value

    def _host(self, what: str, refuse: bool) -> Array:
        if self.differentiated:
            message = (f"{what} of a value being differentiated ({self._trace.name}) is a constant through which no "
                       f"gradient flows; use fg.stop_gradient(x) first if a constant is what you mean")
            if refuse:
                raise TypeError(f"{message} (at {user_frame()})")
            warnings.warn(message, GradientCutWarning, stacklevel=_user_stacklevel())
        return self.concrete(what)

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
        return self._host(".numpy()", refuse=True).numpy()

    def __array__(self, dtype=None, copy=None):
        return self._host("converting to a NumPy array", refuse=True).__array__(dtype, copy)

    def item(self, *index):
        return self._host(".item()", refuse=False).item(*index)

    def tolist(self):
        return self._host(".tolist()", refuse=False).tolist()

    def __bool__(self):
        return bool(self.concrete("bool()"))

    def __float__(self):
        return float(self._host("float()", refuse=False))

    def __int__(self):
        return int(self._host("int()", refuse=False))

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


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel, called from this module, that names the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


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
    if dtypes.is_inexact(out.dtype) and np.isnan(out).any():
        raise NonFiniteError(f"primitive '{prim.name}' produced NaN (debug_nans is on), "
                             f"called from {user_frame()}")


class Hooks:
    """Observers higher layers install: the profiler (funcgrad.profiler) watches every bind;
    dead_as_constants (set by closed_over_as_constants) lets finished reverse-mode traces' values
    be read."""
    __slots__ = ("profiler", "dead_as_constants")

    def __init__(self):
        self.profiler = None
        self.dead_as_constants = False


hooks = Hooks()


@contextlib.contextmanager
def closed_over_as_constants():
    """Within it, a tracer of a finished reverse-mode trace reads as its value, a constant, instead
    of raising TracerLeakError: for derivative rules that run in the backward pass and call user
    functions closing over the values being differentiated (lax.custom_linear_solve's transpose)."""
    before, hooks.dead_as_constants = hooks.dead_as_constants, True
    try:
        yield
    finally:
        hooks.dead_as_constants = before


def device_impl(prim, args):
    """The implementation of prim for the device its array arguments are on (bind calls this only
    when one of them holds device data). As in PyTorch, a 0-d array on the CPU combines with arrays
    on any device (it is passed to the kernel as a scalar), and so do the small host constants
    derivative rules make (np.eye): only an Array says where data lives."""
    device, first = None, None
    for i, a in enumerate(args):
        value = a._value if type(a) is Array else a
        if isinstance(value, ExternalValue):
            here = value.device
        elif type(a) is Array and value.ndim:
            here = CPU
        else:
            continue
        if device is None:
            device, first = here, i
        elif here != device:
            raise DeviceMismatchError(
                f"{prim.name}: argument {first} is on {device} but argument {i} is on {here}; "
                f"move one explicitly with fg.device_put(x, device) or x.to(device)")
    return prim.impl if device is None else prim.impl_for(device.platform)


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
    return apply(prim, args, params)


def apply(prim, args, params) -> Array:
    """bind where no argument is a tracer: the implementation for the arguments' device, on their
    values. A trace calls it directly for operands it has unboxed to values."""
    if len(args) == 2:  # unrolled: a comprehension costs more than the NumPy call on small arrays
        a, b = args
        va = a._value if type(a) is Array else a
        vb = b._value if type(b) is Array else b
        vals = (va, vb)
        on_device = isinstance(va, ExternalValue) or isinstance(vb, ExternalValue)
    elif len(args) == 1:
        a = args[0]
        va = a._value if type(a) is Array else a
        vals = (va,)
        on_device = isinstance(va, ExternalValue)
    else:
        vals = [a._value if type(a) is Array else a for a in args]
        on_device = any(isinstance(v, ExternalValue) for v in vals)
    impl = device_impl(prim, args) if on_device else prim.impl
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



def is_differentiated(x) -> bool:
    """Whether x is a value being differentiated at some level: a tracer of grad or jvp, or one of
    vmap's wrapping one. Rules with a faster first-order form use it to know when they may."""
    while isinstance(x, Tracer) and not x.abstract:
        if x.differentiated:
            return True
        x = x.primal()
    return False


def is_differentiable_output(prim, out) -> bool:
    return prim.differentiable and out.dtype in dtypes.inexact_dtypes


def find_top_trace(leaves):
    top = None
    for a in leaves:
        if isinstance(a, Tracer) and (top is None or a._trace.level > top.level):
            top = a._trace
    return top

"""Symbolic scalars: an elementwise primitive's value per element, written once for every backend.

A primitive's `scalar` function takes an Expr per operand (None for an absent optional one) and its
params, and returns an Expr built with Python's operators and the functions below:

    gelu: lambda x, *, approximate: 0.5 * x * (1 + erf(x * (1 / math.sqrt(2))))

A backend renders the Expr to source in its dialect (cpu/fusion.py for numba, cuda/kernels/
elementwise.py for CUDA): it names the operands, spells the functions (numba calls np.exp or a
vectorising float32 exp, CUDA libdevice's) and types the literals in the step's compute dtype.
Branching is `where(c, a, b)`; a Python `if` on an Expr raises, since its value is unknown.
"""
from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from .. import dtypes
from .incomplete_gamma import MODES as GAMMA_MODES

_BOOL = np.dtype(np.bool_)


class Expr:
    """A node: op is 'operand' (args: its source), 'literal' (args: the value), a Python operator
    symbol, 'call' (args: function name, operands) or 'where'. dtype: the operand's dtype (what
    dtype-dependent expressions branch on in Python), None for untyped literals."""
    __slots__ = ("op", "args", "dtype")

    def __init__(self, op: str, args: tuple, dtype: np.dtype | None):
        self.op, self.args, self.dtype = op, args, dtype

    @property
    def is_float(self) -> bool:
        """Real floating point."""
        return self.dtype is not None and dtypes.is_float(self.dtype)

    @property
    def is_complex(self) -> bool:
        return self.dtype is not None and dtypes.is_complex(self.dtype)

    @property
    def is_inexact(self) -> bool:
        return self.dtype is not None and dtypes.is_inexact(self.dtype)

    @property
    def is_bool(self) -> bool:
        return self.dtype == _BOOL

    def __bool__(self):
        raise TypeError("a symbolic scalar has no truth value: branch with scalar.where(c, a, b)")

    __hash__ = object.__hash__

    # arithmetic, bitwise and comparison operators build nodes
    def __add__(self, o): return _binary("+", self, o)
    def __radd__(self, o): return _binary("+", o, self)
    def __sub__(self, o): return _binary("-", self, o)
    def __rsub__(self, o): return _binary("-", o, self)
    def __mul__(self, o): return _binary("*", self, o)
    def __rmul__(self, o): return _binary("*", o, self)
    def __truediv__(self, o): return _binary("/", self, o)
    def __rtruediv__(self, o): return _binary("/", o, self)
    def __floordiv__(self, o): return _binary("//", self, o)
    def __mod__(self, o): return _binary("%", self, o)
    def __pow__(self, o): return _binary("**", self, o)
    def __and__(self, o): return _binary("&", self, o)
    def __or__(self, o): return _binary("|", self, o)
    def __xor__(self, o): return _binary("^", self, o)
    def __lshift__(self, o): return _binary("<<", self, o)
    def __rshift__(self, o): return _binary(">>", self, o)
    def __eq__(self, o): return _binary("==", self, o)  # type: ignore[override]
    def __ne__(self, o): return _binary("!=", self, o)  # type: ignore[override]
    def __lt__(self, o): return _binary("<", self, o)
    def __le__(self, o): return _binary("<=", self, o)
    def __gt__(self, o): return _binary(">", self, o)
    def __ge__(self, o): return _binary(">=", self, o)
    def __neg__(self): return Expr("-", (self,), self.dtype)
    def __invert__(self): return Expr("~", (self,), self.dtype)
    def __abs__(self): return call("abs", self)


def operand(source: str, dtype: np.dtype) -> Expr:
    return Expr("operand", (source,), np.dtype(dtype))


def _lift(x) -> Expr:
    return x if isinstance(x, Expr) else Expr("literal", (x,), None)


_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})


def _binary(op: str, a, b) -> Expr:
    a, b = _lift(a), _lift(b)
    dtype = _BOOL if op in _COMPARISONS else (a.dtype if a.dtype is not None else b.dtype)
    return Expr(op, (a, b), dtype)


_TO_REAL = frozenset({"abs", "real", "imag"})  # functions whose value is real for a complex operand


def call(name: str, *args) -> Expr:
    """A function of the backends' math library: every name below, spelled by each dialect."""
    args = tuple(_lift(a) for a in args)
    dtype = next((a.dtype for a in args if a.dtype is not None), None)
    if dtype is not None and name in _TO_REAL:
        dtype = dtypes.real_dtype(dtype)
    elif dtype is not None and name == "complex":
        dtype = dtypes.complex_dtype(dtype)
    return Expr("call", (name,) + args, dtype)


def where(c, a, b) -> Expr:
    a, b = _lift(a), _lift(b)
    return Expr("where", (_lift(c), a, b), a.dtype if a.dtype is not None else b.dtype)


# Functions that need a loop, which these expressions cannot spell: each is one Python function of
# `math` (ops/incomplete_gamma.py, incomplete_beta.py, exponential_integral.py) that numba compiles
# for the CPU (cpu/loops.py) and numba.cuda for the GPU (cuda/scalar.py). Each name maps to that
# function and the constants before and after the operands: `function(*before, *operands, *after)`.
LOOPS = {**{name: ("incomplete_gamma", (), (mode,)) for mode, name in enumerate(GAMMA_MODES)},
         "betainc": ("incomplete_beta", (), ()),
         "expn": ("exponential_integral", (), (0,)), "expi": ("exponential_integral", (0.0,), (1,))}
_BINARY = frozenset({"maximum", "minimum", "arctan2", "complex", "expn", *GAMMA_MODES})
_TERNARY = frozenset({"betainc"})


def _function(name: str) -> Callable[..., Expr]:
    def fn(*args):
        return call(name, *args)
    fn.__name__ = name
    # its arity, for whoever inspects it (the PTX check enumerates every primitive's kernels by it)
    arity = 3 if name in _TERNARY else 2 if name in _BINARY else 1
    fn.__signature__ = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                          for p in ("x", "y", "z")[:arity]])
    return fn


# Every function a dialect must spell (for a complex operand too, where the function has a complex
# form); abs is Python's abs(x) (Expr.__abs__). real, imag, conj and complex(re, im) are spelled
# by Dialect.render itself, in the syntax numba and numba.cuda share.
FUNCTIONS = ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh",
             "arctan", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "erf", "floor", "ceil", "trunc", "rint",
             "isnan", "isinf", "isfinite", "maximum", "minimum", "arctan2", "lgamma", "erfc", "abs")
(exp, expm1, log, log1p, log2, log10, sqrt, sin, cos, tan, tanh, sinh, cosh, arctan, arcsin, arccos, arcsinh,
 arccosh, arctanh, erf, floor, ceil, trunc, rint, isnan, isinf, isfinite, maximum, minimum,
 arctan2, lgamma, erfc) = map(_function, FUNCTIONS[:-1])
igamma, igammac, igamma_grad_a, random_gamma_grad, random_gamma_grad_log, betainc, expn, expi = map(_function, LOOPS)
real, imag, conj, complex_ = (_function(name) for name in ("real", "imag", "conj", "complex"))
# complex(re, im) takes the parts' .real: a dialect may have cast them to the step's complex type
_PARTS = {"real": "({}).real", "imag": "({}).imag", "conj": "({}).conjugate()",
          "complex": "complex(({}).real, ({}).real)"}


_WEAK = {bool: False, int: 0, float: 0.0, complex: 0j}


def compute_dtype(operand_dtypes: list, out_dtype: np.dtype) -> np.dtype:
    """The dtype a step computes in: its output's, except that a test or comparison (a boolean out
    of non-boolean operands) compares in its operands' common dtype. operand_dtypes: dtypes, the
    types of Python scalars (weak, as in NumPy), or None for absent operands."""
    out_dtype = np.dtype(out_dtype)
    if out_dtype != _BOOL:
        return out_dtype
    typed = [d for d in operand_dtypes if isinstance(d, np.dtype)]
    weak = [_WEAK[d] for d in operand_dtypes if isinstance(d, type)]
    return np.result_type(*typed, *weak) if typed or weak else out_dtype


class Dialect:
    """How a backend spells Exprs: subclasses give literal() and call(); operators and where are
    Python's syntax, which numba and numba.cuda share."""

    def literal(self, value, dtype: np.dtype) -> str:
        raise TypeError(f"{type(self).__name__} must define literal()")

    def call(self, name: str, args: list[str], exprs: tuple) -> str:
        raise TypeError(f"{type(self).__name__} must define call()")

    @staticmethod
    def loop_call(module: str, name: str, args: list[str]) -> str:
        """The call of a LOOPS function, through the module name the dialect's kernels give it."""
        function, before, after = LOOPS[name]
        return f"{module}.{function}({', '.join([repr(c) for c in before] + list(args) + [repr(c) for c in after])})"

    def render(self, expr: Expr, dtype: np.dtype) -> str:
        """Source for expr as one expression; untyped literals take `dtype` (booleans stay True / False)."""
        return self._spell(expr, dtype, lambda e: self.render(e, dtype))

    def render_lines(self, expr: Expr, dtype: np.dtype, prefix: str) -> tuple[list[str], str]:
        """expr as assignments and one expression over them: each node that expr reaches more than
        once (polygamma's shifted argument, 30 times) is computed once, into `{prefix}{k}`, before
        its uses, instead of being copied into each (numba typed every copy: 4 s a kernel). A shared
        node inside one branch of a `where` is then computed for every element, which the NumPy error
        model that both backends' kernels use makes harmless (x / 0 is inf, not an exception)."""
        uses: dict[int, int] = {}
        pending = [expr]
        while pending:
            node = pending.pop()
            uses[id(node)] = uses.get(id(node), 0) + 1
            if uses[id(node)] == 1:
                pending.extend(_children(node))
        lines: list[str] = []
        names: dict[int, str] = {}

        def spell(node: Expr) -> str:
            if id(node) in names:
                return names[id(node)]
            text = self._spell(node, dtype, spell)
            if uses[id(node)] > 1 and node.op not in ("operand", "literal"):
                names[id(node)] = f"{prefix}{len(lines)}"
                lines.append(f"{names[id(node)]} = {text}")
                return names[id(node)]
            return text
        return lines, spell(expr)

    def _spell(self, expr: Expr, dtype: np.dtype, sub: Callable[[Expr], str]) -> str:
        """Source for one node, its operands spelled by sub."""
        op, args = expr.op, expr.args
        if op == "operand":
            return args[0]
        if op == "literal":
            value = args[0]
            return repr(value) if isinstance(value, bool) else self.literal(value, dtype)
        if op == "call":
            rendered = [sub(a) for a in args[1:]]
            part = _PARTS.get(args[0])
            return part.format(*rendered) if part else self.call(args[0], rendered, args[1:])
        if op == "where":
            c, a, b = (sub(x) for x in args)
            return f"({a} if {c} else {b})"
        if len(args) == 1:
            return f"({op}{sub(args[0])})"
        return f"({sub(args[0])} {op} {sub(args[1])})"


def _children(expr: Expr) -> tuple:
    """The Exprs a node computes from."""
    if expr.op in ("operand", "literal"):
        return ()
    return expr.args[1:] if expr.op == "call" else expr.args


def evaluate(scalar: Callable, operands: list, params: dict) -> Expr:
    """A primitive's scalar expression over these operand Exprs (None: an absent operand)."""
    return _lift(scalar(*operands, **params))


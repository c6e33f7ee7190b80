"""What every distribution of funcgrad.scipy.stats shares: argument promotion, standardisation by
loc and scale, the NaN of invalid parameters, and the namespaces (norm, gamma, ...) the functions
are gathered in, as jax.scipy.stats' modules."""
from __future__ import annotations

import functools
import math
import types

import numpy as np

from ... import numpy as fnp


def floats(*values) -> list:
    """The arguments as Arrays of one floating dtype (fnp._float_args: Python numbers weak, integers
    in the default float), not yet broadcast."""
    return fnp._float_args(*values)


def arguments(name: str, args: tuple, n_shapes: int, given: dict) -> tuple:
    """SciPy's calling convention: the shape parameters, then loc (and scale) positionally or by
    name (given: the keywords, None where not passed). Returns (shape parameters, loc, scale)."""
    names = ("loc", "scale")[:len(given)]
    if len(args) < n_shapes:
        raise TypeError(f"{name} takes {n_shapes} shape parameter(s), got {len(args)}")
    if len(args) > n_shapes + len(names):
        raise TypeError(f"{name} takes {n_shapes} shape parameter(s) and {', '.join(names)}, got {len(args)} "
                        "positional arguments")
    values = dict(zip(names, args[n_shapes:]))
    for key in names:
        if key in values and given[key] is not None:
            raise TypeError(f"{name} got {key} both by position and by name")
        values.setdefault(key, given[key] if given[key] is not None else (0 if key == "loc" else 1))
    return (args[:n_shapes], *(values[key] for key in names))


def standardized(x, loc, scale, *params):
    """(y = (x - loc) / scale, scale, *params) in one dtype."""
    x, loc, scale, *params = floats(x, loc, scale, *params)
    return ((x - loc) / scale, scale, *params)


def valid(condition, value):
    """value where the parameters are valid, NaN elsewhere (SciPy's answer to a bad parameter)."""
    return fnp.where(condition, value, math.nan)


def outside(inside, value, fill):
    """value inside the support, fill (-inf for a log density, 0 or 1 for a CDF) outside."""
    return fnp.where(inside, value, fill)


def _quiet(fn):
    """fn without NumPy's warnings about the branches a where() discards (log(0) in the tail that
    is not taken), as SciPy and JAX are quiet."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            return fn(*args, **kwargs)
    return call


def namespace(name: str, doc: str, **functions) -> types.ModuleType:
    """A module-like namespace of a distribution's functions (stats.norm.logpdf, ...)."""
    module = types.ModuleType(f"funcgrad.scipy.stats.{name}", doc)
    for key, fn in functions.items():
        fn.__name__ = fn.__qualname__ = key
        fn.__module__ = module.__name__
        setattr(module, key, _quiet(fn))
    module.__all__ = list(functions)
    return module

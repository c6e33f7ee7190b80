"""Contractions: matmul, einsum and what is built on them (dot, tensordot, outer, inner, vdot,
matvec, vecmat)."""
from __future__ import annotations

import builtins
import string

import numpy as np

from ..errors import ShapeError
from ..ops import linalg as L
from ..trace import bind
from ._creation import _arrays, _common, _normalize_axis, _precision, asarray
from ._elementwise import conj, multiply
from ._layout import broadcast_to, ravel, reshape, squeeze
from ._reductions import sum

__all__ = [
    "dot", "einsum", "einsum_path", "inner", "matmul", "matvec", "outer", "tensordot", "vdot", "vecmat",
]


def matmul(a, b):
    """NumPy's matmul: 1-D operands are promoted to matrices, batch dimensions broadcast."""
    precision = _precision(a, b)
    a, b = (asarray(a), asarray(b)) if precision else _common((a, b))
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul needs operands of rank >= 1, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} do not line up "
                         f"({a.shape[-1]} != {b.shape[-2 if b.ndim > 1 else 0]})")
    a2 = reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    try:
        np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ShapeError(f"matmul: batch dimensions of {a.shape} and {b.shape} do not broadcast") from None
    out = bind(L.matmul_p, a2, b2, **precision)
    if a.ndim == 1:
        out = squeeze(out, -2)
    if b.ndim == 1:
        out = squeeze(out, -1)
    return out


def einsum(subscripts, *operands, optimize="auto"):
    """Einstein summation (NumPy's notation, including '...' and implicit output), or NumPy's
    sublist form: einsum(A, [0, 1], B, [1, 2], [0, 2]). optimize (NumPy's and JAX's keyword) is
    accepted and has no effect: einsum_p plans its own contraction order, and the result is the same."""
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists((subscripts,) + operands)
    precision = _precision(*operands)
    xs = [asarray(x) for x in operands] if precision else _common(operands)
    spec, sizes = _explicit_einsum(subscripts, [x.shape for x in xs])
    # an axis of size 1 broadcasts against the others its label names (NumPy's, JAX's, PyTorch's rule)
    xs = [x if all(sizes[c] == n for c, n in zip(sub, x.shape)) else broadcast_to(x, tuple(sizes[c] for c in sub))
          for sub, x in zip(spec.split("->")[0].split(","), xs)]
    return bind(L.einsum_p, *xs, spec=spec, **precision)


def _from_sublists(args: tuple) -> tuple[str, tuple]:
    """(subscripts, operands) of einsum(op, sublist, op, sublist, ..., [output sublist]): axis
    labels are ints in 0..51 (letters) or Ellipsis."""
    def letters(sublist) -> str:
        out = []
        for label in sublist:
            if label is Ellipsis:
                out.append("...")
            elif isinstance(label, (int, np.integer)) and 0 <= label < 52:
                out.append(string.ascii_letters[label])
            else:
                raise ValueError(f"einsum: a sublist label must be an int in [0, 52) or Ellipsis, got {label!r}")
        return "".join(out)
    pairs, output = (args[:-1], args[-1]) if len(args) % 2 else (args, None)
    spec = ",".join(letters(s) for s in pairs[1::2])
    return (spec if output is None else f"{spec}->{letters(output)}"), pairs[0::2]


def _explicit_einsum(subscripts: str, shapes) -> tuple[str, dict[str, int]]:
    """The subscripts with '...' spelled out in letters and the output made explicit, and each
    label's size (a label of size 1 in one operand takes another's size)."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    subs = inputs.split(",")
    if len(subs) != len(shapes):
        raise ValueError(f"einsum: {subscripts!r} names {len(subs)} operands but {len(shapes)} were given")
    free = [c for c in string.ascii_letters if c not in subscripts]
    n_ell = builtins.max((len(s) - len(sub.replace("...", "")) for sub, s in zip(subs, shapes) if "..." in sub),
                         default=0)
    ell = "".join(free[:n_ell])
    expanded = []
    for sub, shape in zip(subs, shapes):
        if "..." in sub:
            k = len(shape) - len(sub.replace("...", ""))
            sub = sub.replace("...", ell[n_ell - k:] if k else "")
        if len(sub) != len(shape):
            raise ShapeError(f"einsum: subscripts {sub!r} name {len(sub)} axes but the operand has shape {shape}")
        expanded.append(sub)
    dims: dict[str, int] = {}
    for sub, shape in zip(expanded, shapes):
        for c, d in zip(sub, shape):
            known = dims.setdefault(c, d)
            if known != d and 1 not in (known, d):
                raise ShapeError(f"einsum: index {c!r} has sizes {known} and {d} in {subscripts!r}")
            dims[c] = d if known == 1 else known
    if arrow:
        out = output.replace("...", ell)
    else:
        joined = "".join(expanded)
        out = ell + "".join(sorted(c for c in set(joined) if joined.count(c) == 1 and c not in ell))
    return ",".join(expanded) + "->" + out, dims


def tensordot(a, b, axes=2):
    a, b = _arrays(a, b)
    if isinstance(axes, int):
        axes_a, axes_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        axes_a, axes_b = [np.atleast_1d(v).tolist() for v in axes]
    axes_a = [_normalize_axis(x, a.ndim) for x in axes_a]
    axes_b = [_normalize_axis(x, b.ndim) for x in axes_b]
    if [a.shape[i] for i in axes_a] != [b.shape[j] for j in axes_b]:  # summed axes match exactly (no broadcast)
        raise ShapeError(f"tensordot: shape-mismatch for sum: axes {axes_a} of {a.shape} against axes {axes_b} of "
                         f"{b.shape}")
    letters = iter(string.ascii_letters)
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(axes_a, axes_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in axes_a] + [c for j, c in enumerate(sb) if j not in axes_b]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


def dot(a, b):
    a, b = _arrays(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b)
    return tensordot(a, b, ((a.ndim - 1,), (builtins.max(b.ndim - 2, 0),)))


def outer(a, b):
    a, b = _arrays(a, b)
    return multiply(reshape(ravel(a), (-1, 1)), reshape(ravel(b), (1, -1)))


def inner(a, b):
    """Sum over the last axes; with a 0-d operand, the product (NumPy's)."""
    a, b = _arrays(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    return tensordot(a, b, ((-1,), (-1,)))


def vdot(a, b):
    """The dot product of the flattened arrays, the first conjugated (NumPy's)."""
    a, b = _arrays(a, b)
    return sum(multiply(conj(ravel(a)), ravel(b)))


def _vector_operand(v, name: str):
    v = asarray(v)
    if v.ndim < 1:
        raise ShapeError(f"{name}: the vector operand must have at least one axis, got a scalar")
    return v


def _matrix_operand(m, name: str):
    m = asarray(m)
    if m.ndim < 2:
        raise ShapeError(f"{name}: the matrix operand must have at least two axes, got shape {m.shape}")
    return m


def matvec(x1, x2):
    """Matrices (..., m, n) times vectors (..., n), batch axes broadcast: (..., m) (NumPy 2.2's)."""
    x1, x2 = _matrix_operand(x1, "matvec"), _vector_operand(x2, "matvec")
    return squeeze(matmul(x1, reshape(x2, x2.shape + (1,))), -1)


def vecmat(x1, x2):
    """Conjugated vectors (..., n) times matrices (..., n, m), batch axes broadcast: (..., m)."""
    x1, x2 = _vector_operand(x1, "vecmat"), _matrix_operand(x2, "vecmat")
    return squeeze(matmul(reshape(conj(x1), x1.shape[:-1] + (1, x1.shape[-1])), x2), -2)


def einsum_path(subscripts: str, *operands, optimize="greedy"):
    """NumPy's contraction order for einsum (the path and its report), from the operands' shapes."""
    return np.einsum_path(subscripts, *(np.empty(np.shape(op), np.int8) for op in operands), optimize=optimize)

"""Contractions: batched matmul and einsum (which also carries dot, tensordot, outer)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import dtypes
from . import reductions as R
from . import shape as S
from .core import Primitive, defjvp, defvjp


def _low_precision_matmul(fn):
    """bf16/fp16 operands multiply in float32 and round the result once, as PyTorch on the CPU.
    precision (autocast): round the operands to that dtype first; the result has out_dtype
    (default: precision). A gradient for a float32 parameter asks for float32 directly."""
    def impl(*operands, precision=None, out_dtype=None, **params):
        dtype = precision or operands[0].dtype
        if dtype in dtypes.low_precision:
            rounded = (np.asarray(o).astype(dtype).astype(np.float32) for o in operands)
            return fn(*rounded, **params).astype(out_dtype or dtype)
        return fn(*operands, **params)
    return impl


def _cotangent_params(params: dict, operand) -> dict:
    """Under autocast, a cotangent is computed at the same precision in its operand's dtype."""
    return {**params, "out_dtype": operand.dtype} if params.get("precision") is not None else params


def _swap_last(x):
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return S.transpose_p(x, perm=perm)


# matmul_p takes operands of rank >= 2 with broadcastable batch dimensions.
# precision=None, or the autocast dtype the product is computed in.
def _matmul(a, b):
    if np.ndim(a) >= 2 and np.ndim(b) >= 2 and np.shape(a)[-1] == 1:  # nothing to sum: a broadcast
        return np.multiply(a, b)  # multiply, at memory speed (per-example weight gradients: 2.2x)
    return np.matmul(a, b)


matmul_p = Primitive("matmul", _low_precision_matmul(_matmul))
defvjp(matmul_p,
       lambda g, out, a, b, **p: R.unbroadcast(matmul_p(g, _swap_last(b), **_cotangent_params(p, a)), a.shape),
       lambda g, out, a, b, **p: R.unbroadcast(matmul_p(_swap_last(a), g, **_cotangent_params(p, b)), b.shape))
defjvp(matmul_p, lambda t, out, a, b, **p: matmul_p(t, b, **p), lambda t, out, a, b, **p: matmul_p(a, t, **p))


# ---- einsum: spec is explicit, like "ij,jk->ik", with no ellipsis (funcgrad.numpy expands it) --
@lru_cache(maxsize=1024)
def _contraction_path(spec: str, shapes: tuple) -> list | bool:
    """NumPy's optimised contraction order for these shapes, searched once (the search costs
    more than a small contraction)."""
    if sum(int(np.prod(s, dtype=np.int64)) for s in shapes) <= 4096:
        return False
    return np.einsum_path(spec, *(np.empty(s, np.float32) for s in shapes), optimize="greedy")[0]


def _einsum_impl(*operands, spec):
    return np.einsum(spec, *operands, optimize=_contraction_path(spec, tuple(o.shape for o in operands)))


def _einsum_transpose(i, g, out, *operands, spec, **params):
    """Cotangent of operand i: contract g with the other operands onto operand i's indices.

    An index repeated within operand i (a diagonal) is tied back with an identity matrix, and
    an index only operand i has (summed away) is restored with a vector of ones: both become
    extra constant operands of the same einsum.
    """
    inputs, output = spec.split("->")
    subs = inputs.split(",")
    target = subs[i]
    others = [s for j, s in enumerate(subs) if j != i]
    seen = set(output) | set("".join(others))
    spare = iter(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                 if c not in set(inputs) | set(output))
    out_letters, extra_subs, extra_ops = [], [], []
    dims = dict(zip(target, operands[i].shape))
    for c in target:
        if c in out_letters:  # repeated within operand i
            fresh = next(spare)
            extra_subs.append(c + fresh)
            extra_ops.append(np.eye(dims[c], dtype=g.dtype))
            out_letters.append(fresh)
        else:
            out_letters.append(c)
            if c not in seen:
                extra_subs.append(c)
                extra_ops.append(np.ones(dims[c], dtype=g.dtype))
                seen.add(c)
    new_spec = ",".join([output] + others + extra_subs) + "->" + "".join(out_letters)
    rest = [o for j, o in enumerate(operands) if j != i]
    return einsum_p(g, *rest, *extra_ops, spec=new_spec, **_cotangent_params(params, operands[i]))


def _einsum_tangent(i, t, out, *operands, spec, **params):
    replaced = list(operands)
    replaced[i] = t
    return einsum_p(*replaced, spec=spec, **params)


einsum_p = Primitive("einsum", _low_precision_matmul(_einsum_impl))
einsum_p.vjp_argnum = _einsum_transpose
einsum_p.jvp_argnum = _einsum_tangent

"""Contractions: batched matmul and einsum (which also carries dot, tensordot, outer)."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .. import dtypes
from ..cpu import gemm
from ..cpu.workspace import deliver
from .core import Primitive, ShapedArray, defjvp, defvjp
from .layout import batch_elementwise, batch_first, reshape_p, transpose_p, unbroadcast


def contraction_dtype(operand_dtypes, precision=None, out_dtype=None) -> np.dtype:
    """A contraction's result dtype: under a low precision (autocast's, or the operands' own) its
    out_dtype or that precision; otherwise NumPy's promotion of the operands."""
    dtype = np.dtype(precision) if precision is not None else np.dtype(operand_dtypes[0])
    if dtype in dtypes.low_precision:
        return np.dtype(out_dtype or dtype)
    return np.result_type(*operand_dtypes)


def _low_precision_matmul(fn):
    """bf16/fp16 operands multiply in float32 and round the result once, as PyTorch on the CPU.
    precision (autocast): round the operands to that dtype first; the result has out_dtype
    (default: precision). A gradient for a float32 parameter asks for float32 directly."""
    def impl(*operands, precision=None, out_dtype=None, out=None, **params):
        dtype = precision or operands[0].dtype
        if dtype in dtypes.low_precision:
            rounded = (np.asarray(o).astype(dtype).astype(np.float32) for o in operands)
            return deliver(fn(*rounded, **params).astype(out_dtype or dtype), out)
        return fn(*operands, **params) if out is None else fn(*operands, out=out, **params)
    return impl


def _cotangent_params(params: dict, operand) -> dict:
    """Under autocast, a cotangent is computed at the same precision in its operand's dtype."""
    return {**params, "out_dtype": operand.dtype} if params.get("precision") is not None else params


def _swap_last(x):
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return transpose_p(x, perm=perm)


def _matmul_shape(a, b, *, precision=None, out_dtype=None):
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ValueError(f"matmul_p takes operands of rank >= 2, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align: {a.shape[-1]} (dim {len(a.shape) - 1}) "
                         f"!= {b.shape[-2]} (dim {len(b.shape) - 2})")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return ShapedArray(batch + (a.shape[-2], b.shape[-1]), contraction_dtype([a.dtype, b.dtype], precision, out_dtype))


# matmul_p takes operands of rank >= 2 with broadcastable batch dimensions.
# precision=None, or the autocast dtype the product is computed in.
def _matmul(a, b, out=None):
    if np.ndim(a) >= 2 and np.ndim(b) >= 2 and np.shape(a)[-1] == 1:  # nothing to sum: a broadcast
        return np.multiply(a, b, out=out)  # at memory speed: NumPy's matmul would run a K=1 gemm per matrix
    if np.ndim(a) > 2 and np.ndim(b) == 2:  # a stack times one matrix (x @ W): one GEMM of all rows,
        rows = np.reshape(a, (math.prod(a.shape[:-1]), a.shape[-1]))  # where NumPy would run a GEMM per matrix
        into = None if out is None else out.reshape(rows.shape[0], b.shape[-1])
        return gemm.matmul(rows, b, out=into).reshape(a.shape[:-1] + (b.shape[-1],))
    if np.ndim(a) > 2 and np.ndim(b) > 2 and _small_transposed(a, b):  # OpenBLAS's NT kernel on small matrices ran
        b = np.ascontiguousarray(b)  # 0.55-0.8x its NN one (64 x 64 x 32 .. 64 x 128 x 64 per matrix) with the copy
    return gemm.matmul(a, b, out=out)


def _small_transposed(a, b) -> bool:
    """b's matrices are stored transposed (columns contiguous) and small: M K N up to 2^19 (at
    128 x 128 x 64 the copy cost more than it saved, 1.8x)."""
    return b.strides[-2] == b.itemsize and b.shape[-1] > 1 and a.shape[-2] * a.shape[-1] * b.shape[-1] <= 1 << 19


matmul_p = Primitive("matmul", _low_precision_matmul(_matmul), shape_rule=_matmul_shape, batch_rule=batch_elementwise,
                     cuda="matmul", fresh=True, writes_into=True)
def _matmul_rhs_cotangent(g, out, a, b, **p):
    if len(b.shape) == 2 and len(a.shape) > 2:  # one matrix for a stack: the stack's rows are summed over,
        rows = math.prod(a.shape[:-1])  # in one GEMM rather than a GEMM per matrix and a sum
        a, g = reshape_p(a, shape=(rows, a.shape[-1])), reshape_p(g, shape=(rows, g.shape[-1]))
    return unbroadcast(matmul_p(_swap_last(a), g, **_cotangent_params(p, b)), b.shape)


defvjp(matmul_p,
       lambda g, out, a, b, **p: unbroadcast(matmul_p(g, _swap_last(b), **_cotangent_params(p, a)), a.shape),
       _matmul_rhs_cotangent)
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


def _einsum_shape(*operands, spec, precision=None, out_dtype=None):
    inputs, output = spec.split("->")
    subs = inputs.split(",")
    if len(subs) != len(operands):
        raise ValueError(f"einsum {spec!r} names {len(subs)} operands but was given {len(operands)}")
    sizes: dict[str, int] = {}
    for letters, x in zip(subs, operands):
        if len(letters) != len(x.shape):
            raise ValueError(f"einsum {spec!r}: operand subscripts {letters!r} do not match an operand of shape {x.shape}")
        for c, n in zip(letters, x.shape):
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = n
            elif n not in (1, seen):
                raise ValueError(f"einsum {spec!r}: size of label {c!r} is {seen} in one operand and {n} in another")
    missing = [c for c in output if c not in sizes]
    if missing:
        raise ValueError(f"einsum {spec!r}: output subscripts {missing} appear in no input")
    return ShapedArray(tuple(sizes[c] for c in output),
                       contraction_dtype([x.dtype for x in operands], precision, out_dtype))


def _einsum_batch(size, prim, vals, dims, spec, **params):
    inputs, output = spec.split("->")
    letter = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in spec)
    subs = inputs.split(",")
    moved = []
    for i, (v, d) in enumerate(zip(vals, dims)):
        if d is None:
            moved.append(v)
        else:
            moved.append(batch_first(v, d, size))
            subs[i] = letter + subs[i]
    return prim(*moved, spec=",".join(subs) + "->" + letter + output, **params), 0


einsum_p = Primitive("einsum", _low_precision_matmul(_einsum_impl), shape_rule=_einsum_shape, batch_rule=_einsum_batch,
                     cuda="einsum")
einsum_p.vjp_argnum = _einsum_transpose
einsum_p.jvp_argnum = _einsum_tangent

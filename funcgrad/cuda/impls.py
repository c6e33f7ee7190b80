"""The CUDA implementation of every primitive in funcgrad.ops, registered as prim.impls["cuda"].

An implementation receives what the CPU one does, with device buffers in place of NumPy arrays:
DeviceValues, Python scalars, and small NumPy constants the derivative rules make (a 0-d constant
is passed to the kernel as a scalar; a larger one is copied over, and counted). Output shapes and
dtypes follow the CPU implementation exactly: where a rule is more than broadcasting, the dtype
comes from running the CPU implementation on one-element stand-ins.
"""
from __future__ import annotations

from functools import cache

import numpy as np

from .. import dtypes
from ..ops import core, shape as S
from ..ops.conv import output_size
from .buffer import DeviceValue, contiguous_strides, from_host
from .kernels import decompositions as D, elementwise, indexing, matmul as M, random, reduce as R, scan, sort
from .kernels.copy import arange, compact, contiguous, copy_into, fill
from .kernels.indexing import basic_view


def _device(x):
    """A DeviceValue for an operand that must be an array (host constants are copied over)."""
    if isinstance(x, DeviceValue):
        return x
    return from_host(np.asarray(x))


def _scalar_or_device(x):
    """Elementwise operands: 0-d host constants stay scalars (NumPy 0-d arrays keep their dtype)."""
    if isinstance(x, DeviceValue) or x is None or isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x
    return from_host(np.asarray(x))


@cache
def _dtype_rule(prim_name: str, signature: tuple, params: tuple) -> np.dtype:
    stand_ins = [np.ones((1,) * nd, dt) if isinstance(dt, np.dtype) else dt for nd, dt in signature]
    with np.errstate(all="ignore"):
        return np.asarray(core.registry[prim_name].impl(*stand_ins, **dict(params))).dtype


def out_dtype(prim, args, params) -> np.dtype:
    """The dtype prim's CPU implementation gives these operands."""
    signature = tuple((x.ndim, x.dtype) if isinstance(x, DeviceValue) else
                      ((x.ndim, x.dtype) if isinstance(x, np.ndarray) else (0, x)) for x in args)
    return _dtype_rule(prim.name, signature, tuple(sorted(params.items())))  # params are hashable (jit keys on them)


# ---- elementwise ------------------------------------------------------------------------------
def _elementwise(prim):
    def impl(*args, **params):
        operands = [_scalar_or_device(x) for x in args]
        shape = np.broadcast_shapes(*(x.shape for x in operands if hasattr(x, "shape")))
        return elementwise.apply(prim.name, operands, out_dtype(prim, args, params), params, shape=shape)
    return impl


# ---- structure: views where NumPy would give a view ------------------------------------------------
def _reshape(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        shape[shape.index(-1)] = x.size // known if known else 0
    shape = tuple(int(d) for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    x = contiguous(x)
    return x.view(shape, contiguous_strides(shape))


def _broadcast_to(x, shape):
    shape = tuple(shape)
    if np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {x.shape} and requested shape {shape}")
    return x.view(shape, elementwise.broadcast_strides(x, shape))


def _transpose(x, perm):
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"axes {perm} don't match array of rank {x.ndim}")
    return x.view(tuple(x.shape[p] for p in perm), tuple(x.strides[p] for p in perm))


def _pad(x, widths, value):
    widths = [(int(lo), int(hi)) for lo, hi in widths]
    out = fill(tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, widths)), x.dtype, value)
    copy_into(basic_view(out, tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape, widths))), x)
    return out


def _concatenate(*xs, axis):
    xs = [_device(x) for x in xs]
    first = xs[0]
    axis = axis % first.ndim
    for x in xs[1:]:
        if x.ndim != first.ndim or any(a != b for d, (a, b) in enumerate(zip(x.shape, first.shape)) if d != axis):
            raise ValueError(f"all the input array dimensions except for the concatenation axis must match "
                             f"exactly: {first.shape} and {x.shape} along axis {axis}")
    shape = first.shape[:axis] + (sum(x.shape[axis] for x in xs),) + first.shape[axis + 1:]
    out = fill(shape, np.result_type(*(x.dtype for x in xs)), 0)
    start = 0
    for x in xs:
        index = (slice(None),) * axis + (slice(start, start + x.shape[axis]),)
        copy_into(basic_view(out, index), x)
        start += x.shape[axis]
    return out


def _gather(x, *arrays, spec):
    if not arrays:
        return basic_view(x, S.build_index(spec, []))
    return indexing.gather(x, spec, [_device(a) for a in arrays])


def _scatter_add(g, *arrays, spec, shape):
    g = _device(g)
    if not arrays:
        out = fill(shape, g.dtype, 0)
        copy_into(basic_view(out, S.build_index(spec, [])), g)
        return out
    return indexing.scatter_add(g, spec, [_device(a) for a in arrays], tuple(shape))


def _label_index(labels) -> list:
    """Index vectors (row, label) over the flattened leading axes, for pick and unpick."""
    labels = _reshape(_device(labels), (-1,))
    return [arange(labels.size, labels.dtype), labels]


def _pick(x, labels):
    x = _device(x)
    out = indexing.gather(_reshape(x, (-1, x.shape[-1])), (("a",), ("a",)), _label_index(labels))
    return _reshape(out, x.shape[:-1])


def _unpick(g, labels, classes):
    g = _device(g)
    out = indexing.scatter_add(_reshape(g, (-1,)), (("a",), ("a",)), _label_index(labels), (g.size, classes))
    return _reshape(out, g.shape + (classes,))


def _im2col(x, kernel, stride, dilation):
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    n, c, h, w = x.shape
    ho, wo = output_size(h, kh, sh, dh), output_size(w, kw, sw, dw)
    if ho <= 0 or wo <= 0:
        raise ValueError(f"window {kernel} with dilation {dilation} is larger than the input {x.shape}")
    s = x.strides
    return x.view((n, c, ho, wo, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw))


def _col2im(cols, image_shape, kernel, stride, dilation):
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho, wo = cols.shape[2], cols.shape[3]
    out = fill(tuple(image_shape), cols.dtype, 0)
    for i in range(kh):
        for j in range(kw):
            dest = basic_view(out, (slice(None), slice(None), slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
                                    slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)))
            elementwise.apply("add", [dest, basic_view(cols, (Ellipsis, i, j))], out.dtype, out=dest, shape=dest.shape)
    return out


def _bitcast(x, dtype):
    dtype = np.dtype(dtype)
    if dtype.itemsize == x.dtype.itemsize:
        return x.view(x.shape, x.strides, dtype=dtype)
    if not x.shape or x.shape[-1] * x.dtype.itemsize % dtype.itemsize:
        raise ValueError(f"cannot view {x.dtype}{list(x.shape)} as {dtype}: the last axis does not divide")
    x = compact(x)
    shape = x.shape[:-1] + (x.shape[-1] * x.dtype.itemsize // dtype.itemsize,)
    return x.view(shape, contiguous_strides(shape), 0, dtype)


# ---- reductions -------------------------------------------------------------------------------
def _reduced_shape(x, axes, keepdims):
    return tuple(1 if d in axes else n for d, n in enumerate(x.shape) if keepdims or d not in axes)


def _normalise_axes(x, axes):
    if axes is None:
        return tuple(range(x.ndim))
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(sorted(a % x.ndim if x.ndim else a for a in axes))


def _reduction(prim, op):
    def impl(x, axes, keepdims):
        axes = _normalise_axes(x, axes)
        if op in ("max", "min") and any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation {op}imum which has no identity")
        dtype = out_dtype(prim, [x], {"axes": axes, "keepdims": keepdims})
        return R.reduce(op, x, axes, _reduced_shape(x, axes, keepdims), dtype)
    return impl


def _arg_reduction(op):
    def impl(x, axis, keepdims):
        if axis is None:
            flat = _reshape(x, (-1,))
            out = R.arg_reduce(op, flat, 0, ())
            return out.view((1,) * x.ndim, (0,) * x.ndim) if keepdims else out
        axis = axis % x.ndim
        return R.arg_reduce(op, x, axis, _reduced_shape(x, (axis,), keepdims))
    return impl


def _logsumexp(x, axes, keepdims):
    axes = _normalise_axes(x, axes)
    return R.softmax_family("logsumexp", x, axes, _reduced_shape(x, axes, keepdims))


def _softmax(mode):
    def impl(x, axes):
        return R.softmax_family(mode, x, _normalise_axes(x, axes), x.shape)
    return impl


def _cumsum(x, axis, reverse):
    dtype = out_dtype(core.registry["cumsum"], [x], {"axis": axis, "reverse": reverse})
    return scan.cumsum(x, axis % x.ndim, reverse, dtype)


# ---- contractions -----------------------------------------------------------------------------
def _contraction_dtype(operands, precision, out_dtype_):
    dtype = precision or operands[0].dtype
    if dtype in dtypes.low_precision:
        return np.dtype(out_dtype_ or dtype)
    return np.result_type(*(o.dtype for o in operands))


def _matmul(a, b, precision=None, out_dtype=None):
    a, b = _device(a), _device(b)
    precision = np.dtype(precision) if precision is not None else None
    return M.matmul(a, b, _contraction_dtype([a, b], precision, out_dtype), precision)


def _diagonal(x, subs: str):
    """Operand x with repeated letters in subs taken along their diagonal (a strided view)."""
    letters, shape, strides = [], [], []
    for c, n, s in zip(subs, x.shape, x.strides):
        if c in letters:
            strides[letters.index(c)] += s
        else:
            letters.append(c)
            shape.append(n)
            strides.append(s)
    return x.view(tuple(shape), tuple(strides)), "".join(letters)


def _sum_letters(x, subs: str, keep: set):
    axes = tuple(i for i, c in enumerate(subs) if c not in keep)
    if not axes:
        return x, subs
    acc = R.reduce("sum", x, axes, tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype)
    return acc, "".join(c for c in subs if c in keep)


def _permute(x, subs: str, order: str):
    return _transpose(x, tuple(subs.index(c) for c in order))


def _merge(x, groups: list[int]):
    """Reshape x so consecutive runs of dimensions (lengths in groups) become one each."""
    shape, start = [], 0
    for g in groups:
        shape.append(int(np.prod(x.shape[start:start + g], dtype=np.int64)))
        start += g
    return _reshape(x, tuple(shape))


def _contract_pair(a, sa, b, sb, keep: set, out_dtype_, precision):
    """Contract two operands; the result's letters are batch + left-free + right-free."""
    batch = [c for c in sa if c in sb and c in keep]
    contracted = [c for c in sa if c in sb and c not in keep]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]
    a2 = _merge(_permute(a, sa, "".join(batch + left + contracted)), [len(batch), len(left), len(contracted)])
    b2 = _merge(_permute(b, sb, "".join(batch + contracted + right)), [len(batch), len(contracted), len(right)])
    prod = M.matmul(a2, b2, out_dtype_, precision)
    sizes = dict(zip(sa, a.shape)) | dict(zip(sb, b.shape))
    letters = batch + left + right
    return _reshape(prod, tuple(sizes[c] for c in letters)), "".join(letters)


def _einsum(*operands, spec, precision=None, out_dtype=None):
    operands = [_device(o) for o in operands]
    inputs, output = spec.split("->")
    subs = inputs.split(",")
    precision = np.dtype(precision) if precision is not None else None
    dtype = _contraction_dtype(operands, precision, out_dtype)
    work_dtype = np.dtype(np.float32) if dtype in dtypes.low_precision else dtype
    terms = [_diagonal(o, s) for o, s in zip(operands, subs)]
    x, sx = terms[0]
    for k, (y, sy) in enumerate(terms[1:], start=1):
        later = set(output) | set("".join(s for _, s in terms[k + 1:]))
        x, sx = _sum_letters(x, sx, later | set(sy))
        y, sy = _sum_letters(y, sy, later | set(sx))
        x, sx = _contract_pair(x, sx, y, sy, later, work_dtype, precision)
    x, sx = _sum_letters(x, sx, set(output))
    result = contiguous(_permute(x, sx, output))
    if result.dtype != dtype:
        result = elementwise.apply("convert", [result], dtype, {"dtype": dtype})
    return result


# ---- random bits and sorting -------------------------------------------------------------------
def _threefry(key, x0, x1):
    return random.threefry2x32(_device(key), _device(np.asarray(x0, np.uint32) if not isinstance(x0, DeviceValue) else x0),
                               _device(np.asarray(x1, np.uint32) if not isinstance(x1, DeviceValue) else x1))


def _argsort(x, axis):
    if axis is None:
        return sort.argsort(_reshape(x, (-1,)), 0)
    return sort.argsort(x, axis % x.ndim)


IMPLS = {
    "reshape": _reshape, "broadcast_to": _broadcast_to, "transpose": _transpose, "pad": _pad,
    "concatenate": _concatenate, "gather": _gather, "scatter_add": _scatter_add,
    "pick": _pick, "unpick": _unpick,
    "argmax": _arg_reduction("argmax"), "argmin": _arg_reduction("argmin"),
    "cumsum": _cumsum, "logsumexp": _logsumexp, "softmax": _softmax("softmax"),
    "log_softmax": _softmax("log_softmax"), "matmul": _matmul, "einsum": _einsum,
    "im2col": _im2col, "col2im": _col2im, "threefry2x32": _threefry, "bitcast": _bitcast,
    "argsort": _argsort, "stop_gradient": lambda x: x,
    "solve": lambda a, b: D.solve(_device(a), _device(b)), "slogdet": lambda a: D.slogdet(_device(a)),
    "cholesky": lambda a: D.cholesky(_device(a)), "eigh": lambda a: D.eigh(_device(a)),
}


def register() -> None:
    """Give every primitive its CUDA implementation (idempotent)."""
    for name, prim in core.registry.items():
        if name in IMPLS:
            prim.impls["cuda"] = IMPLS[name]
        elif name in R.COMBINE:
            prim.impls["cuda"] = _reduction(prim, name)
        elif name in elementwise.TEMPLATES:
            prim.impls["cuda"] = _elementwise(prim)


def missing() -> list[str]:
    """Primitives without a CUDA implementation (the tests require none)."""
    return sorted(name for name, prim in core.registry.items() if "cuda" not in prim.impls)

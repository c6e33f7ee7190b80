"""The CUDA implementations of funcgrad.ops' primitives: each primitive names its own here (its
`cuda` attribute), and Primitive.impl_for('cuda') imports this module on first use.

An implementation receives what the CPU one does, with device buffers in place of NumPy arrays:
DeviceValues, Python scalars, and small NumPy constants the derivative rules make (a 0-d constant
is passed to the kernel as a scalar; a larger one is copied over, and counted). Output shapes and
dtypes are the primitive's shape rule's. A name marked per_primitive is a builder: called with the
primitive, it returns the implementation (one builder serves every elementwise primitive).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..ops import attention as A
from ..ops import fft as F
from ..ops import normalization as N
from ..ops import shape as S
from ..ops.conv import window_output_hw
from ..ops.core import aval
from ..ops.elementwise import add_p, convert_p
from ..ops.layout import broadcast_shapes, view_strides
from ..ops.linalg import contraction_dtype
from ..ops.reductions import cumsum_p
from .buffer import DeviceValue, contiguous_strides, from_host, to_host
from .kernels import attention as attention_kernels, decompositions as D, elementwise as elementwise_kernels, indexing
from .kernels import matmul as M, random, reduce as R
from .kernels import pool, scan, sort
from .kernels.copy import arange, compact, contiguous, copy_into, fill
from .kernels.indexing import basic_view


def _device(x):
    """A DeviceValue for an operand that must be an array (host constants are copied over)."""
    if isinstance(x, DeviceValue):
        return x
    return from_host(np.asarray(x))


def _scalar_or_device(x):
    """Elementwise operands: 0-d host constants stay scalars (NumPy 0-d arrays keep their dtype)."""
    if isinstance(x, DeviceValue) or x is None or isinstance(x, (bool, int, float, complex)):
        return x
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x
    return from_host(np.asarray(x))


_out_dtypes: dict = {}


def out_dtype(prim, args, params) -> np.dtype:
    """The dtype of prim's result on these operands, by its shape rule: remembered per operand
    dtypes (a Python scalar's type) and params, which are all the rule's dtype depends on."""
    try:
        key = (prim, tuple(getattr(a, "dtype", type(a)) for a in args), tuple(sorted(params.items())))
        dtype = _out_dtypes.get(key)
    except TypeError:  # an unhashable param
        return prim.shape_rule(*map(aval, args), **params).dtype
    if dtype is None:
        dtype = _out_dtypes[key] = prim.shape_rule(*map(aval, args), **params).dtype
    return dtype


def per_primitive(builder):
    """Mark a builder: Primitive.impl_for calls it with the primitive to get the implementation."""
    builder.per_primitive = True
    return builder


# ---- elementwise ------------------------------------------------------------------------------
@per_primitive
def elementwise(prim):
    """Any elementwise primitive: one generated kernel from its scalar expression."""
    def impl(*args, **params):
        operands = [_scalar_or_device(x) for x in args]
        shape = broadcast_shapes(*(x.shape for x in operands if hasattr(x, "shape")))
        return elementwise_kernels.apply(prim, operands, out_dtype(prim, args, params), params, shape=shape)
    return impl


@per_primitive
def through_host(prim):
    """Collectives (funcgrad.dist): the transports move host memory, so device operands are
    copied to the host and the result back."""
    def impl(*args, **params):
        host = [to_host(x) if isinstance(x, DeviceValue) else x for x in args]
        return from_host(np.ascontiguousarray(prim.impl(*host, **params)))
    return impl


def identity(x, **params):
    """stop_gradient, pvary: the value itself (no copy, as on the CPU)."""
    return x


# ---- structure: views where NumPy would give a view ------------------------------------------------
def reshape(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod([d for d in shape if d != -1])
        shape[shape.index(-1)] = x.size // known if known else 0
    shape = tuple(int(d) for d in shape)
    if math.prod(shape) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    strides = view_strides(x.shape, x.strides, shape) if x.size else None
    if strides is None:  # as NumPy: a copy only where no strides can walk the elements in order
        x, strides = contiguous(x), contiguous_strides(shape)
    return x.view(shape, strides)


def broadcast_to(x, shape):
    shape = tuple(shape)
    if np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {x.shape} and requested shape {shape}")
    return x.view(shape, elementwise_kernels.broadcast_strides(x, shape))


def transpose(x, perm):
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"axes {perm} don't match array of rank {x.ndim}")
    return x.view(tuple(x.shape[p] for p in perm), tuple(x.strides[p] for p in perm))


def pad(x, widths, value):
    widths = [(int(lo), int(hi)) for lo, hi in widths]
    out = fill(tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, widths)), x.dtype, value)
    copy_into(basic_view(out, tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape, widths))), x)
    return out


def concatenate(*xs, axis):
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


def gather(x, *arrays, spec):
    if not arrays:
        return basic_view(x, S.build_index(spec, []))
    return indexing.gather(x, spec, [_device(a) for a in arrays])


def scatter_add(g, *arrays, spec, shape):
    g = _device(g)
    if not arrays:
        out = fill(shape, g.dtype, 0)
        copy_into(basic_view(out, S.build_index(spec, [])), g)
        return out
    return indexing.scatter_add(g, spec, [_device(a) for a in arrays], tuple(shape))


def pick(x, labels):
    x, labels = _device(x), _device(labels)
    out = indexing.take_along_rows(reshape(x, (-1, x.shape[-1])), reshape(labels, (-1, 1)))
    return reshape(out, x.shape[:-1])


def unpick(g, labels, classes):
    g, labels = _device(g), _device(labels)
    out = indexing.put_along_rows(reshape(g, (-1,)), reshape(labels, (-1,)), classes)
    return reshape(out, g.shape + (classes,))


def im2col(x, kernel, stride, dilation):
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    n, c = x.shape[:2]
    ho, wo = window_output_hw(x.shape[2:], kernel, stride, ((0, 0), (0, 0)), dilation, "im2col")
    s = x.strides
    return x.view((n, c, ho, wo, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw))


def col2im(cols, image_shape, kernel, stride, dilation):
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho, wo = cols.shape[2], cols.shape[3]
    out = fill(tuple(image_shape), cols.dtype, 0)
    for i in range(kh):
        for j in range(kw):
            dest = basic_view(out, (slice(None), slice(None), slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
                                    slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)))
            elementwise_kernels.apply(add_p, [dest, basic_view(cols, (Ellipsis, i, j))], out.dtype, out=dest,
                                      shape=dest.shape)
    return out


# ---- convolution: window views contracted by einsum (the GPU's GEMM) --------------------------
def _grouped_windows(x, kernel, stride, padding, dilation, groups):
    """The windows of x, padded, as the view (N, groups, C / groups, Ho, Wo, kh, kw)."""
    x = _device(x)
    if any(lo or hi for lo, hi in padding):
        x = pad(x, ((0, 0), (0, 0)) + tuple(padding), 0)
    cols = im2col(x, kernel, stride, dilation)
    s = cols.strides
    return cols.view((cols.shape[0], groups, cols.shape[1] // groups) + cols.shape[2:],
                     (s[0], s[1] * (cols.shape[1] // groups)) + s[1:])


def _grouped(a, groups: int, axis: int):
    """The operand with axis split into (groups, rest): a view, unless its strides need a copy."""
    a = _device(a)
    return reshape(a, a.shape[:axis] + (groups, a.shape[axis] // groups) + a.shape[axis + 1:])


def conv(x, w, stride, padding, dilation, groups, precision=None, out_dtype=None):
    cols = _grouped_windows(x, w.shape[2:], stride, padding, dilation, groups)
    out = einsum(cols, _grouped(w, groups, 0), spec="ngchwij,gocij->ngohw", precision=precision, out_dtype=out_dtype)
    return reshape(out, (out.shape[0], -1) + out.shape[3:])


def conv_weight_grad(x, g, kernel, stride, padding, dilation, groups, precision=None, out_dtype=None):
    cols = _grouped_windows(x, kernel, stride, padding, dilation, groups)
    out = einsum(cols, _grouped(g, groups, 1), spec="ngchwij,ngohw->gocij", precision=precision, out_dtype=out_dtype)
    return reshape(out, (-1,) + out.shape[2:])


def conv_input_grad(g, w, image_size, stride, padding, dilation, groups, precision=None, out_dtype=None):
    g, w = _device(g), _device(w)
    dtype = contraction_dtype([g.dtype, w.dtype], np.dtype(precision) if precision is not None else None, out_dtype)
    work = np.dtype(np.float32) if dtype in dtypes.low_precision else dtype  # windows add up in float32
    cols = einsum(_grouped(g, groups, 1), _grouped(w, groups, 0), spec="ngohw,gocij->ngchwij", precision=precision,
                  out_dtype=work)
    cols = reshape(cols, (cols.shape[0], -1) + cols.shape[3:])
    (pt, pb), (pl, pr) = padding
    image = col2im(cols, (g.shape[0], cols.shape[1], image_size[0] + pt + pb, image_size[1] + pl + pr), w.shape[2:],
                   stride, dilation)
    image = basic_view(image, (slice(None), slice(None), slice(pt, pt + image_size[0]), slice(pl, pl + image_size[1])))
    return image if dtype == work else elementwise_kernels.apply(convert_p, [image], dtype, {"dtype": dtype})


def window_argmax(x, kernel, stride, padding, dilation):
    x = _device(x)
    hw = window_output_hw(x.shape[2:], kernel, stride, padding, dilation, "window_argmax")
    return pool.window_argmax(x, kernel, stride, padding, dilation, hw)


def _plane_index(index) -> list:
    """Index vectors (plane, position) over the (N * C) planes, for gather_plane and scatter_plane."""
    index = _device(index)
    planes = index.shape[0] * index.shape[1]
    return [reshape(arange(planes, index.dtype), (planes, 1)), reshape(index, (planes, -1))]


def gather_plane(x, index):
    x, index = _device(x), _device(index)
    planes = x.shape[0] * x.shape[1]
    out = indexing.take_along_rows(reshape(x, (planes, -1)), reshape(index, (planes, -1)))
    return reshape(out, tuple(index.shape))


def scatter_plane(g, index, plane):
    g = _device(g)
    planes = g.shape[0] * g.shape[1]
    out = indexing.scatter_add(reshape(g, (planes, -1)), (("a",), ("a",)), _plane_index(index),
                               (planes, plane[0] * plane[1]))
    return reshape(out, tuple(g.shape[:2]) + tuple(plane))


# ---- attention: four kernels (kernels/attention.py) -------------------------------------------
def _attention_operands(q, k, v, bias, scale, causal):
    q, k, v = _device(q), _device(k), _device(v)
    bias = bias if isinstance(bias, (int, float)) else _device(bias)
    dtype = A.attention_p.shape_rule(*map(aval, (q, k, v, bias)), scale=scale, causal=causal).dtype  # or a clear error
    return q, k, v, bias, dtype


def attention(q, k, v, bias, scale, causal):
    q, k, v, bias, dtype = _attention_operands(q, k, v, bias, scale, causal)
    return attention_kernels.attention(q, k, v, bias, scale, causal, dtype)


def attention_weights(q, k, bias, scale, causal):
    q, k = _device(q), _device(k)
    bias = bias if isinstance(bias, (int, float)) else _device(bias)
    dtype = A.attention_weights_p.shape_rule(*map(aval, (q, k, bias)), scale=scale, causal=causal).dtype
    return attention_kernels.weights(q, k, bias, scale, causal, dtype)


def attention_grads(q, k, v, bias, out, g, scale, causal, score_grad):
    q, k, v, bias, dtype = _attention_operands(q, k, v, bias, scale, causal)
    return attention_kernels.attention_grads(q, k, v, bias, _device(out), _device(g), scale, causal, score_grad,
                                             dtype)


# ---- layer / RMS normalisation: one row kernel each way (reduce.norm) -----------------------------
def norm(x, eps, center):
    N.norm_p.shape_rule(aval(x), eps=eps, center=center)  # a float array of rank >= 1, or a clear error
    return R.norm(_device(x), eps, center)


def norm_grad(x, g, eps, center):
    N.norm_grad_p.shape_rule(aval(x), aval(g), eps=eps, center=center)
    return R.norm(_device(x), eps, center, _device(g))


# ---- fft: DFT matrix products on the matmul kernel (numba has no FFT) -------------------------
def _on_device(prim, *args, **params):
    return prim.impl_for("cuda")(*args, **params)


def fft(x, kind, lengths):
    return F.by_matmul(_device(x), kind, tuple(lengths), _on_device, lambda n: arange(n, dtypes.int64))


def bitcast(x, dtype):
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


def _reduction(monoid: R.Monoid):
    """The builder of the reduction kernel of this monoid."""
    @per_primitive
    def build(prim):
        def impl(x, axes, keepdims):
            shaped = prim.shape_rule(aval(x), axes=axes, keepdims=keepdims)  # checks the axes and empty maxima
            return R.reduce(monoid, x, _normalise_axes(x, axes), shaped.shape, shaped.dtype)
        return impl
    return build


reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_all, reduce_any = map(
    _reduction, (R.SUM, R.PROD, R.MAX, R.MIN, R.ALL, R.ANY))


def _arg_reduction(op):
    def impl(x, axis, keepdims):
        if axis is None:
            flat = reshape(x, (-1,))
            out = R.arg_reduce(op, flat, 0, ())
            return out.view((1,) * x.ndim, (0,) * x.ndim) if keepdims else out
        axis = axis % x.ndim
        return R.arg_reduce(op, x, axis, _reduced_shape(x, (axis,), keepdims))
    return impl


def logsumexp(x, axes, keepdims):
    axes = _normalise_axes(x, axes)
    return R.softmax_family("logsumexp", x, axes, _reduced_shape(x, axes, keepdims))


def _softmax(mode):
    def impl(x, axes):
        return R.softmax_family(mode, x, _normalise_axes(x, axes), x.shape)
    return impl


def cumsum(x, axis, reverse):
    dtype = out_dtype(cumsum_p, [x], {"axis": axis, "reverse": reverse})
    return scan.cumsum(x, axis % x.ndim, reverse, dtype)


# ---- contractions -----------------------------------------------------------------------------
def matmul(a, b, precision=None, out_dtype=None):
    a, b = _device(a), _device(b)
    precision = np.dtype(precision) if precision is not None else None
    return M.matmul(a, b, contraction_dtype([a.dtype, b.dtype], precision, out_dtype), precision)


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
    acc = R.reduce(R.SUM, x, axes, tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype)
    return acc, "".join(c for c in subs if c in keep)


def _permute(x, subs: str, order: str):
    return transpose(x, tuple(subs.index(c) for c in order))


def _merge(x, groups: list[int]):
    """Reshape x so consecutive runs of dimensions (lengths in groups) become one each."""
    shape, start = [], 0
    for g in groups:
        shape.append(math.prod(x.shape[start:start + g]))
        start += g
    return reshape(x, tuple(shape))


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
    return reshape(prod, tuple(sizes[c] for c in letters)), "".join(letters)


def einsum(*operands, spec, precision=None, out_dtype=None):
    operands = [_device(o) for o in operands]
    inputs, output = spec.split("->")
    subs = inputs.split(",")
    precision = np.dtype(precision) if precision is not None else None
    dtype = contraction_dtype([o.dtype for o in operands], precision, out_dtype)
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
        result = elementwise_kernels.apply(convert_p, [result], dtype, {"dtype": dtype})
    return result


# ---- random bits and sorting -------------------------------------------------------------------
def threefry2x32(key, x0, x1):
    return random.threefry2x32(_device(key), _device(np.asarray(x0, np.uint32) if not isinstance(x0, DeviceValue) else x0),
                               _device(np.asarray(x1, np.uint32) if not isinstance(x1, DeviceValue) else x1))


def argsort(x, axis):
    if axis is None:
        return sort.argsort(reshape(x, (-1,)), 0)
    return sort.argsort(x, axis % x.ndim)


def solve(a, b):
    return D.solve(_device(a), _device(b))


def triangular_solve(a, b, lower, unit_diagonal):
    return D.triangular_solve(_device(a), _device(b), lower, unit_diagonal)


def lu(a):
    return D.lu(_device(a))


def slogdet(a):
    return D.slogdet(_device(a))


def eig(a):
    raise TypeError("eig of a general matrix runs on the CPU only (as JAX's): move it there with "
                    "fg.device_put(a, 'cpu'); eigh has a GPU kernel for symmetric matrices")


def cholesky(a):
    return D.cholesky(_device(a))


def eigh(a):
    return D.eigh(_device(a))


def svd(a, compute_uv):
    return D.svd(_device(a), compute_uv)


argmax, argmin = _arg_reduction("argmax"), _arg_reduction("argmin")
softmax, log_softmax = _softmax("softmax"), _softmax("log_softmax")

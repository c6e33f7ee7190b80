"""Convolution and sliding windows.

conv, conv_input_grad and conv_weight_grad are one bilinear operation and its two transposes:
each one's derivatives are the other two (or itself), so convolutions are differentiable to any
order while every pass runs as chunked GEMMs (cpu/conv.py) and never materialises the batch's
windows. im2col turns a padded (N, C, H, W) batch into the view (N, C, Ho, Wo, kh, kw) of every
window and col2im adds windows back into an image; each is the other's VJP, and pooling is built
from them.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..cpu import conv as cpu_conv, windows
from ..cpu.conv import output_size
from ..errors import ShapeError
from .core import Primitive, ShapedArray, defjvp, deflinear, defvjp
from .layout import batch_first, batch_to, reshape_p
from .linalg import _cotangent_params, _low_precision_matmul, contraction_dtype


def _im2col_impl(x, kernel, stride, dilation):
    return cpu_conv.window_view(x, kernel, stride, dilation)


def _col2im_impl(cols, image_shape, kernel, stride, dilation):
    out = np.zeros(image_shape, cols.dtype)
    cpu_conv.col2im_into(np.asarray(cols), out, stride, dilation)
    return out


def _im2col_shape(x, *, kernel, stride, dilation):
    if len(x.shape) != 4:
        raise ValueError(f"im2col takes an (N, C, H, W) batch, got shape {x.shape}")
    hw = window_output_hw(x.shape[2:], kernel, stride, ((0, 0), (0, 0)), dilation, "im2col")
    return ShapedArray(tuple(x.shape[:2]) + hw + tuple(kernel), x.dtype)


def _col2im_shape(cols, *, image_shape, kernel, stride, dilation):
    expected = _im2col_shape(ShapedArray(image_shape, cols.dtype), kernel=kernel, stride=stride, dilation=dilation)
    if cols.shape != expected.shape:
        raise ValueError(f"col2im: windows of shape {cols.shape} do not come from an image of shape "
                         f"{tuple(image_shape)} (expected {expected.shape})")
    return ShapedArray(image_shape, cols.dtype)


def _merge_batch(x):
    return reshape_p(x, shape=(x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))


def _im2col_batch(size, prim, vals, dims, **params):
    x = batch_first(vals[0], dims[0], size)
    out = prim(_merge_batch(x), **params)
    return reshape_p(out, shape=(size, x.shape[1]) + tuple(out.shape[1:])), 0


def _col2im_batch(size, prim, vals, dims, image_shape, **params):
    cols = batch_first(vals[0], dims[0], size)
    out = prim(_merge_batch(cols), image_shape=(size * image_shape[0],) + tuple(image_shape[1:]), **params)
    return reshape_p(out, shape=(size,) + tuple(image_shape)), 0


im2col_p = Primitive("im2col", _im2col_impl, shape_rule=_im2col_shape, batch_rule=_im2col_batch, cuda="im2col")
col2im_p = Primitive("col2im", _col2im_impl, shape_rule=_col2im_shape, batch_rule=_col2im_batch, cuda="col2im",
                     fresh=True)
deflinear(im2col_p, lambda g, out, x, kernel, stride, dilation: col2im_p(
    g, image_shape=x.shape, kernel=kernel, stride=stride, dilation=dilation))
deflinear(col2im_p, lambda g, out, cols, image_shape, kernel, stride, dilation: im2col_p(
    g, kernel=kernel, stride=stride, dilation=dilation))


# ---- convolution: conv(x, w) and its transposes ------------------------------------------------
# Parameters shared by the three: stride, padding ((top, bottom), (left, right)), dilation,
# groups, and under autocast precision / out_dtype as for matmul.
def window_output_hw(image_hw, kernel, stride, padding, dilation, name: str = "conv") -> tuple:
    """(Ho, Wo) of windows over an image padded by ((top, bottom), (left, right)); a ShapeError
    naming `name` where the stride or dilation is not positive or the window does not fit."""
    if min(stride) <= 0 or min(dilation) <= 0:
        raise ShapeError(f"{name}: stride {tuple(stride)} and dilation {tuple(dilation)} must be positive")
    padded = tuple(size + lo + hi for size, (lo, hi) in zip(image_hw, padding))
    hw = tuple(output_size(size, k, s, d) for size, k, s, d in zip(padded, kernel, stride, dilation))
    if min(hw) <= 0:
        raise ShapeError(f"{name}: a {tuple(kernel)} window (stride {tuple(stride)}, dilation {tuple(dilation)}) does "
                         f"not fit the padded input of spatial shape {padded}")
    return hw


def _check_conv(x_shape, w_shape, groups):
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ValueError(f"conv takes an (N, C, H, W) input and an (O, C/groups, kh, kw) weight, got shapes "
                         f"{tuple(x_shape)} and {tuple(w_shape)}")
    if x_shape[1] != w_shape[1] * groups or w_shape[0] % groups:
        raise ValueError(f"conv: input of shape {tuple(x_shape)} has {x_shape[1]} channels but weight "
                         f"{tuple(w_shape)} with groups={groups} expects {w_shape[1] * groups} (and out channels "
                         f"divisible by groups)")


def _conv_shape(x, w, *, stride, padding, dilation, groups, precision=None, out_dtype=None):
    _check_conv(x.shape, w.shape, groups)
    hw = window_output_hw(x.shape[2:], w.shape[2:], stride, padding, dilation)
    return ShapedArray((x.shape[0], w.shape[0]) + hw, contraction_dtype([x.dtype, w.dtype], precision, out_dtype))


def _check_cotangent(g_shape, x_shape, w_shape, stride, padding, dilation):
    expected = (x_shape[0], w_shape[0]) + window_output_hw(x_shape[2:], w_shape[2:], stride, padding, dilation)
    if tuple(g_shape) != expected:
        raise ValueError(f"conv cotangent of shape {tuple(g_shape)} does not match the output {expected} of a conv "
                         f"of input {tuple(x_shape)} with weight {tuple(w_shape)}")


def _input_grad_shape(g, w, *, image_size, stride, padding, dilation, groups, precision=None, out_dtype=None):
    x_shape = (g.shape[0], w.shape[1] * groups) + tuple(image_size)
    _check_conv(x_shape, w.shape, groups)
    _check_cotangent(g.shape, x_shape, w.shape, stride, padding, dilation)
    return ShapedArray(x_shape, contraction_dtype([g.dtype, w.dtype], precision, out_dtype))


def _weight_grad_shape(x, g, *, kernel, stride, padding, dilation, groups, precision=None, out_dtype=None):
    w_shape = (g.shape[1], x.shape[1] // groups) + tuple(kernel)
    _check_conv(x.shape, w_shape, groups)
    _check_cotangent(g.shape, x.shape, w_shape, stride, padding, dilation)
    return ShapedArray(w_shape, contraction_dtype([x.dtype, g.dtype], precision, out_dtype))


def _conv_batch(kinds: str):
    """vmap's rule for an operation whose operands (and result, last) are images (N, C, H, W) or
    weights (O, C/groups, kh, kw), as `kinds` spells them ("iw" + "i" for conv). With only images
    batched and an image result, the batch joins N; otherwise it joins the channels as groups
    (JAX's rule): per-example weights become groups * batch independent convolutions."""
    def rule(size, prim, vals, dims, groups, **params):
        operands, result = kinds[:-1], kinds[-1]
        if result == "i" and all(d is None for k, d in zip(operands, dims) if k == "w"):
            return _batch_into_n(size, prim, vals, dims, kinds=operands, groups=groups, **params)
        moved = [_merge(batch_to(v, d, 1, size), 1) if k == "i" else _merge(batch_first(v, d, size), 0)
                 for k, v, d in zip(operands, vals, dims)]
        out = prim(*moved, groups=groups * size, **params)
        if result == "i":  # (N, B * O, Ho, Wo): the batch stays on axis 1
            return reshape_p(out, shape=(out.shape[0], size, out.shape[1] // size) + tuple(out.shape[2:])), 1
        return reshape_p(out, shape=(size, out.shape[0] // size) + tuple(out.shape[1:])), 0
    return rule


def _batch_into_n(size, prim, vals, dims, kinds=None, **params):
    """vmap's rule where the batch can join the images' N axis: every image operand (all of them
    without `kinds`; "w" marks an unbatched weight, left as it is) is batched, N-major."""
    moved = [v if kinds and kinds[i] == "w" else _merge(batch_first(v, d, size), 0)
             for i, (v, d) in enumerate(zip(vals, dims))]
    out = prim(*moved, **params)
    return reshape_p(out, shape=(size, out.shape[0] // size) + tuple(out.shape[1:])), 0


def _merge(x, axis: int):
    """Merge axis and axis + 1 of x."""
    return reshape_p(x, shape=tuple(x.shape[:axis]) + (x.shape[axis] * x.shape[axis + 1],) + tuple(x.shape[axis + 2:]))


def _work_dtype(a, b, precision) -> np.dtype:
    """The dtype the CPU passes compute in: float32 for half precision (_low_precision_matmul)."""
    if precision is not None or a.dtype in dtypes.low_precision or b.dtype in dtypes.low_precision:
        return np.dtype(np.float32)
    return np.result_type(a.dtype, b.dtype)


def _conv_threaded(x, w, *, stride, padding, dilation, groups, precision=None, out_dtype=None):
    return cpu_conv.direct_forward(x.shape, w.shape[2:], w.shape[1], w.shape[0] // groups, stride, padding, dilation,
                                   _work_dtype(x, w, precision))


def _input_grad_threaded(g, w, *, image_size, stride, padding, dilation, groups, precision=None, out_dtype=None):
    return cpu_conv.direct_input_grad(image_size, w.shape[2:], w.shape[1], w.shape[0] // groups, stride, dilation,
                                      _work_dtype(g, w, precision))


def _weight_grad_threaded(x, g, *, kernel, stride, padding, dilation, groups, precision=None, out_dtype=None):
    return cpu_conv.direct_forward(x.shape, kernel, x.shape[1] // groups, g.shape[1] // groups, stride, padding,
                                   dilation, _work_dtype(x, g, precision))


conv_p = Primitive("conv", _low_precision_matmul(cpu_conv.conv), shape_rule=_conv_shape, batch_rule=_conv_batch("iwi"),
                   cuda="conv", fresh=True, writes_into=True, threaded=_conv_threaded)
conv_input_grad_p = Primitive("conv_input_grad", _low_precision_matmul(cpu_conv.conv_input_grad),
                              shape_rule=_input_grad_shape, batch_rule=_conv_batch("iwi"), cuda="conv_input_grad",
                              fresh=True, writes_into=True, threaded=_input_grad_threaded)
conv_weight_grad_p = Primitive("conv_weight_grad", _low_precision_matmul(cpu_conv.conv_weight_grad),
                               shape_rule=_weight_grad_shape, batch_rule=_conv_batch("iiw"), cuda="conv_weight_grad",
                               fresh=True, writes_into=True, threaded=_weight_grad_threaded)

# <conv(x, w), g> = <x, conv_input_grad(g, w)> = <w, conv_weight_grad(x, g)>: every rule is one of the three.
defvjp(conv_p,
       lambda g, out, x, w, **p: conv_input_grad_p(g, w, image_size=x.shape[2:], **_cotangent_params(p, x)),
       lambda g, out, x, w, **p: conv_weight_grad_p(x, g, kernel=w.shape[2:], **_cotangent_params(p, w)))
defjvp(conv_p, lambda t, out, x, w, **p: conv_p(t, w, **p), lambda t, out, x, w, **p: conv_p(x, t, **p))
defvjp(conv_input_grad_p,
       lambda a, out, g, w, image_size, **p: conv_p(a, w, **_cotangent_params(p, g)),
       lambda a, out, g, w, image_size, **p: conv_weight_grad_p(a, g, kernel=w.shape[2:], **_cotangent_params(p, w)))
defjvp(conv_input_grad_p, lambda t, out, g, w, **p: conv_input_grad_p(t, w, **p),
       lambda t, out, g, w, **p: conv_input_grad_p(g, t, **p))
defvjp(conv_weight_grad_p,
       lambda b, out, x, g, kernel, **p: conv_input_grad_p(g, b, image_size=x.shape[2:], **_cotangent_params(p, x)),
       lambda b, out, x, g, kernel, **p: conv_p(x, b, **_cotangent_params(p, g)))
defjvp(conv_weight_grad_p, lambda t, out, x, g, **p: conv_weight_grad_p(t, g, **p),
       lambda t, out, x, g, **p: conv_weight_grad_p(x, t, **p))


# ---- max pooling: where each window's maximum lies, and a gather / scatter by those positions ---
def _window_argmax_shape(x, *, kernel, stride, padding, dilation):
    if len(x.shape) != 4:
        raise ValueError(f"window_argmax takes an (N, C, H, W) batch, got shape {x.shape}")
    if any(lo > k // 2 for (lo, _), k in zip(padding, kernel)):
        raise ValueError(f"pool padding {tuple(padding)} must be at most half the kernel size {tuple(kernel)}")
    hw = window_output_hw(x.shape[2:], kernel, stride, padding, dilation, "window_argmax")
    if any((n - 1) * s - lo >= size for n, s, (lo, _), size in zip(hw, stride, padding, x.shape[2:])):
        # the trailing padding (ceil_mode's) may exceed half the kernel while every window starts in
        # the image: one that does not would have no maximum
        raise ValueError(f"window_argmax: with padding {tuple(padding)} a window lies wholly in the padding")
    return ShapedArray(x.shape[:2] + hw, np.int64)


def _window_argmax_impl(x, kernel, stride, padding, dilation, out=None):
    hw = window_output_hw(x.shape[2:], kernel, stride, padding, dilation, "window_argmax")
    return windows.window_argmax(x, kernel, stride, padding, dilation, hw, out)


def _planes(x, index):
    """(N * C, H * W) and (N * C, P) views of an image batch and positions in its planes."""
    return np.reshape(x, (x.shape[0] * x.shape[1], -1)), np.reshape(index, (index.shape[0] * index.shape[1], -1))


def _gather_plane_shape(x, index):
    if len(x.shape) != 4 or tuple(index.shape[:2]) != tuple(x.shape[:2]) or index.dtype.kind not in "iu":
        raise ValueError(f"gather_plane takes an (N, C, H, W) batch and integer positions (N, C, ...) in its planes, "
                         f"got shapes {x.shape} and {index.shape} ({index.dtype})")
    return ShapedArray(index.shape, x.dtype)


def _scatter_plane_shape(g, index, *, plane):
    if tuple(g.shape) != tuple(index.shape) or index.dtype.kind not in "iu":
        raise ValueError(f"scatter_plane: values of shape {g.shape} for integer positions of shape {index.shape}")
    return ShapedArray(tuple(g.shape[:2]) + tuple(plane), g.dtype)


def _gather_plane_impl(x, index, out=None):
    rows, positions = _planes(x, index)
    into = None if out is None else out.reshape(positions.shape)
    return windows.gather_rows(rows, positions, into).reshape(index.shape)


def _scatter_plane_impl(g, index, plane, out=None):
    rows, positions = _planes(g, index)
    into = None if out is None else out.reshape(rows.shape[0], plane[0] * plane[1])
    return windows.scatter_rows(rows, positions, plane[0] * plane[1], into).reshape(g.shape[:2] + tuple(plane))


window_argmax_p = Primitive("window_argmax", _window_argmax_impl, shape_rule=_window_argmax_shape,
                            batch_rule=_batch_into_n, cuda="window_argmax", fresh=True, writes_into=True,
                            differentiable=False)
gather_plane_p = Primitive("gather_plane", _gather_plane_impl, shape_rule=_gather_plane_shape,
                           batch_rule=_batch_into_n, cuda="gather_plane", fresh=True, writes_into=True)
scatter_plane_p = Primitive("scatter_plane", _scatter_plane_impl, shape_rule=_scatter_plane_shape,
                            batch_rule=_batch_into_n, cuda="scatter_plane", fresh=True, writes_into=True)
deflinear(gather_plane_p, lambda g, out, x, index: scatter_plane_p(g, index, plane=x.shape[2:]))
deflinear(scatter_plane_p, lambda g, out, values, index, plane: gather_plane_p(g, index))

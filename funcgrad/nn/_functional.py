"""The functional layers: activations (each a fused primitive: one stable pass forward, one rule
back), linear, convolution, pooling, padding, normalisation, dropout, embedding and attention.
funcgrad.nn.functional gathers these with the losses and the rest of PyTorch's functional names."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as fg_dtypes
from .. import errors as fg_errors
from .. import numpy as fnp
from .. import random
from ..ops import attention as A
from ..ops import conv as C
from ..ops import elementwise as E
from ..ops import normalization as N
from ..ops import reductions as R
from ..numpy import linalg
from ..trace import bind
from ..vjp import vjp


__all__ = [
    "tanh", "relu", "gelu", "sigmoid", "softplus", "silu", "leaky_relu", "elu", "celu", "selu", "hardtanh", "relu6",
    "hard_sigmoid", "hard_swish", "hardsigmoid", "hardswish", "log_sigmoid", "logsigmoid", "mish", "softsign",
    "normalize", "cosine_similarity", "softmax", "log_softmax", "conv2d", "pad", "conv1d", "max_pool1d", "avg_pool1d",
    "conv_transpose2d", "adaptive_avg_pool2d", "interpolate", "max_pool2d", "avg_pool2d", "linear", "layer_norm",
    "rms_norm", "group_norm", "dropout", "embedding", "one_hot", "scaled_dot_product_attention",
]

tanh = fnp.tanh


def relu(x):
    """max(x, 0), with gradient 0 at 0 (PyTorch's convention)."""
    return bind(E.relu_p, fnp._float_arg(x))


def gelu(x, approximate: bool | str = False):
    """Gaussian error linear unit: exact (erf) by default, as torch.nn.functional.gelu;
    approximate=True (or PyTorch's "tanh") uses the tanh formula, False or "none" the exact one."""
    if approximate not in (False, True, "none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh' (or a bool), got {approximate!r}")
    return bind(E.gelu_p, fnp._float_arg(x), approximate=approximate in (True, "tanh"))


def sigmoid(x):
    return bind(E.sigmoid_p, fnp._float_arg(x))


def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta x)) / beta, computed without overflow, and x itself where beta x exceeds
    threshold, as torch.nn.functional.softplus."""
    x = fnp._float_arg(x)
    if beta == 1:
        return fnp.where(x > threshold, x, _softplus(x))
    scaled = x * beta
    return fnp.where(scaled > threshold, x, _softplus(scaled) / beta)


def _softplus(x):
    """log(1 + exp(x)) for x of a float dtype, with no threshold: the form the other activations use."""
    return bind(E.softplus_p, x)


def silu(x):
    """x * sigmoid(x) (also called swish)."""
    x = fnp._float_arg(x)
    return fnp.multiply(x, sigmoid(x))


def leaky_relu(x, negative_slope: float = 0.01):
    """x above 0, x * negative_slope from 0 down (so the slope at 0 is negative_slope, PyTorch's)."""
    x = fnp._float_arg(x)
    return fnp.where(x > 0, x, x * negative_slope)


def _non_positive(x):
    """x where x <= 0, else 0: the argument of elu's exponential (so it never overflows), whose
    derivative at 0 is 1, so elu's slope there is the negative side's (PyTorch's)."""
    return fnp.where(x > 0, 0.0, x)


def elu(x, alpha: float = 1.0):
    """x for x > 0, alpha * (exp(x) - 1) from 0 down (slope alpha at 0, as PyTorch's)."""
    x = fnp._float_arg(x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(_non_positive(x)))


def celu(x, alpha: float = 1.0):
    x = fnp._float_arg(x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(_non_positive(x) / alpha))


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(x):
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def hardtanh(x, min_val: float = -1.0, max_val: float = 1.0):
    """x clipped to [min_val, max_val], with slope 0 at the ends as well as beyond them (PyTorch's
    hardtanh_backward; fnp.clip, like torch.clamp, has slope 1 at the ends)."""
    x = fnp._float_arg(x)
    return fnp.where((x > min_val) & (x < max_val), x, fnp.stop_gradient(fnp.clip(x, min_val, max_val)))


def relu6(x):
    return hardtanh(x, 0.0, 6.0)


def hard_sigmoid(x):
    """relu6(x + 3) / 6, as torch.nn.functional.hardsigmoid."""
    return relu6(fnp._float_arg(x) + 3.0) * (1.0 / 6.0)


def hard_swish(x):
    x = fnp._float_arg(x)
    return x * hard_sigmoid(x)


hardsigmoid, hardswish = hard_sigmoid, hard_swish


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), without overflow."""
    return -_softplus(-fnp._float_arg(x))


logsigmoid = log_sigmoid


def mish(x):
    x = fnp._float_arg(x)
    return x * fnp.tanh(_softplus(x))


def softsign(x):
    x = fnp._float_arg(x)
    return x / (1.0 + fnp.abs(x))


def _axis(axis, dim):
    """The axis, given as funcgrad's (and JAX's) `axis` or as PyTorch's `dim`."""
    return axis if dim is None else dim


def normalize(x, p: float = 2.0, axis: int = 1, eps: float = 1e-12, *, dim: int | None = None):
    """x / max(||x||_p, eps) along axis (torch.nn.functional.normalize; dim= as there)."""
    x, axis = fnp._float_arg(x), _axis(axis, dim)
    return x / fnp.maximum(linalg.vector_norm(x, p, axis=axis, keepdims=True), eps)


def cosine_similarity(x1, x2, axis: int = 1, eps: float = 1e-8, *, dim: int | None = None):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along axis (or dim), as PyTorch's (each
    norm clamped alone: clamping their product turned small vectors' cosines toward 0)."""
    x1, x2 = fnp._common((fnp._float_arg(x1), fnp._float_arg(x2)))
    axis = _axis(axis, dim)
    unit1, unit2 = (x / fnp.maximum(fnp.sqrt(fnp.sum(x * x, axis=axis, keepdims=True)), eps) for x in (x1, x2))
    return fnp.sum(unit1 * unit2, axis=axis)


def softmax(x, axis=-1, *, dim=None):
    """Softmax along axis (or PyTorch's dim)."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    return bind(R.softmax_p, x, axes=fnp._axes(_axis(axis, dim), x.ndim))


def log_softmax(x, axis=-1, *, dim=None):
    """Log-softmax along axis (or PyTorch's dim)."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    return bind(R.log_softmax_p, x, axes=fnp._axes(_axis(axis, dim), x.ndim))


# ---- layers as functions ----------------------------------------------------------------------
def _pair(v, name: str) -> tuple[int, int]:
    pair = (v, v) if isinstance(v, int) else tuple(v)
    if len(pair) != 2 or not all(isinstance(p, int) and p >= 0 for p in pair):
        raise ValueError(f"{name} must be an int or a pair of non-negative ints, got {v!r}")
    return pair


def _batched_image(x, fname: str):
    x = fnp.asarray(x)
    if x.ndim not in (3, 4):
        raise fg_errors.ShapeError(f"{fname} expects (N, C, H, W) or (C, H, W) input, got shape {x.shape}")
    return (x, False) if x.ndim == 4 else (fnp.expand_dims(x, 0), True)


def _windows(x, kernel, stride, sides, dilation, fname):
    """x (N, C, H, W) -> windows (N, C, Ho, Wo, kh, kw) of x zero-padded by sides ((top, bottom),
    (left, right))."""
    if any(lo or hi for lo, hi in sides):
        x = fnp.pad(x, ((0, 0), (0, 0)) + tuple(sides))
    C.window_output_hw(x.shape[2:], kernel, stride, ((0, 0), (0, 0)), dilation, fname)
    return bind(C.im2col_p, x, kernel=kernel, stride=stride, dilation=dilation)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """2-D cross-correlation as torch.nn.functional.conv2d: x (N, C, H, W), weight (O, C/groups, kh, kw).

    padding may be an int, a pair, "valid" or "same" (stride 1)."""
    x, unbatched = _batched_image(x, "conv2d")
    weight = fnp.asarray(weight)
    if weight.ndim != 4:
        raise fg_errors.ShapeError(f"conv2d weight must be (out, in/groups, kh, kw), got shape {weight.shape}")
    out_ch, in_per_group, kh, kw = weight.shape
    n, c = x.shape[:2]
    if c != in_per_group * groups or out_ch % groups:
        raise fg_errors.ShapeError(f"conv2d: input has {c} channels but weight {weight.shape} with groups={groups} "
                                   f"expects {in_per_group * groups} (and out channels divisible by groups)")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    sides = _conv_sides(padding, (kh, kw), stride, dilation)
    C.window_output_hw(x.shape[2:], (kh, kw), stride, sides, dilation, "conv2d")
    precision = fnp._precision(x, weight)
    x, weight = (x, weight) if precision else fnp._common((x, weight))
    out = bind(C.conv_p, x, weight, stride=stride, padding=sides, dilation=dilation, groups=groups, **precision)
    if bias is not None:
        out = out + fnp.reshape(_bias_like(bias, out), (1, -1, 1, 1))
    return out[0] if unbatched else out


def _conv_sides(padding, kernel, stride, dilation) -> tuple:
    """((top, bottom), (left, right)) of a conv's padding: an int, a pair, "valid" or "same"
    (stride 1; an odd total pads one more after, as PyTorch)."""
    if padding == "valid":
        padding = (0, 0)
    if padding == "same":
        if tuple(stride) != (1, 1):
            raise ValueError("padding='same' needs stride 1")
        totals = (d * (k - 1) for d, k in zip(dilation, kernel))
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, str):
        raise ValueError(f"conv padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    sides = tuple((p, p) for p in _pair(padding, "padding"))
    if min(min(side) for side in sides) < 0:
        raise ValueError(f"conv2d: padding {padding!r} must be non-negative")
    return sides


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(x, pad, mode: str = "constant", value: float | None = None):  # noqa: A002 (PyTorch's names)
    """torch.nn.functional.pad: pad = (before, after) pairs for the last axis, then the one before,
    ...; mode constant (with value; a negative width crops), reflect (widths below the axis's
    size), replicate or circular (widths up to the size)."""
    x = fnp.asarray(x)
    widths = [int(w) for w in pad]
    if len(widths) % 2 or len(widths) > 2 * x.ndim:
        raise ValueError(f"pad: {len(widths)} widths do not pair up over the last axes of a {x.ndim}-d input")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {sorted(_PAD_MODES)}, got {mode!r}")
    if mode != "constant" and value:
        raise ValueError(f"pad: value {value!r} is for mode 'constant', not {mode!r}")
    pairs = [(0, 0)] * (x.ndim - len(widths) // 2) + [tuple(widths[i:i + 2]) for i in range(len(widths) - 2, -1, -2)]
    for axis, ((lo, hi), size) in enumerate(zip(pairs, x.shape) if mode != "constant" else ()):
        if min(lo, hi) < 0:
            raise ValueError(f"pad: negative widths {(lo, hi)} crop only in mode 'constant'")
        if mode == "reflect" and max(lo, hi) >= max(size, 1) or mode == "circular" and max(lo, hi) > size:
            limit = "below" if mode == "reflect" else "at most"
            raise ValueError(f"pad: {mode} widths {(lo, hi)} of axis {axis} must be {limit} its size {size}")
    crop = tuple(slice(max(0, -lo), size - max(0, -hi)) for (lo, hi), size in zip(pairs, x.shape))
    x = x[crop] if any(min(p) < 0 for p in pairs) else x
    pairs = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if mode == "constant":
        return fnp.pad(x, pairs, constant_values=0 if value is None else value)
    return fnp.pad(x, pairs, mode=_PAD_MODES[mode])


def _as_image(x, fname: str):
    """(N, C, L) -> (N, C, 1, L) for the 1-D layers (and (C, L) -> (C, 1, L))."""
    x = fnp.asarray(x)
    if x.ndim not in (2, 3):
        raise fg_errors.ShapeError(f"{fname} expects (N, C, L) or (C, L) input, got shape {x.shape}")
    return fnp.expand_dims(x, -2)


def _single(v, name: str) -> int:
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ValueError(f"{name} must be an int or a 1-tuple, got {v!r}")
        v = v[0]
    return v


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """1-D cross-correlation as torch.nn.functional.conv1d: x (N, C, L), weight (O, C/groups, k);
    padding an int, "valid" or "same"."""
    weight = fnp.asarray(weight)
    if weight.ndim != 3:
        raise fg_errors.ShapeError(f"conv1d weight must be (out, in/groups, k), got shape {weight.shape}")
    padding = _single(padding, "padding")
    out = conv2d(_as_image(x, "conv1d"), fnp.expand_dims(weight, -2), bias, (1, _single(stride, "stride")),
                 padding if isinstance(padding, str) else (0, padding), (1, _single(dilation, "dilation")), groups)
    return fnp.squeeze(out, -2)


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    stride = kernel_size if stride is None else stride
    window = [(1, _single(v, name)) for v, name in ((kernel_size, "kernel_size"), (stride, "stride"),
                                                     (dilation, "dilation"))]
    out = max_pool2d(_as_image(x, "max_pool1d"), window[0], window[1], (0, _single(padding, "padding")), window[2],
                     ceil_mode, return_indices)
    return tuple(fnp.squeeze(o, -2) for o in out) if return_indices else fnp.squeeze(out, -2)


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
    stride = kernel_size if stride is None else stride
    out = avg_pool2d(_as_image(x, "avg_pool1d"), (1, _single(kernel_size, "kernel_size")),
                     (1, _single(stride, "stride")), (0, _single(padding, "padding")), ceil_mode, count_include_pad)
    return fnp.squeeze(out, -2)


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """torch.nn.functional.conv_transpose2d: weight (in, out/groups, kh, kw). It is, by definition,
    the transpose of conv2d with that weight read as (out=in, in=out/groups): computed here as that
    conv2d's vector-Jacobian product, so its own gradients come from the same rules."""
    x, unbatched = _batched_image(x, "conv_transpose2d")
    weight = fnp.asarray(weight)
    if weight.ndim != 4 or weight.shape[0] != x.shape[1]:
        raise fg_errors.ShapeError(f"conv_transpose2d: weight must be (in={x.shape[1]}, out/groups, kh, kw), got "
                                   f"shape {weight.shape}")
    stride, padding, dilation = _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation")
    extra = _pair(output_padding, "output_padding")
    if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise ValueError(f"output_padding {extra} must be smaller than stride {stride} or dilation {dilation}")
    kh, kw = weight.shape[2:]
    out_hw = tuple((n - 1) * s - 2 * p + d * (k - 1) + e + 1
                   for n, s, p, d, k, e in zip(x.shape[2:], stride, padding, dilation, (kh, kw), extra))
    x, weight = fnp._common((x, weight))
    # an output_padding of a stride or more (PyTorch allows up to the dilation) gives the forward
    # conv e // s more outputs, which take zero cotangents: x padded by them at the end
    grown = tuple(e // s for e, s in zip(extra, stride))
    if any(grown):
        x = fnp.pad(x, ((0, 0), (0, 0), (0, grown[0]), (0, grown[1])))
    shape = (x.shape[0], weight.shape[1] * groups) + out_hw
    _, pullback = vjp(lambda y: conv2d(y, weight, None, stride, padding, dilation, groups),
                      fnp.zeros(shape, x.dtype, device=x.device), pytorch_convention=False)  # the plain transpose
    (out,) = pullback(x)
    if bias is not None:
        out = out + fnp.reshape(_bias_like(bias, out), (1, -1, 1, 1))
    return out[0] if unbatched else out


def adaptive_avg_pool2d(x, output_size):
    """Mean over PyTorch's adaptive windows: output cell i covers [floor(i H / out), ceil((i+1) H / out));
    None for a size keeps the input's."""
    x, unbatched = _batched_image(x, "adaptive_avg_pool2d")
    sizes = (output_size, output_size) if output_size is None or isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != 2:
        raise ValueError(f"output_size must be an int or a pair of non-negative ints or None, got {output_size!r}")
    out_h, out_w = _pair(tuple(x.shape[2 + i] if size is None else size for i, size in enumerate(sizes)), "output_size")
    rows = []
    for i in range(out_h):
        r0, r1 = (i * x.shape[2]) // out_h, -(-((i + 1) * x.shape[2]) // out_h)
        cells = [fnp.mean(x[:, :, r0:r1, (j * x.shape[3]) // out_w:-(-((j + 1) * x.shape[3]) // out_w)], axis=(2, 3))
                 for j in range(out_w)]
        rows.append(fnp.stack(cells, axis=-1))
    out = fnp.stack(rows, axis=-2)
    return out[0] if unbatched else out


def interpolate(x, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None):
    """Resize (N, C, H, W) images as torch.nn.functional.interpolate: mode 'nearest' or 'bilinear'
    (align_corners False by default, as there)."""
    x = fnp.asarray(x)
    if x.ndim != 4:
        raise fg_errors.ShapeError(f"interpolate expects (N, C, H, W) input, got shape {x.shape}")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate needs exactly one of size and scale_factor")
    in_hw = x.shape[2:]
    if size is not None:
        out_hw = _pair(size, "size")
        scales = tuple(i / o for i, o in zip(in_hw, out_hw))
    else:
        factors = (scale_factor, scale_factor) if np.ndim(scale_factor) == 0 else tuple(scale_factor)
        out_hw = tuple(int(math.floor(n * f)) for n, f in zip(in_hw, factors))
        scales = tuple(1.0 / f for f in factors)
    if mode == "nearest":
        rows = np.minimum(np.floor(np.arange(out_hw[0]) * scales[0]).astype(np.int64), in_hw[0] - 1)
        cols = np.minimum(np.floor(np.arange(out_hw[1]) * scales[1]).astype(np.int64), in_hw[1] - 1)
        return fnp.take(fnp.take(x, rows, axis=2), cols, axis=3)
    if mode != "bilinear":
        raise ValueError(f"interpolate mode must be 'nearest' or 'bilinear', got {mode!r}")
    x = fnp._float_arg(x)

    def axis_weights(n_in, n_out, scale):
        if align_corners:
            src = np.arange(n_out) * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            src = np.maximum((np.arange(n_out) + 0.5) * scale - 0.5, 0.0)
        lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        hi = np.minimum(lo + 1, n_in - 1)
        frac = fnp._placed(fnp.asarray((src - lo).astype(x.dtype)), x.device)  # beside the image
        return lo, hi, frac
    (r0, r1, fr), (c0, c1, fc) = axis_weights(in_hw[0], out_hw[0], scales[0]), axis_weights(in_hw[1], out_hw[1], scales[1])
    top, bottom = fnp.take(x, r0, axis=2), fnp.take(x, r1, axis=2)
    rows = top + (bottom - top) * fnp.expand_dims(fr, -1)
    left, right = fnp.take(rows, c0, axis=3), fnp.take(rows, c1, axis=3)
    return left + (right - left) * fc


def _pool_args(kernel_size, stride, padding, dilation):
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None else _pair(stride, "stride")
    padding = _pair(padding, "padding")
    if padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2:
        raise ValueError(f"pool padding {padding} must be at most half the kernel size {kernel}")
    return kernel, stride, padding, _pair(dilation, "dilation")


def _pool_sides(image_hw, kernel, stride, padding, dilation, ceil_mode: bool, fname: str) -> tuple:
    """((top, bottom), (left, right)) padding giving PyTorch's output size: `padding` on both sides,
    and with ceil_mode the bottom / right padded further so a last, partial window fits where it
    starts inside the image or its leading padding (PyTorch's rule)."""
    sides = []
    for size, k, s, p, d in zip(image_hw, kernel, stride, padding, dilation):
        out = (size + 2 * p - d * (k - 1) - 1 + s - 1) // s + 1 if ceil_mode and s > 0 else 0
        if out > 1 and (out - 1) * s >= size + p:
            out -= 1
        # out < 1 (no window, or floor mode): window_output_hw names what does not fit
        sides.append((p, max(p, (out - 1) * s + d * (k - 1) + 1 - size - p)) if out >= 1 else (p, p))
    C.window_output_hw(image_hw, kernel, stride, sides, dilation, fname)
    return tuple(sides)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """Max over windows (padding never wins); the gradient goes to the first maximum of each
    window, as in PyTorch, and a NaN in a window is its maximum. return_indices also gives each
    maximum's flat position in its (H, W) plane (int64, PyTorch's indices)."""
    x, unbatched = _batched_image(x, "max_pool2d")
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, dilation)
    sides = _pool_sides(x.shape[2:], kernel, stride, padding, dilation, ceil_mode, "max_pool2d")
    where = bind(C.window_argmax_p, x, kernel=kernel, stride=stride, padding=sides, dilation=dilation)
    out = bind(C.gather_plane_p, x, where)
    if unbatched:
        out, where = out[0], where[0]
    return (out, where) if return_indices else out


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None):
    """Mean over windows, as PyTorch's: the zero padding counts in the mean with count_include_pad
    (the part of a ceil_mode window past the padding never does), divisor_override replaces the
    count."""
    x, unbatched = _batched_image(x, "avg_pool2d")
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, 1)
    sides = _pool_sides(x.shape[2:], kernel, stride, padding, dilation, ceil_mode, "avg_pool2d")
    cols = _windows(x, kernel, stride, sides, dilation, "avg_pool2d")
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, int) or divisor_override <= 0:
            raise ValueError(f"avg_pool2d: divisor_override must be a positive int, got {divisor_override!r}")
        out = fnp.sum(cols, axis=(-2, -1)) / divisor_override
    elif count_include_pad and all(lo == hi for lo, hi in sides):  # every window counts kh * kw
        out = fnp.mean(cols, axis=(-2, -1))
    else:
        counts = [_window_counts(n, size, k, s, lo, count_include_pad) for n, size, k, s, (lo, _) in
                  zip(cols.shape[2:4], x.shape[2:], kernel, stride, sides)]
        divisor = fnp._placed(fnp.asarray(np.outer(*counts).astype(cols.dtype)), x.device)
        out = fnp.sum(cols, axis=(-2, -1)) / divisor
    return out[0] if unbatched else out


def _window_counts(windows: int, size: int, k: int, s: int, pad: int, count_include_pad: bool) -> np.ndarray:
    """Along one axis, the positions each of the windows counts in PyTorch's mean: those inside the
    image and, with count_include_pad, its padding (not what ceil_mode adds past that)."""
    start = np.arange(windows) * s - pad
    end = np.minimum(start + k, size + pad)
    if not count_include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, size)
    return end - start


def _bias_like(bias, out):
    """Under autocast the bias joins the product's low dtype, so activations stay small."""
    bias = fnp.asarray(bias)
    return fnp.astype(bias, out.dtype) if out.dtype in fg_dtypes.low_precision else bias


def linear(x, weight, bias=None):
    """x @ weight.T + bias, with PyTorch's (out_features, in_features) weight layout."""
    out = fnp.matmul(x, fnp.swapaxes(weight, -1, -2))
    return out if bias is None else out + _bias_like(bias, out)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing `normalized_shape` axes (biased variance, as PyTorch)."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise fg_errors.ShapeError(f"layer_norm over {shape} needs input ending in those axes, got {x.shape}")
    out = _normalized(x, shape, eps, center=True)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


def rms_norm(x, normalized_shape, weight=None, eps: float | None = None):
    """x / sqrt(mean(x^2) + eps) over the trailing axes (torch.nn.functional.rms_norm; eps
    defaults to the dtype's machine epsilon, as there)."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise fg_errors.ShapeError(f"rms_norm over {shape} needs input ending in those axes, got {x.shape}")
    eps = float(np.finfo(x.dtype).eps) if eps is None else eps
    out = _normalized(x, shape, eps, center=False)
    return out if weight is None else out * weight


def _normalized(x, shape: tuple, eps: float, center: bool):
    """x normalised over its trailing `shape` axes: one fused primitive over them flattened."""
    if len(shape) == 1:
        return bind(N.norm_p, x, eps=float(eps), center=center)
    lead = tuple(x.shape[:x.ndim - len(shape)])
    flat = fnp.reshape(x, lead + (int(np.prod(shape, dtype=np.int64)),))
    return fnp.reshape(bind(N.norm_p, flat, eps=float(eps), center=center), x.shape)


def group_norm(x, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalise (N, C, ...) inputs over groups of C // num_groups channels and the spatial axes;
    weight and bias are per channel (torch.nn.functional.group_norm)."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    if x.ndim < 2 or x.shape[1] % num_groups:
        raise fg_errors.ShapeError(f"group_norm: {num_groups} groups do not divide the channels of an input of "
                                   f"shape {x.shape} (channels on axis 1)")
    n, c = x.shape[0], x.shape[1]
    grouped = fnp.reshape(x, (n, num_groups, -1))
    centered = grouped - fnp.mean(grouped, axis=2, keepdims=True)
    var = fnp.mean(centered * centered, axis=2, keepdims=True)
    out = fnp.reshape(centered * (1.0 / fnp.sqrt(var + eps)), x.shape)
    channel = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * fnp.reshape(weight, channel)
    return out if bias is None else out + fnp.reshape(bias, channel)


def dropout(x, rate: float, key=None):
    """Multiply each element by 0 with probability `rate` and the rest by 1/(1 - rate), as
    PyTorch's (a dropped NaN or inf stays NaN, so a broken activation still shows); identity
    without a key (evaluation), so a model is in training mode exactly when given a key."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"dropout rate must be in [0, 1], got {rate}")
    if key is None or rate == 0.0:
        return x
    x = fnp.asarray(x)
    if rate == 1.0:
        return x * 0.0
    keep = random.bernoulli(key, 1.0 - rate, x.shape)
    return x * fnp.where(keep, 1.0 / (1.0 - rate), 0.0)


def embedding(indices, weight, padding_idx: int | None = None):
    """weight's rows at indices (torch.nn.functional.embedding); the rows looked up at padding_idx
    pass no gradient back to the table, as PyTorch's."""
    weight = fnp.asarray(weight)
    if weight.ndim != 2:
        raise fg_errors.ShapeError(f"embedding: weight must be a (num_embeddings, embedding_dim) table, got shape "
                                   f"{weight.shape}")
    idx = fnp._index_array(indices)
    known = fnp.concrete_or_none(idx)
    if known is not None and known.size and (known.min() < 0 or known.max() >= weight.shape[0]):
        raise IndexError(f"embedding index out of range: indices span [{known.min()}, {known.max()}] "
                         f"but the table has {weight.shape[0]} rows")
    out = fnp.take(weight, idx, axis=0)
    return out if padding_idx is None else _frozen_padding(out, idx, _padding_index(padding_idx, weight.shape[0]))


def _frozen_padding(rows, indices, padding_idx: int):
    """rows looked up at indices, those at padding_idx passing no gradient back (PyTorch's)."""
    return fnp.where(fnp.expand_dims(indices == padding_idx, -1), fnp.stop_gradient(rows), rows)


def _padding_index(padding_idx: int, rows: int) -> int:
    """padding_idx as a row of a table of `rows` rows (a negative one counts from the end, as in
    PyTorch); an IndexError where there is no such row."""
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)) or \
            not -rows <= padding_idx < rows:
        raise IndexError(f"embedding: padding_idx {padding_idx!r} is not a row of a table of {rows} rows")
    return int(padding_idx) % rows


def one_hot(labels, num_classes: int, dtype=fg_dtypes.float32):
    idx = fnp._index_array(labels)
    return fnp.astype(fnp.expand_dims(idx, -1) == fnp.arange(num_classes, device=idx.device), dtype)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal: bool = False, scale: float | None = None):
    """softmax(q k^T * scale + mask) v over (..., L, d) inputs, as
    torch.nn.functional.scaled_dot_product_attention: `mask` is boolean (True = attend) or additive,
    is_causal masks the keys after each query, scale defaults to 1 / sqrt(d). ops/attention.py's
    fused primitive forms the scores a block of queries at a time and its backward pass recomputes
    them; on the CPU, where they are small and being differentiated, the weights are kept instead."""
    if not isinstance(is_causal, (bool, int, np.bool_, np.integer)):  # a float: PyTorch's dropout_p, by position
        raise TypeError(f"scaled_dot_product_attention: is_causal must be a bool, got {is_causal!r} (PyTorch's "
                        f"fifth argument is dropout_p, which funcgrad does not take: pass is_causal by name)")
    q, k, v = fnp._common((q, k, v))
    q, k, v = (fnp._float_arg(x) for x in (q, k, v))
    mask = None if mask is None else fnp.asarray(mask)
    if mask is not None and mask.dtype != fg_dtypes.bool_ and mask.dtype not in fg_dtypes.float_dtypes:
        raise TypeError(f"scaled_dot_product_attention: a mask is boolean (True = attend) or a float to add to the "
                        f"scores, not {mask.dtype} (as PyTorch: an integer 0/1 mask would be added, not applied)")
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], () if mask is None else mask.shape[:-2])
    q, k, v = (fnp.broadcast_to(x, lead + x.shape[-2:]) for x in (q, k, v))
    bias = 0.0
    if mask is not None:
        bias = fnp.where(mask, 0.0, -np.inf).astype(q.dtype) if mask.dtype == fg_dtypes.bool_ else mask
    if scale is None:  # with no features the scores are empty sums, 0 at any scale: uniform weights, as PyTorch
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    scale = float(scale)
    return A.attention(q, k, v, bias, scale=scale, causal=bool(is_causal))

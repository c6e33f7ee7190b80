"""Convolution, pooling, padding and resizing as functions (PyTorch's functional forms and
argument orders): conv1d / conv2d / conv_transpose1d / conv_transpose2d, max and average pooling
(ceil_mode, count_include_pad, divisor_override, return_indices), adaptive average pooling, pad
(constant, reflect, replicate, circular), with the argument helpers the layers share
(interpolate is in _resize)."""
from __future__ import annotations

import numpy as np

from .. import errors as fg_errors
from .. import numpy as fnp
from ..ops import conv as C
from ..trace import bind
from ..vjp import vjp
from ._functional import _channel_bias

__all__ = [
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d",
    "avg_pool2d", "adaptive_avg_pool2d", "pad", "conv_tbc",
]


def _ints(v, count: int, name: str) -> tuple:
    """An int for every spatial axis, or one per axis (non-negative)."""
    values = (v,) * count if isinstance(v, int) else tuple(v)
    if len(values) != count or not all(isinstance(p, int) and p >= 0 for p in values):
        raise ValueError(f"{name} must be a non-negative int or {count} of them (one per spatial axis), got {v!r}")
    return values


def _pair(v, name: str) -> tuple[int, int]:
    return _ints(v, 2, name)


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
    weight = fnp._arrays(x, weight)[1]
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
        out = out + _channel_bias(bias, out, "conv2d")
    return out[0] if unbatched else out


def _conv_sides(padding, kernel, stride, dilation) -> tuple:
    """(low, high) per spatial axis of a conv's padding: an int, one per axis, "valid" or "same"
    (stride 1; an odd total pads one more after, as PyTorch)."""
    if padding == "valid":
        padding = 0
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' needs stride 1")
        totals = (d * (k - 1) for d, k in zip(dilation, kernel))
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, str):
        raise ValueError(f"conv padding must be an int, one per spatial axis, 'valid' or 'same', got {padding!r}")
    return tuple((p, p) for p in _ints(padding, len(kernel), "padding"))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(x, pad, mode: str = "constant", value: float | None = None):  # noqa: A002 (PyTorch's names)
    """torch.nn.functional.pad: pad = (before, after) pairs for the last axis, then the one before,
    ...; mode constant (with value), reflect (widths below the axis's size), replicate or circular
    (widths up to the size). A negative width crops in every mode: circular wraps what is left,
    reflect and replicate read the whole axis (PyTorch's orders)."""
    x = fnp.asarray(x)
    widths = [int(w) for w in pad]
    if len(widths) % 2 or len(widths) > 2 * x.ndim:
        raise ValueError(f"pad: {len(widths)} widths do not pair up over the last axes of a {x.ndim}-d input")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {sorted(_PAD_MODES)}, got {mode!r}")
    if mode != "constant" and value:
        raise ValueError(f"pad: value {value!r} is for mode 'constant', not {mode!r}")
    pairs = [(0, 0)] * (x.ndim - len(widths) // 2) + [tuple(widths[i:i + 2]) for i in range(len(widths) - 2, -1, -2)]
    for axis, ((lo, hi), size) in enumerate(zip(pairs, x.shape)):
        if size + lo + hi < 0:
            raise ValueError(f"pad: widths {(lo, hi)} crop more than the {size} entries of axis {axis} "
                             f"(a size of {size + lo + hi})")
        # PyTorch wraps the cropped axis but reflects the whole one (its kernels' orders)
        source = size + min(lo, 0) + min(hi, 0) if mode == "circular" else size
        if mode == "reflect" and max(lo, hi) >= max(source, 1) or mode == "circular" and max(lo, hi) > source:
            limit = "below" if mode == "reflect" else "at most"
            raise ValueError(f"pad: {mode} widths {(lo, hi)} of axis {axis} must be {limit} its size {source}"
                             + (f" after cropping (of {size})" if source != size else ""))
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if mode in ("reflect", "replicate"):  # pad the whole axis, then crop
        return _cropped(_padded(x, grow, mode, value), pairs)
    return _padded(_cropped(x, pairs), grow, mode, value)


def _cropped(x, pairs):
    """x without the entries its negative pad widths remove."""
    if not any(min(p) < 0 for p in pairs):
        return x
    return x[tuple(slice(-min(lo, 0), size + min(hi, 0)) for (lo, hi), size in zip(pairs, x.shape))]


def _padded(x, widths, mode: str, value):
    if mode == "constant":
        return fnp.pad(x, widths, constant_values=0 if value is None else value)
    return fnp.pad(x, widths, mode=_PAD_MODES[mode])


def _as_image(x, fname: str):
    """(N, C, L) -> (N, C, 1, L) for the 1-D layers (and (C, L) -> (C, 1, L))."""
    x = fnp.asarray(x)
    if x.ndim not in (2, 3):
        raise fg_errors.ShapeError(f"{fname} expects (N, C, L) or (C, L) input, got shape {x.shape}")
    return fnp.expand_dims(x, -2)


def _plus_bias_1d(out, bias, fname: str):
    """A 1-D layer's output (N, C, L) or (C, L) plus its bias (C,) (None: none)."""
    return out if bias is None else out + _channel_bias(bias, out, fname, axis=out.ndim - 2)


def _single(v, name: str) -> int:
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ValueError(f"{name} must be an int or a 1-tuple, got {v!r}")
        v = v[0]
    return v


def conv_tbc(x, weight, bias, pad: int = 0):
    """torch.nn.functional.conv_tbc: conv1d in (time, batch, channels) layout, weight (k, in, out),
    bias (out,), pad zeros on both ends of time."""
    x, weight = fnp._arrays(x, weight)
    if x.ndim != 3 or weight.ndim != 3 or weight.shape[1] != x.shape[2]:
        raise fg_errors.ShapeError(f"conv_tbc expects input (T, B, in) and weight (k, in, out), got {tuple(x.shape)} "
                                   f"and {tuple(weight.shape)}")
    out = conv1d(fnp.transpose(x, (1, 2, 0)), fnp.transpose(weight, (2, 1, 0)), bias, padding=int(pad))
    return fnp.transpose(out, (2, 0, 1))


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """1-D cross-correlation as torch.nn.functional.conv1d: x (N, C, L), weight (O, C/groups, k);
    padding an int, "valid" or "same"."""
    x, weight = fnp._arrays(x, weight)
    if weight.ndim != 3:
        raise fg_errors.ShapeError(f"conv1d weight must be (out, in/groups, k), got shape {weight.shape}")
    padding = _single(padding, "padding")
    out = conv2d(_as_image(x, "conv1d"), fnp.expand_dims(weight, -2), None, (1, _single(stride, "stride")),
                 padding if isinstance(padding, str) else (0, padding), (1, _single(dilation, "dilation")), groups)
    out = fnp.squeeze(out, -2)
    return _plus_bias_1d(out, bias, "conv1d")


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
    """torch.nn.functional.conv_transpose2d: weight (in, out/groups, kh, kw)."""
    x, unbatched = _batched_image(x, "conv_transpose2d")
    out = transposed_conv(conv2d, x, weight, bias, stride, padding, output_padding, groups, dilation,
                          "conv_transpose2d")
    return out[0] if unbatched else out


def transposed_conv(conv, x, weight, bias, stride, padding, output_padding, groups: int, dilation, fname: str):
    """The transposed convolution of x (N, C, *spatial) by weight (in, out/groups, *kernel): by
    definition the transpose of conv with that weight read as (out=in, in=out/groups), computed as
    that conv's vector-Jacobian product, so its own gradients come from the same rules."""
    d = x.ndim - 2
    weight = fnp._arrays(x, weight)[1]
    if weight.ndim != d + 2 or weight.shape[0] != x.shape[1]:
        raise fg_errors.ShapeError(f"{fname}: weight must be (in={x.shape[1]}, out/groups, {d} kernel sizes), got "
                                   f"shape {weight.shape}")
    stride, padding = _ints(stride, d, "stride"), _ints(padding, d, "padding")
    dilation, extra = _ints(dilation, d, "dilation"), _ints(output_padding, d, "output_padding")
    if any(e >= max(s, dl) for e, s, dl in zip(extra, stride, dilation)):
        raise ValueError(f"output_padding {extra} must be smaller than stride {stride} or dilation {dilation}")
    out_spatial = tuple((n - 1) * s - 2 * p + dl * (k - 1) + e + 1
                        for n, s, p, dl, k, e in zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], extra))
    x, weight = fnp._common((x, weight))
    # an output_padding of a stride or more (PyTorch allows up to the dilation) gives the forward
    # conv e // s more outputs, which take zero cotangents: x padded by them at the end
    grown = tuple(e // s for e, s in zip(extra, stride))
    if any(grown):
        x = fnp.pad(x, ((0, 0), (0, 0)) + tuple((0, g) for g in grown))
    shape = (x.shape[0], weight.shape[1] * groups) + out_spatial
    _, pullback = vjp(lambda y: conv(y, weight, None, stride, padding, dilation, groups),
                      fnp.zeros(shape, x.dtype, device=x.device), pytorch_convention=False)  # the plain transpose
    (out,) = pullback(x)
    if bias is not None:
        out = out + _channel_bias(bias, out, fname)
    return out


def conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """torch.nn.functional.conv_transpose1d: x (N, C, L), weight (in, out/groups, k); conv_transpose2d
    over a height of one."""
    x, weight = fnp._arrays(x, weight)
    if weight.ndim != 3:
        raise fg_errors.ShapeError(f"conv_transpose1d weight must be (in, out/groups, k), got shape {weight.shape}")
    one_d = [(0 if name in ("padding", "output_padding") else 1, _single(v, name)) for v, name in
             ((stride, "stride"), (padding, "padding"), (output_padding, "output_padding"), (dilation, "dilation"))]
    out = conv_transpose2d(_as_image(x, "conv_transpose1d"), fnp.expand_dims(weight, -2), None, one_d[0], one_d[1],
                           one_d[2], groups, one_d[3])
    out = fnp.squeeze(out, -2)
    return _plus_bias_1d(out, bias, "conv_transpose1d")


def _adaptive_size(x, output_size) -> tuple[int, int]:
    """An adaptive pool's output (height, width): an int for both, or a pair where None keeps the
    input's side."""
    sizes = (output_size, output_size) if output_size is None or isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != 2:
        raise ValueError(f"output_size must be an int or a pair of non-negative ints or None, got {output_size!r}")
    return _pair(tuple(x.shape[2 + i] if size is None else size for i, size in enumerate(sizes)), "output_size")


def _adaptive_bounds(size: int, out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive windows: cell i covers [floor(i size / out), ceil((i + 1) size / out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def adaptive_avg_pool2d(x, output_size):
    """Mean over PyTorch's adaptive windows (_adaptive_bounds); None for a size keeps the input's."""
    x, unbatched = _batched_image(x, "adaptive_avg_pool2d")
    out_h, out_w = _adaptive_size(x, output_size)
    columns = _adaptive_bounds(x.shape[3], out_w)
    rows = [fnp.stack([fnp.mean(x[:, :, r0:r1, c0:c1], axis=(2, 3)) for c0, c1 in columns], axis=-1)
            for r0, r1 in _adaptive_bounds(x.shape[2], out_h)]
    out = fnp.stack(rows, axis=-2)
    return out[0] if unbatched else out


def _pool_args(kernel_size, stride, padding, dilation, count: int = 2):
    kernel = _ints(kernel_size, count, "kernel_size")
    stride = kernel if stride is None else _ints(stride, count, "stride")
    padding = _ints(padding, count, "padding")
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"pool padding {padding} must be at most half the kernel size {kernel}")
    return kernel, stride, padding, _ints(dilation, count, "dilation")


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

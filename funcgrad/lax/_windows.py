"""jax.lax's convolutions and window reductions: conv_general_dilated (any layout by dimension
numbers, window strides, 'SAME'/'SAME_LOWER'/'VALID' or explicit padding, negative included,
input and kernel dilation, feature and batch groups, 1 to 3 spatial axes), conv,
conv_with_general_padding, conv_transpose, reduce_window and reduce.

A 2-D convolution binds the conv primitive (its CPU kernels and CUDA lowering, its rules); a 1-D
one adds a unit axis; a 3-D one sums 2-D convolutions over the kernel's depth taps, the depth
folded into the batch. Input dilation (a transposed convolution) spreads the input with pad's
interior zeros."""
from __future__ import annotations

import itertools
import math
import operator
from typing import NamedTuple

import numpy as np

from .. import numpy as fnp
from ..errors import ShapeError
from ..ops import conv as C
from ..trace import bind
from ._padding import pad

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations", "padtype_to_pads",
           "conv_general_dilated", "conv_general_dilated_patches", "conv", "conv_with_general_padding",
           "conv_transpose", "reduce_window", "reduce"]


class ConvDimensionNumbers(NamedTuple):
    """Each operand's (batch or output-feature, feature or input-feature, spatial...) axes."""
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers) -> tuple:
    """The axis permutations of layout strings such as ('NHWC', 'HWIO', 'NHWC'): N and C (O and I
    for the kernel) first, then the spatial axes in the kernel string's order."""
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for spec, (a, b) in zip(dimension_numbers, pairs):
        if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
            raise TypeError(f"convolution dimension_numbers {tuple(dimension_numbers)}: {spec!r} must hold {a!r} and "
                            f"{b!r} once each and no character twice")
    spatial = [set(spec) - set(pair) for spec, pair in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError(f"convolution dimension_numbers {tuple(dimension_numbers)} must name the same spatial axes")
    rhs = dimension_numbers[1]

    def perm(spec, pair):
        axes = sorted((i for i, c in enumerate(spec) if c not in pair), key=lambda i: rhs.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(axes)
    return tuple(perm(spec, pair) for spec, pair in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """ConvDimensionNumbers from None (NC..., OI..., NC...), layout strings or the tuple itself."""
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim:
        raise ShapeError(f"convolution lhs and rhs must have as many axes, got shapes {tuple(lhs_shape)} and "
                         f"{tuple(rhs_shape)}")
    if dimension_numbers is None:
        return ConvDimensionNumbers(*(tuple(range(ndim)),) * 3)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(dimension_numbers) != 3 or not all(isinstance(s, str) and len(s) == ndim for s in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers must be three layout strings of {ndim} characters (the "
                        f"operands' rank), or a ConvDimensionNumbers; got {dimension_numbers!r}")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def padtype_to_pads(in_shape, window_shape, window_strides, padding: str) -> list:
    """(low, high) per spatial axis: 'VALID' none; 'SAME' (and 'SAME_LOWER') pads to
    ceil(in / stride) outputs, an odd total one more at the end (at the start)."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"padding must be 'VALID', 'SAME', 'SAME_LOWER' or (low, high) pairs, got {padding!r}")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        pads.append((total // 2, total - total // 2) if kind == "SAME" else (total - total // 2, total // 2))
    return pads


def _spatial(values, count: int, name: str) -> tuple:
    values = (1,) * count if values is None else tuple(int(v) for v in values)
    if len(values) != count or min(values, default=1) < 1:
        raise ValueError(f"{name} must be {count} positive integers (one per spatial axis), got {values}")
    return values


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    """XLA's ConvGeneralDilated: the cross-correlation of lhs with the kernel rhs (layouts by
    dimension_numbers), outputs window_strides apart, lhs spread lhs_dilation apart (a transposed
    convolution), the kernel's taps rhs_dilation apart (atrous), the features in
    feature_group_count groups, and batch_group_count groups of the batch each giving a group of
    the output features. precision is accepted for JAX's signature: funcgrad computes in the
    operands' dtype."""
    lhs, rhs = fnp._common((lhs, rhs))
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    x, w = fnp.transpose(lhs, dn.lhs_spec), fnp.transpose(rhs, dn.rhs_spec)
    d = x.ndim - 2
    if d not in (1, 2, 3):
        raise ShapeError(f"conv_general_dilated convolves over 1 to 3 spatial axes, got operands of shapes "
                         f"{lhs.shape} and {rhs.shape}")
    strides = _spatial(window_strides, d, "window_strides")
    lhs_dilation, rhs_dilation = _spatial(lhs_dilation, d, "lhs_dilation"), _spatial(rhs_dilation, d, "rhs_dilation")
    groups, batch_groups = int(feature_group_count), int(batch_group_count)
    n, c, o, i = x.shape[0], x.shape[1], w.shape[0], w.shape[1]
    if groups < 1 or batch_groups < 1 or (groups > 1 and batch_groups > 1) or c != i * groups or o % groups \
            or n % batch_groups or o % batch_groups:
        raise ShapeError(f"conv_general_dilated: input features {c} must be the kernel's {i} times "
                         f"feature_group_count {groups} with output features {o} divisible by it, and the batch {n} "
                         f"and output features divisible by batch_group_count {batch_groups} (one of the two counts "
                         f"1); shapes {lhs.shape} and {rhs.shape}")
    window = tuple((k - 1) * r + 1 for k, r in zip(w.shape[2:], rhs_dilation))
    if isinstance(padding, str) and any(r > 1 for r in lhs_dilation):
        raise ValueError("conv_general_dilated: string padding is not defined with lhs_dilation (a transposed "
                         "convolution): give (low, high) pairs, or use conv_transpose")
    pads = padtype_to_pads(x.shape[2:], window, strides, padding) if isinstance(padding, str) else \
        [tuple(int(v) for v in p) for p in padding]
    if len(pads) != d or any(len(p) != 2 for p in pads):
        raise ValueError(f"padding must be a string or {d} (low, high) pairs, got {padding!r}")
    reach = [(m - 1) * r + 1 + lo + hi if m else lo + hi for m, r, (lo, hi) in zip(x.shape[2:], lhs_dilation, pads)]
    out_spatial = tuple((m - k) // s + 1 if m >= k else 0 for m, k, s in zip(reach, window, strides))
    if min(out_spatial) <= 0:  # no window fits: an empty result, as XLA's
        empty = fnp.zeros((n // batch_groups, o) + out_spatial, x.dtype, device=x.device)
        return fnp.transpose(empty, tuple(np.argsort(dn.out_spec)))
    if any(r > 1 for r in lhs_dilation) or min(min(p) for p in pads) < 0:
        x = pad(x, 0, [(0, 0, 0)] * 2 + [(lo, hi, r - 1) for (lo, hi), r in zip(pads, lhs_dilation)])
        pads = [(0, 0)] * d
    if batch_groups > 1:
        xs, ws = fnp.split(x, batch_groups, axis=0), fnp.split(w, batch_groups, axis=0)
        out = fnp.concatenate([_conv(a, b, strides, pads, rhs_dilation, 1) for a, b in zip(xs, ws)], axis=1)
    else:
        out = _conv(x, w, strides, pads, rhs_dilation, groups)
    out = fnp.transpose(out, tuple(np.argsort(dn.out_spec)))
    return out if preferred_element_type is None else fnp.astype(out, preferred_element_type)


def _conv(x, w, strides, pads, dilation, groups: int):
    """The canonical (N, C, spatial...) convolution over 1 to 3 spatial axes."""
    if x.ndim == 3:
        out = _conv(fnp.expand_dims(x, 2), fnp.expand_dims(w, 2), (1,) + strides, [(0, 0)] + pads,
                    (1,) + dilation, groups)
        return fnp.squeeze(out, 2)
    if x.ndim == 4:
        C.window_output_hw(x.shape[2:], w.shape[2:], strides, tuple(pads), dilation, "conv_general_dilated")
        precision = fnp._precision(x, w)
        return bind(C.conv_p, x, w, stride=tuple(strides), padding=tuple(map(tuple, pads)),
                    dilation=tuple(dilation), groups=groups, **precision)
    # 3-D: the depth padded, then one 2-D convolution per depth tap over every output depth
    (lo, hi), stride, dilation_d = pads[0], strides[0], dilation[0]
    if lo or hi:
        x = fnp.pad(x, ((0, 0), (0, 0), (lo, hi), (0, 0), (0, 0)))
    depth, taps = x.shape[2], w.shape[2]
    out_depth = (depth - (taps - 1) * dilation_d - 1) // stride + 1
    if out_depth < 1:
        raise ShapeError(f"conv_general_dilated: the kernel's {taps} depth taps (dilation {dilation_d}) do not fit "
                         f"the padded depth {depth}")
    n = x.shape[0]
    total = None
    for t in range(taps):
        start = t * dilation_d
        slab = x[:, :, start:start + (out_depth - 1) * stride + 1:stride]  # (N, C, Do, H, W)
        slab = fnp.reshape(fnp.swapaxes(slab, 1, 2), (n * out_depth,) + (x.shape[1],) + x.shape[3:])
        part = _conv(slab, w[:, :, t], strides[1:], pads[1:], dilation[1:], groups)
        total = part if total is None else total + part
    out = fnp.reshape(total, (n, out_depth) + total.shape[1:])
    return fnp.swapaxes(out, 1, 2)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None, preferred_element_type=None):
    """The patches a convolution with a kernel of filter_shape would see, flattened into the
    output's feature axis (channel-major: feature c * prod(filter_shape) + tap), as jax.lax's: a
    grouped convolution with one identity kernel per channel."""
    lhs = fnp.asarray(lhs)
    filter_shape = tuple(int(n) for n in filter_shape)
    dn = conv_dimension_numbers(lhs.shape, (1, 1) + filter_shape, dimension_numbers)
    taps = math.prod(filter_shape)
    channels = lhs.shape[dn.lhs_spec[1]]
    identity = fnp.broadcast_to(fnp.eye(taps, dtype=lhs.dtype), (channels, taps, taps))
    rhs = fnp.reshape(identity, (channels * taps, 1) + filter_shape)  # (O, I, *spatial), O = channel-major taps
    rhs = fnp.transpose(rhs, tuple(np.argsort(dn.rhs_spec)))  # into the layout rhs_spec reads
    out = conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dn,
                               feature_group_count=channels)
    return out if preferred_element_type is None else fnp.astype(out, preferred_element_type)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """conv_general_dilated in NC... / OI... layout with no dilation or groups."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(k: int, s: int, padding) -> tuple:
    """A transposed convolution's (low, high) padding for the forward one's 'SAME', 'VALID' or
    explicit padding (JAX's rule)."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total, low = k + s - 2 + max(k - s, 0), k - 1
    else:
        low, high = (k - p - 1 for p in padding)
        total = low + high
    return low, total - low


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                      5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False):
    """jax.lax.conv_transpose: a fractionally strided convolution (lhs dilated by strides), in
    JAX's default channels-last layouts; transpose_kernel flips the kernel's spatial axes and swaps
    its feature axes (TensorFlow's Conv2DTranspose). padding strings, and with
    use_consistent_padding explicit pairs too, are the forward convolution's."""
    lhs, rhs = fnp._common((lhs, rhs))
    if lhs.ndim != rhs.ndim or lhs.ndim not in _TRANSPOSE_LAYOUTS:
        raise ShapeError(f"conv_transpose takes operands of equal rank 2 to 5, got {lhs.shape} and {rhs.shape}")
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers or _TRANSPOSE_LAYOUTS[lhs.ndim])
    d = lhs.ndim - 2
    rhs_dilation = _spatial(rhs_dilation, d, "rhs_dilation")
    strides = _spatial(strides, d, "strides")
    if isinstance(padding, str) or use_consistent_padding:
        kernel = [(rhs.shape[a] - 1) * r + 1 for a, r in zip(dn.rhs_spec[2:], rhs_dilation)]
        per_axis = [padding] * d if isinstance(padding, str) else padding
        pads = [_transpose_padding(k, s, p) for k, s, p in zip(kernel, strides, per_axis)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = fnp.flip(rhs, tuple(dn.rhs_spec[2:]))
        rhs = fnp.swapaxes(rhs, dn.rhs_spec[0], dn.rhs_spec[1])
    return conv_general_dilated(lhs, rhs, (1,) * d, pads, strides, rhs_dilation, dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def reduce_window(operand, init_value, computation, window_dimensions, window_strides, padding,
                  base_dilation=None, window_dilation=None):
    """XLA's ReduceWindow: computation (a binary function such as lax.add or lax.max) folded from
    init_value over each window, the operand padded with init_value ('SAME'/'VALID' or (low, high)
    per axis) and spread base_dilation apart, the window's taps window_dilation apart. Each tap is a
    strided slice, so gradients follow computation's own."""
    x = fnp.asarray(operand)
    d = x.ndim
    window = _spatial(window_dimensions, d, "window_dimensions")
    strides = _spatial(window_strides, d, "window_strides")
    base, dilation = _spatial(base_dilation, d, "base_dilation"), _spatial(window_dilation, d, "window_dilation")
    spread = tuple((n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base))
    reach = tuple((k - 1) * r + 1 for k, r in zip(window, dilation))
    pads = padtype_to_pads(spread, reach, strides, padding) if isinstance(padding, str) else \
        [tuple(int(v) for v in p) for p in padding]
    if len(pads) != d:
        raise ValueError(f"reduce_window: padding must be a string or {d} (low, high) pairs, got {padding!r}")
    init = fnp.astype(fnp._beside(init_value, x), x.dtype)
    x = pad(x, init, [(lo, hi, b - 1) for (lo, hi), b in zip(pads, base)])
    out_shape = tuple((n - r) // s + 1 if n >= r else 0 for n, r, s in zip(x.shape, reach, strides))
    acc = fnp.broadcast_to(init, out_shape)
    for offsets in itertools.product(*(range(k) for k in window)):
        index = tuple(slice(o * r, o * r + (m - 1) * s + 1, s) if m else slice(0, 0)
                      for o, r, s, m in zip(offsets, dilation, strides, out_shape))
        acc = computation(acc, x[index])
    return acc


# binary computations with a NumPy reduction (lax.add is fnp.add, lax.max fnp.maximum, ...)
_REDUCTIONS = {fnp.add: fnp.sum, operator.add: fnp.sum, fnp.multiply: fnp.prod, operator.mul: fnp.prod,
               fnp.maximum: fnp.max, fnp.minimum: fnp.min, fnp.bitwise_and: fnp.all, operator.and_: fnp.all,
               fnp.bitwise_or: fnp.any, operator.or_: fnp.any}


def reduce(operands, init_values, computation, dimensions):
    """XLA's Reduce: computation folded from init_values over the given axes. Of one operand,
    lax.add, lax.mul, lax.max, lax.min (and the operator module's) run as NumPy's reductions, any
    other binary function as a fold over the reduced elements; of a tuple of operands (variadic,
    an argmax say), computation takes and returns tuples, folded the same way."""
    variadic = isinstance(operands, (tuple, list))
    xs = [fnp.asarray(x) for x in operands] if variadic else [fnp.asarray(operands)]
    inits = list(init_values) if variadic else [init_values]
    if len(inits) != len(xs) or len({x.shape for x in xs}) > 1:
        raise ShapeError(f"lax.reduce: {len(xs)} operands of shapes {[x.shape for x in xs]} need as many init "
                         f"values ({len(inits)} given) and one shape")
    x = xs[0]
    axes = tuple(sorted({int(a) % x.ndim for a in dimensions})) if x.ndim else ()
    inits = [fnp.astype(fnp._beside(i, x), x.dtype) for i, x in zip(inits, xs)]
    reduction = None if variadic else _REDUCTIONS.get(computation)
    if reduction is not None and (reduction not in (fnp.all, fnp.any) or x.dtype == np.bool_):
        return computation(inits[0], reduction(x, axis=axes)) if x.size else \
            fnp.broadcast_to(inits[0], tuple(n for a, n in enumerate(x.shape) if a not in axes))
    kept = tuple(a for a in range(x.ndim) if a not in axes)
    kept_shape = tuple(x.shape[a] for a in kept)
    reduced = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))  # not -1: a kept axis may be empty
    rows = [fnp.reshape(fnp.transpose(x, kept + axes), kept_shape + (reduced,)) for x in xs]
    acc = tuple(fnp.broadcast_to(i, kept_shape) for i in inits)
    for k in range(reduced):  # the reduced elements in row-major order, as XLA's CPU fold
        acc = computation(acc, tuple(r[..., k] for r in rows)) if variadic else \
            (computation(acc[0], rows[0][..., k]),)
    return tuple(acc) if variadic else acc[0]

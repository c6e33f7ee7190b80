"""Layers. Each takes its PRNG key as the keyword `key=` and is called as layer(x, key=None);
a key at call time turns on training behaviour (dropout)."""
from __future__ import annotations

import math
from typing import Callable, Sequence

from .. import dtypes
from .. import numpy as fnp
from .. import random
from . import _convolution as Cv
from . import _functional as F
from . import init
from ._resize import interpolate
from .module import Module


def _split(key, n: int):
    return [None] * n if key is None else list(random.split(key, n))


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features), PyTorch's initialisation."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, key, dtype=dtypes.float32):
        kw, kb = random.split(key)
        self.in_features, self.out_features = in_features, out_features
        self.weight = init.kaiming_uniform(kw, (out_features, in_features), dtype, a=math.sqrt(5))
        self.bias = init.bias_uniform(kb, (out_features,), in_features, dtype) if bias else None

    def __call__(self, x, *, key=None):
        return F.linear(x, self.weight, self.bias)


class Embedding(Module):
    """A table of num_embeddings vectors, N(0, 1) as PyTorch's; the padding_idx row starts at zero
    and receives no gradient; max_norm, norm_type and scale_grad_by_freq as F.embedding's (the
    rescaled rows are not written back: the table is immutable). sparse is PyTorch's storage choice
    for the gradient, whose numbers are the same dense."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, *, key, dtype=dtypes.float32):
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = None if padding_idx is None else F._padding_index(padding_idx, num_embeddings)
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        weight = init.normal(key, (num_embeddings, embedding_dim), dtype)
        self.weight = weight if padding_idx is None else weight.at[self.padding_idx].set(0)

    def __call__(self, indices, *, key=None):
        return F.embedding(indices, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)


class LayerNorm(Module):
    """torch.nn.LayerNorm: weight and (unless bias=False) bias over normalized_shape."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True, *,
                 key=None, dtype=dtypes.float32):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = fnp.ones(shape, dtype) if elementwise_affine else None
        self.bias = fnp.zeros(shape, dtype) if elementwise_affine and bias else None

    def __call__(self, x, *, key=None):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, *, key=None,
                 dtype=dtypes.float32):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = fnp.ones(shape, dtype) if elementwise_affine else None

    def __call__(self, x, *, key=None):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class GroupNorm(Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *, key=None,
                 dtype=dtypes.float32):
        if num_channels % num_groups:
            raise ValueError(f"num_channels {num_channels} must be divisible by num_groups {num_groups}")
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.weight = fnp.ones((num_channels,), dtype) if affine else None
        self.bias = fnp.zeros((num_channels,), dtype) if affine else None

    def __call__(self, x, *, key=None):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class Identity(Module):
    def __call__(self, x, *, key=None):
        return x


class Dropout(Module):
    def __init__(self, rate: float = 0.5):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"dropout rate must be in [0, 1], got {rate}")
        self.rate = rate

    def __call__(self, x, *, key=None):
        return F.dropout(x, self.rate, key)


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _padding_mode(padding_mode: str) -> str:
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"padding_mode must be one of {sorted(_PADDING_MODES)}, got {padding_mode!r}")
    return padding_mode


def _padded_conv(conv, x, weight, bias, stride, padding, dilation, groups, padding_mode: str):
    """conv (Cv.conv1d, conv2d or conv3d) with PyTorch's padding_mode: other than zeros, the input is
    padded by Cv.pad in that mode and convolved without padding, as torch.nn.Conv2d does."""
    if padding_mode == "zeros":
        return conv(x, weight, bias, stride, padding, dilation, groups)
    kernel = tuple(weight.shape[2:])
    d = len(kernel)
    if not isinstance(padding, str):
        padding = Cv._ints(padding, d, "padding")
    sides = Cv._conv_sides(padding, kernel, Cv._ints(stride, d, "stride"), Cv._ints(dilation, d, "dilation"))
    widths = [w for side in reversed(sides) for w in side]
    return conv(Cv.pad(x, widths, padding_mode), weight, bias, stride, 0, dilation, groups)


def _conv_parameters(key, shape, out_channels: int, bias: bool, dtype):
    """PyTorch's initialisation of a conv or transposed conv weight (as laid out: its fan-in is
    shape[1] times the kernel) and bias."""
    k_w, k_b = random.split(key)
    weight = init.kaiming_uniform(k_w, shape, dtype, a=math.sqrt(5))
    return weight, init.bias_uniform(k_b, (out_channels,), init.fans(shape)[0], dtype) if bias else None


def _check_groups(in_channels: int, out_channels: int, groups: int) -> None:
    if in_channels % groups or out_channels % groups:
        raise ValueError(f"channels ({in_channels}, {out_channels}) must be divisible by groups={groups}")


class _Conv(Module):
    """torch.nn.Conv1d/2d/3d: weight (out_channels, in_channels/groups, *kernel), with PyTorch's
    default initialisation and padding_mode; `conv` is the functional form, over `dims` axes."""
    dims, conv = 2, None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", *, key, dtype=dtypes.float32):
        _check_groups(in_channels, out_channels, groups)
        shape = (out_channels, in_channels // groups) + Cv._ints(kernel_size, self.dims, "kernel_size")
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.padding_mode = _padding_mode(padding_mode)
        self.weight, self.bias = _conv_parameters(key, shape, out_channels, bias, dtype)

    def __call__(self, x, *, key=None):
        return _padded_conv(type(self).conv, x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                            self.groups, self.padding_mode)


class Conv2d(_Conv):
    conv = staticmethod(Cv.conv2d)


class Conv1d(_Conv):
    dims, conv = 1, staticmethod(Cv.conv1d)


class _ConvTranspose(Module):
    """torch.nn.ConvTranspose1d/2d/3d: weight (in_channels, out_channels/groups, *kernel)."""
    dims, conv = 2, None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, *, key, dtype=dtypes.float32):
        _check_groups(in_channels, out_channels, groups)
        shape = (in_channels, out_channels // groups) + Cv._ints(kernel_size, self.dims, "kernel_size")
        self.stride, self.padding, self.output_padding = stride, padding, output_padding
        self.groups, self.dilation = groups, dilation
        self.weight, self.bias = _conv_parameters(key, shape, out_channels, bias, dtype)

    def __call__(self, x, output_size=None, *, key=None):
        """output_size (the spatial sizes, or with the batch and channel axes too) picks the
        output_padding that reaches it, as PyTorch's forward(input, output_size)."""
        output_padding = self.output_padding if output_size is None else self._output_padding(x, output_size)
        return type(self).conv(x, self.weight, self.bias, self.stride, self.padding, output_padding,
                               self.groups, self.dilation)

    def _output_padding(self, x, output_size) -> tuple:
        n = self.dims
        sizes = tuple(int(s) for s in output_size)
        if len(sizes) == fnp.ndim(x):  # given with the non-spatial axes
            sizes = sizes[len(sizes) - n:]
        if len(sizes) != n:
            raise ValueError(f"{type(self).__name__}: output_size must have {n} or {fnp.ndim(x)} elements (the "
                             f"spatial sizes, or with the input's other axes), got {tuple(output_size)}")
        stride, padding, dilation = (Cv._ints(v, n, name) for v, name in
                                     ((self.stride, "stride"), (self.padding, "padding"), (self.dilation, "dilation")))
        spatial = tuple(fnp.shape(x))[fnp.ndim(x) - n:]
        kernel = tuple(self.weight.shape[2:])
        smallest = [(i - 1) * s - 2 * p + d * (k - 1) + 1
                    for i, s, p, d, k in zip(spatial, stride, padding, dilation, kernel)]
        largest = [m + s - 1 for m, s in zip(smallest, stride)]
        if any(not lo <= want <= hi for want, lo, hi in zip(sizes, smallest, largest)):
            raise ValueError(f"{type(self).__name__}: requested an output size of {sizes}, but valid sizes range "
                             f"from {tuple(smallest)} to {tuple(largest)} (for an input of spatial size {spatial})")
        return tuple(want - lo for want, lo in zip(sizes, smallest))


class ConvTranspose2d(_ConvTranspose):
    conv = staticmethod(Cv.conv_transpose2d)


class ConvTranspose1d(_ConvTranspose):
    dims, conv = 1, staticmethod(Cv.conv_transpose1d)


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        self.output_size = output_size

    def __call__(self, x, *, key=None):
        return Cv.adaptive_avg_pool2d(x, self.output_size)


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None):
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def __call__(self, x, *, key=None):
        return interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor)


class _MaxPool(Module):
    """PyTorch's MaxPool1d / MaxPool2d, whose arguments come in the module's order (return_indices
    before ceil_mode, the functional form's other way round); each names its functional form as `pool`."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def __call__(self, x, *, key=None):
        return type(self).pool(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                               self.return_indices)


class MaxPool1d(_MaxPool):
    pool = staticmethod(Cv.max_pool1d)


class MaxPool2d(_MaxPool):
    pool = staticmethod(Cv.max_pool2d)


class AvgPool1d(Module):
    def __init__(self, kernel_size: int, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def __call__(self, x, *, key=None):
        return Cv.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def __call__(self, x, *, key=None):
        return Cv.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class Flatten(Module):
    """Flatten axes start_dim..end_dim (default: all but the batch axis)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def __call__(self, x, *, key=None):
        x = fnp.asarray(x)
        start, end = self.start_dim % x.ndim, self.end_dim % x.ndim
        return fnp.reshape(x, x.shape[:start] + (-1,) + x.shape[end + 1:])


class Lambda(Module):
    """Wrap a function (an activation) as a layer; the function is static structure."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __call__(self, x, *, key=None):
        return self.fn(x)


def ReLU():  # noqa: N802  (module-style constructors, as torch.nn.ReLU)
    return Lambda(F.relu)


def GELU(approximate: bool = False):  # noqa: N802
    return Lambda(F.gelu if not approximate else lambda x: F.gelu(x, approximate=True))


def Tanh():  # noqa: N802
    return Lambda(fnp.tanh)


def Sigmoid():  # noqa: N802
    return Lambda(F.sigmoid)


def LeakyReLU(negative_slope: float = 0.01):  # noqa: N802
    return Lambda(lambda x: F.leaky_relu(x, negative_slope))


def ELU(alpha: float = 1.0):  # noqa: N802
    return Lambda(lambda x: F.elu(x, alpha))


def SiLU():  # noqa: N802
    return Lambda(F.silu)


def Softplus(beta: float = 1.0, threshold: float = 20.0):  # noqa: N802
    return Lambda(lambda x: F.softplus(x, beta, threshold))


def Mish():  # noqa: N802
    return Lambda(F.mish)


def Softmax(axis: int = -1, *, dim: int | None = None):  # noqa: N802
    return Lambda(lambda x: F.softmax(x, axis=F._axis(axis, dim)))


def LogSoftmax(axis: int = -1, *, dim: int | None = None):  # noqa: N802
    return Lambda(lambda x: F.log_softmax(x, axis=F._axis(axis, dim)))


class Sequential(Module):
    """Layers applied in order; plain functions (nn.relu) may stand among them. The call's key is
    split between the layers, so dropout inside gets fresh randomness. Takes the layers as one
    sequence (equinox's form) or one argument each (PyTorch's); PyTorch's state_dict names
    ('0.weight') load as well as its own ('layers.0.weight')."""

    unnamed_fields = ("layers",)

    def __init__(self, *layers):
        if len(layers) == 1 and isinstance(layers[0], (list, tuple)):
            layers = layers[0]
        self.layers = list(layers)

    def __call__(self, x, *, key=None):
        for layer, k in zip(self.layers, _split(key, len(self.layers))):
            x = layer(x, key=k) if isinstance(layer, Module) else layer(x)
        return x

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)


class ModuleList(Module):
    """torch.nn.ModuleList: modules in a list, indexed and iterated (not called). Modules are
    immutable values, so build the list first (nn.ModuleList([...]) or from a generator) instead of
    appending; parameters are named 'layers.0.weight' here and '0.weight' as PyTorch names them."""

    unnamed_fields = ("layers",)

    def __init__(self, modules=()):
        self.layers = list(modules)

    def __getitem__(self, i):
        return type(self)(self.layers[i]) if isinstance(i, slice) else self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def append(self, module):
        raise TypeError("ModuleList is immutable once built (modules are values): make it from the whole list, "
                        "nn.ModuleList([...]), or use a plain Python list attribute")


class ParameterList(ModuleList):
    """torch.nn.ParameterList: arrays in a list, named '0', '1', ... as PyTorch names them."""

    def __init__(self, values=()):
        super().__init__(fnp.asarray(v) for v in values)


class ModuleDict(Module):
    """torch.nn.ModuleDict: modules by name (keys in insertion order), parameters named
    'entries.<key>.weight' here and '<key>.weight' as PyTorch names them."""

    unnamed_fields = ("entries",)

    def __init__(self, modules=None):
        self.entries = dict(modules or {})

    def __getitem__(self, name: str):
        return self.entries[name]

    def __contains__(self, name) -> bool:
        return name in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def keys(self):
        return self.entries.keys()

    def values(self):
        return self.entries.values()

    def items(self):
        return self.entries.items()


class MLP(Module):
    """in_features -> hidden... -> out_features, with an activation between the linear layers."""

    def __init__(self, in_features: int, hidden: Sequence[int], out_features: int, activation: Callable = F.relu,
                 dropout: float = 0.0, *, key):
        sizes = [in_features, *hidden, out_features]
        keys = random.split(key, len(sizes) - 1)
        self.linears = [Linear(a, b, key=k) for a, b, k in zip(sizes[:-1], sizes[1:], keys)]
        self.activation, self.dropout = activation, dropout

    def __call__(self, x, *, key=None):
        keys = _split(key, len(self.linears))
        for i, layer in enumerate(self.linears):
            x = layer(x)
            if i < len(self.linears) - 1:
                x = F.dropout(self.activation(x), self.dropout, keys[i])
        return x


class MultiHeadAttention(Module):
    """Multi-head self- or cross-attention, (batch, length, embed_dim) in and out."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True, *, key):
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} must be divisible by num_heads {num_heads}")
        kq, kk, kv, ko = random.split(key, 4)
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.q_proj = Linear(embed_dim, embed_dim, bias, key=kq)
        self.k_proj = Linear(embed_dim, embed_dim, bias, key=kk)
        self.v_proj = Linear(embed_dim, embed_dim, bias, key=kv)
        self.out_proj = Linear(embed_dim, embed_dim, bias, key=ko)

    def _heads(self, x):
        b, n, _ = x.shape
        return fnp.transpose(fnp.reshape(x, (b, n, self.num_heads, -1)), (0, 2, 1, 3))

    def __call__(self, query, key_value=None, *, mask=None, causal: bool = False, key=None):
        kv = query if key_value is None else key_value
        q, k, v = self._heads(self.q_proj(query)), self._heads(self.k_proj(kv)), self._heads(self.v_proj(kv))
        if key is not None and self.dropout:
            scores = fnp.einsum("bhqd,bhkd->bhqk", q, k) * (1.0 / math.sqrt(q.shape[-1]))
            if causal:
                scores = fnp.where(fnp.tri(*scores.shape[-2:], dtype=bool, device=scores.device), scores, -fnp.inf)
            if mask is not None:
                scores = fnp.where(mask, scores, -fnp.inf)
            attn = F.dropout(F.softmax(scores, axis=-1), self.dropout, key)
            out = fnp.einsum("bhqk,bhkd->bhqd", attn, v)
        else:
            out = F.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=causal)
        b, _, n, _ = out.shape
        return self.out_proj(fnp.reshape(fnp.transpose(out, (0, 2, 1, 3)), (b, n, self.embed_dim)))


class TransformerBlock(Module):
    """Pre-norm block: x + attn(ln(x)), then x + mlp(ln(x)) with a GELU MLP of width mlp_ratio * dim."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: int = 4, dropout: float = 0.0, causal: bool = True,
                 *, key):
        ka, k1, k2 = random.split(key, 3)
        self.causal, self.dropout = causal, dropout
        self.ln1, self.ln2 = LayerNorm(dim), LayerNorm(dim)
        self.attn = MultiHeadAttention(dim, num_heads, dropout, key=ka)
        self.fc1 = Linear(dim, mlp_ratio * dim, key=k1)
        self.fc2 = Linear(mlp_ratio * dim, dim, key=k2)

    def __call__(self, x, *, key=None):
        k_attn, k_res1, k_res2 = _split(key, 3)
        x = x + F.dropout(self.attn(self.ln1(x), causal=self.causal, key=k_attn), self.dropout, k_res1)
        h = self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x + F.dropout(h, self.dropout, k_res2)


class ParameterDict(ModuleDict):
    """torch.nn.ParameterDict: arrays by name, named by their keys as PyTorch names them."""

    def __init__(self, values=None):
        super().__init__({k: fnp.asarray(v) for k, v in dict(values or {}).items()})

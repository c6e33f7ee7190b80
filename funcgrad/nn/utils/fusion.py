"""Folding an evaluation-mode batch norm into the convolution or linear layer before it
(torch.nn.utils.fusion): one layer computes what the two did, with the running statistics."""
from __future__ import annotations

from ... import numpy as fnp
from ..module import Module

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _batch_norm_parts(bn_rm, bn_w, bn_b):
    return (fnp.ones_like(bn_rm) if bn_w is None else bn_w), (fnp.zeros_like(bn_rm) if bn_b is None else bn_b)


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps: float, bn_w, bn_b, transpose: bool = False):
    """(weight, bias) of a convolution computing conv then batch norm with running mean bn_rm and
    variance bn_rv; transpose for transposed convolutions (their output channels are axis 1)."""
    bn_w, bn_b = _batch_norm_parts(bn_rm, bn_w, bn_b)
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    conv_b = fnp.zeros_like(bn_rm) if conv_b is None else conv_b
    inv_std = 1 / fnp.sqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    weight = fnp.astype(conv_w * fnp.reshape(bn_w * inv_std, shape), conv_w.dtype)
    return weight, fnp.astype((conv_b - bn_rm) * inv_std * bn_w + bn_b, bias_dtype)


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps: float, bn_w, bn_b):
    """(weight, bias) of a linear layer computing linear then batch norm (running statistics)."""
    bn_w, bn_b = _batch_norm_parts(bn_rm, bn_w, bn_b)
    linear_b = fnp.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w / fnp.sqrt(bn_rv + bn_eps)
    return linear_w * fnp.expand_dims(scale, -1), (linear_b - bn_rm) * scale + bn_b


def _evaluation_stats(bn: Module, what: str):
    if bn.running_mean is None:
        raise ValueError(f"{what}: the batch norm tracks no running statistics (track_running_stats=False), "
                         f"so it has nothing to fold")
    if bn.training:
        raise ValueError(f"{what}: fusion is for evaluation; the batch norm is in training mode (bn.eval())")
    return bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """conv with bn folded in (a new layer; both inputs stay as they are)."""
    stats = _evaluation_stats(bn, "fuse_conv_bn_eval")
    weight, bias = fuse_conv_bn_weights(conv.weight, conv.bias, *stats, transpose=transpose)
    return conv.replace(weight=weight, bias=bias)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """linear with bn folded in; bn has linear's out_features channels (or one)."""
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise ValueError(f"fuse_linear_bn_eval: the linear layer has {linear.out_features} outputs but the batch "
                         f"norm {bn.num_features} features")
    weight, bias = fuse_linear_bn_weights(linear.weight, linear.bias, *_evaluation_stats(bn, "fuse_linear_bn_eval"))
    return linear.replace(weight=weight, bias=bias)

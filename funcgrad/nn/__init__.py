"""Neural-network building blocks: Modules as pytrees, layers, initialisers, losses, activations.

    model = nn.Sequential([nn.Linear(64, 128, key=k1), nn.relu, nn.Linear(128, 10, key=k2)])
    loss, grads = fg.value_and_grad(lambda m, x, y: nn.cross_entropy(m(x), y))(model, x, y)
"""
from . import functional, init
from .functional import (avg_pool2d, conv2d, dropout, embedding, gelu, layer_norm, linear, log_softmax,
                         max_pool2d, one_hot, relu, scaled_dot_product_attention, sigmoid, silu, softmax, softplus,
                         tanh)
from .layers import (GELU, MLP, AvgPool2d, Conv2d, Dropout, Embedding, Flatten, Lambda, LayerNorm, Linear,
                     LogSoftmax, MaxPool2d, MultiHeadAttention, ReLU, Sequential, Sigmoid, Softmax, Tanh,
                     TransformerBlock)
from .losses import binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss
from .module import Module

__all__ = [
    "Module", "functional", "init",
    "Linear", "Embedding", "LayerNorm", "Dropout", "Sequential", "Flatten", "Conv2d", "MaxPool2d", "AvgPool2d",
    "MultiHeadAttention", "TransformerBlock", "MLP", "Lambda", "ReLU", "GELU", "Tanh", "Sigmoid", "Softmax",
    "LogSoftmax",
    "relu", "gelu", "tanh", "sigmoid", "silu", "softplus", "softmax", "log_softmax",
    "linear", "conv2d", "max_pool2d", "avg_pool2d", "layer_norm", "dropout", "embedding", "one_hot",
    "scaled_dot_product_attention",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits",
]

"""Neural-network building blocks: Modules as pytrees, layers, initialisers, losses, activations.

    model = nn.Sequential([nn.Linear(64, 128, key=k1), nn.relu, nn.Linear(128, 10, key=k2)])
    loss, grads = fg.value_and_grad(lambda m, x, y: nn.cross_entropy(m(x), y))(model, x, y)
"""
from . import functional, init
from .functional import (adaptive_avg_pool2d, avg_pool1d, avg_pool2d, celu, conv1d, conv2d, conv_transpose2d, cosine_similarity, dropout, elu, embedding, gelu, group_norm,
                         hard_sigmoid, hard_swish, interpolate, hardsigmoid, hardswish, hardtanh, layer_norm, leaky_relu, linear,
                         log_sigmoid, log_softmax, logsigmoid, max_pool1d, max_pool2d, mish, normalize, one_hot, pad, relu, relu6,
                         rms_norm, scaled_dot_product_attention, selu, sigmoid, silu, softmax, softplus, softsign,
                         tanh)
from .layers import (ELU, GELU, MLP, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, Conv1d, Conv2d, ConvTranspose2d, Dropout, Embedding, Flatten, GroupNorm, Identity, Lambda,
                     LayerNorm, LeakyReLU, Linear, LogSoftmax, MaxPool1d, MaxPool2d, Mish, MultiHeadAttention, ReLU, RMSNorm,
                     Sequential, Sigmoid, SiLU, Softmax, Softplus, Tanh, TransformerBlock, Upsample)
from .losses import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss,
                     SmoothL1Loss, binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss,
                     kl_div, l1_loss, mse_loss, nll_loss, smooth_l1_loss)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .module import Module
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .state import apply_state, collect_state

__all__ = [
    "Module", "functional", "init", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "collect_state", "apply_state",
    "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
    "Linear", "Embedding", "LayerNorm", "Dropout", "Sequential", "Flatten", "Conv2d", "MaxPool2d", "AvgPool2d",
    "MultiHeadAttention", "TransformerBlock", "MLP", "Lambda", "ReLU", "GELU", "Tanh", "Sigmoid", "Softmax",
    "LogSoftmax", "RMSNorm", "GroupNorm", "Identity", "LeakyReLU", "ELU", "SiLU", "Softplus", "Mish",
    "relu", "gelu", "tanh", "sigmoid", "silu", "softplus", "softmax", "log_softmax", "leaky_relu", "elu", "celu",
    "selu", "hardtanh", "relu6", "hard_sigmoid", "hard_swish", "hardsigmoid", "hardswish", "log_sigmoid",
    "logsigmoid", "mish", "softsign", "normalize", "cosine_similarity",
    "Conv1d", "MaxPool1d", "AvgPool1d", "conv1d", "max_pool1d", "avg_pool1d", "ConvTranspose2d", "conv_transpose2d",
    "AdaptiveAvgPool2d", "adaptive_avg_pool2d", "Upsample", "interpolate",
    "linear", "conv2d", "max_pool2d", "avg_pool2d", "layer_norm", "rms_norm", "group_norm", "dropout", "embedding",
    "one_hot", "pad", "scaled_dot_product_attention",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits", "binary_cross_entropy",
    "huber_loss", "smooth_l1_loss", "kl_div",
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "HuberLoss", "SmoothL1Loss", "KLDivLoss", "BCELoss",
    "BCEWithLogitsLoss",
]

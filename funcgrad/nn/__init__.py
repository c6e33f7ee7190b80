"""Neural-network building blocks: Modules as pytrees, layers, initialisers, losses, activations.

    model = nn.Sequential([nn.Linear(64, 128, key=k1), nn.relu, nn.Linear(128, 10, key=k2)])
    loss, grads = fg.value_and_grad(lambda m, x, y: nn.cross_entropy(m(x), y))(model, x, y)
"""
from . import functional, init
from ._functional import (adaptive_avg_pool2d, avg_pool1d, avg_pool2d, celu, conv1d, conv2d, conv_transpose2d, cosine_similarity, dropout, elu, embedding, gelu, group_norm,
                         hard_sigmoid, hard_swish, interpolate, hardsigmoid, hardswish, hardtanh, layer_norm, leaky_relu, linear,
                         log_sigmoid, log_softmax, logsigmoid, max_pool1d, max_pool2d, mish, normalize, one_hot, pad, relu, relu6,
                         rms_norm, scaled_dot_product_attention, selu, sigmoid, silu, softmax, softplus, softsign,
                         tanh)
from .layers import (ELU, GELU, MLP, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, Conv1d, Conv2d, ConvTranspose2d, Dropout, Embedding, Flatten, GroupNorm, Identity, Lambda,
                     LayerNorm, LeakyReLU, Linear, LogSoftmax, MaxPool1d, MaxPool2d, Mish, ModuleDict, ModuleList,
                     MultiHeadAttention, ReLU, RMSNorm, Sequential, Sigmoid, SiLU, Softmax, Softplus, Tanh,
                     TransformerBlock, Upsample)
from .losses import *  # noqa: F401,F403  (the loss functions)
from .losses import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, GaussianNLLLoss,
                     HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                     MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
                     TripletMarginLoss)
from ._activations import *  # noqa: F401,F403  (glu, softmin, the shrinkages, threshold, prelu)
from ._activations import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSigmoid, PReLU, ReLU6,
                           Softmin, Softshrink, Softsign, Tanhshrink, Threshold)
from ._pixels import *  # noqa: F401,F403  (pixel_shuffle, unfold, fold, channel dropout, instance_norm, ...)
from ._pixels import (AdaptiveAvgPool1d, AdaptiveMaxPool2d, CircularPad1d, CircularPad2d, ConstantPad1d,
                      ConstantPad2d, CosineSimilarity, Dropout1d, Dropout2d, Fold, InstanceNorm1d, InstanceNorm2d,
                      PairwiseDistance, PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d,
                      ReplicationPad1d, ReplicationPad2d, Unflatten, Unfold, ZeroPad1d, ZeroPad2d)
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)
from . import _activations, _pixels, losses
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .module import Module
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .state import apply_state, collect_state

__all__ = [
    "Module", "functional", "init", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "collect_state", "apply_state",
    "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
    "Linear", "Embedding", "LayerNorm", "Dropout", "Sequential", "ModuleList", "ModuleDict", "Flatten", "Conv2d",
    "MaxPool2d", "AvgPool2d", "MultiHeadAttention", "TransformerBlock", "MLP", "Lambda", "ReLU", "GELU", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "RMSNorm", "GroupNorm", "Identity", "LeakyReLU", "ELU", "SiLU", "Softplus",
    "Mish", "relu", "gelu", "tanh", "sigmoid", "silu", "softplus", "softmax", "log_softmax", "leaky_relu", "elu",
    "celu", "selu", "hardtanh", "relu6", "hard_sigmoid", "hard_swish", "hardsigmoid", "hardswish", "log_sigmoid",
    "logsigmoid", "mish", "softsign", "normalize", "cosine_similarity",
    "Conv1d", "MaxPool1d", "AvgPool1d", "conv1d", "max_pool1d", "avg_pool1d", "ConvTranspose2d", "conv_transpose2d",
    "AdaptiveAvgPool2d", "adaptive_avg_pool2d", "Upsample", "interpolate",
    "linear", "conv2d", "max_pool2d", "avg_pool2d", "layer_norm", "rms_norm", "group_norm", "dropout", "embedding",
    "one_hot", "pad", "scaled_dot_product_attention",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
    "TransformerDecoder", "Transformer",
    *losses.__all__, *losses.LOSSES, *_activations.__all__, *_activations.LAYERS, *_pixels.__all__, *_pixels.LAYERS,
]

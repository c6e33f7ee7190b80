"""Neural-network building blocks: Modules as pytrees, layers, initialisers, losses, activations.

    model = nn.Sequential([nn.Linear(64, 128, key=k1), nn.relu, nn.Linear(128, 10, key=k2)])
    loss, grads = fg.value_and_grad(lambda m, x, y: nn.cross_entropy(m(x), y))(model, x, y)
"""
from . import functional, init, initializers, utils
from ._functional import *  # noqa: F401,F403  (activations, softmax, linear, norms, dropout, embedding, attention)
from ._convolution import *  # noqa: F401,F403  (conv, pooling, pad)
from ._resize import interpolate
from .layers import (ELU, GELU, MLP, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, Conv1d, Conv2d, ConvTranspose1d,
                     ConvTranspose2d, Dropout, Embedding, Flatten, GroupNorm, Identity, Lambda,
                     LayerNorm, LeakyReLU, Linear, LogSoftmax, MaxPool1d, MaxPool2d, Mish, ModuleDict, ModuleList,
                     MultiHeadAttention, ParameterDict, ParameterList, ReLU, RMSNorm, Sequential, Sigmoid, SiLU, Softmax, Softplus, Tanh,
                     TransformerBlock, Upsample)
from .losses import *  # noqa: F401,F403  (the loss functions)
from .losses import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, GaussianNLLLoss,
                     HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                     MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
                     TripletMarginLoss, TripletMarginWithDistanceLoss, MultiLabelMarginLoss)

NLLLoss2d = NLLLoss  # PyTorch's deprecated name for the same loss over (N, C, H, W)
from ._activations import *  # noqa: F401,F403  (glu, softmin, the shrinkages, threshold, prelu)
from ._activations import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSigmoid, PReLU, ReLU6,
                           Softmin, Softshrink, Softsign, Tanhshrink, Threshold)
from ._pixels import *  # noqa: F401,F403  (pixel_shuffle, unfold, fold, channel dropout, instance_norm, ...)
from ._pixels import (AdaptiveAvgPool1d, AdaptiveMaxPool2d, CircularPad1d, CircularPad2d, CircularPad3d,
                      ConstantPad1d, ConstantPad2d, ConstantPad3d, CosineSimilarity, Dropout1d, Dropout2d, Fold,
                      InstanceNorm1d, InstanceNorm2d, PairwiseDistance, PixelShuffle, PixelUnshuffle, ReflectionPad1d,
                      ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d,
                      Unflatten, Unfold, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from ._vision import *  # noqa: F401,F403  (affine_grid, grid_sample, local_response_norm, lp_pool, unpooling)
from ._vision import (AdaptiveMaxPool1d, ChannelShuffle, LocalResponseNorm, LPPool1d, LPPool2d, MaxUnpool1d,
                      MaxUnpool2d, MaxUnpool3d, Softmax2d, UpsamplingBilinear2d, UpsamplingNearest2d)
from ._volumes import *  # noqa: F401,F403  (conv3d, conv_transpose3d, 3-D pooling, dropout3d)
from ._volumes import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, Conv3d, ConvTranspose3d, Dropout3d,
                       InstanceNorm3d, LPPool3d, MaxPool3d)
from ._stochastic import *  # noqa: F401,F403  (rrelu, alpha_dropout, gumbel_softmax)
from ._stochastic import AlphaDropout, FeatureAlphaDropout, RReLU
from ._bags import *  # noqa: F401,F403  (embedding_bag, bilinear)
from ._bags import Bilinear, EmbeddingBag
from ._ctc import CTCLoss, ctc_loss
from ._fractional import FractionalMaxPool2d, FractionalMaxPool3d, fractional_max_pool2d, fractional_max_pool3d
from .utils.weight_norms import SpectralNorm, WeightNorm  # equinox's names for the wrappers
from ._adaptive import AdaptiveLogSoftmaxWithLoss
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)
from . import (_activations, _convolution, _functional, _pixels, _vision, _volumes, _stochastic, _bags, _ctc,
               _fractional, losses)
from ._functional import dot_product_attention  # jax.nn's layout (B, T, N, H); not in torch's F
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, batch_norm
from .module import Module
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .state import apply_state, collect_state

__all__ = [
    "Module", "functional", "init", "initializers", "batch_norm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "collect_state", "apply_state",
    "dot_product_attention",
    "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
    "Linear", "Embedding", "LayerNorm", "Dropout", "Sequential", "ModuleList", "ModuleDict", "Flatten", "Conv2d",
    "MaxPool2d", "AvgPool2d", "MultiHeadAttention", "TransformerBlock", "MLP", "Lambda", "ReLU", "GELU", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "RMSNorm", "GroupNorm", "Identity", "LeakyReLU", "ELU", "SiLU", "Softplus",
    "interpolate", "Mish", "Conv1d", "MaxPool1d", "AvgPool1d", "ConvTranspose1d", "ConvTranspose2d", "AdaptiveAvgPool2d", "Upsample",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
    "TransformerDecoder", "Transformer",
    *_functional.__all__, *_convolution.__all__, *losses.__all__, *losses.LOSSES, *_activations.__all__,
    *_activations.LAYERS, *_pixels.__all__, *_pixels.LAYERS, *_vision.__all__, *_vision.LAYERS, *_volumes.__all__, *_volumes.LAYERS, *_stochastic.__all__, *_stochastic.LAYERS,
    *_bags.__all__, *_bags.LAYERS, *_ctc.__all__, *_ctc.LAYERS, *_fractional.__all__, *_fractional.LAYERS,
]

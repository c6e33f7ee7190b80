"""torch.nn.functional's namespace (import funcgrad.nn.functional as F): every functional form in
one place, re-exported from the modules that define them: activations, linear, normalisation,
dropout, embedding and attention (_functional), convolution, pooling and padding (_convolution),
resizing (_resize), the rest of PyTorch's activations (_activations), image and sequence helpers
(_pixels), spatial sampling and the image layers around it (_vision), 3-D convolution and pooling
(_volumes), random activations (_stochastic), embedding bags and bilinear forms (_bags), batch_norm
(batchnorm) and the losses (losses, _ctc)."""
from ._activations import *  # noqa: F401,F403
from ._activations import __all__ as _activations
from ._convolution import *  # noqa: F401,F403
from ._convolution import __all__ as _convolution
from ._functional import *  # noqa: F401,F403
from ._functional import __all__ as _core
from ._resize import interpolate, upsample, upsample_bilinear, upsample_nearest  # noqa: F401
from ._pixels import *  # noqa: F401,F403
from ._pixels import __all__ as _pixels
from ._vision import *  # noqa: F401,F403
from ._vision import __all__ as _vision
from ._volumes import *  # noqa: F401,F403
from ._volumes import __all__ as _volumes
from ._stochastic import *  # noqa: F401,F403
from ._stochastic import __all__ as _stochastic
from ._bags import *  # noqa: F401,F403
from ._bags import __all__ as _bags
from ._ctc import ctc_loss  # noqa: F401
from ._fractional import fractional_max_pool2d, fractional_max_pool3d  # noqa: F401
from .transformer import multi_head_attention_forward  # noqa: F401
from .batchnorm import batch_norm  # noqa: F401
from .losses import *  # noqa: F401,F403
from .losses import __all__ as _losses



def _with_indices(pool):
    """torch's *_with_indices form of a max pooling: (values, indices), always."""
    def pooled(*args, **kwargs):
        return pool(*args, **{**kwargs, "return_indices": True})
    pooled.__name__ = f"{pool.__name__}_with_indices"
    pooled.__doc__ = f"{pool.__name__}(..., return_indices=True): (values, indices)."
    return pooled


max_pool1d_with_indices = _with_indices(max_pool1d)  # noqa: F405
max_pool2d_with_indices = _with_indices(max_pool2d)  # noqa: F405
max_pool3d_with_indices = _with_indices(max_pool3d)  # noqa: F405
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)  # noqa: F405
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)  # noqa: F405
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)  # noqa: F405
fractional_max_pool2d_with_indices = _with_indices(fractional_max_pool2d)
fractional_max_pool3d_with_indices = _with_indices(fractional_max_pool3d)
native_channel_shuffle = channel_shuffle  # noqa: F405

__all__ = sorted(["batch_norm", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "ctc_loss",
                  "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
                  "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
                  "adaptive_max_pool3d_with_indices", "native_channel_shuffle", "fractional_max_pool2d",
                  "fractional_max_pool3d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices",
                  "multi_head_attention_forward",
                  *_core, *_convolution, *_activations, *_pixels, *_vision, *_volumes, *_stochastic, *_bags, *_losses])

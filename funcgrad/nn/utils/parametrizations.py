"""torch.nn.utils.parametrizations' names for the same wrappers (weight_norm.py's modules: their
state_dict keys are the older API's, weight_g / weight_v and weight_orig / weight_u / weight_v,
not parametrizations.weight.original0 / 1)."""
from .weight_norms import spectral_norm, weight_norm

__all__ = ["spectral_norm", "weight_norm"]

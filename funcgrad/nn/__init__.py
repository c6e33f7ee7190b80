"""Neural-network building blocks. For now: the activation functions (fused primitives)."""
from .functional import gelu, log_softmax, relu, sigmoid, silu, softmax, softplus

__all__ = ["relu", "gelu", "sigmoid", "silu", "softplus", "softmax", "log_softmax"]

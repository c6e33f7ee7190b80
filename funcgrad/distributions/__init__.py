"""Probability distributions as PyTorch users know them (torch.distributions), in JAX style: frozen
pytrees whose samplers take a key (numpyro's `sample(key, sample_shape)`), so they pass through jit,
grad and vmap. rsample is the reparameterised draw (differentiable in the parameters: location-scale
transforms, and the implicit gradients of funcgrad.random's gamma family); sample is the same draw
with the gradient stopped. log_prob, cdf, icdf, entropy, mean, variance and kl_divergence follow
PyTorch's formulas; with validate_args (PyTorch's default) invalid parameters and values outside the
support raise ValueError when they are concrete."""
from ._base import Distribution
from ._continuous import Beta, Dirichlet, Exponential, Gamma, Laplace, MultivariateNormal, Normal, Uniform
from ._discrete import Bernoulli, Categorical, Poisson
from ._kl import kl_divergence, register_kl

__all__ = ["Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Gamma", "Beta", "Dirichlet", "Bernoulli",
           "Categorical", "Poisson", "MultivariateNormal", "kl_divergence", "register_kl"]

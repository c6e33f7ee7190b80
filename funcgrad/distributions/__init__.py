"""Probability distributions as PyTorch users know them (torch.distributions), in JAX style: frozen
pytrees whose samplers take a key (numpyro's `sample(key, sample_shape)`), so they pass through jit,
grad and vmap. rsample is the reparameterised draw (differentiable in the parameters: location-scale
transforms, and the implicit gradients of funcgrad.random's gamma family); sample is the same draw
with the gradient stopped. log_prob, cdf, icdf, entropy, mean, variance and kl_divergence follow
PyTorch's formulas; with validate_args (PyTorch's default) invalid parameters and values outside the
support raise ValueError when they are concrete."""
from . import transforms
from ._base import Distribution
from ._composite import Independent, MixtureSameFamily
from ._continuous import (Beta, Cauchy, Chi2, Dirichlet, Exponential, Gamma, HalfNormal, Laplace, LogNormal,
                          MultivariateNormal, Normal, StudentT, Uniform)
from ._discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial, OneHotCategorical,
                        OneHotCategoricalStraightThrough, Poisson)
from ._families import ContinuousBernoulli, FisherSnedecor, GeneralizedPareto, LowRankMultivariateNormal, VonMises
from ._kl import kl_divergence, register_kl
from ._transformed import (ExpRelaxedCategorical, Gumbel, HalfCauchy, InverseGamma, Kumaraswamy, LogisticNormal,
                           LogitRelaxedBernoulli, Pareto, RelaxedBernoulli, RelaxedOneHotCategorical,
                           TransformedDistribution, Weibull)

__all__ = ["Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Cauchy", "LogNormal", "HalfNormal",
           "StudentT", "Gamma", "Chi2", "Beta", "Dirichlet", "MultivariateNormal", "LowRankMultivariateNormal",
           "Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson", "Binomial",
           "NegativeBinomial", "Geometric", "Multinomial", "Independent", "MixtureSameFamily",
           "TransformedDistribution", "Gumbel", "HalfCauchy", "Weibull", "Pareto", "InverseGamma", "Kumaraswamy",
           "LogisticNormal", "LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical",
           "RelaxedOneHotCategorical", "VonMises", "FisherSnedecor", "GeneralizedPareto", "ContinuousBernoulli",
           "transforms", "kl_divergence", "register_kl"]

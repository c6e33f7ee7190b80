"""Probability distributions as PyTorch users know them (torch.distributions), in JAX style: frozen
pytrees whose samplers take a key (numpyro's `sample(key, sample_shape)`), so they pass through jit,
grad and vmap. rsample is the reparameterised draw (differentiable in the parameters: location-scale
transforms, and the implicit gradients of funcgrad.random's gamma family); sample is the same draw
with the gradient stopped. log_prob, cdf, icdf, entropy, mean, variance and kl_divergence follow
PyTorch's formulas; with validate_args (PyTorch's default) parameters outside their arg_constraints
and values outside the support (constraints.py, PyTorch's) raise ValueError when they are concrete;
biject_to and transform_to map the reals onto a constraint."""
from . import constraints, transforms
from .constraint_registry import biject_to, transform_to
from ._base import Distribution
from ._composite import Independent, MixtureSameFamily
from ._continuous import (Beta, Cauchy, Chi2, Dirichlet, Exponential, Gamma, HalfNormal, Laplace, LogNormal,
                          MultivariateNormal, Normal, StudentT, Uniform)
from ._discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial, OneHotCategorical,
                        OneHotCategoricalStraightThrough, Poisson)
from ._families import (ContinuousBernoulli, FisherSnedecor, GeneralizedPareto, LKJCholesky, LowRankMultivariateNormal,
                        VonMises, Wishart)
from ._kl import kl_divergence, register_kl
from . import _kl_cross  # noqa: F401  (registers the pairs of different families)
from ._transformed import (ExpRelaxedCategorical, Gumbel, HalfCauchy, InverseGamma, Kumaraswamy, LogisticNormal,
                           LogitRelaxedBernoulli, Pareto, RelaxedBernoulli, RelaxedOneHotCategorical,
                           TransformedDistribution, Weibull)

__all__ = ["Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Cauchy", "LogNormal", "HalfNormal",
           "StudentT", "Gamma", "Chi2", "Beta", "Dirichlet", "MultivariateNormal", "LowRankMultivariateNormal",
           "Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson", "Binomial",
           "NegativeBinomial", "Geometric", "Multinomial", "Independent", "MixtureSameFamily",
           "TransformedDistribution", "Gumbel", "HalfCauchy", "Weibull", "Pareto", "InverseGamma", "Kumaraswamy",
           "LogisticNormal", "LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical",
           "RelaxedOneHotCategorical", "VonMises", "FisherSnedecor", "GeneralizedPareto", "ContinuousBernoulli", "LKJCholesky", "Wishart",
           "transforms", "kl_divergence", "register_kl", "constraints", "biject_to", "transform_to",
           *transforms.__all__]
from .transforms import *  # noqa: E402,F401,F403  (torch.distributions names the transforms at the top too)

"""Splittable, reproducible PRNG keys with JAX's semantics, on the counter-based Threefry-2x32.

A key is a uint32 Array of shape (2,). Functions never mutate a key: split it to get fresh
ones. The numbers depend only on (key, shape, dtype), so every backend reproduces them, and
since the generator is a primitive, sampling works under jit with traced keys.

The streams are JAX's (its default, partitionable Threefry): key(seed), split, fold_in and bits
are bit for bit jax.random's, uniform, randint, permutation and choice too (uniform to the last
bit but for a fused multiply-add when minval and maxval are given), and normal, gumbel, laplace,
logistic, cauchy, exponential, categorical and rademacher use JAX's formulas on those draws, so
they agree to float rounding.
"""
from ._gamma import (GAMMA_ROUNDS, ball, beta, binomial, chisquare, dirichlet, f, gamma, generalized_normal, loggamma,
                     multinomial, t)
from ._samplers import (POISSON_ROUNDS, PRNGKey, bernoulli, bits, categorical, cauchy, choice, clone,
                        double_sided_maxwell, exponential, fold_in, geometric, gumbel, key, key_data, key_impl, laplace,
                        logistic, lognormal, maxwell, multivariate_normal, normal, orthogonal, pareto, permutation,
                        poisson, rademacher, randint, random_bits, rayleigh, split, triangular, truncated_normal,
                        uniform, wald, weibull_min, wrap_key_data)

__all__ = ["key", "PRNGKey", "split", "fold_in", "random_bits", "bits", "uniform", "normal", "truncated_normal",
           "randint", "bernoulli", "permutation", "gumbel", "categorical", "exponential", "laplace", "logistic",
           "cauchy", "lognormal", "rayleigh", "maxwell", "double_sided_maxwell", "weibull_min", "pareto", "geometric",
           "triangular", "wald", "poisson", "POISSON_ROUNDS", "rademacher", "choice", "multivariate_normal",
           "orthogonal", "gamma", "loggamma", "beta", "dirichlet", "chisquare", "t", "f", "binomial", "multinomial",
           "GAMMA_ROUNDS", "generalized_normal", "ball", "key_data", "wrap_key_data", "clone", "key_impl"]

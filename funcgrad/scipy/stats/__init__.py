"""funcgrad.scipy.stats: jax.scipy.stats' distributions with SciPy's signatures (stats.norm.logpdf(x,
loc=0, scale=1), stats.gamma.cdf(x, a, loc=0, scale=1), ...), composed from primitives, so they
differentiate in every argument the underlying functions do, run under jit and vmap and on the GPU."""
from ._continuous import (beta, cauchy, chi2, expon, gamma, gennorm, gumbel_l, gumbel_r, laplace, logistic, norm,
                          pareto, t, truncnorm, uniform, vonmises, wrapcauchy)
from ._descriptive import ModeResult, mode, rankdata, sem
from ._discrete import bernoulli, betabinom, binom, geom, nbinom, poisson
from ._kde import gaussian_kde
from ._multivariate import dirichlet, multinomial, multivariate_normal

__all__ = ["beta", "cauchy", "chi2", "expon", "gamma", "gennorm", "gumbel_l", "gumbel_r", "laplace", "logistic",
           "norm", "pareto", "t", "truncnorm", "uniform", "vonmises", "wrapcauchy", "bernoulli", "betabinom", "binom",
           "geom", "nbinom", "poisson", "dirichlet", "multinomial", "multivariate_normal", "mode", "ModeResult",
           "rankdata", "sem", "gaussian_kde"]

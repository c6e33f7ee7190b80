"""KL divergences between different families: each closed form against a Monte Carlo estimate of
E_p[log p(X) - log q(X)] (p's samples, both log-densities), and infinite where p leaves q's support."""
import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import distributions as D

from .helpers import assert_close


def _f(*values):
    return np.array(values, np.float64)


FAMILIES = {
    "Normal": lambda: D.Normal(_f(0.3, -0.5), _f(1.2, 0.7)),
    "Laplace": lambda: D.Laplace(_f(0.3, -0.5), _f(1.2, 0.7)),
    "Gumbel": lambda: D.Gumbel(_f(0.3, -0.5), _f(1.2, 0.7)),
    "Exponential": lambda: D.Exponential(_f(1.5, 0.4)),
    "Gamma": lambda: D.Gamma(_f(2.0, 0.7), _f(1.5, 3.0)),
    "Beta": lambda: D.Beta(_f(2.0, 0.7), _f(1.5, 3.0)),
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(probs=_f(0.3, 0.8)),
    "Uniform": lambda: D.Uniform(_f(0.1, 0.2), _f(0.6, 0.9)),
    "WideUniform": lambda: D.Uniform(_f(-1.0, -0.5), _f(2.0, 3.0)),
    "Pareto": lambda: D.Pareto(_f(1.0, 2.0), _f(3.0, 4.5)),
}
FINITE = [("Beta", "Exponential"), ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "WideUniform"),
          ("Beta", "ContinuousBernoulli"), ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Exponential"),
          ("Exponential", "Gamma"), ("Exponential", "Gumbel"), ("Exponential", "Normal"), ("Gamma", "Exponential"),
          ("Gamma", "Gumbel"), ("Gamma", "Normal"), ("Gumbel", "Normal"), ("Laplace", "Normal"), ("Normal", "Gumbel"),
          ("Normal", "Laplace"), ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"),
          ("Uniform", "Beta"), ("Uniform", "Gamma"), ("Uniform", "Gumbel"), ("Uniform", "Normal"),
          ("Uniform", "Exponential"), ("Uniform", "ContinuousBernoulli")]


@pytest.mark.parametrize("p_name,q_name", FINITE)
def test_closed_forms_agree_with_monte_carlo(p_name, q_name):
    p, q = FAMILIES[p_name](), FAMILIES[q_name]()
    x = p.sample(fg.random.key(0), (50000,))
    log_ratio = np.asarray(p.log_prob(x)) - np.asarray(q.log_prob(x))
    estimate, error = log_ratio.mean(0), log_ratio.std(0) / math.sqrt(len(log_ratio))
    exact = np.asarray(D.kl_divergence(p, q))
    assert np.all(np.abs(exact - estimate) < 5 * error + 1e-9), (exact, estimate, error)


@pytest.mark.parametrize("p_name,q_name", [("Normal", "Exponential"), ("Normal", "Beta"), ("Gumbel", "Uniform"),
                                           ("Exponential", "Beta"), ("Gamma", "Pareto"), ("Beta", "Pareto"),
                                           ("Pareto", "Uniform"), ("ContinuousBernoulli", "Pareto")])
def test_infinite_where_p_leaves_qs_support(p_name, q_name):
    assert np.all(np.isinf(np.asarray(D.kl_divergence(FAMILIES[p_name](), FAMILIES[q_name]()))))


def test_support_checks_are_per_batch_member_and_discrete_pairs():
    # U(0.1, 0.6) lies inside Beta's [0, 1], U(-1, 2) does not
    kl = np.asarray(D.kl_divergence(D.Uniform(_f(0.1, -1.0), _f(0.6, 2.0)), D.Beta(_f(2.0, 2.0), _f(3.0, 3.0))))
    assert np.isfinite(kl[0]) and np.isinf(kl[1])
    # a Pareto with alpha <= 2 has no variance: infinitely far from any normal
    assert np.isinf(np.asarray(D.kl_divergence(D.Pareto(1.0, 1.5), D.Normal(0.0, 1.0))))
    probs, rate = _f(0.3, 0.6), _f(1.5, 0.5)
    expected = (probs * np.log(probs) + (1 - probs) * np.log(1 - probs)) - (probs * np.log(rate) - rate)
    assert_close(D.kl_divergence(D.Bernoulli(probs=probs), D.Poisson(rate)), expected, rtol=1e-12)
    assert np.all(np.isinf(np.asarray(D.kl_divergence(D.Poisson(rate), D.Binomial(3, probs=probs)))))

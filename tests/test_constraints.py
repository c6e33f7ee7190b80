"""distributions.constraints, each distribution's support and arg_constraints, the transforms'
domains and codomains, and biject_to / transform_to: checks against hand-worked values, maps that
land inside their constraint and invert, Jacobians against finite differences."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import distributions as D
from funcgrad.distributions import constraints as C

from .helpers import assert_close


def _check(constraint, value):
    return np.asarray(constraint.check(fnp.asarray(value))).tolist()


def test_elementwise_constraints_check_each_value():
    v = [-1.0, 0.0, 0.5, 1.0, 2.0, np.nan]
    assert _check(C.real, v) == [True] * 5 + [False]
    assert _check(C.positive, v) == [False, False, True, True, True, False]
    assert _check(C.nonnegative, v) == [False, True, True, True, True, False]
    assert _check(C.unit_interval, v) == [False, True, True, True, False, False]
    assert _check(C.half_open_interval(0.0, 1.0), v) == [False, True, True, False, False, False]
    assert _check(C.less_than(1.0), v) == [True, True, True, False, False, False]
    assert _check(C.boolean, v) == [False, True, False, True, False, False]
    assert _check(C.nonnegative_integer, v) == [False, True, False, True, True, False]
    assert _check(C.positive_integer, v) == [False, False, False, True, True, False]
    assert _check(C.integer_interval(0, 1), v) == [False, True, False, True, False, False]


def test_event_constraints_check_each_event():
    assert _check(C.simplex, [[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]]) == [True, False, False]
    assert _check(C.one_hot, [[0, 1], [1, 1], [0.5, 0.5]]) == [True, False, False]
    assert _check(C.multinomial(3), [[1, 2], [2, 2], [-1, 1]]) == [True, False, False]
    assert _check(C.real_vector, [[1.0, np.nan], [1.0, 2.0]]) == [False, True]
    assert _check(C.independent(C.positive, 2), np.ones((3, 2, 2)) - np.eye(2)) == [False] * 3
    lower = [[1.0, 0.0], [0.5, 2.0]]
    assert _check(C.lower_triangular, [lower, [[1.0, 1.0], [0.0, 1.0]]]) == [True, False]
    assert _check(C.lower_cholesky, [lower, [[1.0, 0.0], [0.5, -2.0]]]) == [True, False]
    assert _check(C.corr_cholesky, [[[1.0, 0.0], [0.6, 0.8]], lower]) == [True, False]
    spd, indefinite = [[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]
    assert _check(C.symmetric, [spd, lower]) == [True, False]
    assert _check(C.positive_definite, [spd, indefinite, [[1.0, 0.0], [0.0, 0.0]]]) == [True, False, False]
    assert _check(C.positive_semidefinite, [spd, indefinite, [[1.0, 0.0], [0.0, 0.0]]]) == [True, False, True]
    assert _check(C.square, np.ones((2, 2, 3))) == [False, False]
    assert C.simplex.event_dim == 1 and C.independent(C.simplex, 2).event_dim == 3
    assert C.nonnegative_integer.is_discrete and not C.real.is_discrete
    assert repr(C.interval(0.0, 1.0)) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(C.independent(C.real, 1)) == "IndependentConstraint(Real(), 1)"


def test_supports_and_parameter_constraints_are_pytorchs():
    assert D.Normal(0.0, 1.0).support is C.real
    assert D.Gamma(2.0, 1.0).support is C.nonnegative
    assert D.Dirichlet(np.ones(3)).support is C.simplex
    assert repr(D.Uniform(-1.0, 2.0).support) == "Interval(lower_bound=-1.0, upper_bound=2.0)"
    assert repr(D.Categorical(logits=np.zeros(4)).support) == "IntegerInterval(lower_bound=0, upper_bound=3)"
    assert repr(D.Independent(D.Normal(np.zeros(3), 1.0), 1).support) == "IndependentConstraint(Real(), 1)"
    assert D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform()]).support is C.positive
    assert D.Normal(0.0, 1.0).arg_constraints == {"loc": C.real, "scale": C.positive}
    with pytest.raises(ValueError, match="Gamma: rate must be positive"):
        D.Gamma(1.0, np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"Uniform: low must be in LessThan"):
        D.Uniform(2.0, 1.0)
    with pytest.raises(ValueError, match=r"outside the support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        D.Exponential(1.0).log_prob(-0.5)
    # PyTorch's closed interval: high itself passes the check, with probability density 0
    assert float(D.Uniform(0.0, 1.0).log_prob(1.0)) == -np.inf


def test_transforms_know_their_domain_and_codomain():
    assert D.ExpTransform().codomain is C.positive and D.ExpTransform().inv.domain is C.positive
    assert D.StickBreakingTransform().codomain is C.simplex
    assert repr(D.StickBreakingTransform().domain) == "IndependentConstraint(Real(), 1)"
    assert repr(D.SigmoidTransform().codomain) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(D.IndependentTransform(D.ExpTransform(), 2).codomain) == \
        "IndependentConstraint(GreaterThan(lower_bound=0.0), 2)"
    assert D.LowerCholeskyTransform().codomain is C.lower_cholesky
    assert repr(D.ComposeTransform([D.AffineTransform(0.0, 2.0), D.ExpTransform()]).codomain) == \
        "GreaterThan(lower_bound=0.0)"


@pytest.mark.parametrize("constraint", [C.real, C.positive, C.greater_than(2.0), C.greater_than_eq(-1.0),
                                        C.less_than(1.5), C.unit_interval, C.interval(-1.0, 3.0),
                                        C.half_open_interval(0.0, 2.0), C.simplex, C.independent(C.positive, 1)])
def test_biject_to_maps_the_reals_onto_the_constraint_and_back(constraint):
    x = np.random.default_rng(1).standard_normal((5, 3))
    t = D.biject_to(constraint)
    y = t(x)
    assert np.all(np.asarray(constraint.check(y)))
    assert_close(t.inv(y), x, rtol=1e-9, atol=1e-9)
    if constraint.event_dim == 0:  # elementwise: log |dy/dx| against a central difference
        h = 1e-6
        numeric = (np.asarray(t(x + h)) - np.asarray(t(x - h))) / (2 * h)
        assert_close(t.log_abs_det_jacobian(x, y), np.log(np.abs(numeric)), rtol=1e-6, atol=1e-7)
    assert np.all(np.asarray(constraint.check(D.transform_to(constraint)(x))))


def test_the_registries_refuse_what_they_cannot_reach_and_take_new_entries():
    with pytest.raises(NotImplementedError, match="Cannot transform Boolean constraints"):
        D.biject_to(C.boolean)
    with pytest.raises(NotImplementedError, match="LowerCholesky"):
        D.biject_to(C.lower_cholesky)  # transform_to reaches it, not as a bijection of the reals
    assert isinstance(D.transform_to(C.lower_cholesky), D.LowerCholeskyTransform)
    assert isinstance(D.transform_to(C.simplex), D.SoftmaxTransform)

    class Halves(C.Constraint):
        def check(self, value):
            return value * 2 == fnp.round(value * 2)
    registry = D.constraint_registry.ConstraintRegistry()
    registry.register(Halves, lambda c: D.AffineTransform(0.0, 0.5))
    assert_close(registry(Halves())(np.array([1.0, 3.0])), [0.5, 1.5])
    with pytest.raises(TypeError, match="Constraint subclass"):
        registry.register(int, lambda c: None)


def test_a_support_works_under_jit():
    def log_p(x):
        return D.Gamma(2.0, 1.0).log_prob(x)
    assert_close(fg.jit(log_p)(np.array([0.5, 2.0])), log_p(np.array([0.5, 2.0])))


def test_finite_supports_enumerate_and_sum_to_one():
    cases = [D.Bernoulli(probs=np.array([0.2, 0.7])), D.Categorical(probs=np.array([[0.2, 0.8, 0.0], [0.3, 0.3, 0.4]])),
             D.Binomial(3, probs=np.array([0.2, 0.7])), D.OneHotCategorical(probs=np.array([[0.2, 0.8], [0.5, 0.5]]))]
    for dist in cases:
        assert dist.has_enumerate_support
        values = dist.enumerate_support()
        assert values.shape[1:] == tuple(dist.batch_shape) + tuple(dist.event_shape)
        assert np.all(np.asarray(dist.support.check(values)))
        assert_close(np.exp(np.asarray(dist.log_prob(values))).sum(0), np.ones(dist.batch_shape), rtol=1e-12)
        compact = dist.enumerate_support(expand=False)
        assert compact.shape[1:1 + len(dist.batch_shape)] == (1,) * len(dist.batch_shape)
        assert_close(dist.perplexity(), np.exp(np.asarray(dist.entropy())))
    assert_close(D.Binomial(3, probs=0.5).enumerate_support(), [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="one total_count"):
        D.Binomial(np.array([2.0, 3.0]), probs=0.5).enumerate_support()
    with pytest.raises(TypeError, match="no finite support"):
        D.Normal(0.0, 1.0).enumerate_support()
    assert not D.Normal(0.0, 1.0).has_enumerate_support

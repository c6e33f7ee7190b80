"""funcgrad.scipy.optimize.minimize (BFGS) against closed forms: a quadratic's minimiser and
inverse Hessian, Rosenbrock's minimum at ones; its statuses and refusals."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import optimize

from .helpers import assert_close


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_bfgs_finds_closed_form_minima():
    a = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.5]])
    b = np.array([1.0, -1.0, 2.0])
    result = optimize.minimize(lambda x, a, b: 0.5 * x @ fnp.asarray(a) @ x - x @ fnp.asarray(b), np.zeros(3),
                               args=(a, b), method="BFGS", options={"gtol": 1e-12})
    assert result.success and result.status == 0
    assert_close(result.x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-11)
    assert_close(result.jac, np.zeros(3), atol=1e-12)
    assert_close(result.hess_inv, np.linalg.inv(a), rtol=0.05, atol=0.05)  # the curvature BFGS has learned
    for n in (2, 6):
        result = optimize.minimize(rosenbrock, np.linspace(-1.2, 1.0, n), method="BFGS")
        assert result.success and result.nit > 10 and result.nfev >= result.nit
        assert_close(result.x, np.ones(n), rtol=1e-6, atol=1e-6)
        assert float(result.fun) < 1e-12


def test_statuses_and_refusals():
    limited = optimize.minimize(rosenbrock, np.array([-1.2, 1.0]), method="BFGS", options={"maxiter": 3})
    assert not limited.success and limited.status == 1 and limited.nit == 3
    assert optimize.minimize(rosenbrock, np.array([-1.2, 1.0], np.float32), method="BFGS").x.dtype == np.float32
    with pytest.raises(ValueError, match="method must be 'BFGS'"):
        optimize.minimize(rosenbrock, np.zeros(2), method="Nelder-Mead")
    with pytest.raises(TypeError, match="scalar"):
        optimize.minimize(lambda x: x * 2, np.zeros(2), method="BFGS")
    with pytest.raises(ValueError, match="x0 must be 1-dimensional"):
        optimize.minimize(rosenbrock, np.zeros((2, 2)), method="BFGS")
    with pytest.raises(ValueError, match="unknown options"):
        optimize.minimize(rosenbrock, np.zeros(2), method="BFGS", options={"maxfev": 3})
    with pytest.raises(TypeError, match="concrete values"):
        fg.jit(lambda x0: optimize.minimize(rosenbrock, x0, method="BFGS").x)(np.zeros(2))

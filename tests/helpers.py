"""Strategies and references shared by the tests."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


@st.composite
def broadcast_pair(draw, min_side=0, max_side=4):
    """Two shapes that broadcast together: the second drops leading axes and squashes some to 1."""
    a = draw(shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=max_side))
    drop = draw(st.integers(0, len(a)))
    b = list(a[drop:])
    for i in range(len(b)):
        if draw(st.booleans()):
            b[i] = 1
    if draw(st.booleans()):
        a, b = tuple(b), a
    return tuple(a), tuple(b)


def floats_array(draw, shape, lo=-2.0, hi=2.0, dtype=np.float64, away_from=None):
    """A float array in [lo, hi]; `away_from` keeps values at least 0.1 from a kink."""
    arr = draw(hnp.arrays(dtype, shape, elements=st.floats(lo, hi, allow_nan=False, width=64)
                          .map(lambda v: float(v)))).astype(dtype)
    if away_from is not None:
        near = np.abs(arr - away_from) < 0.1
        arr = np.where(near, away_from + 0.1 + np.abs(arr - away_from), arr)
    return arr


def assert_close(actual, expected, rtol=1e-6, atol=1e-6):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


def numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of scalar f at x (float64), element by element."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (float(f(hi)) - float(f(lo))) / (2 * eps)
    return g


def complex_numeric_grad(f, z, eps=1e-6):
    """dL/dx + i dL/dy per element of a complex z (PyTorch's gradient convention), or dL/dx of a
    real z, by central differences of the real scalar f."""
    import funcgrad.numpy as fnp
    z = np.asarray(z)
    out = np.zeros(z.shape, z.dtype)
    steps = (1.0, 1j) if np.iscomplexobj(z) else (1.0,)
    for k in np.ndindex(z.shape):
        for step in steps:
            e = np.zeros(z.shape, z.dtype)
            e[k] = eps * step
            out[k] += step * (float(f(fnp.asarray(z + e))) - float(f(fnp.asarray(z - e)))) / (2 * eps)
    return out

"""Strategies and references shared by the tests."""
from __future__ import annotations

import itertools

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
    wide = np.complex128 if np.iscomplexobj(actual) or np.iscomplexobj(expected) else np.float64  # both parts
    np.testing.assert_allclose(actual.astype(wide), expected.astype(wide), rtol=rtol, atol=atol)


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


def direct_conv(x, w, strides, pads, lhs_dilation, rhs_dilation, groups=1):
    """(N, C, *spatial) by (O, C / groups, *kernel): the input spread lhs_dilation apart, padded
    (negative pads crop), then every tap's strided slice times its kernel column, summed."""
    d = x.ndim - 2
    spread = np.zeros(x.shape[:2] + tuple((n - 1) * r + 1 for n, r in zip(x.shape[2:], lhs_dilation)))
    spread[(slice(None),) * 2 + tuple(slice(None, None, r) for r in lhs_dilation)] = x
    padded = np.pad(spread, [(0, 0)] * 2 + [(max(lo, 0), max(hi, 0)) for lo, hi in pads])
    padded = padded[(slice(None),) * 2 + tuple(slice(-lo if lo < 0 else 0, n + hi if hi < 0 else n)
                                                for (lo, hi), n in zip(pads, padded.shape[2:]))]
    reach = [(k - 1) * r + 1 for k, r in zip(w.shape[2:], rhs_dilation)]
    out_sizes = [(n - e) // s + 1 for n, e, s in zip(padded.shape[2:], reach, strides)]
    og, cg = w.shape[0] // groups, w.shape[1]
    out = np.zeros((x.shape[0], w.shape[0]) + tuple(out_sizes))
    for tap in itertools.product(*(range(k) for k in w.shape[2:])):
        sl = padded[(slice(None),) * 2 + tuple(slice(t * r, t * r + (m - 1) * s + 1, s)
                                               for t, r, s, m in zip(tap, rhs_dilation, strides, out_sizes))]
        for g in range(groups):
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", sl[:, g * cg:(g + 1) * cg],
                                                     w[(slice(g * og, (g + 1) * og), slice(None)) + tap])
    assert d == len(out_sizes)
    return out

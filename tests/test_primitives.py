"""Every primitive is one complete definition: no rule missing, its CUDA implementation importable,
and every elementwise primitive fusing into a CPU kernel that computes what its implementation does
(NumPy's values at infinities, NaN and signed zeros included)."""
from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

from funcgrad.cpu import fusion
from funcgrad.ops import core
from funcgrad.ops import elementwise as E
from funcgrad.ops.core import Primitive, ShapedArray, incomplete, registry

ELEMENTWISE = [v for v in vars(E).values() if isinstance(v, Primitive)]
PARAM_VALUES = {"approximate": (False, True),
                "dtype": tuple(map(np.dtype, (np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_)))}


def test_no_primitive_lacks_a_rule():
    assert incomplete() == []
    assert len(registry) >= 95


def test_a_missing_rule_is_reported():
    prim = Primitive("test_only_missing_rules", np.negative, shape_rule=None, batch_rule=None, cuda="elementwise")
    try:
        assert incomplete() == ["test_only_missing_rules: no shape_rule", "test_only_missing_rules: no batch_rule",
                                "test_only_missing_rules: differentiable but no VJP rule",
                                "test_only_missing_rules: differentiable but no JVP rule"]
    finally:
        del registry[prim.name]


def test_every_cuda_implementation_resolves():
    for prim in registry.values():
        assert callable(prim.impl_for("cuda")), prim.name


def test_every_elementwise_primitive_has_a_scalar_expression():
    assert len(ELEMENTWISE) >= 60
    assert [p.name for p in ELEMENTWISE if p.scalar is None] == []
    assert core.registry["bitcast"].scalar is None  # reinterprets memory: not elementwise


def _inputs(dtype, n: int = 64):
    """Three operands: the first with the edge values, the second a valid divisor and shift amount."""
    rng = np.random.default_rng(1)
    if dtype == np.bool_:
        return [rng.random(n) > 0.5 for _ in range(3)]
    if np.dtype(dtype).kind in "iu":  # no zero first: NumPy's integer reciprocal of 0 is undefined
        nonzero = rng.choice([-5, -3, -2, -1, 1, 2, 4, 5], n)
        return [nonzero.astype(dtype), rng.integers(1, 4, n).astype(dtype), rng.integers(-5, 6, n).astype(dtype)]
    x = rng.uniform(-2.5, 2.5, n)
    x[:8] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 0.5]
    return [x.astype(dtype), rng.uniform(0.5, 2.0, n).astype(dtype), rng.uniform(-1, 1, n).astype(dtype)]


def _cases(dtype, inputs):
    """(primitive, params, operand count, its value) for each primitive that takes `dtype`."""
    for prim in ELEMENTWISE:
        sig = inspect.signature(prim.scalar).parameters.values()
        n = sum(1 for p in sig if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        keywords = [p.name for p in sig if p.kind is p.KEYWORD_ONLY]
        for values in itertools.product(*(PARAM_VALUES[k] for k in keywords)):
            params = dict(zip(keywords, values))
            try:
                out = prim.shape_rule(*[ShapedArray((64,), dtype)] * n, **params).dtype
                with np.errstate(all="ignore"):
                    want = np.broadcast_to(prim.impl(*inputs[:n], **params), (64,))
            except TypeError:  # NumPy refuses these operands (bool negation): so does the primitive
                continue
            assert want.dtype == out, (prim.name, params, dtype)
            if out in fusion.FUSABLE_DTYPES:
                yield prim, params, n, want


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
def test_every_elementwise_primitive_fuses_into_a_cpu_kernel_that_agrees(dtype):
    dtype = np.dtype(dtype)
    inputs = _inputs(dtype)
    cases = list(_cases(dtype, inputs))
    steps = [fusion.step_source(prim, ["x0", "x1", "x2"][:n], [dtype] * n, params, want.dtype, f"s{j}")
             for j, (prim, params, n, want) in enumerate(cases)]
    kernel = fusion.compile_kernel(fusion.kernel_source(["full"] * 3, steps, list(range(len(steps)))))
    outs = [np.empty(64, want.dtype) for _, _, _, want in cases]
    kernel(*inputs, *outs)
    for (prim, params, n, want), got in zip(cases, outs):
        tol = {np.float32: 5e-6, np.float64: 1e-13}.get(want.dtype.type, 0)  # an integer's exp is a float
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=f"{prim.name} {params} on {dtype}")


def test_a_value_a_scalar_expression_reuses_is_computed_once_in_both_dialects():
    """polygamma's formula reads its reflected argument 1 - x (or x) ~30 times; rendered as one
    expression, the CPU and CUDA kernels copied it into every use, and numba took 4 s to compile each
    (the PTX check's costliest cases). Shared nodes are now assigned once, before the step."""
    from funcgrad.cuda.kernels import elementwise as cuda_elementwise
    from funcgrad.ops import scalar
    from funcgrad.ops.special import polygamma_p
    f32 = np.dtype(np.float32)
    cpu = fusion.step_source(polygamma_p, ["x0"], [f32], {"n": 1}, f32, "s0")
    cuda = cuda_elementwise.chain_source((f32,), ((polygamma_p.scalar, (("n", 1),), (("in", 0),), f32),), (0,))
    for source in ("\n".join(cpu.shared + (cpu.expr,)), cuda):
        assert source.count("(np.float32(1.0) - ") == 1, source  # 1 - x, reflected
    x = scalar.operand("x", f32)
    twice = scalar.exp(x) + 1.0
    shared, expr = fusion.NUMBA.render_lines(scalar.where(twice > 2.0, twice * twice, x), f32, "c")
    assert shared == ["c0 = (vm.exp(x) + np.float32(1.0))"]  # operands and literals are not shared nodes
    assert expr == "((c0 * c0) if (c0 > np.float32(2.0)) else x)"

"""Layer and RMS normalisation as one fused primitive (ops/normalization.py): values against NumPy,
gradients against central differences (first order through the fused backward kernel, second
order through the composed rule), jvp, vmap, jit and the device."""
import re

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.ops import normalization as N

from .helpers import assert_close, numeric_grad

rng = np.random.default_rng(0)


def _reference(x, axes, eps, center):
    mean = x.mean(axis=axes, keepdims=True) if center else 0.0
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)


CASES = [((7, 5), 5, 1e-5), ((3, 4, 6), (4, 6), 1e-5), ((2, 1), 1, 1e-3), ((4, 9), 9, 0.0)]


@pytest.mark.parametrize("shape, normalized, eps", CASES)
@pytest.mark.parametrize("center", [True, False])
def test_values_and_both_orders_of_gradient(shape, normalized, eps, center):
    x = rng.standard_normal(shape) * 3 + 1
    w = rng.standard_normal(np.shape(np.empty(normalized if isinstance(normalized, tuple) else (normalized,))))
    axes = tuple(range(len(shape) - np.ndim(np.empty(normalized if isinstance(normalized, tuple) else (normalized,))),
                       len(shape)))
    if center:
        f = lambda x, w: nn.layer_norm(x, normalized, w, w * 0.5, eps=eps)  # noqa: E731
        ref = _reference(x, axes, eps, True) * w + w * 0.5
    else:
        f = lambda x, w: nn.rms_norm(x, normalized, w, eps=eps)  # noqa: E731
        ref = _reference(x, axes, eps, False) * w
    assert_close(f(x, w), ref, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(shape)
    loss = lambda x, w: fnp.sum(f(x, w) * g)  # noqa: E731
    with fg.profiler.profile() as prof:
        dx, dw = fg.grad(loss, argnums=(0, 1))(x, w)
    assert "norm_grad" in {r["name"] for r in prof.key_averages()}  # the fused backward pass
    assert_close(dx, numeric_grad(lambda v: np.sum(_ref_fn(v, axes, eps, center, w) * g), x), rtol=1e-6, atol=1e-7)
    assert_close(dw, numeric_grad(lambda v: np.sum(_ref_fn(x, axes, eps, center, v) * g), w), rtol=1e-6, atol=1e-7)
    if shape[-1] > 1 and eps > 0:  # second order: the rule composes primitives once g is differentiated
        hess_row = fg.grad(lambda x: fnp.sum(fg.grad(loss)(x, w) ** 2))(x)
        first = lambda v: _vjp_reference(v, g * w, axes, eps, center)  # noqa: E731
        assert_close(hess_row, numeric_grad(lambda v: np.sum(first(v) ** 2), x), rtol=1e-5, atol=1e-6)


def _vjp_reference(x, g, axes, eps, center):
    """PyTorch's layer-norm backward formula: rstd (g - mean(g) - xhat mean(g xhat))."""
    mean = x.mean(axis=axes, keepdims=True) if center else 0.0
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    g_mean = g.mean(axis=axes, keepdims=True) if center else 0.0
    return rstd * (g - g_mean - xhat * (g * xhat).mean(axis=axes, keepdims=True))


def _ref_fn(x, axes, eps, center, w):
    out = _reference(x, axes, eps, center) * w
    return out + w * 0.5 if center else out


def test_jvp_vmap_jit_and_a_constant_row():
    x = rng.standard_normal((6, 8))
    x[2] = 4.0  # zero variance: normalised to 0 with finite gradients, as PyTorch's (eps > 0)
    t = rng.standard_normal((6, 8))
    f = lambda x: nn.layer_norm(x, 8)  # noqa: E731
    out, tangent = fg.jvp(f, (x,), (t,))
    assert_close(out[2], np.zeros(8), atol=1e-12)
    step = 1e-6
    assert_close(tangent, (_reference(x + step * t, (1,), 1e-5, True) - _reference(x - step * t, (1,), 1e-5, True))
                 / (2 * step), rtol=1e-5, atol=1e-6)
    assert np.isfinite(np.asarray(fg.grad(lambda x: fnp.sum(f(x) * t))(x))).all()
    batched = fg.vmap(f, in_axes=1, out_axes=1)(np.stack([x, 2 * x], axis=1))
    assert_close(batched, np.stack([f(x), f(2 * x)], axis=1), rtol=1e-12, atol=1e-12)
    loss = lambda x: fnp.sum(nn.rms_norm(x, 8, eps=1e-6) * t)  # noqa: E731
    assert_close(fg.jit(fg.grad(loss))(x), fg.grad(loss)(x), rtol=1e-12, atol=1e-12)


def test_low_precision_and_bad_input():
    x = rng.standard_normal((4, 16)).astype(np.float32)
    half = nn.layer_norm(fg.asarray(x).astype(fg.bfloat16), 16)
    assert half.dtype == fg.bfloat16
    assert_close(half.astype(fg.float32), _reference(x, (1,), 1e-5, True), rtol=2e-2, atol=2e-2)
    with pytest.raises(TypeError, match="int64"):
        N.norm_p(fg.asarray(np.arange(6).reshape(2, 3)), eps=1e-5, center=True)
    with pytest.raises(ValueError, match="cotangent of shape"):
        N.norm_grad_p(fg.asarray(x), fg.asarray(x[:2]), eps=1e-5, center=True)


@pytest.mark.parametrize("norm, fname, affine", [
    (lambda x, w, b: nn.layer_norm(x, (4, 5), w, b), "layer_norm", (4, 5)),
    (lambda x, w, b: nn.rms_norm(x, (4, 5), w), "rms_norm", (4, 5)),
    (lambda x, w, b: nn.group_norm(x, 2, w, b), "group_norm", (4,))])
def test_affine_parameters_of_any_other_shape_raise(norm, fname, affine):
    """As PyTorch's: the weight (and bias) has the normalised shape (group_norm: one per channel);
    broadcast, a (1,) weight would scale every feature alike, and reshaped, a (2, 2) one would do
    for 4 channels, both without a word. The right shape still gives x_hat * w + b."""
    x = rng.standard_normal((3, 4, 5))
    w, b = rng.standard_normal(affine), rng.standard_normal(affine)
    axes = (1, 2) if fname != "group_norm" else None
    if axes:
        expected = _reference(x, axes, 1e-5 if fname == "layer_norm" else np.finfo(np.float64).eps,
                              fname == "layer_norm") * w + (b if fname == "layer_norm" else 0)
    else:
        grouped = x.reshape(3, 2, 10)
        expected = _reference(grouped, (2,), 1e-5, True).reshape(x.shape) * w[:, None] + b[:, None]
    assert_close(norm(x, w, b), expected, atol=1e-10)
    for wrong in [(1,), (2, 2), affine[::-1] + (1,)]:
        with pytest.raises(fg.ShapeError, match=rf"{fname}: weight must have shape {re.escape(str(affine))}"):
            norm(x, np.ones(wrong), b)
    if fname != "rms_norm":
        with pytest.raises(fg.ShapeError, match=rf"{fname}: bias must have shape"):
            norm(x, w, np.ones((1,)))


HALF_NORMS = {  # each normalisation over (N, C, H, W) input, with per-channel or per-feature float32 params
    "batch_norm train": lambda x, w, b: nn.batch_norm(x, None, None, w, b, training=True),
    "batch_norm eval": lambda x, w, b: nn.batch_norm(x, fnp.full(8, 4.5, w.dtype), fnp.full(8, 9.0, w.dtype), w, b),
    "group_norm": lambda x, w, b: nn.group_norm(x, 4, w, b),
    "instance_norm": lambda x, w, b: nn.instance_norm(x, weight=w, bias=b),
    "instance_norm eval": lambda x, w, b: nn.instance_norm(x, fnp.full(8, 4.5, w.dtype), fnp.full(8, 9.0, w.dtype),
                                                           w, b, use_input_stats=False),
    "layer_norm": lambda x, w, b: nn.layer_norm(x, x.shape[-1], w[:6], b[:6]),
    "rms_norm": lambda x, w, b: nn.rms_norm(x, x.shape[-1], w[:6], eps=1e-5),
    "layer_norm without affine": lambda x, w, b: nn.layer_norm(x, x.shape[-1]),  # the fused kernel's own rounding
    "rms_norm without affine": lambda x, w, b: nn.rms_norm(x, x.shape[-1], eps=1e-5),
}


@pytest.mark.parametrize("name", HALF_NORMS)
@pytest.mark.parametrize("dtype", [fg.float16, fg.bfloat16])
def test_half_inputs_are_normalised_in_float32_and_rounded_once(name, dtype):
    """As PyTorch's: the output has the input's dtype (also beside float32 weights) and is the exact
    result rounded once, within half a unit in its last place. Normalised in float16, the batch and
    group norms' errors were two to three times that."""
    x = fg.asarray(rng.standard_normal((4, 8, 6, 6)) * 3 + 5).astype(dtype)
    w, b = fg.asarray(rng.standard_normal(8)).astype(dtype), fg.asarray(rng.standard_normal(8)).astype(dtype)
    out = HALF_NORMS[name](x, w.astype(fg.float32), b.astype(fg.float32))
    assert out.dtype == dtype
    exact = np.asarray(HALF_NORMS[name](x.astype(fg.float64), w.astype(fg.float64), b.astype(fg.float64)))
    got = np.asarray(out.astype(fg.float64))
    half_ulp = 0.5 * np.spacing(np.abs(got).astype(np.dtype(dtype))).astype(np.float64)
    float32_error = 2e-5  # of the float32 terms (of size ~10) that the last step adds, where they cancel
    assert np.all(np.abs(got - exact) <= half_ulp * 1.01 + float32_error), np.max(np.abs(got - exact) / half_ulp)
    same = HALF_NORMS[name](x, w, b)  # half weights: the same rounding of the same value
    assert same.dtype == dtype
    assert np.array_equal(np.asarray(same.astype(fg.float64)), got)

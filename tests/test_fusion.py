"""nn.utils.fuse_conv_bn_eval / fuse_linear_bn_eval: the fused layer computes what the layer and the
evaluation-mode batch norm computed together."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn

from .helpers import assert_close

RNG = np.random.default_rng(6)


def _trained_norm(norm, channels):
    """A batch norm with non-trivial statistics and affine parameters."""
    return norm.replace(running_mean=fnp.asarray(RNG.standard_normal(channels)),
                        running_var=fnp.asarray(RNG.uniform(0.5, 2.0, channels)),
                        weight=fnp.asarray(RNG.standard_normal(channels)),
                        bias=fnp.asarray(RNG.standard_normal(channels)))


@pytest.mark.parametrize("bias", [True, False])
def test_fused_convolution_computes_conv_then_batch_norm(bias):
    conv = nn.Conv2d(3, 4, 3, padding=1, bias=bias, key=fg.random.key(0), dtype=np.float64)
    bn = _trained_norm(nn.BatchNorm2d(4, dtype=np.float64), 4)
    x = RNG.standard_normal((2, 3, 5, 5))
    fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    assert_close(fused(x), bn(conv(x)), rtol=1e-10, atol=1e-12)
    transposed = nn.ConvTranspose2d(3, 4, 3, key=fg.random.key(1), dtype=np.float64)
    assert_close(nn.utils.fuse_conv_bn_eval(transposed, bn, transpose=True)(x), bn(transposed(x)), rtol=1e-10,
                 atol=1e-12)


def test_fused_linear_computes_linear_then_batch_norm_and_the_errors():
    linear = nn.Linear(5, 4, key=fg.random.key(2), dtype=np.float64)
    bn = _trained_norm(nn.BatchNorm1d(4, dtype=np.float64), 4)
    x = RNG.standard_normal((6, 5))
    assert_close(nn.utils.fuse_linear_bn_eval(linear, bn)(x), bn(linear(x)), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="4 outputs but the batch norm 3"):
        nn.utils.fuse_linear_bn_eval(linear, nn.BatchNorm1d(3))
    with pytest.raises(ValueError, match="training mode"):
        nn.utils.fuse_linear_bn_eval(linear, nn.BatchNorm1d(4, training=True))
    with pytest.raises(ValueError, match="no running statistics"):
        nn.utils.fuse_linear_bn_eval(linear, nn.BatchNorm1d(4, track_running_stats=False))

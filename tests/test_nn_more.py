"""The rest of torch.nn's everyday surface: activations, image helpers, margin and likelihood
losses, padding layers and containers, against NumPy formulas and loops (the same cases were
checked equal to PyTorch 2.13 when they were written)."""
import math
import re

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.nn import functional as F

from .helpers import assert_close

RNG = np.random.default_rng(0)


def test_functional_namespace_has_pytorchs_losses_and_layers_their_modules():
    for name in ("cross_entropy", "mse_loss", "nll_loss", "binary_cross_entropy_with_logits", "relu", "conv2d",
                 "pixel_shuffle", "glu", "triplet_margin_loss", "unfold"):
        assert callable(getattr(F, name)), name
    assert not hasattr(F, "PixelShuffle")  # layers live in nn, as torch.nn's


def test_activations():
    x = RNG.standard_normal((2, 6, 3)) * 2
    a, b = x[:, :3], x[:, 3:]
    assert_close(F.glu(x, 1), a / (1 + np.exp(-b)))
    assert_close(F.softmin(x, -1), np.exp(-x) / np.exp(-x).sum(-1, keepdims=True))
    assert_close(F.hardshrink(x, 1.0), np.where(np.abs(x) > 1, x, 0))
    assert_close(F.softshrink(x, 1.0), np.where(x > 1, x - 1, np.where(x < -1, x + 1, 0)))
    assert_close(F.tanhshrink(x), x - np.tanh(x))
    assert_close(F.threshold(x, 0.3, -2.0), np.where(x > 0.3, x, -2.0))
    slopes = RNG.random(6)
    assert_close(F.prelu(x, slopes), np.where(x > 0, x, slopes[None, :, None] * x))
    assert_close(nn.PReLU()(x), np.where(x > 0, x, 0.25 * x))
    assert_close(nn.Hardtanh(-0.5, 2.0)(x), np.clip(x, -0.5, 2.0))
    with pytest.raises(fg.ShapeError, match="size 3 is odd"):
        F.glu(x, -1)
    with pytest.raises(fg.ShapeError, match="one per channel"):
        F.prelu(x, np.ones(4))
    fg.check_grads(lambda v: F.glu(v, 1) + F.softshrink(v[:, :3], 0.5), (x,), order=1)


def test_pixel_shuffle_unfold_and_fold():
    x = RNG.standard_normal((2, 8, 3, 4))
    shuffled = F.pixel_shuffle(x, 2)
    assert shuffled.shape == (2, 2, 6, 8)
    assert_close(shuffled[:, 1, 3, 5], x[:, 1 * 4 + 1 * 2 + 1, 1, 2])  # c r^2 + i r + j -> (h r + i, w r + j)
    assert_close(F.pixel_unshuffle(shuffled, 2), x)
    image = RNG.standard_normal((2, 3, 7, 6))
    cols = np.asarray(F.unfold(image, (2, 3), dilation=1, padding=1, stride=2))
    padded = np.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.stack([padded[:, :, i:i + 2, j:j + 3].reshape(2, -1) for i in range(0, 8, 2)
                         for j in range(0, 6, 2)], -1)
    assert_close(cols, expected)
    # fold adds each window back: fold(unfold(x)) counts every pixel once per window holding it
    ones = np.ones((1, 1, 5, 5))
    counts = np.asarray(F.fold(F.unfold(ones, 3, padding=1), (5, 5), 3, padding=1))[0, 0]
    assert counts[2, 2] == 9 and counts[0, 0] == 4 and counts[0, 2] == 6
    fg.check_grads(lambda c: F.fold(c, (7, 6), 3, 1, 1), (RNG.standard_normal((1, 27, 42)),), order=1)
    with pytest.raises(fg.ShapeError, match="5 blocks given"):
        F.fold(np.ones((2, 27, 5)), (7, 6), 3)


def test_instance_norm_adaptive_pools_and_channel_dropout():
    image = RNG.standard_normal((2, 3, 7, 6))
    mean, var = image.mean((2, 3), keepdims=True), image.var((2, 3), keepdims=True)
    assert_close(F.instance_norm(image), (image - mean) / np.sqrt(var + 1e-5), atol=1e-9)
    assert_close(nn.InstanceNorm2d(3)(image[0]), ((image - mean) / np.sqrt(var + 1e-5))[0], atol=1e-9)
    with pytest.raises(ValueError, match="cannot be updated in place"):
        F.instance_norm(image, np.zeros(3), np.ones(3))
    values, indices = F.adaptive_max_pool2d(image, (3, 2), return_indices=True)
    # PyTorch's windows: rows [0, 3), [2, 5), [4, 7); columns [0, 3), [3, 6)
    assert_close(values[:, :, 1, 1], image[:, :, 2:5, 3:6].max((2, 3)))
    assert np.array_equal(np.take_along_axis(image.reshape(2, 3, -1), np.asarray(indices).reshape(2, 3, -1), 2),
                          np.asarray(values).reshape(2, 3, -1))
    empty = F.adaptive_max_pool2d(np.zeros((0, 3, 7, 6)), (3, 2), return_indices=True)  # an empty batch, as PyTorch's
    assert empty[0].shape == empty[1].shape == (0, 3, 3, 2)
    seq = RNG.standard_normal((2, 3, 10))
    assert_close(F.adaptive_avg_pool1d(seq, 4)[..., 1], seq[..., 2:5].mean(-1))
    kept = np.asarray(F.dropout2d(np.ones((50, 8, 2, 2)), 0.5, fg.random.key(0)))
    assert set(np.unique(kept)) <= {0.0, 2.0} and (kept == kept[:, :, :1, :1]).all()  # whole channels
    assert 0.3 < (kept[:, :, 0, 0] == 0).mean() < 0.7
    assert np.array_equal(F.dropout1d(seq, 0.5), seq)  # no key: evaluation


def test_margin_and_distance_losses():
    a, b, c = RNG.standard_normal((3, 4, 5))
    y = np.array([1.0, -1, 1, -1])
    d = np.linalg.norm(a - b + 1e-6, axis=-1)
    assert_close(F.pairwise_distance(a, b), d)
    assert_close(F.margin_ranking_loss(a[:, 0], b[:, 0], y, 0.3), np.maximum(0, -y * (a[:, 0] - b[:, 0]) + 0.3).mean())
    signs = np.where(a > 0, 1.0, -1.0)
    assert_close(F.hinge_embedding_loss(a, signs, 0.7, reduction="sum"),
                 np.where(signs == 1, a, np.maximum(0, 0.7 - a)).sum())
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    assert_close(F.cosine_embedding_loss(a, b, y, 0.1, reduction="none"),
                 np.where(y == 1, 1 - cos, np.maximum(0, cos - 0.1)))
    d_neg = np.minimum(np.linalg.norm(a - c + 1e-6, axis=-1), np.linalg.norm(b - c + 1e-6, axis=-1))
    assert_close(F.triplet_margin_loss(a, b, c, 0.5, swap=True), np.maximum(d - d_neg + 0.5, 0).mean())
    assert_close(nn.TripletMarginLoss(margin=0.5, swap=True)(a, b, c), F.triplet_margin_loss(a, b, c, 0.5, swap=True))
    assert_close(F.soft_margin_loss(a, signs), np.log1p(np.exp(-signs * a)).mean())
    targets, weights = (RNG.random((4, 5)) > 0.5).astype(float), RNG.random(5)
    per = -(targets * np.log(1 / (1 + np.exp(-a))) + (1 - targets) * np.log(1 / (1 + np.exp(a)))) * weights
    assert_close(F.multilabel_soft_margin_loss(a, targets, weights), per.mean(-1).mean())
    labels = np.array([0, 4, 2, 2])
    margins = np.maximum(0, 0.8 - a[np.arange(4), labels][:, None] + a) ** 2
    margins[np.arange(4), labels] = 0
    assert_close(F.multi_margin_loss(a, labels, 2, 0.8, weights), (margins.sum(1) / 5 * weights[labels]).mean())
    with pytest.raises(TypeError, match="takes 3 inputs"):
        nn.MarginRankingLoss()(a, b)
    fg.check_grads(lambda p, q: F.triplet_margin_loss(p, q, c, swap=True) + F.cosine_embedding_loss(p, q, y),
                   (a, b), order=1)


def test_likelihood_losses():
    x, target = RNG.standard_normal((3, 4)), RNG.poisson(2.0, (3, 4)).astype(float)
    assert_close(F.poisson_nll_loss(x, target), (np.exp(x) - target * x).mean())
    rate = np.abs(x) + 0.1
    stirling = np.where(target > 1, target * np.log(np.maximum(target, 1)) - target
                        + 0.5 * np.log(2 * math.pi * np.maximum(target, 1)), 0)
    assert_close(F.poisson_nll_loss(rate, target, log_input=False, full=True, reduction="sum"),
                 (rate - target * np.log(rate + 1e-8) + stirling).sum())
    mu, var = RNG.standard_normal((3, 4)), RNG.random((3, 4)) + 0.1
    expected = 0.5 * (np.log(var) + (x - mu) ** 2 / var)
    assert_close(F.gaussian_nll_loss(x, mu, var), expected.mean())
    assert_close(F.gaussian_nll_loss(x, mu, var[:, 0], full=True, reduction="none"),
                 0.5 * (np.log(var[:, :1]) + (x - mu) ** 2 / var[:, :1]) + 0.5 * math.log(2 * math.pi))
    # a variance below eps is clamped for the value, but its gradient passes as through the identity
    tiny = np.full((3, 4), 1e-9)
    assert_close(F.gaussian_nll_loss(x, mu, tiny, reduction="sum"), (0.5 * (np.log(1e-6) + (x - mu) ** 2 / 1e-6)).sum())
    grad = fg.grad(lambda v: F.gaussian_nll_loss(x, mu, v, reduction="sum"), argnums=0)(tiny)
    assert_close(grad, 0.5 * (1 / 1e-6 - (x - mu) ** 2 / 1e-12), rtol=1e-9)
    with pytest.raises(fg.ShapeError, match="var of shape"):
        F.gaussian_nll_loss(x, mu, np.ones((3, 2)))
    with pytest.raises(ValueError, match="negative entries"):
        F.gaussian_nll_loss(x, mu, -var)


def test_padding_layers_containers_and_unflatten():
    image = RNG.standard_normal((1, 2, 3, 4))
    assert_close(nn.ZeroPad2d((1, 2, 0, 3))(image), np.pad(image, ((0, 0), (0, 0), (0, 3), (1, 2))))
    assert_close(nn.ConstantPad1d(2, 3.5)(image[0]), np.pad(image[0], ((0, 0), (0, 0), (2, 2)), constant_values=3.5))
    assert_close(nn.ReflectionPad2d(1)(image), np.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    assert_close(nn.ReplicationPad1d((1, 3))(image[0]), np.pad(image[0], ((0, 0), (0, 0), (1, 3)), mode="edge"))
    assert_close(nn.CircularPad2d(1)(image), np.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap"))
    with pytest.raises(ValueError, match="4 ints"):
        nn.ZeroPad2d((1, 2))
    assert nn.Unflatten(1, (-1, 3))(np.ones((4, 6))).shape == (4, 2, 3)
    with pytest.raises(fg.ShapeError, match="cannot become"):
        nn.Unflatten(1, (4, 3))(np.ones((4, 6)))
    k1, k2 = fg.random.split(fg.random.key(0))
    blocks = nn.ModuleList([nn.Linear(3, 3, key=k1), nn.Linear(3, 3, key=k2)])
    assert len(blocks) == 2 and isinstance(blocks[1], nn.Linear) and len(blocks[:1]) == 1
    assert [n for n, _ in blocks.named_parameters(pytorch_names=True)] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    with pytest.raises(TypeError, match="immutable"):
        blocks.append(nn.Linear(3, 3, key=k1))
    heads = nn.ModuleDict({"cls": nn.Linear(3, 2, key=k1)})
    assert "cls" in heads and list(heads) == ["cls"] and heads["cls"].weight.shape == (2, 3)
    assert [n for n, _ in heads.named_parameters(pytorch_names=True)] == ["cls.weight", "cls.bias"]
    grads = fg.grad(lambda m, x: fnp.sum(m[0](x) + m[1](x)))(blocks, np.ones((1, 3)))
    assert isinstance(grads, nn.ModuleList) and grads[0].bias.shape == (3,)


def test_pytorchs_dim_keyword_where_funcgrad_says_axis():
    x = RNG.standard_normal((3, 4))
    assert_close(F.softmax(x, dim=0), np.exp(x) / np.exp(x).sum(0))
    assert_close(F.log_softmax(x, dim=0), x - np.log(np.exp(x).sum(0)))
    assert_close(F.normalize(x, dim=0), x / np.linalg.norm(x, axis=0))
    assert_close(F.cosine_similarity(x, 2 * x + 1, dim=0), F.cosine_similarity(x, 2 * x + 1, axis=0))
    assert_close(nn.Softmax(dim=0)(x), np.exp(x) / np.exp(x).sum(0))
    assert_close(nn.LogSoftmax(dim=1)(x), x - np.log(np.exp(x).sum(1, keepdims=True)))


def _reference_attention(q, k, v, w_in, b_in, w_out, b_out, heads, drop=None):
    """PyTorch's multi-head attention in NumPy: (L, N, E) inputs, `drop` a boolean (L, S) mask of
    the pairs that may not attend."""
    e = q.shape[-1]
    qp, kp, vp = (t @ w_in[i * e:(i + 1) * e].T + b_in[i * e:(i + 1) * e] for i, t in enumerate((q, k, v)))
    def split(t):  # (L, N, E) -> (N, H, L, E / H)
        return t.reshape(t.shape[0], t.shape[1], heads, e // heads).transpose(1, 2, 0, 3)

    scores = split(qp) @ split(kp).transpose(0, 1, 3, 2) / math.sqrt(e // heads)
    if drop is not None:
        scores = np.where(drop, -np.inf, scores)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    out = (weights @ split(vp)).transpose(2, 0, 1, 3).reshape(q.shape[0], q.shape[1], e)
    return out @ w_out.T + b_out, weights.mean(1)


def test_multihead_attention_is_pytorchs_with_its_names_and_mask_convention():
    mha = nn.MultiheadAttention(8, 2, key=fg.random.key(0), dtype=fnp.float64)
    assert [n for n, _ in mha.named_parameters(pytorch_names=True)] == ["in_proj_weight", "in_proj_bias",
                                                                        "out_proj.weight", "out_proj.bias"]
    mha = mha.load_state_dict({"in_proj_weight": RNG.standard_normal((24, 8)), "in_proj_bias": RNG.standard_normal(24),
                               "out_proj.weight": RNG.standard_normal((8, 8)), "out_proj.bias": RNG.standard_normal(8)})
    q, k, v = RNG.standard_normal((5, 3, 8)), RNG.standard_normal((7, 3, 8)), RNG.standard_normal((7, 3, 8))
    drop = RNG.random((5, 7)) > 0.7
    drop[:, 0] = False
    params = [np.asarray(p) for _, p in mha.named_parameters()]
    expected, weights = _reference_attention(q, k, v, *params, heads=2, drop=drop)
    out, got_weights = mha(q, k, v, attn_mask=drop)  # True = may NOT attend, as PyTorch's
    assert_close(out, expected)
    assert_close(got_weights, weights)
    batch_first = nn.MultiheadAttention(8, 2, batch_first=True, key=fg.random.key(0), dtype=fnp.float64)
    batch_first = batch_first.load_state_dict(mha.state_dict())
    assert_close(batch_first(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2), need_weights=False)[0],
                 _reference_attention(q, k, v, *params, heads=2)[0].transpose(1, 0, 2))
    causal, _ = mha(q, q, q, is_causal=True)
    assert_close(causal, _reference_attention(q, q, q, *params, heads=2, drop=np.triu(np.ones((5, 5), bool), 1))[0])


def test_transformer_encoder_layer_post_and_pre_norm():
    def layer_norm(x):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)

    x = RNG.standard_normal((6, 2, 8))
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(8, 2, 16, norm_first=norm_first, key=fg.random.key(1), dtype=fnp.float64)
        p = {n: np.asarray(a) for n, a in layer.named_parameters(pytorch_names=True)}
        def attend(h):
            return _reference_attention(h, h, h, p["self_attn.in_proj_weight"], p["self_attn.in_proj_bias"],
                                        p["self_attn.out_proj.weight"], p["self_attn.out_proj.bias"], 2)[0]

        def ff(h):
            hidden = np.maximum(h @ p["linear1.weight"].T + p["linear1.bias"], 0)
            return hidden @ p["linear2.weight"].T + p["linear2.bias"]

        if norm_first:
            h = x + attend(layer_norm(x))
            expected = h + ff(layer_norm(h))
        else:
            h = layer_norm(x + attend(x))
            expected = layer_norm(h + ff(h))
        assert_close(layer(x), expected, atol=1e-9)
    encoder = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(8, dtype=fnp.float64))
    assert len([n for n, _ in encoder.named_parameters(pytorch_names=True)]) == 3 * 12 + 2
    grads = fg.grad(lambda m: fnp.sum(m(x) ** 2))(encoder)
    assert grads.layers[0].linear1.weight.shape == (16, 8)
    trained = fg.tree_map(lambda w, g: w - 0.1 * g, encoder, grads)
    assert not np.allclose(trained.layers[0].linear1.weight, trained.layers[2].linear1.weight)  # copies train apart


def test_transformer_layers_batch_first_transpose_the_sequence_layout():
    """batch_first reaches the attention (it once landed in add_bias_kv): the same parameters give
    the (L, N, E) layer's outputs with the first two axes swapped, and no bias_k / bias_v."""
    x, memory = RNG.standard_normal((5, 2, 8)), RNG.standard_normal((4, 2, 8))
    for cls, args in ((nn.TransformerEncoderLayer, (x,)), (nn.TransformerDecoderLayer, (x, memory))):
        seq_first = cls(8, 2, 16, dropout=0.0, key=fg.random.key(2), dtype=fnp.float64)
        batch_first = cls(8, 2, 16, dropout=0.0, batch_first=True, key=fg.random.key(3), dtype=fnp.float64)
        names = [n for n, _ in batch_first.named_parameters(pytorch_names=True)]
        assert names == [n for n, _ in seq_first.named_parameters(pytorch_names=True)]
        assert not any("bias_k" in n or "bias_v" in n for n in names)
        batch_first = batch_first.load_state_dict(seq_first.state_dict())
        assert_close(batch_first(*(a.transpose(1, 0, 2) for a in args)), seq_first(*args).numpy().transpose(1, 0, 2),
                     atol=1e-12)


def test_transformer_decoder_and_full_model_compose_the_layers():
    mask = np.asarray(nn.Transformer.generate_square_subsequent_mask(4))
    assert np.array_equal(np.isinf(mask), np.triu(np.ones((4, 4), bool), 1)) and (mask[np.tril_indices(4)] == 0).all()
    model = nn.Transformer(8, 2, 2, 1, 16, key=fg.random.key(0), dtype=fnp.float64)
    names = [n for n, _ in model.named_parameters(pytorch_names=True)]
    assert len(names) == 2 * 12 + 2 + 18 + 2 and "decoder.layers.0.multihead_attn.in_proj_weight" in names
    src, tgt = RNG.standard_normal((7, 2, 8)), RNG.standard_normal((5, 2, 8))
    out = model(src, tgt, tgt_mask=np.asarray(nn.Transformer.generate_square_subsequent_mask(5)))
    memory = model.encoder(src)
    assert_close(out, model.decoder(tgt, memory, np.asarray(nn.Transformer.generate_square_subsequent_mask(5))))
    # causal: the first target position does not see the later ones
    changed = tgt.copy()
    changed[3:] += 1.0
    again = model(src, changed, tgt_mask=np.asarray(nn.Transformer.generate_square_subsequent_mask(5)))
    assert_close(np.asarray(again)[:3], np.asarray(out)[:3])
    assert not np.allclose(np.asarray(again)[3:], np.asarray(out)[3:])


def test_module_to_dtype_and_pytorchs_cast_methods_return_the_changed_copy():
    model = nn.Sequential(nn.Linear(2, 3, key=fg.random.key(0)), nn.BatchNorm1d(3))
    doubled = model.to(fnp.float64)
    assert all(p.dtype == np.float64 for p in doubled.parameters())
    assert model.parameters()[0].dtype == np.float32  # the original stays as it was
    half = model.half()
    assert half.state_dict()["layers.0.weight"].dtype == np.float16
    assert half.state_dict()["layers.1.num_batches_tracked"].dtype == np.float64  # a counter keeps its precision
    assert model.bfloat16().parameters()[0].dtype == fnp.bfloat16
    assert model.to("cpu", dtype=np.float64).double().float().parameters()[0].dtype == np.float32
    assert_close(doubled(np.ones((4, 2))), model(np.ones((4, 2))), rtol=1e-6)
    with pytest.raises(TypeError, match="floating dtype, not int32"):
        model.to(fnp.int32)
    with pytest.raises(TypeError, match=r"model = model.to"):
        model.to(fnp.float64)


def test_multihead_attention_refuses_masks_of_the_wrong_shape():
    mha = nn.MultiheadAttention(8, 2, key=fg.random.key(0))
    q = np.zeros((5, 3, 8), np.float32)
    with pytest.raises(ValueError, match=r"key_padding_mask of shape \(5, 3\) must be \(N, S\) = \(3, 5\)"):
        mha(q, key_padding_mask=np.zeros((5, 3), bool))  # transposed: the same size, silently wrong if reshaped
    with pytest.raises(ValueError, match=r"attn_mask of shape \(1, 5\)"):
        mha(q, attn_mask=np.zeros((1, 5), bool))
    with pytest.raises(ValueError, match=r"key_padding_mask of shape \(3,\) must be \(S,\)"):
        mha(q[:, 0], key_padding_mask=np.zeros(3, bool))
    with pytest.raises(TypeError, match="boolean .* or float"):
        mha(q, attn_mask=np.zeros((5, 5), np.int32))


def test_shrinkages_and_threshold_keep_nan_as_pytorch():
    z = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.25, 2.0, -3.0])
    hard = np.asarray(F.hardshrink(z, 0.5))
    assert np.isnan(hard[0]) and np.array_equal(hard[1:], [np.inf, -np.inf, 0, 0, 0, 0, 0, 2.0, -3.0])
    soft = np.asarray(F.softshrink(z, 0.5))
    assert np.isnan(soft[0]) and np.array_equal(soft[1:], [np.inf, -np.inf, 0, 0, 0, 0, 0, 1.5, -2.5])
    assert not np.signbit(soft[3:8]).any()  # +0 in the band, as PyTorch's
    cut = np.asarray(F.threshold(z, 0.25, -7.0))
    assert np.isnan(cut[0]) and np.array_equal(cut[1:], [np.inf, -7, -7, -7, 0.5, -7, -7, 2.0, -7])


def test_conv_transpose1d_is_the_transpose_of_conv1d():
    x, w = RNG.standard_normal((2, 4, 7)), RNG.standard_normal((4, 3, 3))
    y = RNG.standard_normal((2, 3, 14))
    # <conv_transpose1d(x, w), y> == <x, conv1d(y, w)> for the same stride, padding and dilation
    forward = np.asarray(F.conv_transpose1d(x, w, None, 2, 1, 1, 1, 1))
    assert forward.shape == (2, 3, (7 - 1) * 2 - 2 + 2 + 1 + 1)
    adjoint = np.asarray(F.conv1d(y, w, None, 2, 1))  # w read as (out=4, in=3, k)
    assert_close(np.sum(forward * y), np.sum(x * adjoint), rtol=1e-9)
    layer = nn.ConvTranspose1d(4, 6, 3, stride=2, groups=2, key=fg.random.key(0))
    assert layer.weight.shape == (4, 3, 3) and layer(np.ones((2, 4, 5), np.float32)).shape == (2, 6, 11)
    with pytest.raises(fg.ShapeError, match="conv_transpose1d weight"):
        F.conv_transpose1d(x, w[..., 0])


@pytest.mark.parametrize("layer, x_shape, w_shape", [
    (F.conv1d, (2, 3, 8), (4, 3, 3)), (F.conv1d, (3, 8), (4, 3, 3)), (F.conv2d, (2, 3, 6, 6), (4, 3, 3, 3)),
    (F.conv2d, (3, 6, 6), (4, 3, 3, 3)), (F.conv3d, (1, 3, 4, 4, 4), (4, 3, 2, 2, 2)),
    (F.conv_transpose1d, (2, 3, 5), (3, 4, 3)), (F.conv_transpose2d, (2, 3, 4, 4), (3, 4, 3, 3))])
def test_convolutions_add_one_bias_per_output_channel(layer, x_shape, w_shape):
    """The bias (O,) adds to its channel, batched or not; any other shape raises naming the layer, as
    PyTorch's (reshaped to channels, a (2, 2) bias would have spread over the 4 silently)."""
    x, w, b = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape), RNG.standard_normal(4)
    plain = np.asarray(layer(x, w))
    channels = (-1,) + (1,) * (len(w_shape) - 2)
    assert_close(layer(x, w, b), plain + b.reshape(channels), atol=1e-12)
    for wrong in [(2, 2), (1,), (), (5,)]:
        with pytest.raises(fg.ShapeError, match=rf"{layer.__name__}: bias must have shape \(4,\).*got {re.escape(str(wrong))}"):
            layer(x, w, np.ones(wrong))


def test_conv_transpose_reaches_a_requested_output_size_as_pytorchs():
    """forward(x, output_size): every size a strided transpose can reach (stride of them per axis)
    is the adjoint of the strided conv2d that reads an input of that size."""
    layer = nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1, dilation=2, key=fg.random.key(0), dtype=np.float64)
    x = RNG.standard_normal((2, 3, 4, 5))
    smallest = [(n - 1) * 3 - 2 + 2 * 2 + 1 for n in (4, 5)]  # (n - 1) stride - 2 padding + dilation (k - 1) + 1
    for extra in [(0, 0), (1, 2), (2, 1)]:
        size = [m + e for m, e in zip(smallest, extra)]
        out = np.asarray(layer(x, output_size=size)) - np.asarray(layer.bias).reshape(1, 2, 1, 1)
        assert out.shape == (2, 2, *size)
        y = RNG.standard_normal(out.shape)
        adjoint = np.asarray(F.conv2d(y, layer.weight, None, 3, 1, 2))
        assert_close(np.sum(out * y), np.sum(x * adjoint), rtol=1e-9)
    assert layer(x[0], output_size=(2, *smallest)).shape == (2, *smallest)  # unbatched, with the channel axis
    with pytest.raises(ValueError, match=r"valid sizes range from \(12, 15\) to \(14, 17\)"):
        layer(x, output_size=(20, 14))
    with pytest.raises(ValueError, match="2 or 4 elements"):
        layer(x, output_size=(1, 11, 14))


def test_jax_nn_names_and_functions():
    x = RNG.standard_normal((3, 5)) * 2
    assert_close(nn.swish(x), x / (1 + np.exp(-x)))
    assert_close(nn.hard_tanh(x), np.clip(x, -1, 1))
    assert_close(nn.soft_sign(x), x / (1 + np.abs(x)))
    assert_close(nn.logsumexp(x, axis=1), np.log(np.exp(x).sum(1)))
    assert_close(nn.standardize(x), (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5))
    assert_close(nn.squareplus(x), (x + np.sqrt(x * x + 4)) / 2)
    assert_close(nn.sparse_plus(x), np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)))
    fg.check_grads(lambda v: nn.sparse_plus(v) + nn.standardize(v, axis=0), (x,), order=1)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_host_constants_follow_device_data_through_losses_and_the_new_functions():
    from funcgrad import lax
    x = np.array([1.0, 5.0, 3.0, -2.0], np.float32)
    scores = np.arange(8, dtype=np.float32).reshape(2, 4) / 3
    mask = np.array([True, False, True, True])
    cases = {  # each takes the device data and NumPy constants, as PyTorch and JAX code passes them
        "mse": lambda a, s: F.mse_loss(a, np.ones(4, np.float32)),
        "cross_entropy": lambda a, s: F.cross_entropy(s, np.array([0, 3]), np.ones(4, np.float32)),
        "bce_logits": lambda a, s: F.binary_cross_entropy_with_logits(s, np.ones((2, 4), np.float32),
                                                                       pos_weight=np.full(4, 2.0, np.float32)),
        "multi_margin": lambda a, s: F.multi_margin_loss(s, np.array([0, 2]), weight=np.ones(4, np.float32)),
        "gaussian_nll": lambda a, s: F.gaussian_nll_loss(a, a * 2, np.ones(4, np.float32)),
        "where_reductions": lambda a, s: fnp.sum(a, where=mask) + fnp.var(a, where=mask),
        "prelu": lambda a, s: F.prelu(s, np.full(4, 0.1, np.float32)),
        "dynamic_slices": lambda a, s: lax.dynamic_update_slice(a, np.ones(2, np.float32), (3,)) + lax.pad(
            lax.dynamic_slice(a, (1,), (2,)), 0.0, [(1, 1, 0)]),
        "insert_put": lambda a, s: fnp.insert(a, [1, 2], 5.0)[:4] + fnp.put_along_axis(a, np.array([1]), 0.0, 0,
                                                                                        inplace=False),
        "histogram_weights": lambda a, s: fnp.histogram(a, 2, weights=np.ones(4, np.float32))[0],
        "attention_mask": lambda a, s: nn.MultiheadAttention(4, 2, key=fg.random.key(0)).to(a.device)(
            fnp.reshape(s, (2, 1, 4)), attn_mask=np.array([[False, True], [False, False]]))[0],
        "linear_conv_norms": lambda a, s: F.linear(s, np.ones((3, 4), np.float32), np.ones(3, np.float32)).sum()
        + F.conv2d(fnp.reshape(s, (1, 2, 2, 2)), np.ones((1, 2, 1, 1), np.float32), np.ones(1, np.float32)).sum()
        + F.group_norm(fnp.reshape(s, (1, 2, 4)), 2, np.ones(2, np.float32), np.zeros(2, np.float32)).sum(),
        "embedding_attention_cosine": lambda a, s: F.embedding(np.array([1, 0]), s).sum()
        + F.scaled_dot_product_attention(s[None], s[None], s[None], np.array([[True, False], [True, True]])).sum()
        + F.cosine_similarity(s, np.ones((2, 4), np.float32), dim=1).sum(),
    }
    for name, f in cases.items():
        on_device = f(fg.device_put(x, "cuda"), fg.device_put(scores, "cuda"))
        assert on_device.device == "cuda:0", name
        assert_close(on_device.numpy(), f(fg.asarray(x), fg.asarray(scores)), rtol=1e-5, atol=1e-6)


def _reference_mha(q, k, v, wq, wk, wv, bq, bk_, bv_, w_out, b_out, heads, add=None, extra_k=None, extra_v=None,
                   zero_attn=False):
    """One head and one batch element at a time: scores + add (N, H or 1, L or 1, S'), keys and values extended."""
    e = wq.shape[0]
    d = e // heads
    out = np.zeros(q.shape[:2] + (e,))
    weights = np.zeros((q.shape[1], heads, q.shape[0], k.shape[0] + (extra_k is not None) + zero_attn))
    for n in range(q.shape[1]):
        qp, kp, vp = q[:, n] @ wq.T + bq, k[:, n] @ wk.T + bk_, v[:, n] @ wv.T + bv_
        if extra_k is not None:
            kp, vp = np.vstack([kp, extra_k]), np.vstack([vp, extra_v])
        for h in range(heads):
            qh, kh, vh = qp[:, h * d:(h + 1) * d], kp[:, h * d:(h + 1) * d], vp[:, h * d:(h + 1) * d]
            if zero_attn:
                kh, vh = np.vstack([kh, np.zeros(d)]), np.vstack([vh, np.zeros(d)])
            scores = qh @ kh.T / math.sqrt(d) + (0 if add is None else add[n, min(h, add.shape[1] - 1)])
            w = np.exp(scores - scores.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            weights[n, h] = w
            out[:, n, h * d:(h + 1) * d] = w @ vh
    return out @ w_out.T + b_out, weights


def test_multi_head_attention_forward_with_bias_kv_zero_attention_and_separate_projections():
    e, heads, length, source, batch = 8, 2, 5, 6, 3
    q, k, v = RNG.standard_normal((length, batch, e)), RNG.standard_normal((source, batch, 4)), \
        RNG.standard_normal((source, batch, 6))
    wq, wk, wv = RNG.standard_normal((e, e)), RNG.standard_normal((e, 4)), RNG.standard_normal((e, 6))
    b_in, w_out, b_out = RNG.standard_normal(3 * e), RNG.standard_normal((e, e)), RNG.standard_normal(e)
    bias_k, bias_v = RNG.standard_normal((1, 1, e)), RNG.standard_normal((1, 1, e))
    padding = RNG.random((batch, source)) > 0.7
    padding[:, 0] = False
    out, weights = F.multi_head_attention_forward(
        q, k, v, e, heads, None, b_in, bias_k, bias_v, True, 0.0, w_out, b_out, key_padding_mask=padding,
        use_separate_proj_weight=True, q_proj_weight=wq, k_proj_weight=wk, v_proj_weight=wv,
        average_attn_weights=False)
    add = np.where(np.concatenate([padding, np.zeros((batch, 2), bool)], 1), -np.inf, 0.0)[:, None, None, :]
    expected, expected_weights = _reference_mha(q, k, v, wq, wk, wv, *np.split(b_in, 3), w_out, b_out, heads, add,
                                                bias_k[0, 0], bias_v[0, 0], zero_attn=True)
    assert_close(out, expected)
    assert_close(weights, expected_weights)
    w_in = RNG.standard_normal((3 * e, e))
    kk = RNG.standard_normal((source, batch, e))
    mask = RNG.standard_normal((batch * heads, length, source))  # a float mask per (batch, head), added
    out, weights = F.multi_head_attention_forward(q, kk, kk, e, heads, w_in, b_in, None, None, False, 0.0, w_out,
                                                  b_out, attn_mask=mask)
    expected, expected_weights = _reference_mha(q, kk, kk, *np.split(w_in, 3), *np.split(b_in, 3), w_out, b_out,
                                                heads, mask.reshape(batch, heads, length, source))
    assert_close(out, expected)
    assert_close(weights, expected_weights.mean(1))
    with pytest.raises(ValueError, match="is_causal is a hint that attn_mask is the causal mask"):
        F.multi_head_attention_forward(q, kk, kk, e, heads, w_in, b_in, None, None, False, 0.0, w_out, b_out,
                                       is_causal=True)
    with pytest.raises(ValueError, match="bias_k and bias_v go together"):
        F.multi_head_attention_forward(q, kk, kk, e, heads, w_in, b_in, bias_k, None, False, 0.0, w_out, b_out)
    mha = nn.MultiheadAttention(e, heads, kdim=4, vdim=6, add_bias_kv=True, add_zero_attn=True,
                                key=fg.random.key(2), dtype=fnp.float64)
    assert [n for n, _ in mha.named_parameters(pytorch_names=True)] == [
        "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
        "out_proj.bias"]  # torch.nn.MultiheadAttention's
    assert mha(q, k, v)[0].shape == (length, batch, e)

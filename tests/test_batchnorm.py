"""BatchNorm with running statistics, against PyTorch's formulas written in NumPy; carried through
fit, jit, checkpoints and evaluation mode."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.dist
import funcgrad.numpy as fnp
from funcgrad import data, nn, optim
from funcgrad.errors import ShapeError
from funcgrad.train import fit

from .helpers import assert_close

RNG = np.random.default_rng(0)


def _train_forward(bn, x, key=fg.random.key(0)):
    with nn.collect_state(bn) as state:
        y = bn(fnp.asarray(x), key=key)
    return y, nn.apply_state(bn, state.updates())


@pytest.mark.parametrize("layer, shape", [(nn.BatchNorm1d, (8, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                          (nn.BatchNorm2d, (4, 3, 2, 5))])
def test_training_and_evaluation_follow_pytorch(layer, shape):
    x = RNG.standard_normal(shape) * 2 + 1
    axes = (0,) + tuple(range(2, len(shape)))
    n = x.size // 3
    bn = layer(3, dtype=fg.float64, momentum=0.1)
    bn = bn.replace(weight=fnp.asarray([1.0, 2.0, 0.5], dtype=fg.float64),
                    bias=fnp.asarray([0.0, -1.0, 3.0], dtype=fg.float64))
    y, bn2 = _train_forward(bn, x)
    bshape = (1, 3) + (1,) * (len(shape) - 2)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    expected = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + 1e-5) * np.array([1, 2, 0.5]).reshape(
        bshape) + np.array([0, -1, 3]).reshape(bshape)
    assert_close(y, expected, rtol=1e-10, atol=1e-10)
    assert_close(bn2.running_mean, 0.1 * mean, rtol=1e-12)
    assert_close(bn2.running_var, 0.9 + 0.1 * var * n / (n - 1), rtol=1e-12)
    assert float(bn2.num_batches_tracked) == 1.0
    evaluated = bn2(fnp.asarray(x))  # no key: the running statistics
    assert_close(evaluated, (x - 0.1 * mean.reshape(bshape)) / np.sqrt(
        (0.9 + 0.1 * var * n / (n - 1)).reshape(bshape) + 1e-5) * np.array([1, 2, 0.5]).reshape(bshape)
        + np.array([0, -1, 3]).reshape(bshape), rtol=1e-10, atol=1e-10)
    assert_close(bn2.eval()(fnp.asarray(x), key=fg.random.key(1)), evaluated)  # eval() wins over a key


def test_momentum_none_is_a_cumulative_average_and_errors_are_clear():
    bn = nn.BatchNorm1d(2, momentum=None, dtype=fg.float64)
    batches = [RNG.standard_normal((5, 2)) for _ in range(3)]
    for b in batches:
        _, bn = _train_forward(bn, b)
    assert_close(bn.running_mean, np.mean([b.mean(0) for b in batches], axis=0), rtol=1e-12)
    assert float(bn.num_batches_tracked) == 3.0
    with pytest.raises(RuntimeError, match="nn.collect_state"):
        bn(fnp.ones((4, 2)), key=fg.random.key(0))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        _train_forward(bn, np.ones((1, 2)))
    with pytest.raises(fg.ShapeError, match="2 channels on axis 1"):
        bn(fnp.ones((4, 3)))
    with pytest.raises(TypeError, match=r"model = model.eval\(\.\.\.\)"):
        bn.eval()  # PyTorch's in-place habit would silently do nothing: it raises


def test_gradients_in_training_mode_match_finite_differences():
    x = RNG.standard_normal((6, 3))

    def loss(weight, bias):
        bn = nn.BatchNorm1d(3, dtype=fg.float64).replace(weight=weight, bias=bias)
        with nn.collect_state(bn):
            return fnp.sum(bn(fnp.asarray(x), key=fg.random.key(0)) ** 3)
    fg.check_grads(loss, (np.array([1.0, 0.5, 2.0]), np.array([0.1, -0.2, 0.3])), order=2)


def test_fit_carries_running_statistics_jitted_or_not_and_checkpoints_them(tmp_path):
    x = RNG.standard_normal((48, 4)).astype(np.float32) * 3 + 2
    y = (x[:, 0] > 2).astype(np.int64)

    def model():
        return nn.Sequential([nn.Linear(4, 6, key=fg.random.key(0)), nn.BatchNorm1d(6), nn.relu,
                              nn.Linear(6, 2, key=fg.random.key(1))])

    def loss(m, batch, key=None):
        return nn.cross_entropy(m(batch[0], key=key), batch[1]), {}
    results = [fit(model(), optim.sgd(0.05), data.DataLoader(data.ArrayDataset(x, y), 16), loss, epochs=2, jit=j,
                   checkpoint_dir=tmp_path / str(j)) for j in (False, True)]
    eager, jitted = (r.model.layers[1] for r in results)
    assert float(eager.num_batches_tracked) == 6.0
    assert_close(jitted.running_mean, eager.running_mean, rtol=1e-5, atol=1e-6)
    assert_close(jitted.running_var, eager.running_var, rtol=1e-5, atol=1e-6)
    assert not np.allclose(eager.running_mean.numpy(), 0.0)
    tree, _ = fg.checkpoint.load(tmp_path / "True" / "last.safetensors", like={"model": model(),
                                                                              "opt_state": results[1].opt_state,
                                                                              "scaler": fg.amp.DynamicLossScale.create()})
    assert_close(tree["model"].layers[1].running_var, jitted.running_var)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 4)])
def test_functional_batch_norm_is_pytorchs(shape):
    """F.batch_norm: batch statistics when training (biased variance), the given running ones in
    evaluation; gradients of both modes by finite differences; PyTorch's refusals, and a refusal
    where PyTorch would update running statistics in place."""
    F = nn.functional
    x = RNG.standard_normal(shape) * 2 + 1
    axes, channel = (0,) + tuple(range(2, len(shape))), (1, 3) + (1,) * (len(shape) - 2)
    w, b = np.array([1.0, 2.0, 0.5]), np.array([0.0, -1.0, 3.0])
    mean, var = x.mean(axes).reshape(channel), x.var(axes).reshape(channel)
    assert_close(F.batch_norm(x, None, None, w, b, training=True, eps=1e-3),
                 (x - mean) / np.sqrt(var + 1e-3) * w.reshape(channel) + b.reshape(channel), atol=1e-12)
    rm, rv = np.array([0.5, -1.0, 2.0]), np.array([1.0, 4.0, 0.25])
    assert_close(F.batch_norm(x, rm, rv), (x - rm.reshape(channel)) / np.sqrt(rv.reshape(channel) + 1e-5), atol=1e-12)
    fg.check_grads(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b), order=1)
    fg.check_grads(lambda x, w: F.batch_norm(x, rm, rv, w), (x, w), order=1)
    with pytest.raises(ValueError, match="must be given in evaluation mode"):
        F.batch_norm(x, None, None)
    with pytest.raises(ValueError, match="cannot be updated in place"):
        F.batch_norm(x, rm, rv, training=True)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(x[(slice(1), slice(None)) + (slice(1),) * (len(shape) - 2)], None, None, training=True)
    with pytest.raises(fg.ShapeError, match=r"running_mean should have shape \(3,\)"):
        F.batch_norm(x, np.zeros(4), rv)


def test_sync_batch_norm_over_a_vmap_axis_is_batch_norm_of_the_whole_batch():
    """Four members of a vmap (as ranks of a mesh axis: tests/mesh_worker.py runs unequal batches on
    processes) normalise with the whole batch's statistics, NumPy's formula; the input gradient of
    the members' summed losses and the running statistics are those of one BatchNorm2d over the
    concatenated batch."""
    from funcgrad.nn import parallel
    ranks, x, c = 4, RNG.standard_normal((4, 3, 2, 2, 3)), RNG.standard_normal((4, 3, 2, 2, 3))
    sync = parallel.SyncBatchNorm(2, axis_name="r", dtype=fg.float64, momentum=0.3)
    sync = sync.replace(weight=fnp.asarray([1.5, -0.5], dtype=fg.float64))

    def member(bn, xi, ci):
        with nn.collect_state(bn) as state:
            y = bn(xi, key=fg.random.key(0))
        return fnp.sum(y * ci), (y, state.updates())

    def summed(bn, x, c):
        losses, aux = fg.vmap(member, in_axes=(None, 0, 0), axis_name="r")(bn, x, c)
        return fnp.sum(losses), aux
    (_, (y, updates)), g = fg.value_and_grad(summed, argnums=1, has_aux=True)(sync, fnp.asarray(x), c)
    whole = x.reshape(12, 2, 2, 3)
    mean, var = whole.mean(axis=(0, 2, 3)), whole.var(axis=(0, 2, 3))
    expected = (whole - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5) * np.array([1.5, -0.5])[:, None, None]
    assert_close(np.asarray(y).reshape(whole.shape), expected, rtol=1e-12, atol=1e-12)
    plain = nn.BatchNorm2d(2, dtype=fg.float64, momentum=0.3).replace(weight=sync.weight)
    (_, (_, plain_updates)), g_plain = fg.value_and_grad(member, argnums=1, has_aux=True)(
        plain, fnp.asarray(whole), c.reshape(whole.shape))
    assert_close(np.asarray(g).reshape(whole.shape), g_plain, rtol=1e-10, atol=1e-12)
    stats = nn.apply_state(sync, {k: v[0] for k, v in updates.items()})
    assert_close(stats.running_mean, 0.3 * mean, rtol=1e-12)
    assert_close(stats.running_var, 0.7 + 0.3 * var * 12 * 6 / (12 * 6 - 1), rtol=1e-12)
    for k, v in plain_updates.items():
        assert_close(updates[k][0], v, rtol=1e-12)


def test_convert_sync_batch_norm_keeps_state_and_evaluation_needs_no_collective():
    from funcgrad.nn import parallel
    bn = nn.BatchNorm2d(3, dtype=fg.float64)
    bn = bn.replace(running_mean=fnp.asarray([1.0, 2.0, 3.0], dtype=fg.float64))
    model = nn.Sequential([nn.Conv2d(1, 3, 1, key=fg.random.key(0)), bn, nn.ReLU()])
    synced = parallel.convert_sync_batchnorm(model, axis_name="dp")
    layer = synced.layers[1]
    assert type(layer) is parallel.SyncBatchNorm and layer.axis_name == "dp" and type(synced.layers[0]) is nn.Conv2d
    assert np.asarray(layer.running_mean).tolist() == [1.0, 2.0, 3.0] and layer.momentum == bn.momentum
    x = fnp.asarray(RNG.standard_normal((2, 1, 2, 2)))
    assert_close(synced(x), model(x), rtol=1e-14)  # evaluation mode: the running statistics, no axis needed
    with pytest.raises(fg.dist.DistError, match="no mesh"):
        synced(x, key=fg.random.key(0))  # training outside a mesh or vmap naming the axis: not alone silently
    with pytest.raises(ValueError, match="more than 1 value per channel .* on the only rank of axis 'dp'"):
        fg.vmap(lambda x: layer(x, key=fg.random.key(0)), axis_name="dp")(fnp.ones((1, 1, 3)))
    stateless = parallel.SyncBatchNorm(3, track_running_stats=False)
    pair = fnp.asarray([[[1.0] * 3], [[3.0] * 3]])
    one_each = fg.vmap(lambda x: stateless(x, key=fg.random.key(0)), axis_name="dp")(pair)
    assert_close(one_each[:, 0, 0], [-1.0, 1.0], rtol=1e-4)  # one value on each of two members: a batch of two
    with pytest.raises(ShapeError, match=r"rank 2 or more with 3 channels on axis 1, got shape \(3,\)"):
        layer(fnp.ones(3))

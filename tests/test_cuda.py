"""The CUDA backend end to end, in numba's simulator: gradients of real models equal the CPU's,
the allocator's statistics, explicit transfers only, device errors, jit on the device."""
from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn, optim
from funcgrad.cuda import runtime
from funcgrad.cuda.buffer import to_host
from funcgrad.ops.reductions import pick_p, unpick_p
from funcgrad.train import make_train_step

pytestmark = pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
rng = np.random.default_rng(1)


def close_trees(a, b, tol=1e-4):
    for x, y in zip(fg.tree_leaves(a), fg.tree_leaves(b)):
        assert y.device == "cuda:0" and x.device == "cpu"
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=tol, atol=tol)


def xent(model, batch, key=None):
    x, y = batch
    return nn.losses.cross_entropy(model(x), y), {}


def test_mlp_gradients_equal_cpu():
    model = nn.MLP(7, [12, 9], 4, key=fg.random.key(0))
    batch = (fg.asarray(rng.standard_normal((6, 7)).astype(np.float32)), fg.asarray(np.array([0, 3, 1, 2, 3, 0])))
    grads = [fg.grad(lambda m, b: xent(m, b)[0])(fg.device_put(model, d), fg.device_put(batch, d))
             for d in ("cpu", "cuda")]
    close_trees(*grads)


def test_attention_block_gradients_equal_cpu():
    block = nn.TransformerBlock(8, 2, mlp_ratio=2, key=fg.random.key(1))
    x = fg.asarray(rng.standard_normal((2, 5, 8)).astype(np.float32))

    def loss(b, x):
        return fnp.mean(b(x) ** 2)
    close_trees(fg.grad(loss)(block, x), fg.grad(loss)(fg.device_put(block, "cuda"), fg.device_put(x, "cuda")))


def test_jit_on_the_device_frees_each_intermediate_after_its_last_use():
    """A chain of eight unfused steps holds a few live values at a time, not all of them; an output
    that is a view of a dropped intermediate (a reshape) keeps its data."""
    x = fg.device_put(fnp.ones((16, 16)) * 0.1, "cuda")  # 1 KiB each (the allocator's 512-byte blocks)

    def chain(x):
        for _ in range(8):
            x = fnp.sum(x @ x, axis=0, keepdims=True) * 0.01 + x @ x * 0.01
        return fnp.reshape(x @ x, (-1,)), x[0]
    jitted = fg.jit(chain)
    jitted(x)
    base = fg.cuda.memory_allocated()
    fg.cuda.reset_peak_memory_stats()
    flat, row = jitted(x)
    assert fg.cuda.max_memory_allocated() - base <= 5 * 1024  # the outputs, and a few live values
    expected = chain(fg.asarray(np.full((16, 16), 0.1, np.float32)))
    np.testing.assert_allclose(flat.numpy(), expected[0].numpy(), rtol=1e-5)
    np.testing.assert_allclose(row.numpy(), expected[1].numpy(), rtol=1e-5)


def test_allocator_statistics_rise_and_fall():
    fg.cuda.empty_cache()
    before = fg.cuda.memory_allocated()
    fg.cuda.reset_peak_memory_stats()
    x = fg.device_put(fnp.ones((1000,)), "cuda")  # 4000 bytes: one 4096-byte block
    assert fg.cuda.memory_allocated() == before + 4096
    y = x * 2.0
    assert fg.cuda.memory_allocated() == before + 2 * 4096
    del x, y
    assert fg.cuda.memory_allocated() == before
    assert fg.cuda.max_memory_allocated() == before + 2 * 4096
    assert fg.cuda.memory_reserved() >= before + 2 * 4096  # freed blocks stay cached...
    hits = fg.cuda.memory_stats()["cache_hits"]
    z = fg.device_put(fnp.ones((1000,)), "cuda")  # ...and are reused
    assert fg.cuda.memory_stats()["cache_hits"] == hits + 1
    del z
    fg.cuda.empty_cache()
    assert fg.cuda.memory_reserved() == fg.cuda.memory_allocated() == before
    summary = fg.cuda.memory_summary()
    assert "allocated (peak)" in summary and "served from cache" in summary


@pytest.mark.parametrize("jit", [False, True])
def test_training_step_stays_on_the_device(jit):
    model = nn.MLP(6, [10], 3, key=fg.random.key(2))
    opt = optim.adamw(1e-2, weight_decay=0.1)
    step = make_train_step(xent, opt, jit=jit)
    batch = (fg.asarray(rng.standard_normal((8, 6)).astype(np.float32)), fg.asarray(np.arange(8) % 3))
    key = fg.random.key(3)
    results = {}
    for device in ("cpu", "cuda"):
        m, b, k = fg.device_put((model, batch, key), device)
        state, scaler = opt.init(m), fg.amp.DynamicLossScale.create()
        for i in range(3):
            if i == 2:  # after the first steps (the jit compiles, constants placed)
                fg.cuda.reset_transfer_counts()
            m, state, scaler, loss, _ = step(m, state, scaler, b, k)
        if device == "cuda":
            assert fg.cuda.transfer_counts() == {"host_to_device": 0, "device_to_host": 0}
            assert loss.device == "cuda:0"
        results[device] = m
    close_trees(results["cpu"], results["cuda"])


def test_mixing_devices_names_both():
    x = fg.device_put(fnp.ones((3,)), "cuda")
    with pytest.raises(fg.DeviceMismatchError, match=r"argument 0 is on cuda:0 but argument 1 is on cpu"):
        x + fnp.ones((3,))
    assert float(fnp.sum(x * fg.asarray(2.0))) == 6.0  # a 0-d host array is a scalar, as in PyTorch
    with pytest.raises(fg.DeviceMismatchError, match="jit: argument leaf 1 is on cpu"):
        fg.jit(lambda a, b: a + b)(x, fnp.ones((3,)))


def test_host_constants_follow_the_data_to_its_device():
    """NumPy arrays, lists and scalars placed where the Array they meet is (JAX and PyTorch accept
    host indices); the results equal NumPy's, and gradients flow as on the CPU."""
    base = np.arange(12.0).reshape(3, 4)
    x, labels = fg.device_put(fg.asarray(base), "cuda"), np.array([3, 0, 2])
    cases = {"index": (lambda a: a[np.arange(3), labels], base[np.arange(3), labels]),
             "times": (lambda a: a * np.arange(4.0), base * np.arange(4.0)),
             "list": (lambda a: [1.0, 2.0, 3.0, 4.0] - a, [1.0, 2.0, 3.0, 4.0] - base),
             "where": (lambda a: fnp.where(np.array([True, False, True, False]), a, np.ones(4)),
                       np.where([True, False, True, False], base, 1.0)),
             "at add": (lambda a: a.at[np.array([0, 0]), labels[:2]].add(1.5),
                        base + np.array([[1.5, 0, 0, 1.5], [0] * 4, [0] * 4])),
             "at set": (lambda a: a.at[1, [0, 3]].set(np.array([-1.0, -2.0])), np.where(
                 (np.arange(3)[:, None] == 1) & np.isin(np.arange(4), [0, 3]), [[-1.0, 0, 0, -2.0]], base))}
    for name, (f, expected) in cases.items():
        out = f(x)
        assert out.device == "cuda:0", name
        np.testing.assert_array_equal(out.numpy(), expected, err_msg=name)
    weights = np.arange(4.0)
    grad = fg.grad(lambda a: fnp.sum(a.at[np.array([0, 0])].add(2.0) * weights))(x)
    np.testing.assert_array_equal(grad.numpy(), np.broadcast_to(weights, (3, 4)))
    with pytest.raises(fg.DeviceMismatchError, match=r"gather: argument 0 is on cuda:0 but argument 1 is on cpu"):
        x[fnp.asarray([0, 2])]  # a funcgrad Array says where its data lives: no silent copy


def test_a_0d_array_keeps_its_shape_on_the_device():
    x = fg.device_put(fg.asarray(3), "cuda")
    assert x.shape == () and int(x) == 3 and float(x * 2) == 6.0
    state = fg.device_put(optim.adamw(1e-3).init(nn.Linear(2, 2, key=fg.random.key(0))), "cuda")
    assert all(a.shape == b.shape for a, b in zip(fg.tree_leaves(state), fg.tree_leaves(
        optim.adamw(1e-3).init(nn.Linear(2, 2, key=fg.random.key(0))))))


def test_no_implicit_copy_back():
    x = fg.device_put(fnp.arange(4.0), "cuda")
    with pytest.raises(TypeError, match="copied to the host explicitly"):
        np.add(x._value, 1)
    runtime.transfers.reset()
    assert x.numpy().tolist() == [0, 1, 2, 3] and x.to("cpu").device == "cpu"
    assert fg.cuda.transfer_counts()["device_to_host"] == 2
    assert "device=cuda:0" in repr(x)


def test_jit_on_the_device_caches_and_retraces_by_device():
    f = fg.jit(lambda a: fnp.tanh(a) * 2 + fnp.sum(a))
    a = rng.standard_normal((3, 4)).astype(np.float32)
    cpu = f(fg.asarray(a))
    gpu = f(fg.device_put(fg.asarray(a), "cuda"))
    assert gpu.device == "cuda:0" and len(f.cache) == 2
    np.testing.assert_allclose(gpu.numpy(), cpu.numpy(), rtol=1e-6)
    f(fg.device_put(fg.asarray(a), "cuda"))
    assert len(f.cache) == 2


def test_creation_on_the_device_makes_no_copy():
    runtime.transfers.reset()
    z = fnp.zeros((2, 3), device="cuda")
    o = fnp.ones_like(z)
    t = fnp.tri(3, device="cuda")
    assert (z.device, o.device, t.device) == ("cuda:0",) * 3
    assert fg.cuda.transfer_counts()["host_to_device"] == 0
    assert t.numpy().tolist() == np.tri(3, dtype=bool).tolist()


def test_profiler_records_device_time():
    x = fg.device_put(fnp.ones((4, 4)), "cuda")
    with fg.profiler.profile() as prof:
        fnp.tanh(x @ x)
    rows = {r["name"]: r for r in prof.key_averages()}
    assert rows["matmul"]["cuda_time_total"] > 0 and rows["tanh"]["cuda_time_total"] > 0


@pytest.mark.skipif(runtime.SIMULATOR, reason="the simulator has no __cuda_array_interface__")
def test_cuda_array_interface_round_trip():
    x = fg.device_put(fnp.arange(6.0), "cuda")
    iface = x.__cuda_array_interface__
    assert iface["shape"] == (6,) and iface["typestr"] == "<f4"
    y = fg.cuda.from_cuda_array(x)
    assert y.numpy().tolist() == [0, 1, 2, 3, 4, 5]


def test_from_cuda_array_rejects_host_objects():
    with pytest.raises(TypeError, match="neither __cuda_array_interface__ nor __dlpack__"):
        fg.cuda.from_cuda_array([1.0, 2.0])


def test_dlpack_import_orders_the_producers_work_before_ours(monkeypatch):
    """The consumer stream handed to __dlpack__ is the one funcgrad's kernels run on (1: CUDA's
    legacy default stream), never -1 (no ordering): the producer's pending writes come first."""
    class Producer:
        streams = []

        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA, device 0

        def __dlpack__(self, stream=None, **kwargs):
            self.streams.append(stream)
            raise BufferError("the stream was recorded")
    with pytest.raises(BufferError):
        fg.cuda.from_cuda_array(Producer())
    assert Producer.streams == [1]
    from numba import config
    monkeypatch.setattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", 1)
    with pytest.raises(BufferError):
        fg.cuda.from_cuda_array(Producer())
    assert Producer.streams == [1, 2]


def test_empty_cache_flushes_numbas_deferred_frees(monkeypatch):
    """numba frees dropped device arrays later, in batches; empty_cache must hand them back now,
    or memory_reserved() says less than the driver holds."""
    from types import SimpleNamespace

    from funcgrad.cuda import allocator
    flushed = []
    context = SimpleNamespace(memory_manager=SimpleNamespace(deallocations=SimpleNamespace(
        clear=lambda: flushed.append(True))))
    monkeypatch.setattr(allocator, "SIMULATOR", False)
    monkeypatch.setattr(allocator.cuda, "current_context", lambda: context)
    fg.cuda.empty_cache()
    assert flushed == [True] and fg.cuda.memory_reserved() == fg.cuda.memory_allocated()


def test_a_block_collected_in_a_cycle_never_returns_freed_memory_to_the_pool(monkeypatch):
    """numba frees device memory from a weakref callback, which the cycle collector runs before any
    __del__: a block dropped inside a reference cycle must not put freed memory back in the pool
    (on a GPU the next malloc handed it out: ReferenceError, or two arrays in one place)."""
    import gc
    import weakref

    from funcgrad.cuda import allocator as A
    freed = []

    class Raw:  # as numba's device array: collected, its memory goes back to the driver
        def __init__(self, size, dtype):
            weakref.finalize(self, freed.append, id(self))

    monkeypatch.setattr(A.cuda, "device_array", Raw)
    pool = A.CachingAllocator()
    block = pool.malloc(1000)
    raw, cycle = id(block.raw), [block]
    cycle.append(cycle)
    del block, cycle
    gc.collect()
    again = pool.malloc(1000)
    assert id(again.raw) == raw and pool.counts["cache_hits"] == 1
    assert raw not in freed


def test_device_memory_through_the_generic_statistics():
    x = fg.device_put(fnp.ones((300,)), "cuda")
    assert fg.memory_allocated("cuda") == fg.cuda.memory_allocated() >= 1200
    fg.reset_peak_memory_stats("cuda")
    assert fg.max_memory_allocated("cuda") == fg.cuda.memory_allocated()
    del x


def test_jit_fuses_elementwise_chains_into_one_device_kernel(monkeypatch):
    from funcgrad.cuda.kernels import elementwise
    launches = []
    original = elementwise.run_fused

    def counting(chains):
        launches.append([(len(c.steps), len(c.sums)) for c in chains])
        return original(chains)
    monkeypatch.setattr(elementwise, "run_fused", counting)
    shift = fg.device_put(fg.asarray(rng.standard_normal((4, 5)).astype(np.float32)), "cuda")  # a captured constant

    def f(a, b):
        h = fnp.tanh(a * 2.0 + b) * fnp.exp(-a) + shift
        return h, fnp.sum(fnp.where(h > 0, h, 0.1 * h) ** 2), fnp.astype(a > b, fg.int32) * 3
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    gpu_args = fg.device_put((fg.asarray(a), fg.asarray(b)), "cuda")
    eager = f(*gpu_args)
    fused = fg.jit(f)(*gpu_args)
    assert any(steps >= 5 for chains in launches for steps, _ in chains)  # the chain ran as one kernel
    assert any(sums == 1 for chains in launches for _, sums in chains)  # the squares' sum in its kernel
    for e, j in zip(eager, fused):
        assert j.device == "cuda:0" and j.dtype == e.dtype
        np.testing.assert_allclose(j.numpy(), e.numpy(), rtol=1e-6, atol=1e-6)


def test_jit_runs_independent_chains_and_their_row_sums_in_one_launch(monkeypatch):
    """Horizontal fusion: chains of different shapes that do not read each other share a launch;
    a sum over leading axes (a bias gradient) is computed in its chain's kernel, row by row; a
    sum over more rows than DEVICE_SUM_ROWS runs as its own reduction; values match NumPy."""
    from funcgrad import lowering
    from funcgrad.cuda.kernels import elementwise
    launches = []
    original = elementwise.run_fused
    monkeypatch.setattr(elementwise, "run_fused", lambda chains: launches.append(
        [(c.shape, len(c.sums), c.lead) for c in chains]) or original(chains))
    monkeypatch.setattr(lowering, "DEVICE_SUM_ROWS", 6)

    def f(a, b, c, d):
        h = fnp.tanh(a) * 2.0
        return h, fnp.sum(h * a, axis=0), fnp.exp(b) + 1.0, fnp.sum((c - 1.0) ** 2), fnp.sum(d * 3.0, axis=0)
    host = [rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (7,), (2, 3), (8, 2))]
    out = fg.jit(f)(*fg.device_put([fg.asarray(x) for x in host], "cuda"))
    a, b, c, d = (x.astype(np.float64) for x in host)
    expected = [np.tanh(a) * 2, (np.tanh(a) * 2 * a).sum(0), np.exp(b) + 1, ((c - 1) ** 2).sum(), (d * 3).sum(0)]
    for got, want in zip(out, expected):
        assert got.device == "cuda:0"
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    assert launches == [[((5, 3), 1, 1), ((7,), 0, 0), ((2, 3), 1, 2), ((8, 2), 0, 0)]]  # d's 8 rows: a reduction


def test_jit_on_the_device_keeps_a_channel_sum_apart_and_reads_a_channel_bias(monkeypatch):
    """The CPU fuses a conv's bias add and its bias gradient (a sum over N, H and W) into one kernel;
    on the GPU the bias is read by strides in the chain, and the sum, whose axes are not the leading
    ones although there are as many as a leading sum over three axes has, runs as its own reduction."""
    from funcgrad.cuda.kernels import elementwise
    launches = []
    original = elementwise.run_fused
    monkeypatch.setattr(elementwise, "run_fused", lambda chains: launches.append(
        [(c.shape, len(c.sums)) for c in chains]) or original(chains))
    x, b = rng.standard_normal((2, 3, 2, 2)).astype(np.float32), rng.standard_normal((3, 1, 1)).astype(np.float32)

    def f(x, b):
        h = fnp.maximum(x + b, 0.0) * x
        return h * 2.0, fnp.sum(h, axis=(0, 2, 3))
    out = fg.jit(f)(*fg.device_put((fg.asarray(x), fg.asarray(b)), "cuda"))
    h = np.maximum(x + b, 0) * x
    for got, want in zip(out, (2 * h, h.sum((0, 2, 3)))):
        assert got.device == "cuda:0"
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    assert launches == [[((2, 3, 2, 2), 0)]]  # the chain alone; the sum is a reduction kernel


def test_pick_and_unpick_on_the_device_clamp_labels_as_gather():
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    labels = np.array([[0, 3], [-1, 9], [2, -7]])
    clamped = np.clip(np.where(labels < 0, labels + 4, labels), 0, 3)
    dx, dl = fg.device_put((fg.asarray(x), fg.asarray(labels)), "cuda")
    picked = pick_p.impl_for("cuda")(dx._value, dl._value)
    np.testing.assert_array_equal(to_host(picked), np.take_along_axis(x, clamped[..., None], -1)[..., 0])
    g = rng.standard_normal((3, 2)).astype(np.float32)
    spread = unpick_p.impl_for("cuda")(fg.device_put(fg.asarray(g), "cuda")._value, dl._value, 4)
    want = np.zeros((3, 2, 4), np.float32)
    np.put_along_axis(want, clamped[..., None], g[..., None], -1)
    np.testing.assert_array_equal(to_host(spread), want)


def test_jit_fuses_an_optimisers_scalar_chain_on_the_device():
    """#15's launch budget: the jitted MLP AdamW step launches at most 16 kernels (38 before the
    0-d optimiser chain fused, 27 before sums joined their chains, independent chains (every
    parameter's update) shared a launch and pick/unpick became one row kernel each). Host 0-d values
    among the fused equations are passed as scalars."""
    opt = optim.adamw(1e-3)
    model = nn.MLP(4, [8], 3, key=fg.random.key(0))  # the simulator runs a thread per element
    batch = (fg.asarray(rng.standard_normal((4, 4)).astype(np.float32)), fg.asarray(np.arange(4) % 3))

    def step(m, s, batch):
        loss, g = fg.value_and_grad(lambda m: nn.cross_entropy(m(batch[0]), batch[1]))(m)
        u, s = opt.update(g, s, m)
        return optim.apply_updates(m, u), s, loss
    jitted = fg.jit(step)
    on_device = fg.device_put((model, opt.init(model), batch), "cuda")
    m, s, _ = jitted(*on_device)
    fg.cuda.reset_launch_count()
    m, s, loss = jitted(m, s, on_device[2])
    assert fg.cuda.launch_count() <= 16
    cm, cs, _ = jitted(model, opt.init(model), batch)  # the same program on the CPU
    cm, cs, closs = jitted(cm, cs, batch)
    np.testing.assert_allclose(loss.numpy(), closs.numpy(), rtol=1e-5)
    for a, b in zip(fg.tree_leaves(m), fg.tree_leaves(cm)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_device_get_and_the_device_queries():
    on_device = fg.device_put({"w": np.arange(3.0, dtype=np.float32), "n": 7}, "cuda")
    host = fg.device_get(on_device)
    assert type(host["w"]) is np.ndarray and host["n"] == 7
    np.testing.assert_array_equal(host["w"], [0.0, 1.0, 2.0])
    assert fg.default_backend() == "gpu" and fg.device_count() == len(fg.local_devices()) >= 1
    assert all(d.platform == "cuda" for d in fg.local_devices())


def test_linear_transpose_on_the_device_with_device_constants():
    """Its linearity check evaluates the function at a random point: placed on the primals' device,
    where the function's closed-over arrays are (a host point met a device matrix there)."""
    m = rng.standard_normal((2, 3))
    on_device = fg.device_put(fnp.asarray(m), "cuda")
    transpose = fg.linear_transpose(lambda a: on_device @ a, fg.device_put(fnp.zeros(3, dtype=fnp.float64), "cuda"))
    (out,) = transpose(fg.device_put(fnp.ones(2, dtype=fnp.float64), "cuda"))
    assert out.device == "cuda:0"
    np.testing.assert_allclose(out.numpy(), m.T @ np.ones(2), rtol=1e-12)
    with pytest.raises(ValueError, match="is not linear"):
        fg.linear_transpose(fnp.sin, fg.device_put(fnp.zeros(3), "cuda"))

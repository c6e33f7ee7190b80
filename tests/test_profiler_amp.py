"""Profiler tables and traces, memory statistics, autocast and loss scaling."""
import gc
import json

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import data, nn, optim
from funcgrad.models import RECIPES
from funcgrad.train import classification_loss, fit

from .helpers import assert_close


def _model():
    return nn.MLP(8, [16], 3, key=fg.random.key(0))


def test_profiler_records_ops_ranges_and_sorts_tables(tmp_path):
    model, x, y = _model(), np.ones((4, 8), np.float32), np.array([0, 1, 2, 0])
    with fg.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        with fg.profiler.record_function("my_step"):
            fg.grad(lambda m: nn.cross_entropy(m(x), y))(model)
    rows = prof.key_averages()
    names = {r["name"] for r in rows}
    assert {"my_step", "forward", "backward", "matmul", "logsumexp", "pick", "unpick"} <= names
    matmul = next(r for r in rows if r["name"] == "matmul")
    assert matmul["count"] == 5 and matmul["self_cpu_memory_usage"] > 0
    step = next(r for r in rows if r["name"] == "my_step")
    assert step["cpu_time_total"] >= sum(r["cpu_time_total"] for r in rows if r["name"] in ("forward", "backward"))
    for key in ("cpu_time_total", "self_cpu_time_total", "self_cpu_memory_usage", "count"):
        table = rows.table(sort_by=key, row_limit=4)
        listed = [line.split()[0] for line in table.splitlines()[3:7]]
        expected = [r["name"] for r in sorted(rows, key=lambda r: r[key], reverse=True)[:4]]
        assert [rows_by_name(rows, n)[key] for n in listed] == [rows_by_name(rows, n)[key] for n in expected]
    with pytest.raises(ValueError, match="sort_by"):
        rows.table(sort_by="speed")
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert len([r for r in by_shape if r["name"] == "matmul"]) > 1
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())["traceEvents"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in trace)
    outer = next(e for e in trace if e["name"] == "my_step")
    inner = [e for e in trace if e["name"] == "matmul"]
    assert all(outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1e-3 for e in inner)
    assert any("input shapes" in e["args"] for e in inner)


def rows_by_name(rows, name):
    return next(r for r in rows if r["name"] == name)


def test_profiler_off_records_nothing_and_schedule_selects_steps():
    x = fg.ones(3)
    with fg.profiler.profile() as prof:
        pass
    fnp.sin(x)
    assert prof.events == []
    ready = []
    sched = fg.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    with fg.profiler.profile(schedule=sched, on_trace_ready=lambda p: ready.append(len(p.events))) as prof:
        for i in range(6):
            with fg.profiler.record_function(f"step{i}"):
                fnp.sin(x)
            prof.step()
    assert sorted({e.name for e in prof.events if e.name.startswith("step")}) == ["step2", "step3"]
    assert ready == [4]

    @fg.profiler.record_function("decorated")
    def f(v):
        return fnp.cos(v)
    with fg.profiler.profile() as prof:
        f(x)
    assert [e.name for e in prof.events] == ["cos", "decorated"]


def test_memory_statistics_rise_and_fall():
    gc.collect()
    base = fg.memory_allocated()
    fg.reset_peak_memory_stats()
    a = fg.zeros((1000,), dtype=fg.float64)
    assert fg.memory_allocated() - base == 8000
    b = a + 1.0
    assert fg.memory_allocated() - base == 16000
    del a, b
    gc.collect()
    assert fg.memory_allocated() == base
    assert fg.max_memory_allocated() - base == 16000
    fg.reset_peak_memory_stats()
    assert fg.max_memory_allocated() == base
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        fg.memory_allocated("tpu")


def test_autocast_changes_compute_dtype_not_parameters():
    model, x, y = _model(), np.ones((4, 8), np.float32), np.array([0, 1, 2, 0])
    with fg.amp.autocast(fg.bfloat16):
        h = model.linears[0](x)
        assert h.dtype == fg.bfloat16
        assert nn.log_softmax(h).dtype == fg.float32
        assert fnp.sum(h).dtype == fg.float32
        loss, grads = fg.value_and_grad(lambda m: nn.cross_entropy(m(x), y))(model)
    assert model.linears[0].weight.dtype == fg.float32
    assert all(g.dtype == fg.float32 for g in fg.tree_leaves(grads))
    ref_loss, ref_grads = fg.value_and_grad(lambda m: nn.cross_entropy(m(x), y))(model)
    assert abs(float(loss) - float(ref_loss)) < 2e-2
    for g, r in zip(fg.tree_leaves(grads), fg.tree_leaves(ref_grads)):
        assert_close(g, r, rtol=5e-2, atol=5e-3)
    assert fnp.matmul(x, np.ones((8, 2), np.float32)).dtype == fg.float32  # outside autocast again
    with pytest.raises(ValueError, match="bfloat16 or float16"):
        with fg.amp.autocast(fg.float32):
            pass


def test_autocast_halves_activation_memory():
    model = nn.MLP(256, [512], 10, key=fg.random.key(0))
    x = fg.random.normal(fg.random.key(1), (128, 256))
    held = {}
    for name, enabled in (("fp32", False), ("bf16", True)):
        gc.collect()
        base = fg.memory_allocated()
        with fg.amp.autocast(fg.bfloat16, enabled=enabled):
            out, f_vjp = fg.vjp(lambda m: fnp.sum(m(x)), model)
        held[name] = fg.memory_allocated() - base
        del out, f_vjp
    assert held["bf16"] <= 0.65 * held["fp32"]


def test_loss_scaling_skips_exactly_the_non_finite_steps():
    scaler = fg.amp.DynamicLossScale.create(init_scale=8.0, growth_interval=2)
    params = {"w": fg.ones(2)}
    opt = optim.sgd(1.0)
    state = opt.init(params)
    taken = []
    for grad in ([1.0, 1.0], [np.inf, 1.0], [1.0, 2.0], [1.0, 1.0], [np.nan, 0.0]):
        scaled = {"w": fg.asarray(np.array(grad) * float(scaler.scale))}
        grads, finite = scaler.unscale(scaled)
        if bool(finite):
            updates, state = opt.update(grads, state, params)
            params = optim.apply_updates(params, updates)
        taken.append(bool(finite))
        scaler = scaler.update(finite)
    assert taken == [True, False, True, True, False]
    assert_close(params["w"], [1 - 1 - 1 - 1, 1 - 1 - 2 - 1])
    # 8 -> (finite) count 1 -> (inf) 4 -> count 1 -> grow to 8 -> (nan) 4
    assert float(scaler.scale) == 4.0
    assert float(scaler.scale_loss(fg.array(2.0))) == 8.0


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_low_precision_digits_training_is_within_a_point_of_fp32(precision):
    x, y = data.load("digits", "train")
    xt, yt = data.load("digits", "test")
    accuracy = {}
    for p in ("fp32", precision):
        model = RECIPES["mlp"].build(x, y, fg.random.key(0))
        loader = data.DataLoader(data.ArrayDataset(x, y), 64, shuffle=True, seed=0)
        result = fit(model, optim.adamw(optim.cosine_schedule(3e-3, 12 * len(loader))), loader, classification_loss,
                     epochs=12, eval_loader=data.DataLoader(data.ArrayDataset(xt, yt), 512), precision=p)
        accuracy[p] = result.history[-1]["test_accuracy"]
    assert accuracy[precision] >= accuracy["fp32"] - 0.01, accuracy


def test_jit_compilation_is_its_own_range_in_a_profile():
    f = fg.jit(lambda x: fnp.sum(fnp.tanh(x) * 2.0))
    with fg.profiler.profile() as prof:
        f(fnp.ones(4))
        f(fnp.ones(4))
    names = [e.name for e in prof.events]
    assert names.count("jit compile: <lambda>") == 1 and names.count("jit:<lambda>") == 2


def test_the_loss_scale_never_grows_to_infinity():
    """120 growths once reached inf, after which every step was skipped (PyTorch grows only to a
    finite scale)."""
    scaler = fg.amp.DynamicLossScale.create(growth_interval=1)
    for _ in range(200):
        scaler = scaler.update(fnp.asarray(True))
    assert np.isfinite(float(scaler.scale)) and float(scaler.scale) == 2.0 ** 127


def test_a_profile_inside_another_is_recorded_by_both():
    with fg.profiler.profile() as outer:
        fnp.sin(fnp.ones(3))
        with fg.profiler.profile() as inner:
            with fg.profiler.record_function("inner region"):
                fnp.cos(fnp.ones(3))
        fnp.tan(fnp.ones(3))
    assert sorted(e.name for e in outer.events) == ["cos", "inner region", "sin", "tan"]
    assert sorted(e.name for e in inner.events) == ["cos", "inner region"]
    cos = next(e for e in outer.events if e.name == "cos")
    assert cos.parent is not None and cos.parent.name == "inner region"  # nested in the outer's copy

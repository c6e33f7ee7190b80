"""Host memory: importing funcgrad leaves malloc alone; an application may keep freed memory in
malloc's free lists (cpu/host_memory.py, the command line does); jitted programs reuse planned
buffers (arena.py) and so fault no fresh pages from call to call either way."""
import ctypes
import os
import platform
import re
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.arena import Arenas, BufferPlan, unplanned

from .helpers import assert_close

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
PROBE = """
import ctypes, sys, numpy as np, funcgrad
from funcgrad.cpu import host_memory
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                 "fsmblks", "uordblks", "fordblks", "keepcost")]
mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Info
if sys.argv[1] == "keep":
    host_memory.keep_freed_memory()
before = mallinfo2().hblkhd
a = np.empty(4 << 20, np.uint8)
print(mallinfo2().hblkhd - before, host_memory.applied)
"""


def _mmapped_bytes_of_a_4mib_array(keep: bool, **env) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, "keep" if keep else "import"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env}, check=True)
    grew, applied = proc.stdout.split()
    return int(grew), applied


@pytest.mark.skipif(not GLIBC or not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc >= 2.33 only")
def test_import_leaves_malloc_alone_and_keeping_freed_memory_is_opt_in():
    grew, applied = _mmapped_bytes_of_a_4mib_array(keep=False)
    assert grew >= 4 << 20 and applied == "False"  # glibc's default: a fresh mmap
    assert _mmapped_bytes_of_a_4mib_array(keep=True) == (0, "True")
    grew, applied = _mmapped_bytes_of_a_4mib_array(keep=True, FUNCGRAD_MALLOC="system")
    assert grew >= 4 << 20 and applied == "False"


FAULTS = """
import resource, numpy as np, funcgrad as fg
from funcgrad import nn, optim
from funcgrad.models import CNN
model = CNN(28, 1, 10, dropout=0.0, key=fg.random.key(0))
opt = optim.adamw(1e-3)
x = fg.asarray(np.random.default_rng(0).standard_normal((64, 1, 28, 28)).astype(np.float32))
y = fg.asarray(np.arange(64) % 10)
def step(m, s):
    loss, g = fg.value_and_grad(lambda m: nn.cross_entropy(m(x), y))(m)
    u, s = opt.update(g, s, m)
    return optim.apply_updates(m, u), s, loss
step = fg.jit(step, donate_argnums=(0, 1))  # the new parameters and state take the old ones' buffers
state = opt.init(model)
for _ in range(3):
    model, state, _ = step(model, state)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    model, state, _ = step(model, state)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / 3)
"""


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator")
def test_a_jitted_cnn_step_faults_in_no_fresh_pages_under_the_default_allocator():
    """Each step of the MNIST-size CNN moves ~40 MB of activations, window matrices and padded
    inputs; without planned buffers and scratch glibc unmapped them on free and each step faulted
    ~6,400 pages back in."""
    proc = subprocess.run([sys.executable, "-c", FAULTS], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "FUNCGRAD_MALLOC": "system"}, check=True)
    assert float(proc.stdout.split()[-1]) < 200


def _two_layer(x, w):
    h = fnp.tanh(x @ w)
    return fnp.sum(h * h, axis=1), h @ w.T


def test_planned_buffers_never_hold_what_a_call_returned():
    """The second call reuses the first's buffers; what the first returned must not change."""
    rng = np.random.default_rng(0)
    x1, x2 = (rng.standard_normal((64, 300)).astype(np.float32) for _ in range(2))
    w = rng.standard_normal((300, 300)).astype(np.float32) * 0.1
    jitted = fg.jit(_two_layer)
    first = jitted(x1, w)
    kept = [np.array(a) for a in first]
    second = jitted(x2, w)
    assert next(iter(jitted.cache.values())).run.planned_bytes >= 64 * 300 * 4
    for got, want in zip(first, kept):
        assert_close(got, want, rtol=0, atol=0)
    for got, want in zip(second, _two_layer(fg.asarray(x2), fg.asarray(w))):
        assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_concurrent_calls_take_their_own_buffers():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((300, 300)).astype(np.float32) * 0.1
    inputs = [rng.standard_normal((64, 300)).astype(np.float32) for _ in range(4)]
    jitted = fg.jit(_two_layer)
    jitted(inputs[0], w)
    results, errors = {}, []

    def worker(i):
        try:
            for _ in range(20):
                results[i] = [np.array(a) for a in jitted(inputs[i], w)]
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, x in enumerate(inputs):
        for got, want in zip(results[i], _two_layer(fg.asarray(x), fg.asarray(w))):
            assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_buffer_plan_reuses_dead_slots_and_the_guard_copies_escaped_views():
    plan = BufferPlan()
    a = plan.assign((100,), np.float32, start=0, end=2)
    b = plan.assign((50,), np.float64, start=1, end=3)  # a is alive: a second slot
    c = plan.assign((80,), np.float32, start=3, end=5)  # a is dead: its 400-byte slot
    d = plan.assign((200,), np.float32, start=4, end=6)  # b is dead: its slot grows
    assert [v[0] for v in plan.values] == [0, 1, 0, 1] and plan.slot_bytes == [400, 800]
    buffers = Arenas(plan).take()
    assert [buffers[i].shape for i in (a, b, c, d)] == [(100,), (50,), (80,), (200,)]
    view = buffers[c][10:20]
    copied = unplanned(view, buffers)
    assert copied is not view and not np.shares_memory(copied, buffers[c])
    fresh = np.ones(3)
    assert unplanned(fresh, buffers) is fresh


def test_outputs_the_caller_dropped_are_written_again_and_held_ones_never():
    """Without donation a step's result is the next step's argument, dropped after it: the call
    after that writes into it (automatic donation of dead outputs, arena.Recycler)."""
    step = fg.jit(lambda w, x: w - 0.1 * fnp.tanh(w * x))
    x = fg.asarray(np.full((300, 300), 0.5, np.float32))
    held = step(fg.asarray(np.ones((300, 300), np.float32)), x)
    snapshot = np.array(held)
    first = step(held, x)
    second = step(first, x)
    dropped = weakref.ref(first._value)
    del first  # now only the program's recycler holds that buffer
    third = step(second, x)
    assert third._value is dropped()
    expected = snapshot
    for _ in range(3):
        expected = expected - 0.1 * np.tanh(expected * 0.5)
    assert_close(held, snapshot, rtol=0, atol=0)
    assert_close(third, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, "bfloat16"])
def test_norm_and_attention_write_into_planned_buffers(dtype, kept, monkeypatch):
    """Layer norm, attention (its fused form both ways, or its weights where they are kept) and
    the norm's backward pass take jit's planned buffers (out=) where their results are 64 KiB or
    more, in place where the dtype is their working one and through a copy for half types; results
    equal the eager ones, call after call."""
    from funcgrad.nn import functional as F
    from funcgrad.ops import attention as A, normalization as N
    if not kept:
        monkeypatch.setattr(A, "KEEP_WEIGHTS_BYTES", 0)

    def loss(x, t):
        h = nn.layer_norm(x, x.shape[-1])
        q, k, v = (fnp.transpose(fnp.reshape(h * s, (8, 64, 2, 32)), (0, 2, 1, 3)) for s in (1.0, 0.5, 2.0))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return fnp.sum(fnp.astype(a, np.float32) * t)
    rng = np.random.default_rng(0)
    x = fnp.asarray(rng.standard_normal((8, 64, 64)), dtype)  # 64 KiB in bfloat16
    t = [fnp.asarray(rng.standard_normal((8, 2, 64, 32)), np.float32) for _ in range(2)]
    jitted = fg.jit(fg.value_and_grad(loss))
    for target in t:
        value, grad = jitted(x, target)
        want_value, want_grad = fg.value_and_grad(loss)(x, target)
        tol = 2e-2 if dtype == "bfloat16" else 1e-5
        assert_close(value, want_value, rtol=tol, atol=tol)
        assert_close(fnp.astype(grad, np.float64), fnp.astype(want_grad, np.float64), rtol=tol, atol=tol)
    run = next(iter(jitted.cache.values())).run
    callees = [re.search(r"= (c\d+)\(", line) for line in run.source.splitlines() if "out=" in line]
    into = {getattr(run.__globals__[c.group(1)], "func", None) for c in callees if c}
    fused = {A.attention_p.impl, A.attention_grads_p.impl}
    attention = {A.attention_weights_p.impl} if kept and dtype != "bfloat16" else fused  # half types: fused
    assert attention | {N.norm_p.impl, N.norm_grad_p.impl} <= into
    assert not (fused - attention) & into


def test_a_reshape_that_copies_writes_into_a_planned_buffer_and_one_that_views_aliases_safely():
    """Merging a transposed view's axes copies (NumPy's rule): under jit the copy goes into a
    planned buffer. A reshape that views its input (the caller's array, returned) takes no buffer and
    is never recycled as scratch: the caller's array keeps its values, call after call."""
    from funcgrad.ops import layout
    rng = np.random.default_rng(0)
    table = rng.standard_normal((64, 256)).astype(np.float32)

    def f(x):
        merged = fnp.reshape(fnp.transpose(x, (0, 2, 1, 3)), (8, 64, 128))  # copies: 256 KiB
        flat = fnp.reshape(x, (8, 2, 64 * 64))  # a view of the argument, returned
        const = fnp.reshape(fnp.asarray(table), (64, 64, 4))  # a view of a constant
        return fnp.tanh(merged) * 2.0, flat, fnp.sum(const * 3.0 + 1.0)

    jitted = fg.jit(f)
    xs = [rng.standard_normal((8, 2, 64, 64)).astype(np.float32) for _ in range(3)]
    kept = [x.copy() for x in xs]
    results = [jitted(fg.asarray(x)) for x in xs]
    for x, original, (merged, flat, total) in zip(xs, kept, results):
        np.testing.assert_array_equal(x, original)
        assert_close(merged, np.tanh(x.transpose(0, 2, 1, 3).reshape(8, 64, 128)) * 2.0, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(flat), original.reshape(8, 2, -1))
        assert_close(total, np.sum(table * 3.0 + 1.0), rtol=1e-5)
    run = next(iter(jitted.cache.values())).run
    calls = [(re.search(r"= (c\d+)\(", line), line) for line in run.source.splitlines()]
    reshapes = [line for call, line in calls
                if call and getattr(run.__globals__[call.group(1)], "func", None) is layout.reshape_p.impl]
    assert sum("out=B[" in line for line in reshapes) == 1, reshapes  # the copy; the views take none
    assert not any("_reuse" in line for line in reshapes)

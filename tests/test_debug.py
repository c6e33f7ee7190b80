"""fg.debug.print and fg.debug.callback: the values where the program runs, eagerly, at every call
of a jitted function, inside grad (the primal values) and once per member under vmap; on the GPU
(the simulator) through the host."""
import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp


def _loss(x):
    fg.debug.print("x={} total={total}", x, total=fnp.sum(x))
    y = fnp.sin(x)
    fg.debug.print("y={}", y)
    return fnp.sum(2 * y)


def _lines(capsys) -> list:
    return capsys.readouterr().out.splitlines()


def test_print_shows_values_eagerly_and_at_every_jitted_call(capsys):
    x = np.array([0.0, 1.0, 2.0])
    _loss(x)
    expected = [f"x={x} total=3.0", f"y={np.sin(x)}"]
    assert _lines(capsys) == expected
    jitted = fg.jit(_loss)
    jitted(x)
    jitted(x + 1)  # the cached program prints the new values: a callback, not a trace-time print
    assert _lines(capsys) == expected + [f"x={x + 1} total=6.0", f"y={np.sin(x + 1)}"]
    program = str(fg.make_program(_loss)(x))
    assert program.count("host_callback") == 2  # ordered: kept although nothing reads its token


def test_print_under_grad_shows_primal_values_and_under_vmap_each_member(capsys):
    x = np.array([0.0, 1.0, 2.0])
    for transform in (fg.grad(_loss), fg.jit(fg.grad(_loss))):
        grads = transform(x)
        np.testing.assert_allclose(grads, 2 * np.cos(x))  # the print cuts nothing
        assert _lines(capsys) == [f"x={x} total=3.0", f"y={np.sin(x)}"]
    batch = np.arange(4.0).reshape(2, 2)
    for transform in (fg.vmap(_loss), fg.jit(fg.vmap(_loss))):
        np.testing.assert_allclose(transform(batch), 2 * np.sin(batch).sum(1))
        assert _lines(capsys) == [f"x={batch[0]} total=1.0", f"x={batch[1]} total=5.0", f"y={np.sin(batch[0])}",
                                  f"y={np.sin(batch[1])}"]


def test_callback_receives_numpy_pytrees_and_other_leaves_unchanged():
    seen = []

    def step(x):
        fg.debug.callback(lambda tree, label: seen.append((type(tree["v"]), tree["v"].tolist(), label)),
                          {"v": x * 2}, label="step")
        return x + 1

    fg.jit(step)(np.array([1.0, 2.0]))
    assert seen == [(np.ndarray, [2.0, 4.0], "step")]


def test_print_on_the_gpu_reads_device_values_through_the_host(capsys):
    x = fg.device_put(fnp.asarray(np.array([1.0, 4.0], np.float32)), "cuda")
    out = fg.jit(lambda v: (fg.debug.print("v={}", v), fnp.sqrt(v))[1])(x)
    assert out.device.platform == "cuda"
    assert _lines(capsys) == [f"v={np.array([1.0, 4.0], np.float32)}"]

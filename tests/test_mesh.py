"""Groups, meshes, send/recv and the differentiable collectives: across processes (tests/mesh_worker.py
under the launcher or mpiexec, each under a hard time limit) and in one process (a mesh of one)."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.dist as dist
import funcgrad.numpy as fnp
from funcgrad.dist.mesh import Place
from funcgrad.ops.core import incomplete

REPO = Path(__file__).resolve().parent.parent
WORKER = str(REPO / "tests" / "mesh_worker.py")
LIMIT = 120
MPIEXEC = Path(sys.executable).with_name("mpiexec")


def run(scenario, backend, nproc, timeout="20", **extra_env):
    env = {**os.environ, "PYTHONPATH": str(REPO), "DIST_TIMEOUT": timeout, **extra_env}
    if backend == "mpi":
        pytest.importorskip("mpi4py")
        if not MPIEXEC.exists():
            pytest.skip("no mpiexec beside this Python (pip install 'funcgrad[mpi]')")
        cmd = [str(MPIEXEC), "-n", str(nproc), sys.executable, WORKER, scenario, backend]
    else:
        cmd = [sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", str(nproc), WORKER, scenario, backend]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT, env=env, cwd=REPO)
    return proc, re.findall(r"RESULT (.*)", proc.stdout)


@pytest.mark.parametrize("backend,nproc", [("shm", 3), ("tcp", 2), ("mpi", 3)])
def test_every_collective_differentiates_as_the_computation_on_one_process(backend, nproc):
    proc, results = run("rules", backend, nproc)
    assert results == ["ok"] * nproc, proc.stdout + proc.stderr


@pytest.mark.parametrize("backend", ["shm", "tcp", "mpi"])
def test_a_two_dimensional_mesh_reduces_along_each_axis_and_both(backend):
    proc, results = run("mesh2d", backend, 4)
    assert results == ["ok"] * 4, proc.stdout + proc.stderr


@pytest.mark.parametrize("backend", ["shm", "tcp", "mpi"])
def test_new_group_and_send_recv(backend):
    proc, results = run("groups", backend, 3)
    assert results == ["ok"] * 3, proc.stdout + proc.stderr


def test_messages_larger_than_the_shared_segments_travel_in_rounds():
    from funcgrad.dist import shm
    proc, results = run("gather_rounds", "shm", 3, SHM_CAPACITY=str(2 * shm.SMALL))
    assert results == ["ok"] * 3, proc.stdout + proc.stderr


@pytest.mark.parametrize("backend", ["shm", "tcp"])
def test_recv_of_another_shape_is_an_error_on_both_sides(backend):
    proc, results = run("recv_mismatch", backend, 2, timeout="5")
    assert proc.returncode != 0
    assert len(results) == 2, proc.stdout + proc.stderr
    for message in results:
        assert re.match(r"DistError: rank \d: collective mismatch: this rank called \(send #1, dst=1, dtype=float64, "
                        r"shape=\[\d\]\) but rank \d called \(send #1, dst=1, dtype=float64, shape=\[\d\]\)", message)


def test_ranks_that_disagree_on_the_mesh_all_raise():
    proc, results = run("mesh_mismatch", "tcp", 2, timeout="5")
    assert proc.returncode != 0
    assert len(results) == 2 and all("collective mismatch" in m and "make_mesh" in m for m in results), proc.stdout


def test_a_rank_that_skips_a_collective_is_named_within_the_timeout():
    start = time.monotonic()
    proc, results = run("stalled_psum", "shm", 3, timeout="3")
    assert time.monotonic() - start < 30
    assert sorted(results) == ["DistTimeoutError: rank 0: timed out after 3s in all_reduce #1 waiting for rank 2 "
                               "(did it skip the collective?)",
                               "DistTimeoutError: rank 1: timed out after 3s in all_reduce #1 waiting for rank 2 "
                               "(did it skip the collective?)"], proc.stdout + proc.stderr


# ---- one process: a mesh of one -----------------------------------------------------------------------
@pytest.fixture
def mesh_of_one(monkeypatch):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    dist.init_process_group("tcp")
    try:
        yield dist.make_mesh({"dp": 1, "tp": 1})
    finally:
        dist.destroy_process_group()


def test_collectives_are_complete_primitives():
    assert incomplete() == []
    for prim in (dist.collectives.psum_p, dist.collectives.all_gather_p, dist.collectives.ppermute_p):
        assert prim.ordered and prim.cuda == "through_host"


def test_on_a_mesh_of_one_each_collective_is_its_identity(mesh_of_one):
    x = fnp.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(dist.psum(x, "tp")), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(dist.pmean({"a": x}, ("dp", "tp"))["a"]), np.asarray(x))
    assert dist.all_gather(x, "tp", axis=2).shape == (2, 3, 1)
    assert dist.all_gather(x, "tp", axis=-1, tiled=True).shape == (2, 3)
    assert dist.psum_scatter(x[None], "tp").shape == (2, 3)
    assert dist.all_to_all(x[None], "tp", 0, 2).shape == (2, 3, 1)
    np.testing.assert_array_equal(np.asarray(dist.ppermute(x, "tp", [])), np.zeros((2, 3)))
    np.testing.assert_array_equal(np.asarray(fg.grad(lambda x: fnp.sum(dist.psum(x, "tp") ** 2))(x)), 2 * np.asarray(x))


def test_bad_axes_and_shapes_name_what_is_wrong(mesh_of_one):
    x = fnp.ones((2, 3))
    with pytest.raises(NameError, match=r"unbound axis name 'pp': the mesh's axes are \['dp', 'tp'\]"):
        dist.psum(x, "pp")
    with pytest.raises(ValueError, match=r"dimension 0 of shape \(2, 3\) must equal 1, the size of axis \['tp'\]"):
        dist.psum_scatter(x, "tp")
    with pytest.raises(ValueError, match=r"perm \[\(0, 2\), \(1, 2\)\] has a repeated destination"):
        dist.collectives._checked_perm([(0, 2), (1, 2)], 3)
    with pytest.raises(ValueError, match=r"outside the axis of size 1"):
        dist.ppermute(x, "tp", [(0, 1)])
    with pytest.raises(TypeError, match=r"psum needs an array of real numbers \(floats or integers\), got bool"):
        dist.psum(fnp.ones(2, dtype=bool), "tp")
    with pytest.raises(dist.DistError, match=r"the mesh \{'dp': 2\} has 2 positions but the job has 1 ranks"):
        dist.make_mesh({"dp": 2})
    with pytest.raises(ValueError, match="mesh axis 'dp' must have a positive integer size"):
        dist.make_mesh({"dp": 0})


def test_without_a_mesh_a_collective_says_how_to_make_one():
    with pytest.raises(dist.DistError, match="no mesh: make one with dist.make_mesh"):
        dist.psum(fnp.ones(2), "tp")


def test_jit_keeps_every_collective_in_order(mesh_of_one):
    def f(x):
        unused = dist.psum(x, "dp")  # noqa: F841  (the other processes wait for it: never dropped)
        a = dist.psum(x * 2.0, "tp")
        b = dist.psum(x * 2.0, "tp")  # identical, but each call is a message the others expect
        return fnp.sum(a + b) + fnp.sum(dist.psum(x[:2], "tp"))
    assert float(fg.jit(f)(fnp.ones(3))) == 14.0
    program = fg.make_program(f, optimized=True)(fnp.ones(3))
    ordered = [(e.prim.name, e.params["axis_name"]) for e in program.eqns if e.prim.ordered]
    assert ordered == [("psum", ("dp",)), ("psum", ("tp",)), ("psum", ("tp",)), ("psum", ("tp",))], program
    # and no work moves across one: the doublings stay between the collectives that surround them
    kinds = [e.prim.name for e in program.eqns]
    assert kinds.index("mul") > kinds.index("psum"), program


def test_the_profiler_records_collectives_with_the_bytes_sent(mesh_of_one):
    x = fnp.ones(4)
    with fg.profiler.profile() as prof:
        dist.psum(x, "tp")
        fg.jit(lambda x: dist.all_gather(x, "dp"))(x)
    comm = {e.name: e for e in prof.events if e.kind == "comm"}
    assert set(comm) == {"psum[tp]", "all_gather[dp]"}
    assert comm["psum[tp]"].sent == 0  # an axis of one process sends nothing
    assert "Sent" in prof.key_averages().table()


README_CHECKS = {  # appended to README's ```python launch blocks, by a name each defines
    # Adam normalises each gradient entry, so one whose true value is 0 (a softmax shift) turns float32
    # rounding noise into a full step: the gradients are compared first, then the update from them
    # (ZeRO's optimiser averages the dp-summed gradients, as DDP).
    "fsdp_gpt": "full = GPT(12, 8, dim=32, depth=2, heads=4, key=fg.random.key(0))\n"
                "batches = [fg.random.randint(fg.random.key(r), (4, 8), 0, 12) for r in range(4)]\n"
                "g = fg.grad(lambda m: sum(token_loss(m(t), t) for t in batches))(full)  # summed over dp\n"
                "whole = zero.unshard(grads)\n"
                "for a, b in zip(fg.tree_leaves(whole), fg.tree_leaves(g), strict=True):\n"
                "    assert abs(float(fg.numpy.max(fg.numpy.abs(a - b)))) < 1e-6, (a, b)\n"
                "mean = fg.tree_map(lambda x: x / 4, whole)\n"
                "u, _ = optim.adamw(1e-3).update(mean, optim.adamw(1e-3).init(full), full)\n"
                "expected = optim.apply_updates(full, u)\n"
                "for a, b in zip(fg.tree_leaves(zero.unshard(fsdp_gpt)), fg.tree_leaves(expected), strict=True):\n"
                "    assert abs(float(fg.numpy.max(fg.numpy.abs(a - b)))) < 1e-6, (a, b)\n",
    "pp_stage": "full = lambda m: token_loss(m(tokens), tokens)\n"
                "expected, expected_grads = fg.value_and_grad(full)(gpt)\n"
                "mean_loss = float(dist.all_reduce(loss, 'mean', group=mesh.group('dp')))\n"
                "assert abs(mean_loss - float(expected)) < 1e-5 * abs(float(expected)), (mean_loss, expected)\n"
                "mine = pipeline.split(expected_grads, 2)[mesh.axis_index('pp')]\n"
                "for a, b in zip(fg.tree_leaves(grads), fg.tree_leaves(mine), strict=True):\n"
                "    assert abs(float(fg.numpy.max(fg.numpy.abs(a - b)))) < 1e-5, (a, b)\n",
    "x_shard": "full = fg.grad(lambda W: fnp.mean((fnp.asarray(X) @ W) ** 2))(fnp.asarray(W))\n"
               "np.testing.assert_allclose(np.asarray(grad), np.asarray(full)[3 * t:3 * t + 3], rtol=1e-12)\n",
    "tp_gpt": "from funcgrad.models.gpt import sequence_loss\n"
              "(expected, _), expected_grads = fg.value_and_grad(sequence_loss, has_aux=True)(gpt, (tokens, tokens))\n"
              "assert abs(float(loss) - float(expected)) < 1e-5 * abs(float(expected)), (loss, expected)\n"
              "for a, b in zip(fg.tree_leaves(full_grads), fg.tree_leaves(expected_grads)):\n"
              "    assert abs(float(fg.numpy.max(fg.numpy.abs(a - b)))) < 1e-5, (a, b)\n",
}


@pytest.mark.parametrize("name", sorted(README_CHECKS))
def test_the_readme_scaling_examples_give_the_unsplit_results(tmp_path, name):
    """README's ```python launch blocks run under funcgrad launch on 4 processes."""
    blocks = re.findall(r"```python launch\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    (block,) = [b for b in blocks if re.search(rf"\b{name}\b", b)]
    script = tmp_path / "example.py"
    script.write_text(block + README_CHECKS[name] + "import os; os.write(1, b'RESULT ok\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", "4", str(script)],
                          capture_output=True, text=True, timeout=LIMIT, env=env, cwd=tmp_path)
    assert re.findall(r"RESULT (.*)", proc.stdout) == ["ok"] * 4, proc.stdout + proc.stderr


def test_every_readme_launch_block_is_checked():
    blocks = re.findall(r"```python launch\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    assert len(blocks) == len(README_CHECKS)


def test_on_a_gpu_collectives_stage_through_the_host(mesh_of_one):
    x = fg.device_put(fnp.arange(6.0, dtype=fnp.float32).reshape(2, 3), "cuda")
    out = dist.all_gather(dist.psum(x, "tp") * 2.0, "dp", axis=0)
    assert out.device == x.device and out.shape == (1, 2, 3)
    np.testing.assert_array_equal(np.asarray(out.to("cpu"))[0], 2 * np.arange(6.0).reshape(2, 3))


# ---- tensor parallelism -----------------------------------------------------------------------------
@pytest.mark.parametrize("backend,nproc", [("shm", 4), ("tcp", 2), ("mpi", 2)])
def test_a_tensor_parallel_gpt_has_the_unsplit_models_loss_and_gradients(backend, nproc):
    proc, results = run("tensor_parallel", backend, nproc)
    assert results == ["ok"] * nproc, proc.stdout + proc.stderr


def test_tensor_parallel_layers_on_one_rank_are_the_ordinary_layers(mesh_of_one):
    from funcgrad.nn import parallel
    key = fg.random.key(1)
    column, linear = parallel.ColumnParallelLinear(4, 6, key=key), fg.nn.Linear(4, 6, key=key)
    np.testing.assert_array_equal(np.asarray(column.weight), np.asarray(linear.weight))
    x = fnp.asarray(np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32))
    np.testing.assert_allclose(np.asarray(column(x)), np.asarray(linear(x)), rtol=1e-6)
    row = parallel.RowParallelLinear(6, 3, input_is_parallel=False, key=key)
    assert isinstance(row.unsplit(), fg.nn.Linear) and row.unsplit().weight.shape == (3, 6)
    tokens = fnp.asarray([[0, 3, 5]])
    embedding = parallel.VocabParallelEmbedding(6, 2, key=key)
    np.testing.assert_array_equal(np.asarray(embedding(tokens)), np.asarray(embedding.unsplit()(tokens)))
    padded = parallel.VocabParallelEmbedding(6, 2, padding_idx=3, key=key)  # row 3: zero, and no gradient
    grads = fg.grad(lambda m: fnp.sum(m(tokens)))(padded)
    np.testing.assert_array_equal(np.asarray(grads.weight)[:, 0], [1, 0, 0, 0, 0, 1])
    assert padded.unsplit().padding_idx == 3 and not np.asarray(padded.unsplit().weight)[3].any()
    logits = fnp.asarray(np.random.default_rng(1).standard_normal((4, 6)))
    targets = fnp.asarray([1, -100, 5, 0])
    np.testing.assert_allclose(float(parallel.vocab_parallel_cross_entropy(logits, targets)),
                               float(fg.nn.cross_entropy(logits, targets, ignore_index=-100)), rtol=1e-12)


def test_layouts_that_cannot_split_name_the_size(monkeypatch):
    from funcgrad.nn import parallel
    monkeypatch.setattr(dist.collectives.M, "current", lambda: Place({"tp": 3}, (0,)))
    with pytest.raises(ValueError, match="ColumnParallelLinear out_features: size 4 does not split over the 3 ranks "
                                         "of axis 'tp'"):
        parallel.ColumnParallelLinear(2, 4, key=fg.random.key(0))
    with pytest.raises(ValueError, match="4 heads do not split over the 3 ranks of axis 'tp'"):
        parallel.ParallelMultiHeadAttention(fg.nn.MultiHeadAttention(8, 4, key=fg.random.key(0)), "tp")
    with pytest.raises(ValueError, match=r"targets of shape \(3,\) do not match logits of shape \(2, 6\)"):
        parallel.vocab_parallel_cross_entropy(fnp.ones((2, 6)), fnp.asarray([0, 1, 2]))


# ---- pipeline parallelism ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend,nproc", [("shm", 4), ("tcp", 2), ("mpi", 2)])
def test_pipelined_gpt_has_the_unsplit_models_loss_and_gradients_for_every_schedule(backend, nproc):
    proc, results = run("pipeline", backend, nproc)
    assert results == ["ok"] * nproc, proc.stdout + proc.stderr


@pytest.mark.parametrize("backend", ["shm", "tcp"])
def test_a_stalled_stage_is_named_by_its_neighbours_within_the_timeout(backend):
    start = time.monotonic()
    proc, results = run("stalled_stage", backend, 3, timeout="3")
    assert time.monotonic() - start < 40 and proc.returncode != 0
    assert len(results) == 2, proc.stdout + proc.stderr
    for message in results:
        assert re.match(r"DistTimeoutError: rank [02]: timed out after 3s in send #\d+ waiting for rank 1", message), message


def test_split_and_merge_are_inverse_and_the_stages_compute_the_model():
    from funcgrad.dist import pipeline
    from funcgrad.models.gpt import GPT
    model = GPT(11, 6, dim=8, depth=5, heads=2, key=fg.random.key(0))
    tokens = fnp.asarray(np.random.default_rng(0).integers(0, 11, (2, 6)))
    for n in (1, 2, 5):
        stages = pipeline.split(model, n)
        assert [len(s.layers) for s in stages] == [len(p) for p in np.array_split(np.arange(5), n)]
        assert [s.start for s in stages] == list(np.cumsum([0] + [len(s.layers) for s in stages])[:-1])
        h = tokens
        for s in stages:
            h = s(h)
        np.testing.assert_allclose(np.asarray(h), np.asarray(model(tokens)), rtol=1e-6)
        merged = pipeline.merge(stages, like=model)
        assert fg.tree_structure(merged) == fg.tree_structure(model)
        assert all(a is b for a, b in zip(fg.tree_leaves(merged), fg.tree_leaves(model)))
    seq = fg.nn.Sequential([fg.nn.Linear(2, 2, key=fg.random.key(i)) for i in range(3)])
    assert fg.tree_structure(pipeline.merge(pipeline.split(seq, 2))) == fg.tree_structure(seq)


def test_schedules_order_every_pass_once_and_1f1b_bounds_what_is_held():
    from funcgrad.dist import pipeline
    for p in (1, 2, 4):
        for m in (1, 3, 8):
            for s in range(p):
                for name in pipeline.SCHEDULES:
                    steps = pipeline.schedule(name, p, s, m)
                    assert sorted(steps) == sorted([("F", j) for j in range(m)] + [("B", j) for j in range(m)])
                    held, most = 0, 0
                    for kind, j in steps:
                        assert kind == "F" or ("F", j) in steps[:steps.index((kind, j))]
                        held += 1 if kind == "F" else -1
                        most = max(most, held)
                    assert most == (m if name == "gpipe" else min(p - s, m))


def test_a_pipeline_of_one_stage_is_value_and_grad(mesh_of_one):
    from funcgrad.dist import pipeline
    mesh = dist.make_mesh({"pp": 1})
    seq = fg.nn.Sequential([fg.nn.Linear(3, 4, key=fg.random.key(0)), fg.nn.Linear(4, 2, key=fg.random.key(1))])
    seq = fg.tree_map(lambda a: fnp.asarray(a, dtype=fnp.float64), seq)
    rng = np.random.default_rng(0)
    x, t = fnp.asarray(rng.standard_normal((6, 3))), fnp.asarray(rng.standard_normal((6, 2)))
    loss_fn = lambda y, t: fnp.mean((y - t) ** 2)  # noqa: E731
    loss, grads = fg.value_and_grad(lambda m: loss_fn(m(x), t))(seq)
    with mesh:
        for m, remat in ((1, False), (3, True)):
            pp_loss, pp_grads = pipeline.Pipeline(loss_fn, microbatches=m, remat=remat).value_and_grad(
                pipeline.stage(seq), (x, t))
            np.testing.assert_allclose(float(pp_loss), float(loss), rtol=1e-12)
            for a, b in zip(fg.tree_leaves(pp_grads), fg.tree_leaves(pipeline.split(grads, 1)[0]), strict=True):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_pipelines_that_cannot_work_say_why(mesh_of_one):
    from funcgrad.dist import pipeline
    from funcgrad.models.gpt import GPT
    with pytest.raises(ValueError, match=r"cannot split 2 layers \(GPT\) into 3 pipeline stages"):
        pipeline.split(GPT(5, 4, dim=8, depth=2, heads=2, key=fg.random.key(0)), 3)
    with pytest.raises(TypeError, match="takes an nn.Sequential or a model with a sequential"):
        pipeline.split(fg.nn.Linear(2, 2, key=fg.random.key(0)), 1)
    with pytest.raises(ValueError, match="unknown pipeline schedule 'interleaved'"):
        pipeline.Pipeline(lambda y, t: y, schedule="interleaved")
    with pytest.raises(ValueError, match="microbatches must be a positive integer, got 0"):
        pipeline.Pipeline(lambda y, t: y, microbatches=0)
    seq = fg.nn.Sequential([fg.nn.Linear(2, 2, key=fg.random.key(0)), fg.nn.Linear(2, 2, key=fg.random.key(1))])
    dist.make_mesh({"pp": 1})
    pipe = pipeline.Pipeline(lambda y, t: fnp.mean((y - t) ** 2), microbatches=4)
    with pytest.raises(ValueError, match=r"inputs of shape \(6, 2\) do not split into 4 equal micro-batches"):
        pipe.value_and_grad(pipeline.stage(seq), (fnp.ones((6, 2)), fnp.ones((6, 2))))
    with pytest.raises(ValueError, match="this rank is stage 0 of 1 along axis 'pp' but was given stage 1 of 2"):
        pipe.value_and_grad(pipeline.split(seq, 2)[1], (fnp.ones((4, 2)), fnp.ones((4, 2))))
    with pytest.raises(TypeError, match=r"the pipeline's batch must be \(inputs, targets\), got tuple of 3"):
        pipe.value_and_grad(pipeline.stage(seq), (fnp.ones((4, 2)),) * 3)
    with pytest.raises(TypeError, match=r"loss_fn must return a floating-point scalar, got \(1, 2\)"):
        pipeline.Pipeline(lambda y, t: y, microbatches=4).value_and_grad(pipeline.stage(seq),
                                                                         (fnp.ones((4, 2)), fnp.ones((4, 2))))


# ---- ZeRO / FSDP --------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend,nproc", [("shm", 3), ("tcp", 2), ("mpi", 2)])
def test_zero_stages_take_the_unsharded_optimisers_steps(backend, nproc):
    proc, results = run("zero", backend, nproc)
    assert results == ["ok"] * nproc, proc.stdout + proc.stderr


def test_shards_are_padded_equal_slices_and_stage_3_needs_a_sharded_model(mesh_of_one, monkeypatch):
    from funcgrad import optim
    from funcgrad.dist import zero
    x = fnp.arange(10.0)
    monkeypatch.setattr(dist.collectives.M, "current", lambda: Place({"dp": 4}, (3,)))
    np.testing.assert_array_equal(np.asarray(zero.shards_of({"w": x}, "dp")["w"]), [9.0, 0.0, 0.0])
    monkeypatch.undo()
    with pytest.raises(ValueError, match="ZeRO stage must be 1, 2 or 3, got 4"):
        zero.zero(optim.adam(), stage=4)
    opt = zero.zero(optim.adam(), stage=1, axis="dp")
    with pytest.raises(TypeError, match="needs the state zero's init returned"):
        opt.update({"w": x}, optim.adam().init({"w": x}), {"w": x})
    model = zero.shard(fg.nn.Sequential([fg.nn.Linear(2, 2, key=fg.random.key(0))]), "dp")
    assert repr(model) == "Sharded(Sequential, 2 parameters in shards of 6 elements here, 0 units, axis='dp')"
    with pytest.raises(ValueError, match=r"ZeRO stage 3 takes the parameters of a model made by zero.shard"):
        zero.zero(optim.adam(), stage=3).init({"w": x})
    assert fg.tree_structure(zero.unshard(model)) == fg.tree_structure(fg.nn.Sequential(
        [fg.nn.Linear(2, 2, key=fg.random.key(0))]))


# ---- hybrid layouts -------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend,nproc", [("shm", 4), ("shm", 8), ("tcp", 4), ("mpi", 4)])
def test_hybrid_layouts_train_as_one_process(backend, nproc):
    proc, results = run("hybrid", backend, nproc)
    assert results == ["ok"] * nproc, proc.stdout + proc.stderr


def test_layouts_that_cannot_work_are_one_line_errors():
    from funcgrad.dist.layout import Layout
    from funcgrad.models.gpt import GPT
    gpt = GPT(12, 6, dim=8, depth=2, heads=2, key=fg.random.key(0))
    assert Layout(8, tp=2, pp=2).axes == {"dp": 2, "pp": 2, "tp": 2}
    cases = [(lambda: Layout(6, tp=4), r"6 processes do not split into tp=4 x pp=1 groups"),
             (lambda: Layout(4, tp=4).check(gpt), r"tp=4 must divide the attention heads \(2\) and the MLP's hidden "
                                                  r"size \(32\)"),
             (lambda: Layout(3, pp=3).check(gpt), r"pp=3 stages exceed the model's 2 blocks"),
             (lambda: Layout(2, pp=2, microbatches=3).check(gpt, batch_size=8),
              r"the batch of 8 does not split into 3 equal micro-batches"),
             (lambda: Layout(2, zero=4), r"ZeRO stage must be 0, 1, 2 or 3, got 4"),
             (lambda: Layout(2, tp=2).check(GPT(12, 6, dim=8, depth=2, heads=2, dropout=0.1, key=fg.random.key(0))),
              r"GPT has dropout 0.1: a layout's steps pass no random keys yet"),
             (lambda: Layout(2, schedule="zb"), r"unknown pipeline schedule 'zb'"),
             (lambda: Layout(0), r"nproc must be a positive integer, got 0")]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


# ---- checkpoints of sharded state ----------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["shm", "tcp"])
def test_sharded_checkpoints_reshard_to_any_layout_and_to_one_process(backend, tmp_path):
    directory = str(tmp_path / "ckpt")
    proc, results = run("reshard", backend, 4, CKPT_DIR=directory)
    assert results == ["ok"] * 4, proc.stdout + proc.stderr
    assert sorted(os.listdir(directory)) == ["manifest.json"] + [f"shard-{r:05d}-of-00004.safetensors" for r in range(4)]
    proc, results = run("reshard_elsewhere", backend, 2, CKPT_DIR=directory)
    assert results == ["ok"] * 2, proc.stdout + proc.stderr


def test_a_directory_without_a_complete_manifest_is_refused(tmp_path):
    from funcgrad import optim
    from funcgrad.dist import checkpoint as dcp
    model = fg.nn.Linear(2, 2, key=fg.random.key(0))
    with pytest.raises(dist.DistError, match="holds no manifest.json: not a sharded checkpoint, or one whose saving"):
        dcp.load_whole(tmp_path, model, optim.sgd(0.1))
    (tmp_path / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(dist.DistError, match="is not a funcgrad-sharded/1 manifest"):
        dcp.load_whole(tmp_path, model, optim.sgd(0.1))


@pytest.mark.parametrize("backend", ["shm", "tcp"])
def test_a_killed_stage_is_named_by_its_neighbours_and_leaves_no_segments(backend):
    before = {p for p in os.listdir("/dev/shm") if p.startswith("funcgrad_")}
    start = time.monotonic()
    proc, results = run("stalled_stage", backend, 3, timeout="10", STAGE_FAULT="kill")
    assert time.monotonic() - start < 30 and proc.returncode != 0
    assert len(results) == 2, proc.stdout + proc.stderr
    for message in results:
        assert re.match(r"DistError: rank [02]: rank 1 (\(pid \d+\) died|closed its connection) during send #\d+",
                        message), message
    assert "rank 1 failed (killed by signal SIGKILL)" in proc.stderr
    assert {p for p in os.listdir("/dev/shm") if p.startswith("funcgrad_")} <= before


@pytest.mark.parametrize("backend,fault", [("shm", "raise"), ("shm", "kill"), ("tcp", "raise"), ("tcp", "kill")])
def test_a_failed_zero_shard_is_named_by_every_rank_and_leaves_no_segments(backend, fault):
    before = {p for p in os.listdir("/dev/shm") if p.startswith("funcgrad_")}
    start = time.monotonic()
    proc, results = run("failed_shard", backend, 3, timeout="10", SHARD_FAULT=fault)
    assert time.monotonic() - start < 30 and proc.returncode != 0
    others = [m for m in results if not m.startswith("RuntimeError: a fault in rank 1")]
    assert len(others) == 2, proc.stdout + proc.stderr
    for message in others:  # on tcp rank 0 hears of it from rank 2, and is told the first fault
        assert re.match(r"DistError: rank [02]: rank [12] .*during all_gather #\d+", message), message
        assert re.search(r"rank 1 (\(pid \d+\) died|closed its connection) during all_gather #\d+", message), message
    assert ("rank 1 failed (killed by signal SIGKILL)" if fault == "kill" else "rank 1 failed (exit code 1)") in proc.stderr
    assert {p for p in os.listdir("/dev/shm") if p.startswith("funcgrad_")} <= before

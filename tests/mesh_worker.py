"""Worker scenarios for tests/test_mesh.py: python mesh_worker.py SCENARIO BACKEND (under the launcher
or mpiexec). Each rank checks its values and gradients against the same computation done for every
rank at once in this one process (the reference below), in float64, and prints RESULT ok."""
import os
import sys

import numpy as np

import funcgrad as fg
import funcgrad.dist as dist
import funcgrad.numpy as fnp

scenario, backend = sys.argv[1], sys.argv[2]
if os.environ.get("SHM_CAPACITY"):  # small shared segments: messages travel in many rounds
    import funcgrad.dist.shm
    funcgrad.dist.shm.CAPACITY = int(os.environ["SHM_CAPACITY"])
dist.init_process_group(backend, timeout=float(os.environ.get("DIST_TIMEOUT", "20")))
rank, world = dist.get_rank(), dist.get_world_size()


def report(message):
    os.write(1, f"RESULT {message}\n".encode())  # one write: mpiexec merges the ranks' output


class Reference:
    """The collectives over a mesh for all ranks at once: values are lists indexed by rank, and
    each collective is written with funcgrad.numpy, so one process can differentiate the whole."""

    def __init__(self, axes):
        self.axes = dict(axes)
        self.coords = [np.unravel_index(r, tuple(self.axes.values())) for r in range(world)]

    def members(self, r, names):
        """Rank r's group along names, in axis_index order."""
        names = (names,) if isinstance(names, str) else tuple(names)
        keys = list(self.axes)
        same = [q for q in range(world) if all(self.coords[q][i] == self.coords[r][i]
                                               for i, k in enumerate(keys) if k not in names)]
        return sorted(same, key=lambda q: np.ravel_multi_index([self.coords[q][keys.index(k)] for k in names],
                                                               [self.axes[k] for k in names]))

    def psum(self, xs, names):
        return [sum(xs[q] for q in self.members(r, names)) for r in range(world)]

    def all_gather(self, xs, names, axis, tiled):
        join = fnp.concatenate if tiled else fnp.stack
        return [join([xs[q] for q in self.members(r, names)], axis=axis) for r in range(world)]

    def psum_scatter(self, xs, names, d, tiled):
        total = self.psum(xs, names)
        out = []
        for r in range(world):
            i, n = self.members(r, names).index(r), len(self.members(r, names))
            k = total[r].shape[d] // n
            part = fnp.take(total[r], fnp.arange(i * k, (i + 1) * k), axis=d) if tiled else fnp.take(total[r], i, axis=d)
            out.append(part)
        return out

    def ppermute(self, xs, names, perm):
        out = []
        for r in range(world):
            group = self.members(r, names)
            src = [s for s, d in perm if d == group.index(r)]
            out.append(xs[group[src[0]]] if src else fnp.zeros_like(xs[r]))
        return out

    def all_to_all(self, xs, names, split, concat, tiled):
        out = []
        for r in range(world):
            group = self.members(r, names)
            n, me = len(group), group.index(r)
            if tiled:
                chunks = [fnp.split(xs[q], n, axis=split)[me] for q in group]
                out.append(fnp.concatenate(chunks, axis=concat))
            else:
                chunks = [fnp.take(xs[q], me, axis=split) for q in group]
                out.append(fnp.stack(chunks, axis=concat))
        return out


def shard(seed, shape):
    return np.random.default_rng([seed, rank]).standard_normal(shape)


def all_shards(seed, shape):
    return [np.random.default_rng([seed, r]).standard_normal(shape) for r in range(world)]


def check_grad(local_fn, reference_fn, seed, shape):
    """d/dx_r of sum over ranks of local_fn equals the reference's gradient for rank r, and the
    values agree; so do jit's and the JVP's."""
    x = fnp.asarray(shard(seed, shape))
    value, grad = fg.value_and_grad(local_fn)(x)
    xs = [fnp.asarray(a) for a in all_shards(seed, shape)]
    ref_values = reference_fn(xs)
    ref_grads = fg.grad(lambda xs: sum(reference_fn(xs)))(xs)
    np.testing.assert_allclose(float(value), float(ref_values[rank]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(grad), np.asarray(ref_grads[rank]), rtol=1e-10, atol=1e-12)
    jitted = fg.jit(fg.value_and_grad(local_fn))(x)
    np.testing.assert_allclose(np.asarray(jitted[1]), np.asarray(ref_grads[rank]), rtol=1e-10, atol=1e-12)
    tangent = fnp.asarray(shard(seed + 1, shape))
    _, out_tangent = fg.jvp(local_fn, (x,), (tangent,))
    tangents = [fnp.asarray(a) for a in all_shards(seed + 1, shape)]
    ref_tangent = fg.jvp(lambda *xs: reference_fn(list(xs))[rank], tuple(xs), tuple(tangents))[1]
    np.testing.assert_allclose(float(out_tangent), float(ref_tangent), rtol=1e-10, atol=1e-12)


def weighted(v, r):
    return fnp.sum(fnp.tanh(v) * weights(v.shape)[r])


def weights(shape):
    return [fnp.asarray(np.random.default_rng([99, r]).standard_normal(shape)) for r in range(world)]


try:
    if scenario == "rules":  # every collective's value, gradient, jit and JVP on a 1-D mesh
        mesh = dist.make_mesh({"i": world})
        ref = Reference({"i": world})
        n = world
        w3 = weights((3,))
        swap = [(0, 1), (1, 0)] + [(j, j) for j in range(2, n)]
        cases = {
            "psum": (lambda x: fnp.sum(fnp.sin(dist.psum(x, "i")) * w3[rank]),
                     lambda xs: [fnp.sum(fnp.sin(v) * w3[r]) for r, v in enumerate(ref.psum(xs, "i"))], (3,)),
            "pmean": (lambda x: fnp.sum(dist.pmean(x * x, "i") * w3[rank]),
                      lambda xs: [fnp.sum(v / n * w3[r]) for r, v in enumerate(ref.psum([a * a for a in xs], "i"))],
                      (3,)),
            "all_gather": (lambda x: fnp.sum(fnp.tanh(dist.all_gather(x, "i", axis=1)) * weights((2, n, 3))[rank]),
                           lambda xs: [fnp.sum(fnp.tanh(v) * weights((2, n, 3))[r])
                                       for r, v in enumerate(ref.all_gather(xs, "i", 1, False))], (2, 3)),
            "all_gather_tiled": (lambda x: fnp.sum(dist.all_gather(x, "i", axis=1, tiled=True) ** 3
                                                   * weights((2, 3 * n))[rank]),
                                 lambda xs: [fnp.sum(v ** 3 * weights((2, 3 * n))[r])
                                             for r, v in enumerate(ref.all_gather(xs, "i", 1, True))], (2, 3)),
            "psum_scatter": (lambda x: fnp.sum(fnp.exp(dist.psum_scatter(x, "i", scatter_dimension=1)) * w3[rank]),
                             lambda xs: [fnp.sum(fnp.exp(v) * w3[r])
                                         for r, v in enumerate(ref.psum_scatter(xs, "i", 1, False))], (3, n)),
            "psum_scatter_tiled": (
                lambda x: fnp.sum(fnp.exp(dist.psum_scatter(x, "i", scatter_dimension=0, tiled=True)) * w3[rank]),
                lambda xs: [fnp.sum(fnp.exp(v) * w3[r]) for r, v in enumerate(ref.psum_scatter(xs, "i", 0, True))],
                (3 * n,)),
            "ppermute_cycle": (
                lambda x: fnp.sum(fnp.sin(dist.ppermute(x, "i", [(j, (j + 1) % n) for j in range(n)])) * w3[rank]),
                lambda xs: [fnp.sum(fnp.sin(v) * w3[r])
                            for r, v in enumerate(ref.ppermute(xs, "i", [(j, (j + 1) % n) for j in range(n)]))],
                (3,)),
            "ppermute_chain": (  # 0 -> 1 -> ... -> n-1; rank 0 receives nothing (zeros)
                lambda x: fnp.sum(fnp.cos(dist.ppermute(x, "i", [(j, j + 1) for j in range(n - 1)])) * w3[rank]),
                lambda xs: [fnp.sum(fnp.cos(v) * w3[r])
                            for r, v in enumerate(ref.ppermute(xs, "i", [(j, j + 1) for j in range(n - 1)]))],
                (3,)),
            "ppermute_swap": (  # a 2-cycle and fixed points
                lambda x: fnp.sum(fnp.sin(dist.ppermute(x, "i", swap)) * w3[rank]),
                lambda xs: [fnp.sum(fnp.sin(v) * w3[r]) for r, v in enumerate(ref.ppermute(xs, "i", swap))], (3,)),
            "all_to_all": (lambda x: fnp.sum(dist.all_to_all(x, "i", 0, 1) ** 2 * weights((2, n))[rank]),
                           lambda xs: [fnp.sum(v ** 2 * weights((2, n))[r])
                                       for r, v in enumerate(ref.all_to_all(xs, "i", 0, 1, False))], (n, 2)),
            "all_to_all_tiled": (lambda x: fnp.sum(dist.all_to_all(x, "i", 1, 0, tiled=True) ** 2
                                                   * weights((2 * n, 2))[rank]),
                                 lambda xs: [fnp.sum(v ** 2 * weights((2 * n, 2))[r])
                                             for r, v in enumerate(ref.all_to_all(xs, "i", 1, 0, True))], (2, 2 * n)),
        }
        for seed, (name, (local, reference, shape)) in enumerate(cases.items()):
            try:
                check_grad(local, reference, seed * 10, shape)
            except AssertionError as e:
                raise AssertionError(f"{name}: {e}") from None
        # pmax: ties share the gradient, as max's do
        x = fnp.asarray(np.array([1.0, 2.0 + (rank == 0), 3.0]) if rank < 2 else np.array([0.0, 0.0, 0.0]))
        g = np.asarray(fg.grad(lambda x: fnp.sum(dist.pmax(x, "i")))(x))
        expected = {0: [0.5 * n, 1.0 * n, 0.5 * n], 1: [0.5 * n, 0.0, 0.5 * n]}.get(rank, [0.0, 0.0, 0.0])
        np.testing.assert_allclose(g, expected)
        # vmap over a batch: each row's collective
        rows = fnp.asarray(shard(7, (4, 3)))
        batched = np.asarray(fg.vmap(lambda r: dist.all_gather(r, "i"))(rows))
        gathered = np.stack([np.stack([all_shards(7, (4, 3))[q][b] for q in range(n)]) for b in range(4)])
        np.testing.assert_allclose(batched, gathered)
        assert int(dist.axis_index("i")) == rank and dist.axis_size("i") == n
        # SyncBatchNorm over batches of unequal sizes (rank r holds r + 2 examples): BatchNorm1d of
        # the whole batch at once, in values, input gradients of the ranks' summed losses, running statistics
        from funcgrad.nn import parallel
        sizes = [r + 2 for r in range(n)]
        xs = [np.random.default_rng([11, r]).standard_normal((sizes[r], 3, 2)) for r in range(n)]
        cs = [np.random.default_rng([12, r]).standard_normal((sizes[r], 3, 2)) for r in range(n)]

        def trained(bn, x, c):
            with fg.nn.collect_state(bn) as state:
                y = bn(x, key=fg.random.key(0))
            return fnp.sum(y * c), (y, state.updates())
        sync = parallel.convert_sync_batchnorm(fg.nn.BatchNorm1d(3, dtype=fnp.float64), axis_name="i")
        whole = fg.nn.BatchNorm1d(3, dtype=fnp.float64)
        start = sum(sizes[:rank])
        (_, (ys, ups)), g = fg.value_and_grad(trained, argnums=1, has_aux=True)(sync, fnp.asarray(xs[rank]), cs[rank])
        (_, (y_all, ups_all)), g_all = fg.value_and_grad(trained, argnums=1, has_aux=True)(
            whole, fnp.asarray(np.concatenate(xs)), np.concatenate(cs))
        np.testing.assert_allclose(np.asarray(ys), np.asarray(y_all)[start:start + sizes[rank]], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(g), np.asarray(g_all)[start:start + sizes[rank]], rtol=1e-10, atol=1e-12)
        jitted = fg.jit(fg.grad(trained, argnums=1, has_aux=True))(sync, fnp.asarray(xs[rank]), cs[rank])[0]
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(g), rtol=1e-12, atol=1e-14)
        for k, v in ups_all.items():
            np.testing.assert_allclose(np.asarray(ups[k]), np.asarray(v), rtol=1e-12)
        report("ok")
    elif scenario == "mesh2d":  # a dp x tp mesh: groups along each axis and both
        mesh = dist.make_mesh({"dp": 2, "tp": world // 2})
        ref = Reference({"dp": 2, "tp": world // 2})
        assert mesh.axis_index("dp") == rank // (world // 2) and mesh.axis_index("tp") == rank % (world // 2)
        assert dist.get_world_size(mesh.group("tp")) == world // 2
        w = weights((3,))
        for names in ("tp", "dp", ("dp", "tp"), ("tp", "dp")):
            check_grad(lambda x: fnp.sum(fnp.sin(dist.psum(x, names)) * w[rank]),
                       lambda xs: [fnp.sum(fnp.sin(v) * w[r]) for r, v in enumerate(ref.psum(xs, names))], 5, (3,))
            check_grad(lambda x: weighted(dist.all_gather(x, names), rank),
                       lambda xs: [weighted(v, r) for r, v in enumerate(ref.all_gather(xs, names, 0, False))], 6, (3,))
        report("ok")
    elif scenario == "tensor_parallel":  # a sharded GPT: the loss and the gradients of the unsplit model
        from funcgrad.models.gpt import GPT
        from funcgrad.models.gpt import sequence_loss as full_loss
        from funcgrad.nn import parallel
        tp = 2
        mesh = dist.make_mesh({"dp": world // tp, "tp": tp})
        model = fg.tree_map(lambda a: fnp.asarray(a, dtype=fnp.float64),
                            GPT(12, 6, dim=16, depth=2, heads=4, key=fg.random.key(0)))
        rng = np.random.default_rng(3)
        batch = (fnp.asarray(rng.integers(0, 12, (3, 6))), fnp.asarray(rng.integers(0, 12, (3, 6))))
        (loss, _), grads = fg.value_and_grad(full_loss, has_aux=True)(model, batch)

        def same(a, b, what):
            for x, y in zip(fg.tree_leaves(a), fg.tree_leaves(b)):
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10, atol=1e-12, err_msg=what)
        for vocab_parallel, loss_fn in ((True, parallel.sequence_loss), (False, full_loss)):
            sharded = parallel.shard(model, "tp", vocab_parallel=vocab_parallel)
            assert sharded.blocks[0].fc1.weight.shape == (32, 16) and sharded.blocks[0].attn.num_heads == 2
            same(parallel.unshard(sharded), model, "unshard(shard(model))")
            for step in (fg.value_and_grad(loss_fn, has_aux=True), fg.jit(fg.value_and_grad(loss_fn, has_aux=True))):
                (tp_loss, _), tp_grads = step(sharded, batch)
                np.testing.assert_allclose(float(tp_loss), float(loss), rtol=1e-12)
                same(parallel.unshard(tp_grads), grads, f"gradients (vocab_parallel={vocab_parallel})")
        # Megatron's pairing: a block costs one all-reduce forward and one backward for attention, as for the MLP
        block, h = parallel.shard(model, "tp").blocks[0], fnp.asarray(rng.standard_normal((3, 6, 16)))
        with fg.profiler.profile() as prof:
            fg.grad(lambda b: fnp.sum(b(h) ** 2))(block)
        reductions = [e.name for e in prof.events if e.kind == "comm"]
        assert reductions == ["psum[tp]"] * 4, reductions
        report("ok")
    elif scenario == "pipeline":  # GPipe and 1F1B: the unsplit model's loss and gradients; dp x pp
        from funcgrad.dist import pipeline
        from funcgrad.models.gpt import GPT, token_loss
        model = fg.tree_map(lambda a: fnp.asarray(a, dtype=fnp.float64),
                            GPT(12, 6, dim=8, depth=4, heads=2, key=fg.random.key(0)))
        rng = np.random.default_rng(5)
        batch = (fnp.asarray(rng.integers(0, 12, (8, 6))), fnp.asarray(rng.integers(0, 12, (8, 6))))
        loss, grads = fg.value_and_grad(lambda m: token_loss(m(batch[0]), batch[1]))(model)

        def same(a, b, what):
            for x, y in zip(fg.tree_leaves(a), fg.tree_leaves(b), strict=True):
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10, atol=1e-13, err_msg=what)
        layouts = [{"pp": world}] + ([{"dp": 2, "pp": world // 2}] if world % 2 == 0 and world > 2 else [])
        for axes in layouts:
            mesh = dist.make_mesh(axes)
            dp, pp, s = axes.get("dp", 1), axes["pp"], mesh.axis_index("pp")
            part = mesh.axis_index("dp") if dp > 1 else 0
            mine = tuple(a[part * 8 // dp:(part + 1) * 8 // dp] for a in batch)  # this replica's share
            stage = pipeline.stage(model, "pp")
            expected = pipeline.split(grads, pp)[s]
            for name, m, remat, jit in (("gpipe", 4 // dp, False, False), ("1f1b", 4 // dp, False, False),
                                        ("1f1b", 1, False, False), ("1f1b", 2, True, False), ("gpipe", 2, False, True),
                                        ("1f1b", 4 // dp, False, True)):
                pipe = pipeline.Pipeline(token_loss, axis="pp", microbatches=m, schedule=name, remat=remat, jit=jit)
                pp_loss, pp_grads = pipe.value_and_grad(stage, mine)
                if dp > 1:
                    pp_loss = dist.all_reduce(pp_loss, "mean", group=mesh.group("dp"))
                    pp_grads = dist.all_reduce_tree(pp_grads, "mean", group=mesh.group("dp"))
                what = f"{axes} {name} M={m} remat={remat} jit={jit}"
                np.testing.assert_allclose(float(pp_loss), float(loss), rtol=1e-12, err_msg=what)
                same(pp_grads, expected, what)
                held = m if name == "gpipe" else min(pp - s, m)
                assert pipe.stats["in_flight"] == held, (what, pipe.stats)
        report("ok")
    elif scenario == "zero":  # ZeRO 1, 2 and 3: the unsharded optimiser's steps on the averaged gradients
        from funcgrad import optim
        from funcgrad.dist import zero
        from funcgrad.models.gpt import GPT, token_loss
        mesh = dist.make_mesh({"dp": world})
        model = fg.tree_map(lambda a: fnp.asarray(a, dtype=fnp.float64),
                            GPT(12, 6, dim=8, depth=2, heads=2, key=fg.random.key(0)))  # leaves of sizes n does not divide
        rng = np.random.default_rng(7)
        steps = [(fnp.asarray(rng.integers(0, 12, (2 * world, 6))), fnp.asarray(rng.integers(0, 12, (2 * world, 6))))
                 for _ in range(3)]
        mine = [tuple(a[2 * rank:2 * rank + 2] for a in batch) for batch in steps]
        loss_of = lambda m, b: token_loss(m(b[0]), b[1])  # noqa: E731
        optimisers = [lambda: optim.apply_if_finite(optim.chain(optim.clip_by_global_norm(0.05),
                                                                 optim.adamw(1e-2, weight_decay=0.1))),
                      lambda: optim.sgd(0.5, momentum=0.9)]

        def trained(opt, params, batches):
            state = opt.init(params)
            for batch in batches:
                updates, state = opt.update(fg.grad(loss_of)(params, batch), state, params)
                params = optim.apply_updates(params, updates)
            return params

        def same(a, b, what):
            for x, y in zip(fg.tree_leaves(a), fg.tree_leaves(b), strict=True):
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-9, atol=1e-12, err_msg=what)
        for stage, make in ((1, optimisers[0]), (2, optimisers[0]), (3, optimisers[0]), (2, optimisers[1]),
                            (3, optimisers[1])):
            expected = trained(make(), model, steps)  # one process, the whole batch
            opt = zero.zero(make(), stage=stage, axis="dp")
            params = zero.shard(model, "dp") if stage == 3 else model
            state = opt.init(params)
            if stage == 3:  # each parameter: a shard of ceil(size / n) elements here
                assert sorted(x.shape for x in fg.tree_leaves(params)) == \
                    sorted((-(-int(np.prod(x.shape)) // world),) for x in fg.tree_leaves(model))
            if stage > 1 and make is optimisers[0]:  # the state holds 1/n of AdamW's moments
                held = sum(int(np.prod(x.shape)) for x in fg.tree_leaves(state))
                assert held < sum(int(np.prod(x.shape)) for x in fg.tree_leaves(model)) * 2 // world + 64, held
            params = trained(opt, params, mine)
            same(zero.unshard(params) if stage == 3 else params, expected, f"ZeRO-{stage}")
        report("ok")
    elif scenario == "hybrid":  # dp x tp x pp layouts with ZeRO: the single process's losses and parameters
        from funcgrad import optim
        from funcgrad.dist.layout import Layout, LayoutTrainer
        from funcgrad.models.gpt import GPT, token_loss
        model = fg.tree_map(lambda a: fnp.asarray(a, dtype=fnp.float64),
                            GPT(12, 6, dim=8, depth=2, heads=2, key=fg.random.key(0)))
        rng = np.random.default_rng(9)
        layouts = {4: [Layout(4, tp=2, pp=2, microbatches=2), Layout(4, tp=2, zero=3),
                       Layout(4, pp=2, zero=3, microbatches=2, schedule="gpipe"), Layout(4, tp=2, zero=2)],
                   8: [Layout(8, tp=2, pp=2, zero=1, microbatches=2)]}[world]
        if world == 4:  # a vocabulary tp does not divide: embedding and head stay whole
            layouts.append(Layout(4, tp=2, pp=2, microbatches=2))
        for i, layout in enumerate(layouts):
            if i == 4:
                model = fg.tree_map(lambda a: fnp.asarray(a, dtype=fnp.float64),
                                    GPT(11, 6, dim=8, depth=2, heads=2, key=fg.random.key(0)))
            vocab = model.head.out_features
            steps = [(fnp.asarray(rng.integers(0, vocab, (2 * layout.dp, 6))),
                      fnp.asarray(rng.integers(0, vocab, (2 * layout.dp, 6)))) for _ in range(2)]
            make = lambda: optim.sgd(0.5, momentum=0.9)  # noqa: E731  (a wrong gradient scale shows)
            expected, opt, losses = model, make(), []
            state = opt.init(expected)
            for tokens, targets in steps:
                loss, grads = fg.value_and_grad(lambda m: token_loss(m(tokens), targets))(expected)
                updates, state = opt.update(grads, state, expected)
                expected, losses = optim.apply_updates(expected, updates), losses + [float(loss)]
            trainer = LayoutTrainer(layout, model, make(), token_loss)
            d = trainer.mesh.axis_index("dp")
            got = [float(trainer.step(tuple(a[2 * d:2 * d + 2] for a in batch))) for batch in steps]
            np.testing.assert_allclose(got, losses, rtol=1e-10, err_msg=repr(layout))
            for x, y in zip(fg.tree_leaves(trainer.model()), fg.tree_leaves(expected), strict=True):
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-9, atol=1e-12, err_msg=repr(layout))
        report("ok")
    elif scenario == "reshard":  # saved under one layout, loaded under others and on one process
        from funcgrad import optim
        from funcgrad.dist import checkpoint as dcp
        from funcgrad.dist.layout import Layout, LayoutTrainer
        from funcgrad.models.gpt import GPT, token_loss
        model = fg.tree_map(lambda a: fnp.asarray(a, dtype=fnp.float64),
                            GPT(12, 6, dim=8, depth=2, heads=2, key=fg.random.key(0)))
        rng = np.random.default_rng(11)
        steps = [(fnp.asarray(rng.integers(0, 12, (4, 6))), fnp.asarray(rng.integers(0, 12, (4, 6)))) for _ in range(3)]

        def mine(layout, batch):
            d, per = layout.dp_index(rank), 4 // layout.dp
            return tuple(a[d * per:(d + 1) * per] for a in batch)

        def same(a, b, what, rtol=1e-9):  # another layout sums in another order
            for x, y in zip(fg.tree_leaves(a), fg.tree_leaves(b), strict=True):
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-13, err_msg=what)
        directory = os.environ["CKPT_DIR"]
        saved_layouts = [Layout(4, tp=2, pp=2, microbatches=2), Layout(4, zero=2), Layout(4, pp=2, zero=3)]
        loaded_layouts = [Layout(4, zero=3), Layout(4, tp=2, zero=1), Layout(4, tp=2, pp=2, microbatches=2)]
        for saved, loaded in zip(saved_layouts, loaded_layouts):
            # momentum and counters to reshard; not Adam, whose updates magnify rounding where gradients are ~0
            make = lambda: optim.apply_if_finite(optim.sgd(0.5, momentum=0.9, weight_decay=0.1))  # noqa: E731
            a = LayoutTrainer(saved, model, make(), token_loss)
            for batch in steps[:2]:
                a.step(mine(saved, batch))
            dcp.save(directory, a, metadata={"step": 2})
            a.step(mine(saved, steps[2]))  # the run that was not interrupted
            b = LayoutTrainer(loaded, model, make(), token_loss)
            assert dcp.load(directory, b) == {"step": 2}
            b.step(mine(loaded, steps[2]))
            same(b.model(), a.model(), f"saved {saved!r}, resumed as {loaded!r}")
            c = LayoutTrainer(saved, model, make(), token_loss)  # the same layout: each its own file
            dcp.load(directory, c)
            c.step(mine(saved, steps[2]))
            same(c.model(), a.model(), f"resumed as {saved!r}", rtol=0)
            expected = a.model()  # every process takes part in gathering it
            if rank == 0:  # one process, no group: the whole model and the optimiser's state
                whole, state, meta = dcp.load_whole(directory, model, make())
                updates, _ = make().update(fg.grad(lambda m: token_loss(m(steps[2][0]), steps[2][1]))(whole),
                                           state, whole)
                same(optim.apply_updates(whole, updates), expected, f"load_whole of {saved!r}")
            dist.barrier()
        report("ok")
    elif scenario == "reshard_elsewhere":  # the checkpoint "reshard" left, in a job of another size
        from funcgrad import optim
        from funcgrad.dist import checkpoint as dcp
        from funcgrad.dist.layout import Layout, LayoutTrainer
        from funcgrad.models.gpt import GPT, token_loss
        model = fg.tree_map(lambda a: fnp.asarray(a, dtype=fnp.float64),
                            GPT(12, 6, dim=8, depth=2, heads=2, key=fg.random.key(0)))
        make = lambda: optim.apply_if_finite(optim.sgd(0.5, momentum=0.9, weight_decay=0.1))  # noqa: E731
        trainer = LayoutTrainer(Layout(world, tp=2), model, make(), token_loss)
        assert dcp.load(os.environ["CKPT_DIR"], trainer) == {"step": 2}
        whole, _, _ = dcp.load_whole(os.environ["CKPT_DIR"], model, make())
        for x, y in zip(fg.tree_leaves(trainer.model()), fg.tree_leaves(whole), strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        report("ok")
    elif scenario == "gather_rounds":  # all_gather and all_reduce of messages larger than a round
        from funcgrad.dist import shm
        capacity = shm.CAPACITY
        for dtype, size in ((np.float64, capacity // 8 * 2 + 13), (fg.bfloat16, capacity + 1), (np.int8, 3 * capacity)):
            mine = (np.arange(size) % 97 + rank * 1000).astype(dtype)
            every = np.asarray(dist.all_gather(mine))
            expected = np.stack([(np.arange(size) % 97 + r * 1000).astype(dtype) for r in range(world)])
            assert every.dtype == expected.dtype and (every == expected).all(), (dtype, size)
        total = np.asarray(dist.all_reduce(np.full(capacity // 4 + 3, float(rank)), "sum"))
        assert (total == sum(range(world))).all()
        rows = world * (capacity // 8 // 3 + 5)  # each rank's share spans rounds and starts inside one
        x = np.arange(rows * 3, dtype=np.float64).reshape(rows, 3) * (rank + 1)
        for op, factor in (("sum", sum(range(1, world + 1))), ("mean", sum(range(1, world + 1)) / world),
                           ("max", world)):
            part = np.asarray(dist.reduce_scatter(x, op))
            k = rows // world
            np.testing.assert_array_equal(part, np.arange(rows * 3, dtype=np.float64).reshape(rows, 3)[
                rank * k:(rank + 1) * k] * factor, err_msg=op)
        assert np.asarray(dist.reduce_scatter(np.zeros((world, 0)))).shape == (1, 0)
        for size in (1, capacity // 2 - 1, capacity // 2 + 1, 5 * capacity + 7):  # pipelined in halves
            mine = np.arange(size, dtype=np.uint8) + rank
            np.testing.assert_array_equal(np.asarray(dist.broadcast(mine, src=1)), np.arange(size, dtype=np.uint8) + 1)
            if rank == 0:  # sends of many steps, each way
                dist.send(mine, 1)
                got = dist.recv(1, like=mine)
            elif rank == 1:
                got = dist.recv(0, like=mine)
                dist.send(mine, 0)
            if rank < 2:
                np.testing.assert_array_equal(np.asarray(got), np.arange(size, dtype=np.uint8) + 1 - rank)
        report("ok")
    elif scenario == "groups":  # new_group and send/recv, with global ranks in messages
        evens = dist.new_group(list(range(0, world, 2)))
        if rank % 2 == 0:
            total = np.asarray(dist.all_reduce(np.full(2, float(rank)), group=evens))
            assert (total == sum(range(0, world, 2))).all()
            assert dist.get_rank(evens) == rank // 2
        else:
            assert evens is None
        nxt, prev = (rank + 1) % world, (rank - 1) % world
        mine = np.full(3, float(rank))
        if rank == 0:
            dist.send(mine, nxt)
            got = dist.recv(prev, like=mine)
        else:
            got = dist.recv(prev, like=mine)
            dist.send(mine, nxt)
        assert (np.asarray(got) == prev).all()
        report("ok")
    elif scenario == "recv_mismatch":  # rank 1 expects another shape: both raise, naming both sides
        if rank == 0:
            dist.send(np.zeros(3), 1)
        elif rank == 1:
            dist.recv(0, like=np.zeros(4))
        report("no error")
    elif scenario == "mesh_mismatch":
        dist.make_mesh({"dp": 2, "tp": world // 2} if rank else {"tp": world // 2, "dp": 2})
        report("no error")
    elif scenario == "stalled_psum":  # the last rank never joins: the others time out naming the collective
        mesh = dist.make_mesh({"i": world})
        if rank != world - 1:
            dist.psum(fnp.ones(3), "i")
        else:
            import time
            time.sleep(3 * float(os.environ.get("DIST_TIMEOUT", "20")))
        report("no error")
    elif scenario == "stalled_stage":  # the middle stage hangs: its neighbours time out naming it
        from funcgrad.dist import pipeline
        mesh = dist.make_mesh({"pp": world})
        stage = pipeline.stage(fg.nn.Sequential([fg.nn.Linear(2, 2, key=fg.random.key(i)) for i in range(world)]))
        batch = (fnp.ones((4, 2)), fnp.ones((4, 2)))
        pipe = pipeline.Pipeline(lambda y, t: fnp.mean((y - t) ** 2), microbatches=4)
        pipe.value_and_grad(stage, batch)
        if rank == 1 and os.environ.get("STAGE_FAULT") == "kill":
            import signal
            os.kill(os.getpid(), signal.SIGKILL)
        if rank == 1:
            import time
            time.sleep(3 * float(os.environ.get("DIST_TIMEOUT", "20")))
        pipe.value_and_grad(stage, batch)
        report("no error")
    elif scenario == "failed_shard":  # a ZeRO-3 shard raises or dies mid-step: the others name it
        from funcgrad import optim
        from funcgrad.dist import zero
        from funcgrad.models.gpt import GPT, token_loss
        mesh = dist.make_mesh({"dp": world})
        params = zero.shard(GPT(12, 6, dim=8, depth=2, heads=2, key=fg.random.key(0)), "dp")
        opt = zero.zero(optim.adamw(1e-2), stage=3, axis="dp")
        state = opt.init(params)
        tokens = fnp.asarray(np.random.default_rng(rank).integers(0, 12, (2, 6)))

        def loss_of(model, step):
            if rank == 1 and step == 1:
                if os.environ.get("SHARD_FAULT") == "kill":
                    import signal
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError("a fault in rank 1's forward pass")
            return token_loss(model(tokens), tokens)
        for step in range(3):
            updates, state = opt.update(fg.grad(loss_of)(params, step), state, params)
            params = optim.apply_updates(params, updates)
        report("no error")
    else:
        raise ValueError(f"unknown scenario {scenario}")
except Exception as e:  # noqa: BLE001  (each rank reports what it raised)
    report(f"{type(e).__name__}: {e}")
    sys.exit(1)
finally:
    dist.destroy_process_group()

"""Worker scenarios for tests/test_dist.py, run under the launcher: python dist_worker.py SCENARIO BACKEND."""
import os
import signal
import sys
import time

import numpy as np

import funcgrad as fg
import funcgrad.dist as dist

scenario, backend = sys.argv[1], sys.argv[2]
dist.init_process_group(backend, timeout=float(os.environ.get("DIST_TIMEOUT", "5")))
rank, world = dist.get_rank(), dist.get_world_size()


def report(message):
    print(f"RESULT {message}", flush=True)


try:
    if scenario == "collectives":
        x = np.arange(6, dtype=np.float32).reshape(2, 3) + rank
        total = np.asarray(dist.all_reduce(x, "sum"))
        expected = sum(np.arange(6, dtype=np.float32).reshape(2, 3) + r for r in range(world))
        assert np.array_equal(total, expected)
        assert np.array_equal(np.asarray(dist.all_reduce(x, "max")), x - rank + world - 1)
        assert np.array_equal(np.asarray(dist.all_reduce(x, "min")), x - rank)
        assert np.allclose(np.asarray(dist.all_reduce(x, "mean")), expected / world)
        assert np.array_equal(np.asarray(dist.broadcast(x, world - 1)), x - rank + world - 1)
        gathered = np.asarray(dist.all_gather(np.array([rank, rank * 10], np.int64)))
        assert gathered.tolist() == [[r, r * 10] for r in range(world)]
        part = np.asarray(dist.reduce_scatter(np.ones((world * 2, 3), np.int32)))
        assert part.shape == (2, 3) and (part == world).all()
        half = np.asarray(dist.all_reduce(fg.ones(5, dtype=fg.bfloat16) * (rank + 1)))
        assert half.dtype == fg.bfloat16 and float(half[0]) == world * (world + 1) / 2
        tree = {"w": fg.ones((3, 2)) * rank, "b": [fg.arange(4) * rank, fg.zeros(())]}
        avg = dist.all_reduce_tree(tree, op="sum", bucket_bytes=16)
        assert np.array_equal(np.asarray(avg["b"][0]), np.arange(4) * sum(range(world)))
        same = dist.broadcast_tree({"w": fg.ones(3) * rank}, src=0)
        assert np.array_equal(np.asarray(same["w"]), np.zeros(3))
        big = np.full(1 << 19, rank + 1.0, np.float32)  # 2 MiB: outputs come from the group's recycled buffers
        kept = dist.all_reduce(big, "mean")
        later = dist.all_reduce(big * 2, "sum")  # must not write into the buffer `kept` still holds
        assert (np.asarray(kept) == (world + 1) / 2).all() and (np.asarray(later) == world * (world + 1)).all()
        dist.barrier()
        report("ok")
    elif scenario == "stress":  # 1000 back-to-back all-reduces of varied sizes, bit-identical everywhere
        rng = np.random.default_rng(rank)
        digest = 0.0
        for i in range(1000):
            n = int(rng.integers(1, 3000)) if i % 97 else 200_000
            n = int(np.asarray(dist.broadcast(np.array([n]), 0))[0])
            out = np.asarray(dist.all_reduce(np.full(n, (i % 7) + rank * 0.5, np.float32)))
            assert (out == out[0]).all() and out[0] == world * (i % 7) + 0.5 * sum(range(world)), (i, out[0])
            digest += float(out.sum())
        gathered = np.asarray(dist.all_gather(np.array([digest])))
        assert (gathered == gathered[0]).all()
        report("ok")
    elif scenario == "train_identical":  # data-parallel steps keep parameters bit-identical on every rank
        import hashlib

        from funcgrad import data, nn, optim
        from funcgrad.train import classification_loss, make_train_step
        precision = os.environ.get("DIST_PRECISION", "fp32")
        x, y = data.load("digits")
        sampler = data.DistributedSampler(len(x), world, rank, seed=0)
        loader = data.DataLoader(data.ArrayDataset(x, y), 32, sampler=sampler)
        model = nn.MLP(64, [32], 10, dropout=0.1, key=fg.random.key(rank))  # different on purpose
        opt = optim.adamw(1e-2)
        group = dist._default()
        model = group.broadcast_tree(model)
        state, scaler = opt.init(model), fg.amp.DynamicLossScale.create()
        step = make_train_step(classification_loss, opt, jit=True, precision=precision, group=group)

        def digest(tree):
            return hashlib.sha256(b"".join(np.asarray(p).tobytes() for p in fg.tree_leaves(tree))).digest()
        for i, batch in zip(range(8), loader):
            # fp16: at step 3 only rank 1's gradients overflow; every rank must skip that step
            overflow = precision == "fp16" and i == 3
            if overflow and rank == 1:
                batch = (batch[0] * np.inf, batch[1])
            before, scale = digest(model), float(scaler.scale)
            model, state, scaler, loss, _ = step(model, state, scaler, batch, fg.random.fold_in(fg.random.key(0), i))
            everyone = np.asarray(dist.all_gather(np.frombuffer(digest((model, scaler)), np.uint8)))
            assert (everyone == everyone[0]).all(), f"parameters differ after step {i}"
            assert (digest(model) == before) == overflow, f"step {i} skipped: {digest(model) == before}"
            assert float(scaler.scale) == (scale / 2 if overflow else scale), (i, scale, float(scaler.scale))
        report("ok")
    elif scenario == "mismatch_shape":
        dist.all_reduce(np.zeros(3 + rank, np.float32))
    elif scenario == "mismatch_dtype":
        dist.all_reduce(np.zeros(3, np.float32 if rank == 0 else np.float64))
    elif scenario == "mismatch_op":
        dist.all_reduce(np.zeros(3), "sum" if rank == 0 else "max")
    elif scenario == "skip":
        if rank != 1:
            dist.all_reduce(np.zeros(3))
        else:
            time.sleep(30)
    elif scenario == "raise_before":
        if rank == 1:
            raise RuntimeError("rank 1 failed before the collective")
        dist.all_reduce(np.zeros(3))
    elif scenario == "sigkill":
        dist.all_reduce(np.zeros(3))
        if rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(np.zeros(1000))
    elif scenario == "unusable_after_error":
        try:
            dist.all_reduce(np.zeros(2 + rank))
        except dist.DistError:
            pass
        dist.all_reduce(np.zeros(2))
except dist.DistError as e:
    report(f"{type(e).__name__}: {e}")
    sys.exit(17)
finally:
    if scenario not in ("sigkill",):
        dist.destroy_process_group()

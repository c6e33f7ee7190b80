"""Eager per-op cost of tracing, funcgrad beside HIPS autograd and PyTorch eager (when installed).

Case 1: grad of a chain of 200 steps z = tanh(z) * 1.01 on a 16-element vector.
Case 2: one training step of a 784-256-10 MLP, batch 128 (forward, backward, SGD update).

    python benchmarks/overhead.py [--repeats N]
A ratio above 1 in the last column means that peer is slower than funcgrad.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import have, median_seconds, print_table  # noqa: E402

CHAIN, N, BATCH, SIZES, LR = 200, 16, 128, (784, 256, 10), 0.01


def chain_data():
    return np.linspace(-1, 1, N, dtype=np.float32)


def mlp_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[2], BATCH)
    w1 = (rng.standard_normal(SIZES[:2]) / np.sqrt(SIZES[0])).astype(np.float32)
    w2 = (rng.standard_normal(SIZES[1:]) / np.sqrt(SIZES[1])).astype(np.float32)
    return x, y, w1, np.zeros(SIZES[1], np.float32), w2, np.zeros(SIZES[2], np.float32)


def funcgrad_cases():
    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad import nn

    def chain(z):
        for _ in range(CHAIN):
            z = fnp.tanh(z) * 1.01
        return fnp.sum(z)

    chain_grad, z0 = fg.grad(chain), fg.asarray(chain_data())

    x, y, *params = mlp_data()
    x, params = fg.asarray(x), [fg.asarray(p) for p in params]
    onehot = fg.asarray(np.eye(SIZES[2], dtype=np.float32)[y])

    def loss_fn(p, x):
        w1, b1, w2, b2 = p
        logits = nn.relu(x @ w1 + b1) @ w2 + b2
        return -fnp.mean(fnp.sum(nn.log_softmax(logits) * onehot, axis=-1))

    def step():
        nonlocal params
        grads = fg.grad(loss_fn)(params, x)
        params = [p - LR * g for p, g in zip(params, grads)]

    return (lambda: chain_grad(z0)), step


def autograd_cases():
    import autograd
    import autograd.numpy as anp

    def chain(z):
        for _ in range(CHAIN):
            z = anp.tanh(z) * 1.01
        return anp.sum(z)

    chain_grad, z0 = autograd.grad(chain), chain_data()
    x, y, *params = mlp_data()
    onehot = np.eye(SIZES[2], dtype=np.float32)[y]

    def loss_fn(p):
        w1, b1, w2, b2 = p
        logits = anp.maximum(x @ w1 + b1, 0) @ w2 + b2
        shifted = logits - anp.max(logits, axis=1, keepdims=True)
        logp = shifted - anp.log(anp.sum(anp.exp(shifted), axis=1, keepdims=True))
        return -anp.mean(anp.sum(logp * onehot, axis=-1))

    loss_grad = autograd.grad(loss_fn)

    def step():
        nonlocal params
        grads = loss_grad(params)
        params = [p - LR * g for p, g in zip(params, grads)]

    return (lambda: chain_grad(z0)), step


def torch_cases():
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
    z0 = torch.tensor(chain_data())

    def chain_grad():
        z = z0.clone().requires_grad_(True)
        out = z
        for _ in range(CHAIN):
            out = torch.tanh(out) * 1.01
        out.sum().backward()
        return z.grad

    x, y, *params = (torch.tensor(a) for a in mlp_data())
    params = [p.requires_grad_(True) for p in params]

    def step():
        w1, b1, w2, b2 = params
        loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None

    return chain_grad, step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    peers = [("funcgrad", funcgrad_cases, True), ("HIPS autograd", autograd_cases, have("autograd")),
             ("PyTorch eager", torch_cases, have("torch"))]
    rows = []
    for name, make, available in peers:
        if not available:
            rows += [("1: grad of 200-op tanh chain", name, None), ("2: MLP 784-256-10 step, b=128", name, None)]
            continue
        chain, step = make()
        rows.append(("1: grad of 200-op tanh chain", name, median_seconds(chain, args.repeats)))
        rows.append(("2: MLP 784-256-10 step, b=128", name, median_seconds(step, args.repeats)))
    rows.sort(key=lambda r: r[0])
    print_table("Eager overhead (median of %d runs, %d CPU cores)" % (args.repeats, os.cpu_count()), rows)


if __name__ == "__main__":
    main()

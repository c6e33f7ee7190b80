"""Training-step speed: funcgrad eager and jit beside PyTorch (eager, torch.compile), JAX (jax.jit)
and HIPS autograd, whichever are installed, on the same data in one run.

(a) 784-256-10 MLP step, batch 128, AdamW      (b) grad of the 200-op tanh(z) * 1.01 chain, 16-vector
(c) small CNN step on 8x8 digits, batch 64      (d) tiny transformer step (the sort task)
(e) per-example gradients of the MLP for 128 examples
(a2) case (a) with the model and optimiser state donated to the jitted step (funcgrad, JAX), so
     both update them in place, as PyTorch's optimiser does
(f) case (c)'s CNN at MNIST size: 28x28 images, batch 64
(g) a GPT step at a realistic small size: dim 128, 4 heads, 2 blocks, sequence 64, batch 16, vocab 64

    python benchmarks/step.py [--rounds N] [--no-compile] [--cases c,f,g] [--keep-freed-memory]
Each case is timed for every implementation in turns (blocks of calls, a pause between them so
one library's spinning threads do not slow the next), so drift in the machine's speed hits all
alike; medians of the blocks' time per call. Ratios are time / funcgrad jit in the same round, the
median over rounds (above 1: slower): steadier than a ratio of medians on a machine whose speed drifts.
All libraries share the process and so its allocator: glibc's defaults unless --keep-freed-memory,
which raises malloc's thresholds for every one of them (funcgrad.cpu.host_memory; PyTorch's eager
CNN steps are the ones it speeds up most).
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import have, interleaved_samples, paired_ratio  # noqa: E402

LR, BATCH = 1e-3, 128
CASES = ["a: MLP step (AdamW)", "b: grad of 200-op chain", "c: CNN step", "d: transformer step",
         "e: per-example grads (128)", "a2: (a), state donated", "f: CNN step, 28x28", "g: GPT step, dim 128"]
# The two transformer cases: vocabulary, sequence length, width, batch.
SMALL_GPT, GPT_128 = (11, 12, 64, 64), (64, 64, 128, 16)


def data():
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((BATCH, 784)).astype(np.float32), "y": rng.integers(0, 10, BATCH),
        "z": np.linspace(-1, 1, 16, dtype=np.float32),
        "img": rng.standard_normal((64, 1, 8, 8)).astype(np.float32), "img_y": rng.integers(0, 10, 64),
        "tok": rng.integers(0, 11, (64, 12)), "tok_y": rng.integers(0, 11, (64, 12)),
        "mnist": rng.standard_normal((64, 1, 28, 28)).astype(np.float32), "mnist_y": rng.integers(0, 10, 64),
        "tok128": rng.integers(0, 64, (16, 64)), "tok128_y": rng.integers(0, 64, (16, 64)),
    }


# ---- funcgrad -------------------------------------------------------------------------------------
def funcgrad_cases(d, use_jit: bool):
    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad import nn, optim
    from funcgrad.models import CNN, GPT
    wrap = fg.jit if use_jit else (lambda f, **kw: f)
    keys = fg.random.split(fg.random.key(0), 4)

    def trainer(model, loss, donate: bool = False):
        opt = optim.adamw(LR)
        state = [fg.tree_map(fnp.array, model), opt.init(model)]  # a copy: the caller's model is never donated

        def step(m, s, *batch):
            value, grads = fg.value_and_grad(loss)(m, *batch)
            updates, s = opt.update(grads, s, m)
            return optim.apply_updates(m, updates), s, value
        compiled = wrap(step, donate_argnums=(0, 1) if donate else ())

        def run(*batch):
            state[0], state[1], _ = compiled(state[0], state[1], *batch)
        return run

    mlp = nn.Sequential([nn.Linear(784, 256, key=keys[0]), nn.relu, nn.Linear(256, 10, key=keys[1])])
    x, y = fg.asarray(d["x"]), fg.asarray(d["y"])
    mlp_step = trainer(mlp, lambda m, x, y: nn.cross_entropy(m(x), y))
    mlp_step_donated = trainer(mlp, lambda m, x, y: nn.cross_entropy(m(x), y), donate=use_jit)

    def chain(z):
        for _ in range(200):
            z = fnp.tanh(z) * 1.01
        return fnp.sum(z)
    chain_grad, z = wrap(fg.grad(chain)), fg.asarray(d["z"])

    def cnn_step(side, img, labels):
        step = trainer(CNN(side, 1, 10, dropout=0.0, key=keys[2]), lambda m, x, y: nn.cross_entropy(m(x), y))
        img, labels = fg.asarray(img), fg.asarray(labels)
        return lambda: step(img, labels)

    def gpt_step(spec, tok, target):
        vocab, length, dim, _ = spec

        def loss(m, t, target):
            logits = m(t)
            return nn.cross_entropy(fnp.reshape(logits, (-1, vocab)), fnp.reshape(target, (-1,)))
        step = trainer(GPT(vocab, length, dim=dim, depth=2, heads=4, key=keys[3]), loss)
        tok, target = fg.asarray(tok), fg.asarray(target)
        return lambda: step(tok, target)

    def single_loss(m, xi, yi):
        return nn.cross_entropy(m(xi[None]), yi[None])
    per_example = wrap(fg.vmap(fg.grad(single_loss), in_axes=(None, 0, 0)))
    return [lambda: mlp_step(x, y), lambda: chain_grad(z), cnn_step(8, d["img"], d["img_y"]),
            gpt_step(SMALL_GPT, d["tok"], d["tok_y"]), lambda: per_example(mlp, x, y),
            (lambda: mlp_step_donated(x, y)) if use_jit else None,
            cnn_step(28, d["mnist"], d["mnist_y"]), gpt_step(GPT_128, d["tok128"], d["tok128_y"])]


# ---- PyTorch --------------------------------------------------------------------------------------
def torch_cases(d, compile_: bool):
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F
    torch.manual_seed(0)
    wrap = torch.compile if compile_ else (lambda f: f)

    def trainer(model, loss):
        opt = torch.optim.AdamW(model.parameters(), lr=LR)

        def step(*batch):
            opt.zero_grad(set_to_none=True)
            loss(model, *batch).backward()
            opt.step()
        return wrap(step)

    mlp = tnn.Sequential(tnn.Linear(784, 256), tnn.ReLU(), tnn.Linear(256, 10))
    x, y = torch.tensor(d["x"]), torch.tensor(d["y"])
    mlp_step = trainer(mlp, lambda m, x, y: F.cross_entropy(m(x), y))

    z0 = torch.tensor(d["z"])

    def chain_grad():
        z = z0.clone().requires_grad_(True)
        out = z
        for _ in range(200):
            out = torch.tanh(out) * 1.01
        return torch.autograd.grad(out.sum(), z)[0]
    chain = wrap(chain_grad)

    def cnn_step(side, img, labels):
        pooled = side // 2
        cnn = tnn.Sequential(tnn.Conv2d(1, 32, 3, padding=1), tnn.ReLU(), tnn.Conv2d(32, 64, 3, padding=1),
                             tnn.ReLU(), tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(64 * pooled * pooled, 128),
                             tnn.ReLU(), tnn.Linear(128, 10))
        step = trainer(cnn, lambda m, x, y: F.cross_entropy(m(x), y))
        img, labels = torch.tensor(img), torch.tensor(labels)
        return lambda: step(img, labels)

    class GPT(tnn.Module):
        def __init__(self, vocab, length, dim):
            super().__init__()
            self.vocab = vocab
            self.tok, self.pos = tnn.Embedding(vocab, dim), tnn.Parameter(torch.randn(length, dim) * 0.02)
            layer = tnn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, activation="gelu", batch_first=True,
                                                norm_first=True)
            self.blocks = tnn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.ln, self.head = tnn.LayerNorm(dim), tnn.Linear(dim, vocab)

        def forward(self, t):
            mask = tnn.Transformer.generate_square_subsequent_mask(t.shape[1])
            return self.head(self.ln(self.blocks(self.tok(t) + self.pos[:t.shape[1]], mask=mask, is_causal=True)))

    def gpt_step(spec, tok, target):
        vocab, length, dim, _ = spec
        step = trainer(GPT(vocab, length, dim),
                       lambda m, t, y: F.cross_entropy(m(t).reshape(-1, vocab), y.reshape(-1)))
        tok, target = torch.tensor(tok), torch.tensor(target)
        return lambda: step(tok, target)

    from torch.func import functional_call, grad, vmap
    params = {k: v.detach() for k, v in mlp.named_parameters()}

    def single_loss(p, xi, yi):
        return F.cross_entropy(functional_call(mlp, p, (xi[None],)), yi[None])
    per_example = wrap(vmap(grad(single_loss), in_dims=(None, 0, 0)))
    return [lambda: mlp_step(x, y), chain, cnn_step(8, d["img"], d["img_y"]),
            gpt_step(SMALL_GPT, d["tok"], d["tok_y"]), lambda: per_example(params, x, y),
            lambda: mlp_step(x, y),  # a2: torch updates in place anyway
            cnn_step(28, d["mnist"], d["mnist_y"]), gpt_step(GPT_128, d["tok128"], d["tok128_y"])]


# ---- JAX --------------------------------------------------------------------------------------------
def jax_cases(d):
    import jax
    import jax.numpy as jnp
    key = jax.random.PRNGKey(0)
    k = jax.random.split(key, 8)

    def dense(kk, n_in, n_out):
        bound = 1 / np.sqrt(n_in)
        return {"w": jax.random.uniform(kk, (n_in, n_out), minval=-bound, maxval=bound), "b": jnp.zeros(n_out)}

    def xent(logits, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def adamw_step(loss, donate):
        @functools.partial(jax.jit, donate_argnums=(0, 1, 2) if donate else ())
        def step(p, m, v, t, *batch):
            value, g = jax.value_and_grad(loss)(p, *batch)
            t = t + 1
            m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
            v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
            p = jax.tree_util.tree_map(lambda pp, mm, vv: pp * (1 - LR * 0.01) - LR * (mm / (1 - 0.9 ** t)) /
                                       (jnp.sqrt(vv / (1 - 0.999 ** t)) + 1e-8), p, m, v)
            return p, m, v, t, value
        return step

    def runner(params, loss, *batch, donate=False):
        step = adamw_step(loss, donate)

        def zeros():
            return jax.tree_util.tree_map(jnp.zeros_like, params)
        state = [jax.tree_util.tree_map(jnp.array, params), zeros(), zeros(), jnp.asarray(0.0)]  # donated: own copies

        def run():
            *new, value = step(*state, *batch)
            state[:] = new
            value.block_until_ready()
        return run

    mlp = [dense(k[0], 784, 256), dense(k[1], 256, 10)]

    def mlp_fwd(p, x):
        return jax.nn.relu(x @ p[0]["w"] + p[0]["b"]) @ p[1]["w"] + p[1]["b"]
    x, y = jnp.asarray(d["x"]), jnp.asarray(d["y"])
    mlp_run = runner(mlp, lambda p, x, y: xent(mlp_fwd(p, x), y), x, y)
    mlp_run_donated = runner(mlp, lambda p, x, y: xent(mlp_fwd(p, x), y), x, y, donate=True)

    def chain(z):
        for _ in range(200):
            z = jnp.tanh(z) * 1.01
        return jnp.sum(z)
    chain_grad, z = jax.jit(jax.grad(chain)), jnp.asarray(d["z"])

    def cnn_fwd(p, x):
        dn = ("NCHW", "OIHW", "NCHW")
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME", dimension_numbers=dn))
        h = jax.nn.relu(jax.lax.conv_general_dilated(h, p["c2"], (1, 1), "SAME", dimension_numbers=dn))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID").reshape(x.shape[0], -1)
        h = jax.nn.relu(h @ p["f1"]["w"] + p["f1"]["b"])
        return h @ p["f2"]["w"] + p["f2"]["b"]

    def cnn_run(side, img, labels):
        pooled = side // 2
        conv_p = {"c1": jax.random.normal(k[2], (32, 1, 3, 3)) * 0.3,
                  "c2": jax.random.normal(k[3], (64, 32, 3, 3)) * 0.05,
                  "f1": dense(k[4], 64 * pooled * pooled, 128), "f2": dense(k[5], 128, 10)}
        return runner(conv_p, lambda p, x, y: xent(cnn_fwd(p, x), y), jnp.asarray(img), jnp.asarray(labels))

    def ln(h):
        mu = h.mean(-1, keepdims=True)
        return (h - mu) / jnp.sqrt(((h - mu) ** 2).mean(-1, keepdims=True) + 1e-5)

    def lin(p, h):
        return h @ p["w"] + p["b"]

    def gpt_fwd(p, t):
        h = p["tok"][t] + p["pos"][:t.shape[1]]
        mask = jnp.tril(jnp.ones((t.shape[1], t.shape[1]), bool))
        dim = h.shape[-1]
        for bp in p["blocks"]:
            a = ln(h)
            heads = [lin(bp[n], a).reshape(a.shape[0], a.shape[1], 4, dim // 4).transpose(0, 2, 1, 3) for n in "qkv"]
            s = jnp.where(mask, heads[0] @ heads[1].transpose(0, 1, 3, 2) / np.sqrt(dim // 4), -jnp.inf)
            o = (jax.nn.softmax(s, -1) @ heads[2]).transpose(0, 2, 1, 3).reshape(a.shape)
            h = h + lin(bp["o"], o)
            h = h + lin(bp["m2"], jax.nn.gelu(lin(bp["m1"], ln(h)), approximate=False))
        return lin(p["head"], ln(h))

    def gpt_run(spec, tok, target):
        vocab, length, dim, _ = spec

        def block_params(kk):
            a, b, c, dd, e, f = jax.random.split(kk, 6)
            return {"q": dense(a, dim, dim), "k": dense(b, dim, dim), "v": dense(c, dim, dim),
                    "o": dense(dd, dim, dim), "m1": dense(e, dim, 4 * dim), "m2": dense(f, 4 * dim, dim)}
        gpt_p = {"tok": jax.random.normal(k[6], (vocab, dim)), "pos": jax.random.normal(k[7], (length, dim)) * 0.02,
                 "blocks": [block_params(kk) for kk in jax.random.split(k[6], 2)], "head": dense(k[7], dim, vocab)}
        return runner(gpt_p, lambda p, t, y: xent(gpt_fwd(p, t).reshape(-1, vocab), y.reshape(-1)),
                      jnp.asarray(tok), jnp.asarray(target))

    def single(p, xi, yi):
        return xent(mlp_fwd(p, xi[None]), yi[None])
    per_example = jax.jit(jax.vmap(jax.grad(single), in_axes=(None, 0, 0)))
    return [mlp_run, lambda: chain_grad(z).block_until_ready(), cnn_run(8, d["img"], d["img_y"]),
            gpt_run(SMALL_GPT, d["tok"], d["tok_y"]), lambda: jax.block_until_ready(per_example(mlp, x, y)),
            mlp_run_donated, cnn_run(28, d["mnist"], d["mnist_y"]), gpt_run(GPT_128, d["tok128"], d["tok128_y"])]


# ---- HIPS autograd -----------------------------------------------------------------------------------
def autograd_cases(d):
    import autograd
    import autograd.numpy as anp

    def chain(z):
        for _ in range(200):
            z = anp.tanh(z) * 1.01
        return anp.sum(z)
    g = autograd.grad(chain)
    return [None, lambda: g(d["z"])] + [None] * (len(CASES) - 2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed blocks per implementation and case")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to build)")
    parser.add_argument("--cases", default="", help="comma-separated case letters to run (default: all), e.g. c,f,g")
    parser.add_argument("--keep-freed-memory", action="store_true",
                        help="raise glibc's mmap and trim thresholds for the whole process first")
    args = parser.parse_args(argv)
    if args.keep_freed_memory:
        from funcgrad.cpu import host_memory
        host_memory.keep_freed_memory()
    chosen = {c.strip() for c in args.cases.split(",") if c.strip()}
    unknown = chosen - {case.split(":")[0] for case in CASES}
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; choose from {[case.split(':')[0] for case in CASES]}")
    d = data()
    impls = [("funcgrad jit", lambda: funcgrad_cases(d, True)), ("funcgrad eager", lambda: funcgrad_cases(d, False))]
    if have("torch"):
        impls.append(("PyTorch eager", lambda: torch_cases(d, False)))
        if not args.no_compile:
            impls.append(("torch.compile", lambda: torch_cases(d, True)))
    if have("jax"):
        impls.append(("jax.jit", lambda: jax_cases(d)))
    if have("autograd"):
        impls.append(("HIPS autograd", lambda: autograd_cases(d)))
    built: dict[str, list] = {}
    for name, make in impls:
        try:
            built[name] = make()
        except Exception as e:  # noqa: BLE001  (a peer that cannot build a case is reported, not fatal)
            print(f"{name}: unavailable ({type(e).__name__}: {e})")
    results: dict[str, list] = {name: [None] * len(CASES) for name in built}
    eager_chain = None  # case b's target is eager against eager: PyTorch eager / funcgrad eager
    for i, case in enumerate(CASES):  # each case timed for every implementation in turns
        if chosen and case.split(":")[0] not in chosen:
            continue
        fns = {}
        for name, cases in built.items():
            if cases[i] is None:
                continue
            try:
                for _ in range(3):  # compile and warm up
                    cases[i]()
                fns[name] = cases[i]
            except Exception as e:  # noqa: BLE001
                print(f"{name}: case {case!r} failed ({type(e).__name__}: {str(e)[:120]})")
        samples = interleaved_samples(fns, args.rounds)
        if case.startswith("b:") and {"funcgrad eager", "PyTorch eager"} <= samples.keys():
            eager_chain = paired_ratio(samples, "PyTorch eager", "funcgrad eager")
        for name, times in samples.items():
            results[name][i] = (statistics.median(times),
                                paired_ratio(samples, name, "funcgrad jit") if "funcgrad jit" in samples else None)
    from funcgrad.cpu import threads
    print(f"\nTraining-step medians of {args.rounds} interleaved blocks, {os.cpu_count()} CPU cores; ratios to "
          "funcgrad jit are medians of the per-round ratios (above 1: slower)")
    print(f"BLAS libraries loaded: {'; '.join(threads.blas_libraries()) or 'none'}")
    print(f"{'case':<30}" + "".join(f"{n:>16}" for n in results))
    for i, case in enumerate(CASES):
        if chosen and case.split(":")[0] not in chosen:
            continue
        cells = []
        for name in results:
            t, ratio = results[name][i] or (None, None)
            ratio = f"{ratio:>5.2f}x" if ratio is not None else " " * 6
            cells.append(f"{'n/a':>16}" if t is None else f"{t * 1e3:>8.3f}ms{ratio}")
        print(f"{case:<30}" + "".join(cells))
    if eager_chain is not None:
        print(f"b: PyTorch eager time / funcgrad eager time, median of the per-round ratios: {eager_chain:.2f}x "
              "(above 1: funcgrad eager is faster)")


if __name__ == "__main__":
    main()

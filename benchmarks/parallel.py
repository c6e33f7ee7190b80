"""Model-scale parallelism on this machine: one GPT training step under each layout.

For DP, TP 2/4, PP 2/4 (GPipe and 1F1B over M micro-batches), ZeRO 1/2/3 and hybrids, on 2-8
processes (shm): the median step time, the largest per-process peak of host memory held by
arrays, the parameters and optimiser state one process holds (beside data parallelism's, where
ZeRO-3 should approach 1/N), the bytes one process puts into collectives and pipeline messages
per step, and for pipelines the measured bubble (1 - compute time / step time, averaged over the
stages) beside the theory (P-1)/(M+P-1). Every layout trains the same model on the same global
batch. PyTorch's DDP over gloo runs the same model as a peer when torch is installed.

    python benchmarks/parallel.py [--quick] [--steps 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = dict(vocab=64, context=32, dim=128, depth=4, heads=4)
GLOBAL_BATCH = 16


def layouts(quick: bool) -> list[tuple[str, dict]]:
    rows = [("DP", dict(nproc=2)), ("DP", dict(nproc=4)), ("TP", dict(nproc=2, tp=2)), ("TP", dict(nproc=4, tp=4))]
    for p in (2, 4):
        for schedule in ("gpipe", "1f1b"):
            for m in ((1, 4) if quick else (1, 2, 4, 8)):
                rows.append((f"PP {schedule}", dict(nproc=p, pp=p, microbatches=m, schedule=schedule)))
    rows += [(f"ZeRO-{z}", dict(nproc=4, zero=z)) for z in (1, 2, 3)]
    rows += [("dp x tp", dict(nproc=4, tp=2)), ("tp x pp", dict(nproc=4, tp=2, pp=2, microbatches=4)),
             ("dp x tp x pp + ZeRO-1", dict(nproc=8, tp=2, pp=2, zero=1, microbatches=4))]
    return rows


def worker(spec: dict, steps: int) -> None:
    import numpy as np

    import funcgrad as fg
    import funcgrad.dist as dist
    from funcgrad import optim
    from funcgrad.dist.layout import Layout, LayoutTrainer
    from funcgrad.models import GPT
    from funcgrad.models.gpt import token_loss

    group = dist.init_process_group("shm", timeout=300)
    layout = Layout(**spec)
    model = GPT(MODEL["vocab"], MODEL["context"], dim=MODEL["dim"], depth=MODEL["depth"], heads=MODEL["heads"],
                key=fg.random.key(0))
    trainer = LayoutTrainer(layout, model, optim.adamw(1e-3), token_loss)
    d, per = layout.dp_index(group.rank), GLOBAL_BATCH // layout.dp
    tokens = fg.random.randint(fg.random.key(1), (GLOBAL_BATCH, MODEL["context"]), 0, MODEL["vocab"])
    batch = (tokens[d * per:(d + 1) * per], tokens[d * per:(d + 1) * per])
    for _ in range(2):
        trainer.step(batch)
    fg.reset_peak_memory_stats()
    times, busy = [], []
    for _ in range(steps):
        group.barrier()
        start = time.perf_counter()
        trainer.step(batch)
        times.append(time.perf_counter() - start)
        if layout.pp > 1:
            busy.append(trainer.pipe.stats["compute_seconds"])
    with fg.profiler.profile() as prof:
        trainer.step(batch)
    sent = sum(e.sent for e in prof.events if e.kind == "comm")
    if layout.pp > 1:
        sent += trainer.pipe.stats["sent_bytes"]
    held = sum(int(np.asarray(x).nbytes) for x in fg.tree_leaves((trainer.params, trainer.opt_state)))
    bubble = 1 - statistics.median(busy) / statistics.median(times) if busy else 0.0
    mine = np.array([statistics.median(times), fg.max_memory_allocated(), held, sent, bubble])
    every = np.asarray(group.all_gather(mine))
    if group.rank == 0:
        print("RESULT " + json.dumps({"step_s": float(np.max(every[:, 0])), "peak": int(every[:, 1].max()),
                                      "held": int(every[:, 2].max()), "sent": int(every[:, 3].max()),
                                      "bubble": float(every[:, 4].mean())}), flush=True)
    dist.destroy_process_group()


def torch_ddp_worker(steps: int) -> None:
    """The same GPT in PyTorch (pre-norm causal blocks), DDP over gloo, AdamW."""
    import torch
    import torch.distributed as tdist
    from torch import nn

    tdist.init_process_group("gloo")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    v, c, dim = MODEL["vocab"], MODEL["context"], MODEL["dim"]

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(v, dim), nn.Parameter(torch.zeros(c, dim))
            layer = lambda: nn.TransformerEncoderLayer(dim, MODEL["heads"], 4 * dim, 0.0, "gelu",  # noqa: E731
                                                       batch_first=True, norm_first=True)
            self.blocks = nn.ModuleList([layer() for _ in range(MODEL["depth"])])
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, v)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(c))

        def forward(self, x):
            h = self.tok(x) + self.pos[:x.shape[1]]
            for block in self.blocks:
                h = block(h, src_mask=self.mask, is_causal=True)
            return self.head(self.ln(h))

    model = nn.parallel.DistributedDataParallel(GPT())
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    n, r = tdist.get_world_size(), tdist.get_rank()
    per = GLOBAL_BATCH // n
    tokens = torch.randint(0, v, (GLOBAL_BATCH, c))[r * per:(r + 1) * per]

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(tokens).reshape(-1, v), tokens.reshape(-1))
        loss.backward()
        opt.step()
    for _ in range(2):
        step()
    times = []
    for _ in range(steps):
        tdist.barrier()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    out = [torch.zeros(1) for _ in range(n)]
    tdist.all_gather(out, torch.tensor([statistics.median(times)]))
    if r == 0:
        print("RESULT " + json.dumps({"step_s": max(float(t) for t in out)}), flush=True)
    tdist.destroy_process_group()


def run(spec: dict, steps: int, peer: str | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": REPO, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    args = [os.path.abspath(__file__), "--worker", json.dumps(spec), "--steps", str(steps)]
    if peer:
        args += ["--peer", peer]
    cmd = [sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", str(spec["nproc"]), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    for line in proc.stdout.splitlines():
        if "RESULT " in line:
            return json.loads(line.split("RESULT ", 1)[1])
    raise RuntimeError((proc.stdout + proc.stderr).strip().splitlines()[-1] if proc.stdout + proc.stderr else "no output")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer micro-batch counts")
    args = parser.parse_args(argv)
    if args.worker:
        return torch_ddp_worker(args.steps) if args.peer == "ddp" else worker(json.loads(args.worker), args.steps)
    rows = [(name, spec, None) for name, spec in layouts(args.quick)]
    try:
        import torch  # noqa: F401
        rows[2:2] = [("torch DDP gloo", dict(nproc=2), "ddp"), ("torch DDP gloo", dict(nproc=4), "ddp")]
    except ImportError:
        print("torch not installed: no PyTorch rows")
    print(f"GPT {MODEL}, global batch {GLOBAL_BATCH}, AdamW; {os.cpu_count()} CPU cores, shm; medians of "
          f"{args.steps} steps; memory and bytes: the largest of any process")
    print(f"{'layout':<24}{'procs':>5}{'tp':>3}{'pp':>3}{'M':>3}{'step ms':>9}{'peak MiB':>9}{'state MiB':>10}"
          f"{'vs DP':>7}{'sent MiB':>9}{'bubble':>8}{'theory':>8}")
    dp_state = None
    for name, spec, peer in rows:
        try:
            r = run(spec, args.steps, peer)
        except Exception as e:  # noqa: BLE001  (one layout failing still prints the others)
            print(f"{name:<24}{spec['nproc']:>5}  failed: {e}")
            continue
        tp, pp, m = spec.get("tp", 1), spec.get("pp", 1), spec.get("microbatches", 1)
        line = f"{name:<24}{spec['nproc']:>5}{tp:>3}{pp:>3}{m:>3}{r['step_s'] * 1e3:>9.1f}"
        if peer is None:
            if name == "DP" and dp_state is None:
                dp_state = r["held"]
            ratio = f"{r['held'] / dp_state:>7.2f}" if dp_state else f"{'':>7}"
            line += f"{r['peak'] / 2**20:>9.1f}{r['held'] / 2**20:>10.2f}{ratio}{r['sent'] / 2**20:>9.2f}"
            if pp > 1:
                line += f"{r['bubble']:>8.2f}{(pp - 1) / (m + pp - 1):>8.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()

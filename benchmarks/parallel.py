"""Model-scale parallelism on this machine: one GPT training step under each layout.

For DP, TP 2/4, PP 2/4 (GPipe and 1F1B over M micro-batches), ZeRO 1/2/3 and hybrids, on 2-8
processes (shm): the median step time, the largest per-process peak of host memory held by
arrays, the parameters and optimiser state one process holds (beside data parallelism's, where
ZeRO-3 should approach 1/N), the bytes one process puts into collectives and pipeline messages
per step, and for pipelines the measured bubble (1 - compute time / step time, averaged over the
stages) beside the theory (P-1)/(M+P-1). Every layout trains the same model on the same global
batch. PyTorch runs the same model as a peer when torch is installed, over gloo: DDP, FSDP
(fully_shard) and torch.distributed.pipelining's GPipe and 1F1B (it keeps no CPU memory
statistics, so its rows show the state held but no peak).

    python benchmarks/parallel.py [--quick] [--steps 5] [--only torch]
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


def torch_rows(quick: bool) -> list[tuple[str, dict, str]]:
    """PyTorch beside the rows it has a counterpart for (gloo, one thread per process)."""
    rows = [("torch DDP", dict(nproc=n), "ddp") for n in (2, 4)] + [("torch FSDP", dict(nproc=4), "fsdp")]
    for p in (2, 4):
        for schedule in ("gpipe", "1f1b"):
            for m in ((4,) if quick else (4, 8)):
                rows.append((f"torch PP {schedule}", dict(nproc=p, pp=p, microbatches=m), f"pipe-{schedule}"))
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


def torch_worker(peer: str, spec: dict, steps: int) -> None:
    """The same GPT in PyTorch (pre-norm causal blocks), AdamW, over gloo: DDP, FSDP (fully_shard
    per block, then the whole) or torch.distributed.pipelining's GPipe / 1F1B."""
    import torch
    import torch.distributed as tdist
    from torch import nn

    tdist.init_process_group("gloo")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    v, c, dim = MODEL["vocab"], MODEL["context"], MODEL["dim"]
    mask = nn.Transformer.generate_square_subsequent_mask(c)

    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(v, dim), nn.Parameter(torch.zeros(c, dim))

        def forward(self, x):
            return self.tok(x) + self.pos[:x.shape[1]]

    class Block(nn.TransformerEncoderLayer):
        def __init__(self):
            super().__init__(dim, MODEL["heads"], 4 * dim, 0.0, "gelu", batch_first=True, norm_first=True)

        def forward(self, h):
            return super().forward(h, src_mask=mask, is_causal=True)

    pieces = [Embed(), *[Block() for _ in range(MODEL["depth"])], nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, v))]
    n, r = tdist.get_world_size(), tdist.get_rank()
    loss_fn = lambda logits, t: nn.functional.cross_entropy(logits.reshape(-1, v), t.reshape(-1))  # noqa: E731
    tokens = torch.randint(0, v, (GLOBAL_BATCH, c))
    if peer.startswith("pipe"):
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
        per = MODEL["depth"] // n  # embedding on the first stage, head on the last, as funcgrad splits
        lo, hi = (0 if r == 0 else 1 + r * per), (1 + (r + 1) * per + (1 if r == n - 1 else 0))
        model = nn.Sequential(*pieces[lo:hi])
        schedule = {"pipe-gpipe": ScheduleGPipe, "pipe-1f1b": Schedule1F1B}[peer](
            PipelineStage(model, r, n, torch.device("cpu")), spec["microbatches"], loss_fn=loss_fn)
        opt = torch.optim.AdamW(model.parameters(), 1e-3)

        def forward_backward():
            if r == 0:
                schedule.step(tokens)
            elif r == n - 1:
                schedule.step(target=tokens)
            else:
                schedule.step()
    else:
        model = nn.Sequential(*pieces)
        if peer == "fsdp":
            from torch.distributed.fsdp import fully_shard
            for piece in pieces:
                fully_shard(piece)
            model = fully_shard(model)
        else:
            model = nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.AdamW(model.parameters(), 1e-3)
        per = GLOBAL_BATCH // n
        mine = tokens[r * per:(r + 1) * per]

        def forward_backward():
            loss_fn(model(mine), mine).backward()

    def step():
        opt.zero_grad()
        forward_backward()
        opt.step()
    for _ in range(2):
        step()
    times = []
    for _ in range(steps):
        tdist.barrier()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    local = lambda t: t.to_local() if hasattr(t, "to_local") else t  # noqa: E731  (FSDP's DTensor shards)
    held = sum(local(p).nbytes for p in model.parameters())
    held += sum(local(x).nbytes for state in opt.state.values() for x in state.values() if x.dim() > 0)
    out = [torch.zeros(2, dtype=torch.float64) for _ in range(n)]
    tdist.all_gather(out, torch.tensor([statistics.median(times), held], dtype=torch.float64))
    if r == 0:
        print("RESULT " + json.dumps({"step_s": max(float(t[0]) for t in out), "held": max(int(t[1]) for t in out)}),
              flush=True)
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
    parser.add_argument("--only", default="", help="run only the rows whose name contains this")
    args = parser.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        return torch_worker(args.peer, spec, args.steps) if args.peer else worker(spec, args.steps)
    rows = [(name, spec, None) for name, spec in layouts(args.quick)]
    try:
        import torch  # noqa: F401
        rows += torch_rows(args.quick)
    except ImportError:
        print("torch not installed: no PyTorch rows")
    rows = [row for row in rows if args.only in row[0]]
    print(f"GPT {MODEL}, global batch {GLOBAL_BATCH}, AdamW; {os.cpu_count()} CPU cores, shm; medians of "
          f"{args.steps} steps; memory and bytes: the largest of any process")
    print(f"{'layout':<24}{'procs':>5}{'tp':>3}{'pp':>3}{'M':>3}{'step ms':>9}{'peak MiB':>9}{'state MiB':>10}"
          f"{'vs DP':>7}{'sent MiB':>9}{'bubble':>8}{'theory':>8}")
    dp_state: dict = {}  # the state one DP process holds, funcgrad's and PyTorch's
    for name, spec, peer in rows:
        try:
            r = run(spec, args.steps, peer)
        except Exception as e:  # noqa: BLE001  (one layout failing still prints the others)
            print(f"{name:<24}{spec['nproc']:>5}  failed: {e}")
            continue
        tp, pp, m = spec.get("tp", 1), spec.get("pp", 1), spec.get("microbatches", 1)
        line = f"{name:<24}{spec['nproc']:>5}{tp:>3}{pp:>3}{m:>3}{r['step_s'] * 1e3:>9.1f}"
        if name.endswith("DP") and name not in dp_state:
            dp_state[name] = r["held"]
        base = dp_state.get("torch DDP" if peer else "DP")
        ratio = f"{r['held'] / base:>7.2f}" if base else f"{'':>7}"
        peak = f"{r['peak'] / 2**20:>9.1f}" if "peak" in r else f"{'-':>9}"  # PyTorch keeps no CPU statistics
        line += f"{peak}{r['held'] / 2**20:>10.2f}{ratio}"
        if peer is None:
            line += f"{r['sent'] / 2**20:>9.2f}"
            if pp > 1:
                line += f"{r['bubble']:>8.2f}{(pp - 1) / (m + pp - 1):>8.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()

"""Collective latency and bus bandwidth for the shm, tcp and (when installed) mpi backends, and
PyTorch's gloo as a peer: all_reduce, all_gather, reduce_scatter and send/recv.

Bus bandwidth (nccl-tests' convention, comparable across rank counts): all_reduce moves
size x 2 (N - 1) / N per rank, all_gather and reduce_scatter size x (N - 1) / N (size: the whole
gathered or reduced array), send/recv size (rank 0 to rank 1; the others wait). Medians of repeated
float32 operations, 2 and 4 ranks on this host.

    python benchmarks/allreduce.py [--max-mib 256] [--ranks 2 4] [--ops all_reduce send_recv] [--backends tcp gloo]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 100 << 20, 256 << 20]


def timings(all_reduce, barrier, make, max_bytes: int) -> list:
    """(size, median seconds) of all_reduce on make(n) float32 elements, for each size."""
    results = []
    for size in [s for s in SIZES if s <= max_bytes]:
        x = make(size // 4)
        repeats = 200 if size <= 64 << 10 else 20 if size <= 16 << 20 else 5
        for _ in range(3):
            all_reduce(x)
        times = []
        for _ in range(repeats):
            barrier()
            start = time.perf_counter()
            all_reduce(x)
            times.append(time.perf_counter() - start)
        results.append((size, statistics.median(times)))
    return results


OPS = ("all_reduce", "all_gather", "reduce_scatter", "send_recv")
FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "send_recv": lambda n: 1.0}


def gloo_worker(op: str, max_bytes: int) -> None:
    """PyTorch's gloo, the peer for tcp (run under the same launcher)."""
    import torch
    import torch.distributed as tdist
    tdist.init_process_group("gloo")
    n, rank = tdist.get_world_size(), tdist.get_rank()
    if op == "all_reduce":
        fn = tdist.all_reduce
    elif op == "all_gather":
        fn = lambda x: tdist.all_gather_into_tensor(torch.empty(x.numel() * n), x)  # noqa: E731
    elif op == "send_recv":
        fn = lambda x: (tdist.send(x, 1) if rank == 0 else tdist.recv(x, 0) if rank == 1 else None)  # noqa: E731
    else:
        raise SystemExit(f"gloo has no {op}")
    make = (lambda k: torch.ones(k // n)) if op == "all_gather" else torch.ones
    results = timings(fn, tdist.barrier, make, max_bytes)
    if rank == 0:
        print("RESULTS " + json.dumps(results), flush=True)
    tdist.destroy_process_group()


def worker(backend: str, op: str, max_bytes: int) -> None:
    if backend == "gloo":
        return gloo_worker(op, max_bytes)
    import numpy as np

    import funcgrad.dist as dist
    dist.init_process_group(backend, timeout=120)
    group = dist._default()
    n, rank = group.world_size, group.rank
    fn = {"all_reduce": group.all_reduce, "all_gather": group.all_gather, "reduce_scatter": group.reduce_scatter,
          "send_recv": lambda x: (group.send(x, 1) if rank == 0 else group.recv(0, like=x) if rank == 1 else None)}[op]
    make = (lambda k: np.ones(k // n, np.float32)) if op == "all_gather" else (lambda k: np.ones(k, np.float32))
    results = timings(fn, group.barrier, make, max_bytes)
    if rank == 0:
        print("RESULTS " + json.dumps(results), flush=True)
    dist.destroy_process_group()


def run(backend: str, op: str, nproc: int, max_bytes: int):
    env = {**os.environ, "PYTHONPATH": REPO}
    script = [os.path.abspath(__file__), "--worker", backend, "--op", op, "--max-bytes", str(max_bytes)]
    if backend == "mpi":
        mpiexec = shutil.which("mpiexec") or os.path.join(os.path.dirname(sys.executable), "mpiexec")
        cmd = [mpiexec, "-n", str(nproc), sys.executable, *script]
    else:
        cmd = [sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", str(nproc), *script]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    for line in proc.stdout.splitlines():
        if "RESULTS " in line:
            return json.loads(line.split("RESULTS ", 1)[1])
    raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no output")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--op", default="all_reduce", help=argparse.SUPPRESS)
    parser.add_argument("--max-bytes", type=int, default=256 << 20, help=argparse.SUPPRESS)
    parser.add_argument("--max-mib", type=int, default=256)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    parser.add_argument("--backends", nargs="+", choices=("shm", "tcp", "mpi", "gloo"),
                        default=["shm", "tcp", "mpi", "gloo"])
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.op, args.max_bytes)
    backends = [b for b in ("shm", "tcp") if b in args.backends]
    for module, name, hint in (("mpi4py", "mpi", "pip install 'funcgrad[mpi]'"), ("torch", "gloo", "PyTorch")):
        if name not in args.backends:
            continue
        try:
            __import__(module)
            backends.append(name)
        except ImportError:
            print(f"{name}: {module} not installed ({hint}), skipped")
    for op in args.ops:
        table = {}
        for nproc in args.ranks:
            for backend in backends:
                if backend == "gloo" and op == "reduce_scatter":
                    continue  # gloo has none
                try:
                    table[(backend, nproc)] = dict(run(backend, op, nproc, args.max_mib << 20))
                except Exception as e:  # noqa: BLE001  (one backend failing still prints the others)
                    print(f"{op} {backend} x{nproc}: failed ({e})")
        print(f"\n{op}, float32, median time and bus bandwidth, {os.cpu_count()} CPU cores")
        print(f"{'size':>9}  " + "  ".join(f"{f'{b} x{n}':>20}" for (b, n) in table))
        for size in [s for s in SIZES if s <= args.max_mib << 20]:
            cells = []
            for (backend, nproc), rows in table.items():
                t = rows.get(size)
                if t is None:
                    cells.append(f"{'':>20}")
                    continue
                bus = size / t * FACTOR[op](nproc) / 1e9
                cells.append(f"{t * 1e6:>9.1f}us {bus:>6.2f}GB/s")
            label = f"{size >> 20}MiB" if size >= 1 << 20 else f"{size >> 10}KiB"
            print(f"{label:>9}  " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()

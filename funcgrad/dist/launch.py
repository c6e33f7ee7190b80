"""The launcher (torchrun's job): start the workers of one node, watch them, fail fast.

    python -m funcgrad.dist.launch --nproc-per-node 4 train.py --epochs 3
    funcgrad launch --nproc-per-node 2 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 train.py

It sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE,
FUNCGRAD_DIST_SECRET and FUNCGRAD_RESTART_COUNT for each worker, prefixes every output line
with the worker's rank, and when one worker fails stops the others and reports the first
failure (rank, exit code or signal). With --max-restarts it restarts the whole group, so a
script that resumes from its checkpoint finishes.
"""
from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Sequence


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _stream(pipe, prefix: str, out) -> None:
    for line in iter(pipe.readline, b""):
        out.write(prefix + line.decode(errors="replace"))
        out.flush()
    pipe.close()


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def run_group(cmd: Sequence[str], nproc: int, nnodes: int, node_rank: int, master_addr: str, master_port: int,
              secret: str, restart: int, grace: float = 5.0) -> tuple[int, str]:
    """Run one attempt of the whole local group: (0, "") or (non-zero code, first failure)."""
    world = nproc * nnodes
    procs, threads = [], []
    for local in range(nproc):
        rank = node_rank * nproc + local
        env = {**os.environ, "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port), "WORLD_SIZE": str(world),
               "RANK": str(rank), "LOCAL_RANK": str(local), "LOCAL_WORLD_SIZE": str(nproc),
               "FUNCGRAD_DIST_SECRET": secret, "FUNCGRAD_RESTART_COUNT": str(restart), "PYTHONUNBUFFERED": "1"}
        p = subprocess.Popen(list(cmd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        procs.append((rank, p))
        for pipe, out in ((p.stdout, sys.stdout), (p.stderr, sys.stderr)):
            t = threading.Thread(target=_stream, args=(pipe, f"[rank {rank}] ", out), daemon=True)
            t.start()
            threads.append(t)
    exits: list[tuple[int, int]] = []  # (rank, code) in the order the workers ended

    def watch(rank, p):
        exits.append((rank, p.wait()))
    for rank, p in procs:
        threading.Thread(target=watch, args=(rank, p), daemon=True).start()
    failure = None
    try:
        while len(exits) < len(procs) and not any(code for _, code in list(exits)):
            time.sleep(0.02)
        if any(code for _, code in exits):
            # a peer that sees the failure may exit before the failing process finishes its own teardown:
            # give the others a moment, then report every failure, the earliest first
            deadline = time.monotonic() + 1.0
            while len(exits) < len(procs) and time.monotonic() < deadline:
                time.sleep(0.02)
            failed = [(rank, code) for rank, code in list(exits) if code]
            failure = (failed[0][1], "; ".join(f"rank {rank} failed ({_describe(code)})" for rank, code in failed))
    except KeyboardInterrupt:
        failure = (130, "interrupted")
    if failure is not None:
        _stop([p for _, p in procs], grace)
    for _, p in procs:
        p.wait()
    for t in threads:
        t.join(timeout=1)
    return (0, "") if failure is None else failure


def _stop(procs, grace: float) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="funcgrad launch", description=__doc__.splitlines()[0])
    parser.add_argument("--nproc-per-node", type=int, default=1)
    parser.add_argument("--nnodes", type=int, default=1)
    parser.add_argument("--node-rank", type=int, default=0)
    parser.add_argument("--master-addr", default="127.0.0.1")
    parser.add_argument("--master-port", type=int, default=None, help="default: a free port (single node)")
    parser.add_argument("--max-restarts", type=int, default=0)
    parser.add_argument("-m", dest="module", help="run a module, as python -m does")
    parser.add_argument("script", nargs="?", help="the Python script each worker runs")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.module is None and args.script is None:
        parser.error("give a script, or -m module")
    return args


def launch(args: argparse.Namespace) -> int:
    if args.nproc_per_node < 1 or args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        raise SystemExit(f"funcgrad launch: need --nproc-per-node >= 1, --nnodes >= 1 and 0 <= --node-rank < "
                         f"--nnodes (got {args.nproc_per_node}, {args.nnodes}, {args.node_rank})")
    secret = os.environ.get("FUNCGRAD_DIST_SECRET")
    if not secret:
        if args.nnodes > 1:
            raise SystemExit("funcgrad launch: with several nodes, set the same FUNCGRAD_DIST_SECRET on every node")
        secret = secrets.token_hex(32)
    if args.master_port is None and args.nnodes > 1:
        raise SystemExit("funcgrad launch: with several nodes, give --master-port")
    port = args.master_port or free_port(args.master_addr)
    rest = ([args.script] if args.script is not None else []) + list(args.args)
    cmd = [sys.executable, *(["-m", args.module] if args.module else []), *rest]
    for attempt in range(args.max_restarts + 1):
        code, failure = run_group(cmd, args.nproc_per_node, args.nnodes, args.node_rank, args.master_addr, port,
                                  secret, attempt)
        if code == 0:
            return 0
        left = args.max_restarts - attempt
        print(f"funcgrad launch: {failure}" + (f"; restarting the group ({left} restarts left)" if left else ""),
              file=sys.stderr, flush=True)
        if args.master_port is None:
            port = free_port(args.master_addr)
    return code if code > 0 else 1


def main(argv: Sequence[str] | None = None) -> int:
    return launch(parse(argv))


if __name__ == "__main__":
    sys.exit(main())

"""The launcher (torchrun's job): start the workers of one node, watch them, fail fast.

    python -m funcgrad.dist.launch --nproc-per-node 4 train.py --epochs 3
    funcgrad launch --nproc-per-node 2 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 train.py

It sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE,
FUNCGRAD_DIST_SECRET and FUNCGRAD_RESTART_COUNT for each worker, prefixes every output line
with the worker's rank, and when one worker fails stops the others and reports the first
failure (rank, exit code or signal). With --max-restarts it restarts the whole group, so a
script that resumes from its checkpoint finishes.

Stopping it (Ctrl-C, SIGTERM, SIGHUP) stops the workers: SIGTERM to each worker's process group,
SIGKILL after a grace period; so does a worker's failure, to every worker's group, children
included. Once the workers are gone their shared-memory segments are removed. When its own
output closes (`funcgrad launch ... | head`), it keeps draining the workers' output.
"""
from __future__ import annotations

import argparse
import contextlib
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
    """Copy a worker's output lines to ours; if ours is closed, keep reading (and dropping) them, so
    the worker never blocks on a full pipe."""
    writing = True
    for line in iter(pipe.readline, b""):
        if writing:
            try:
                out.write(prefix + line.decode(errors="replace"))
                out.flush()
            except (BrokenPipeError, OSError, ValueError):
                writing = False
    pipe.close()


class _Stopped(Exception):
    """The launcher was asked to stop (SIGTERM, SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stopped(signum, frame):
    for s in (signal.SIGTERM, signal.SIGHUP):  # once: a second signal must not interrupt the stopping
        signal.signal(s, signal.SIG_IGN)
    raise _Stopped(signum)


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
    except _Stopped as e:
        failure = (128 + e.signum, f"stopped by {e}")
    if failure is not None:
        _stop([p for _, p in procs], grace)
    for _, p in procs:
        p.wait()
    for t in threads:
        t.join(timeout=1)
    from .shm import remove_stale_segments  # the segments of a stopped job, whose atexit never ran
    remove_stale_segments({p.pid for _, p in procs})
    return (0, "") if failure is None else failure


def _signal_group(pgid: int, signum: int) -> bool:
    """Signal a worker's process group; False once nothing is left in it."""
    try:
        os.killpg(pgid, signum)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _stop(procs, grace: float) -> None:
    """SIGTERM to every worker's process group, exited workers' too (their children may live on),
    then SIGKILL to the groups where anything is left after the grace period. SIGCONT follows the
    SIGTERM, as the shell's kill does, so a stopped worker handles it now rather than at SIGKILL."""
    groups = [p.pid for p in procs]  # each worker leads its own session and group
    for pgid in groups:
        _signal_group(pgid, signal.SIGTERM)
        _signal_group(pgid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):  # still running: the group check below decides
            p.wait(max(deadline - time.monotonic(), 0))
    while time.monotonic() < deadline and any(_signal_group(pgid, 0) for pgid in groups):
        time.sleep(0.05)
    for pgid in groups:
        _signal_group(pgid, signal.SIGKILL)


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
    previous = {s: signal.signal(s, _raise_stopped) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        for attempt in range(args.max_restarts + 1):
            code, failure = run_group(cmd, args.nproc_per_node, args.nnodes, args.node_rank, args.master_addr, port,
                                      secret, attempt)
            if code == 0:
                return 0
            left = args.max_restarts - attempt if code not in (130, 128 + signal.SIGTERM, 128 + signal.SIGHUP) else 0
            with contextlib.suppress(OSError, ValueError):  # our stderr may be closed too
                print(f"funcgrad launch: {failure}" + (f"; restarting the group ({left} restarts left)" if left else ""),
                      file=sys.stderr, flush=True)
            if not left:
                break
            if args.master_port is None:
                port = free_port(args.master_addr)
        return code if code > 0 else 1
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def main(argv: Sequence[str] | None = None) -> int:
    return launch(parse(argv))


if __name__ == "__main__":
    sys.exit(main())

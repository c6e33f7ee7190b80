"""The fault campaign: kill and stop ranks at random points, flip every bit of a checkpoint, fuzz the
rendezvous store; print a table of what happened. The fast cases of each are tests
(tests/test_faults_*.py); this runs them many times over.

    python benchmarks/faults.py [--trials 20] [--backends shm tcp mpi] [--seed 0]

kill:  3 ranks all-reduce in a loop (each result checked); one is SIGKILLed at a random moment.
       Every survivor must raise DistError, the job must exit non-zero (the table gives the slowest
       exit after the signal), and no worker, no shared-memory segment may be left.
stop:  one rank is SIGSTOPped; the survivors must time out (timeout 3 s) naming a rank.
flips: every single-bit flip of a small checkpoint must fail to load (never load silently).
store: random frames and garbage to the store before authentication; the server's memory and
       threads must not grow, and an authenticated client must still be served.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

WORKER = r"""
import os, sys, numpy as np
import funcgrad.dist as dist
group = dist.init_process_group(sys.argv[1], timeout=float(sys.argv[2]))
os.write(1, f"PID {dist.get_rank()} {os.getpid()}\n".encode())  # one write: mpiexec merges ranks' output
world = dist.get_world_size()
try:
    for i in range(10**9):
        out = np.asarray(dist.all_reduce(np.full(4096, dist.get_rank() + i, np.float32)))
        assert (out == sum(range(world)) + world * i).all(), "a wrong sum"
except dist.DistError as e:
    os.write(1, f"RAISED {dist.get_rank()} {type(e).__name__}\n".encode())
    sys.exit(3)
"""


def _segments(pids) -> list[Path]:
    return [p for p in Path("/dev/shm").glob("funcgrad_*") if any(f"_p{pid}_" in p.name for pid in pids)]


def _job(backend: str, script: Path, timeout: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if backend == "mpi":
        cmd = [str(Path(sys.executable).with_name("mpiexec")), "-n", "3", sys.executable, str(script), "mpi",
               str(timeout)]
    else:
        cmd = [sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", "3", str(script), backend,
               str(timeout)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                            start_new_session=True)


class _Output:
    """A job's output lines, read in the background (a blocked readline would hang the campaign)."""

    def __init__(self, job: subprocess.Popen):
        self.lines: list[str] = []
        self.thread = threading.Thread(target=lambda: self.lines.extend(job.stdout), daemon=True)
        self.thread.start()

    def find(self, pattern: str) -> list[tuple[str, ...]]:
        return [m for line in list(self.lines) for m in re.findall(pattern, line)]


def fault_trial(backend: str, script: Path, signum: int, rng: random.Random) -> dict:
    job = _job(backend, script, 3.0 if signum == signal.SIGSTOP else 60.0)
    output = _Output(job)
    try:
        deadline = time.monotonic() + 60
        while len(output.find(r"PID (\d+) (\d+)")) < 3:  # behind the launcher's "[rank r]" or not
            if time.monotonic() > deadline or job.poll() is not None:
                return {"hang": job.poll() is None, "seconds": 0.0, "exit": job.returncode, "left": 0, "leaked": 0,
                        "unreported": 3, "started": False}
            time.sleep(0.05)
        pids = {int(r): int(p) for r, p in output.find(r"PID (\d+) (\d+)")}
        time.sleep(rng.uniform(0.1, 1.5))
        victim = rng.randrange(3)
        os.kill(pids[victim], signum)
        hit = time.monotonic()
        hang = False
        try:
            job.wait(timeout=30)
        except subprocess.TimeoutExpired:
            hang = True
        reported = time.monotonic() - hit
        output.thread.join(timeout=5)
        raised = {int(r) for r in output.find(r"RAISED (\d+)")}
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signal.SIGKILL)  # whatever is left of the job (a hang)
    time.sleep(0.2)
    stopped = pids[victim] if signum == signal.SIGSTOP else None
    left_processes = [p for p in pids.values() if _alive(p) and p != stopped]
    for p in [*left_processes, *([stopped] if stopped else [])]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    leaked = _segments(pids.values())
    for path in leaked:
        path.unlink(missing_ok=True)
    survivors = {r for r in pids if r != victim}
    return {"hang": hang, "seconds": reported, "exit": job.returncode, "left": len(left_processes),
            "leaked": len(leaked), "unreported": len(survivors - raised) if backend != "mpi" else 0, "started": True}


def _alive(pid: int) -> bool:
    from funcgrad.process import alive
    return alive(pid)


def bit_flips() -> dict:
    import numpy as np

    import funcgrad as fg
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.safetensors"
        fg.checkpoint.save(path, {"w": fg.asarray(np.arange(6.0, dtype=np.float32)), "b": fg.ones(2)},
                           metadata={"epoch": 10, "lr": 0.001})
        raw = path.read_bytes()
        damaged = Path(folder) / "d.safetensors"
        silent = 0
        for position in range(len(raw)):
            for bit in range(8):
                flipped = bytearray(raw)
                flipped[position] ^= 1 << bit
                damaged.write_bytes(bytes(flipped))
                try:
                    fg.checkpoint.load(damaged)
                    silent += 1
                except (fg.checkpoint.CheckpointError, ValueError):
                    pass
        return {"flips": 8 * len(raw), "silent loads": silent}


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def store_fuzz(trials: int, rng: random.Random) -> dict:
    from funcgrad.dist import store as S
    secret = os.urandom(32)
    server = S.StoreServer("127.0.0.1", 0, secret)
    port = server.sock.getsockname()[1]
    before_rss, before_threads = _rss_kib(), threading.active_count()
    open_socks = []
    for i in range(trials):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        kind = i % 4
        try:
            if kind == 0:
                sock.sendall(struct.pack("!I", rng.randrange(1 << 20, 1 << 32)))  # a huge claimed frame
            elif kind == 1:
                sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
            elif kind == 2:
                sock.sendall(os.urandom(rng.randrange(1, 200)))
            else:
                open_socks.append(sock)  # idle: holds a pending slot until the handshake deadline
                continue
        except OSError:
            pass
        sock.close()
    time.sleep(0.5)
    grown_rss, grown_threads = _rss_kib() - before_rss, threading.active_count() - before_threads
    client = S.StoreClient("127.0.0.1", port, secret, timeout=30)
    client.set("k", b"v")
    served = client.wait_get("k", 5) == b"v"
    client.close()
    for sock in open_socks:
        sock.close()
    server.close()
    return {"connections": trials, "rss growth KiB": grown_rss, "thread growth": grown_threads, "served": served}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=["shm", "tcp", "mpi"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    backends = [b for b in args.backends if b != "mpi" or Path(sys.executable).with_name("mpiexec").exists()]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "worker.py"
        script.write_text(WORKER)
        for backend in backends:
            for name, signum in (("SIGKILL", signal.SIGKILL), ("SIGSTOP", signal.SIGSTOP)):
                trials = [fault_trial(backend, script, signum, rng) for _ in range(args.trials)]
                rows.append((f"{name} a rank ({backend})", sum(t["started"] for t in trials), sum(t["hang"] for t in trials),
                             max(t["seconds"] for t in trials), sum(t["unreported"] for t in trials),
                             sum(t["left"] for t in trials), sum(t["leaked"] for t in trials)))
    print(f"\n{'fault':<24}{'started':>8}{'hangs':>7}{'slowest exit':>14}{'unreported':>12}{'left procs':>12}"
          f"{'left shm':>10}")
    for name, n, hangs, slowest, unreported, left, leaked in rows:
        print(f"{name:<24}{n:>5}/{args.trials:<2}{hangs:>7}{slowest:>13.2f}s{unreported:>12}{left:>12}{leaked:>10}")
    flips = bit_flips()
    print(f"\ncheckpoint bit flips: {flips['flips']} flips, {flips['silent loads']} loaded silently")
    fuzz = store_fuzz(4 * args.trials, rng)
    print(f"store fuzzing: {fuzz['connections']} hostile connections, RSS +{fuzz['rss growth KiB']} KiB, "
          f"threads +{fuzz['thread growth']}, an authenticated client served: {fuzz['served']}")
    bad = any(r[1] < args.trials or r[2] or r[4] or r[5] or r[6] for r in rows) or flips["silent loads"] or not fuzz["served"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""The launcher and process lifetime under faults: a stopped job leaves no worker, no child of a
worker and no shared-memory segment behind; a closed output never blocks the workers; dead peers
(zombies included) and stalled MPI peers are errors in time."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from funcgrad.process import alive

REPO = Path(__file__).resolve().parent.parent
LIMIT = 60
WORKER = """
import os, subprocess, sys, time
import funcgrad.dist as dist
group = dist.init_process_group("shm", timeout=30)
child = subprocess.Popen(["sleep", "999"])
print("CHILD", child.pid, flush=True)
if {fail} and dist.get_rank() == 1:
    time.sleep(0.5)
    os._exit(7)
time.sleep(999)
"""


def _launch(tmp_path, fail: bool, **kw):
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(fail=fail))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", "2", str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kw)


def _children(proc, n: int) -> list[int]:
    pids = []
    while len(pids) < n:
        line = proc.stdout.readline()
        assert line, "the workers ended before starting their children"
        if "CHILD" in line:
            pids.append(int(line.split()[-1]))
    return pids


def _segments(pids) -> list[str]:
    return [p.name for p in Path("/dev/shm").glob("funcgrad_*") if any(f"_p{pid}_" in p.name for pid in pids)]


def _gone_within(pids, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_stopping_the_launcher_stops_workers_children_and_segments(tmp_path, signum):
    proc = _launch(tmp_path, fail=False)
    children = _children(proc, 2)
    workers = [int(p.name.split("_p")[1].split("_")[0]) for p in Path("/dev/shm").glob("funcgrad_*")]
    os.kill(proc.pid, signum)
    proc.wait(timeout=LIMIT)
    assert proc.returncode == 128 + signum
    assert _gone_within(children, 10), "a worker's child survived the stopped job"
    assert not _segments(workers), "the stopped job's shared memory survived"


def test_a_failed_workers_children_are_stopped_too(tmp_path):
    proc = _launch(tmp_path, fail=True)
    children = _children(proc, 2)
    proc.wait(timeout=LIMIT)
    assert proc.returncode == 7
    assert _gone_within(children, 10), "the failed worker's child survived"


def test_a_closed_output_does_not_block_the_workers(tmp_path):
    script = tmp_path / "chatty.py"
    script.write_text("for i in range(200000):\n    print('line', i)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", "2", str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    proc.wait(timeout=LIMIT)
    assert proc.returncode == 0, proc.stderr.read().decode()[-2000:]


def test_a_zombie_counts_as_dead():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 5
        while alive(pid) and time.monotonic() < deadline:  # exited, not reaped: a zombie
            time.sleep(0.01)
        assert not alive(pid)
    finally:
        os.waitpid(pid, 0)
    assert alive(os.getpid())


def test_a_duplicate_rank_is_named(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1",
           "FUNCGRAD_DIST_SECRET": "x" * 32}
    from funcgrad.dist.launch import free_port
    env["MASTER_PORT"] = str(free_port())
    code = "import funcgrad.dist as d\nd.init_process_group('tcp', timeout=8)\n"
    procs = [subprocess.Popen([sys.executable, "-c", code], env={**env, "RANK": rank}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for rank in ("0", "1", "1")]
    outputs = [p.communicate(timeout=LIMIT)[1] for p in procs]
    assert all(p.returncode != 0 for p in procs)
    assert sum("RANK 1 was claimed by two processes" in out for out in outputs) >= 2, outputs


def test_a_stalled_mpi_peer_is_a_timeout_not_a_hang():
    pytest.importorskip("mpi4py")
    mpiexec = Path(sys.executable).with_name("mpiexec")
    if not mpiexec.exists():
        pytest.skip("no mpiexec beside this Python (pip install 'funcgrad[mpi]')")
    env = {**os.environ, "PYTHONPATH": str(REPO), "DIST_TIMEOUT": "3"}
    start = time.monotonic()
    proc = subprocess.run([str(mpiexec), "-n", "2", sys.executable, str(REPO / "tests" / "dist_worker.py"), "skip",
                           "mpi"], capture_output=True, text=True, timeout=LIMIT, env=env, cwd=REPO)
    assert time.monotonic() - start < 20  # the stalled peer sleeps 30 s
    assert "DistTimeoutError: rank 0: timed out after 3s in all_reduce #1" in proc.stdout, proc.stdout + proc.stderr

"""Distributed collectives through the launcher, and the faults they must report instead of hanging.

Every scenario runs under a hard time limit, so a regression fails instead of blocking CI.
"""
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import funcgrad.dist as dist

REPO = Path(__file__).resolve().parent.parent
WORKER = str(REPO / "tests" / "dist_worker.py")
LIMIT = 60


def launch(scenario, backend, nproc=2, extra_env=None, launcher_args=()):
    env = {**os.environ, "PYTHONPATH": str(REPO), **(extra_env or {})}
    proc = subprocess.run([sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", str(nproc),
                           *launcher_args, WORKER, scenario, backend],
                          capture_output=True, text=True, timeout=LIMIT, env=env, cwd=REPO)
    results = dict(re.findall(r"\[rank (\d+)\] RESULT (.*)", proc.stdout))
    return proc, {int(k): v for k, v in results.items()}


def shm_segments():
    return sorted(p.name for p in Path("/dev/shm").glob("funcgrad_*")) if Path("/dev/shm").is_dir() else []


@pytest.mark.parametrize("backend", ["tcp", "shm"])
@pytest.mark.parametrize("nproc", [2, 3])
def test_collectives_are_correct(backend, nproc):
    proc, results = launch("collectives", backend, nproc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results == {r: "ok" for r in range(nproc)}


@pytest.mark.parametrize("backend,precision", [("tcp", "fp32"), ("shm", "fp32"), ("shm", "fp16")])
def test_data_parallel_steps_keep_parameters_bit_identical(backend, precision):
    proc, results = launch("train_identical", backend, 2, extra_env={"DIST_TIMEOUT": "30", "DIST_PRECISION": precision})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results == {0: "ok", 1: "ok"}


def test_cli_trains_data_parallel(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, str(REPO / "cli.py"), "train", "mlp", "--epochs", "2", "--nproc", "2",
                           "--quiet", "--checkpoint-dir", str(tmp_path)], capture_output=True, text=True,
                          timeout=LIMIT * 3, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "on 2 processes (shm; parameters identical on every rank)" in proc.stdout
    assert (tmp_path / "last.safetensors").exists()


@pytest.mark.parametrize("backend", ["tcp", "shm"])
def test_thousand_back_to_back_all_reduces(backend):
    proc, results = launch("stress", backend, 2)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results == {0: "ok", 1: "ok"}


@pytest.mark.parametrize("backend", ["tcp", "shm"])
@pytest.mark.parametrize("scenario,pattern", [
    ("mismatch_shape", r"collective mismatch: this rank called \(all_reduce #1.*shape=\[\d\]\) but rank \d called "
                       r"\(all_reduce #1.*shape=\[\d\]\)"),
    ("mismatch_dtype", r"collective mismatch.*dtype=float\d\d.*dtype=float\d\d"),
    ("mismatch_op", r"collective mismatch.*reduce=(sum|max).*reduce=(sum|max)"),
])
def test_mismatches_raise_on_every_rank(backend, scenario, pattern):
    proc, results = launch(scenario, backend)
    assert proc.returncode != 0
    assert set(results) == {0, 1}, proc.stdout + proc.stderr
    for message in results.values():
        assert re.search(pattern, message), message


@pytest.mark.parametrize("backend", ["tcp", "shm"])
def test_a_skipped_collective_times_out_naming_it(backend):
    proc, results = launch("skip", backend, extra_env={"DIST_TIMEOUT": "2"})
    assert proc.returncode != 0
    assert re.search(r"DistTimeoutError: rank 0: timed out after 2s in all_reduce #1 waiting for rank 1", results[0])


@pytest.mark.parametrize("backend", ["tcp", "shm"])
def test_a_peer_raising_or_killed_is_reported_fast(backend):
    proc, results = launch("raise_before", backend, extra_env={"DIST_TIMEOUT": "20"})
    assert proc.returncode != 0 and "rank 1 failed before the collective" in proc.stderr
    assert re.search(r"funcgrad launch: .*rank 1 failed \(exit code 1\)", proc.stderr)
    before = set(shm_segments())
    proc, results = launch("sigkill", backend, extra_env={"DIST_TIMEOUT": "20"})
    assert proc.returncode != 0
    assert "rank 1 failed (killed by signal SIGKILL)" in proc.stderr or \
           re.search(r"rank 1 .*(died|closed)", results.get(0, "")), proc.stdout + proc.stderr
    assert set(shm_segments()) <= before  # nothing left behind by the killed run


def test_group_is_unusable_after_an_error():
    proc, results = launch("unusable_after_error", "tcp")
    assert proc.returncode != 0
    assert all("unusable" in m for m in results.values()), results


def test_launcher_restarts_the_group(tmp_path):
    script = tmp_path / "flaky.py"
    script.write_text("import os, sys\nimport funcgrad.dist as dist\ndist.init_process_group('tcp', timeout=10)\n"
                      "count = int(os.environ['FUNCGRAD_RESTART_COUNT'])\n"
                      "print('attempt', count, flush=True)\n"
                      "sys.exit(5 if count < 2 and dist.get_rank() == 0 else 0)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", "2", "--max-restarts",
                           "2", str(script)], capture_output=True, text=True, timeout=LIMIT, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "[rank 0] attempt 2" in proc.stdout and "restarting the group (1 restarts left)" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", "2", str(script)],
                          capture_output=True, text=True, timeout=LIMIT, env=env)
    assert proc.returncode == 5 and "rank 0 failed (exit code 5)" in proc.stderr


def _run_rank(env_overrides, code="import funcgrad.dist as d; d.init_process_group('tcp', timeout=3)"):
    env = {**os.environ, "PYTHONPATH": str(REPO), "MASTER_ADDR": "127.0.0.1", "FUNCGRAD_DIST_SECRET": "s",
           **env_overrides}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT, env=env)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bad_environment_is_named():
    assert "RANK 2 is not below WORLD_SIZE 2" in _run_rank({"WORLD_SIZE": "2", "RANK": "2", "MASTER_PORT": "1"}).stderr
    assert "MASTER_PORT must be an integer" in _run_rank({"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": "x"}).stderr
    port = _free_port()
    lonely = _run_rank({"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": str(port)})  # rank 1 never starts
    assert "rank 1 did not join within 3s" in lonely.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = busy.getsockname()[1]
        result = _run_rank({"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": str(taken)})
    assert "is MASTER_PORT busy" in result.stderr


def test_duplicate_ranks_and_wrong_secret_are_rejected():
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "WORLD_SIZE": "3", "FUNCGRAD_DIST_SECRET": "s"}
    code = "import funcgrad.dist as d; d.init_process_group('tcp', timeout=6)"
    waiting = [subprocess.Popen([sys.executable, "-c", code], env={**env, "RANK": r}, stderr=subprocess.PIPE,
                                text=True) for r in ("0", "1")]  # rank 2 never comes: they wait
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # until rank 0 serves the store
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(1.0)  # rank 1 has registered
        dup = subprocess.run([sys.executable, "-c", code], env={**env, "RANK": "1"}, capture_output=True, text=True,
                             timeout=LIMIT)
        intruder = subprocess.run([sys.executable, "-c", code], env={**env, "RANK": "2", "FUNCGRAD_DIST_SECRET": "x"},
                                  capture_output=True, text=True, timeout=LIMIT)
    finally:
        for p in waiting:
            p.wait(timeout=LIMIT)
    assert "RANK 1 was claimed by two processes: duplicate ranks" in dup.stderr, dup.stderr
    assert "rejected this process: FUNCGRAD_DIST_SECRET differs" in intruder.stderr


def test_unauthenticated_client_cannot_use_the_store():
    from funcgrad.dist.store import StoreClient, StoreServer
    port = _free_port()
    server = StoreServer("127.0.0.1", port, b"secret")
    try:
        good = StoreClient("127.0.0.1", port, b"secret", 5)
        good.set("k", b"v")
        assert good.wait_get("k", 1) == b"v"
        with pytest.raises(dist.DistError, match="rejected"):
            StoreClient("127.0.0.1", port, b"guess", 5)
        raw = socket.create_connection(("127.0.0.1", port))  # speaks without answering the challenge
        raw.sendall(b"\x00\x00\x00\x10" + b"x" * 16)
        raw.settimeout(5)
        received = b""
        while chunk := raw.recv(4096):  # the challenge, then the refusal, then the server hangs up
            received += chunk
        assert received.endswith(b"denied")
        raw.close()
        good.close()
    finally:
        server.close()


def test_world_size_one_works_without_a_network():
    dist.init_process_group("tcp", rank=0, world_size=1)
    try:
        assert dist.get_world_size() == 1 and dist.is_main_process()
        assert np.asarray(dist.all_reduce(np.ones(3), "mean")).tolist() == [1, 1, 1]
        assert np.asarray(dist.all_gather(np.ones(2))).shape == (1, 2)
        dist.barrier()
        with pytest.raises(dist.DistError, match="already initialised"):
            dist.init_process_group("tcp")
    finally:
        dist.destroy_process_group()
    with pytest.raises(dist.DistError, match="no process group"):
        dist.get_rank()


@pytest.mark.parametrize("scenario", ["collectives", "train_identical"])
def test_mpi_backend_under_mpiexec(scenario):
    pytest.importorskip("mpi4py")
    mpiexec = Path(sys.executable).with_name("mpiexec")
    if not mpiexec.exists():
        pytest.skip("no mpiexec beside this Python (pip install 'funcgrad[mpi]')")
    env = {**os.environ, "PYTHONPATH": str(REPO), "DIST_TIMEOUT": "30"}
    proc = subprocess.run([str(mpiexec), "-n", "2", sys.executable, WORKER, scenario, "mpi"], capture_output=True,
                          text=True, timeout=LIMIT * 2, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("RESULT ok") == 2


@pytest.mark.parametrize("backend", ["tcp", "shm"])
def test_two_jobs_on_one_host_never_cross_talk(backend):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    jobs = [subprocess.Popen([sys.executable, "-m", "funcgrad.dist.launch", "--nproc-per-node", str(n), WORKER,
                              "collectives", backend], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=REPO) for n in (2, 3)]
    for n, job in zip((2, 3), jobs):
        out, err = job.communicate(timeout=LIMIT)
        assert job.returncode == 0, out + err
        assert out.count("RESULT ok") == n  # each job's sums are over its own ranks only


def test_world_size_disagreement_is_named():
    port = str(_free_port())
    env = {**os.environ, "PYTHONPATH": str(REPO), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
           "FUNCGRAD_DIST_SECRET": "s"}
    code = "import funcgrad.dist as d; d.init_process_group('tcp', timeout=5)"
    first = subprocess.Popen([sys.executable, "-c", code], env={**env, "RANK": "0", "WORLD_SIZE": "2"},
                             stderr=subprocess.PIPE, text=True)
    other = subprocess.run([sys.executable, "-c", code], env={**env, "RANK": "1", "WORLD_SIZE": "3"},
                           capture_output=True, text=True, timeout=LIMIT)
    first.wait(timeout=LIMIT)
    assert "rank 1 has WORLD_SIZE 3 but rank 0 has 2" in other.stderr


def test_output_buffers_are_recycled_only_when_nothing_refers_to_them():
    from funcgrad.dist.group import _Recycler
    recycler, f32 = _Recycler(), np.dtype(np.float32)
    first = recycler.empty(1 << 20, f32)
    view = recycler.empty(1 << 20, f32)[:10]  # a view keeps its buffer in use
    assert recycler.empty(1 << 20, f32) is not first
    first_id = id(first)
    del first
    assert id(recycler.empty(1 << 20, f32)) == first_id
    assert all(recycler.empty(1 << 20, f32) is not view.base for _ in range(3))
    assert recycler.empty(100, f32).size == 100 and len(recycler.buffers) == 3  # small ones are not kept


"""The command line, driven in-process through click and as a real subprocess."""
import json
import os
import re
import subprocess
import sys

import pytest

from click.testing import CliRunner

from funcgrad.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _learned(output: str) -> tuple[float, float]:
    m = re.search(r"learned w = ([-\d.]+), b = ([-\d.]+)", output)
    assert m, output
    return float(m.group(1)), float(m.group(2))


def test_train_linear_learns_the_line():
    result = CliRunner().invoke(main, ["train", "linear"])
    assert result.exit_code == 0, result.output
    w, b = _learned(result.output)
    assert abs(w - 2) < 0.02 and abs(b - 1) < 0.02
    assert "epoch 200" in result.output  # per-epoch progress while it runs


def test_train_mlp_quiet_reports_accuracy():
    result = CliRunner().invoke(main, ["train", "mlp", "--epochs", "3", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "epoch" not in result.output
    accuracy = float(re.search(r"test accuracy ([\d.]+)%", result.output).group(1))
    assert accuracy > 85.0


def test_bad_options_exit_nonzero_with_a_message():
    runner = CliRunner()
    result = runner.invoke(main, ["train", "linear", "--epochs", "0"])
    assert result.exit_code != 0 and "--epochs" in result.output
    result = runner.invoke(main, ["train", "resnet"])
    assert result.exit_code != 0 and "resnet" in result.output


def test_cli_shim_runs_as_a_subprocess():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "cli.py"), "train", "linear", "--quiet"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    w, b = _learned(proc.stdout)
    assert abs(w - 2) < 0.02 and abs(b - 1) < 0.02


def test_train_checkpoint_eval_and_resume(tmp_path):
    runner = CliRunner()
    ckpt_dir = tmp_path / "run"
    metrics = tmp_path / "m.jsonl"
    result = runner.invoke(main, ["train", "mlp", "--epochs", "2", "--checkpoint-dir", str(ckpt_dir), "--quiet",
                                  "--metrics", str(metrics), "--optimizer", "adam", "--schedule", "warmup_cosine"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [r["epoch"] for r in records] == [1, 2] and "test_accuracy" in records[-1]
    evaluated = runner.invoke(main, ["eval", str(ckpt_dir / "last.safetensors")])
    assert evaluated.exit_code == 0, evaluated.output
    trained_acc = re.search(r"test accuracy ([\d.]+)%", result.output).group(1)
    assert f"test accuracy {trained_acc}%" in evaluated.output
    resumed = runner.invoke(main, ["train", "mlp", "--epochs", "3", "--checkpoint-dir", str(ckpt_dir), "--resume",
                                   "--quiet", "--optimizer", "adam", "--schedule", "warmup_cosine"])
    assert resumed.exit_code == 0, resumed.output
    steps = int(re.search(r"(\d+) steps", resumed.output).group(1))
    assert steps == 3 * 23  # continued from step 46, not from scratch


def test_profile_writes_a_valid_chrome_trace(tmp_path):
    out = tmp_path / "trace.json"
    result = CliRunner().invoke(main, ["profile", "mlp", "--steps", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Self CPU" in result.output and "matmul" in result.output
    events = json.loads(out.read_text())["traceEvents"]
    names = {e["name"] for e in events}
    assert {"matmul", "step 0", "step 1", "forward", "backward"} <= names


def test_info_and_one_line_errors(tmp_path):
    runner = CliRunner()
    info = runner.invoke(main, ["info"])
    assert info.exit_code == 0 and "numba" in info.output and "CUDA sim" in info.output
    from funcgrad.cpu import registers
    regs = registers.host()
    assert f"CPU vectors {regs.count} registers of {regs.vector_bytes} bytes" in info.output
    from threadpoolctl import threadpool_info
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert blas and all(f"BLAS        {lib['internal_api']} {lib['version']} (" in info.output and
                        f"{lib['num_threads']} threads" in info.output for lib in blas)
    assert all(f"{lib['architecture']} kernel" in info.output for lib in blas if lib.get("architecture"))
    for args, needle in [(["eval", str(tmp_path / "missing.safetensors")], "no checkpoint at"),
                         (["train", "mlp", "--device", "tpu"], "Invalid value for '--device'"),
                         (["train", "mlp", "--resume"], "--resume needs --checkpoint-dir"),
                         (["train", "mlp", "--dataset", "cifar"], "unknown dataset 'cifar'")]:
        result = runner.invoke(main, args)
        assert result.exit_code != 0 and needle in result.output, (args, result.output)
        assert "Traceback" not in result.output
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\x00")
    result = runner.invoke(main, ["eval", str(bad)])
    assert result.exit_code != 0 and "truncated" in result.output


def test_default_train_is_the_mlp_on_digits():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "cli.py"), "train", "--epochs", "2", "--quiet"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("mlp on digits")
    bad = subprocess.run([sys.executable, os.path.join(REPO, "cli.py"), "train", "--epochs", "-1"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "--epochs" in bad.stderr


def test_train_on_the_cuda_device(tmp_path):
    """--device cuda moves the model, the key and every batch; in the simulator here."""
    import funcgrad as fg
    if not fg.cuda.is_available():
        pytest.skip("no CUDA device or simulator")
    result = CliRunner().invoke(main, ["train", "linear", "--device", "cuda", "--max-steps", "2", "--quiet",
                                       "--checkpoint-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "learned w" in result.output and (tmp_path / "last.safetensors").exists()


@pytest.mark.parametrize("model, dataset, says", [("gpt", "digits", "gpt trains on sort, reverse, not digits"),
                                                  ("linear", "digits", "linear trains on linear, not digits"),
                                                  ("mlp", "sort", "(a dataset for gpt)")])
def test_a_model_dataset_mismatch_is_one_line_before_any_work(model, dataset, says):
    result = CliRunner().invoke(main, ["train", model, "--dataset", dataset])
    assert result.exit_code != 0 and says in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_outputs_are_checked_before_any_work(tmp_path, monkeypatch):
    runner = CliRunner()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for args, says in [(["train", "--checkpoint-dir", str(a_file / "sub")], "--checkpoint-dir"),
                       (["train", "--metrics", str(tmp_path / "missing" / "m.jsonl")], "does not exist"),
                       (["profile", "--out", str(tmp_path / "missing" / "t.json")], "--out")]:
        result = runner.invoke(main, args)
        assert result.exit_code != 0 and says in result.output and "epoch" not in result.output, (args, result.output)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    result = runner.invoke(main, ["train", "--plot", str(tmp_path / "p.png")])
    assert result.exit_code != 0 and "--plot needs matplotlib" in result.output and "epoch" not in result.output


def test_resume_keeps_history_and_settings_and_refuses_another_model(tmp_path):
    from funcgrad import checkpoint
    runner = CliRunner()
    run, metrics = tmp_path / "run", tmp_path / "m.jsonl"
    first = runner.invoke(main, ["train", "mlp", "--epochs", "2", "--precision", "bf16", "--batch-size", "32",
                                 "--checkpoint-dir", str(run), "--metrics", str(metrics), "--quiet"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(main, ["train", "mlp", "--epochs", "3", "--checkpoint-dir", str(run), "--resume",
                                 "--metrics", str(metrics), "--quiet"])
    assert again.exit_code == 0, again.output
    assert [json.loads(line)["epoch"] for line in metrics.read_text().splitlines()] == [1, 2, 3]
    _, meta = checkpoint.load(run / "last.safetensors")
    assert meta["precision"] == "bf16" and meta["batch_size"] == 32 and meta["epochs"] == 3  # from the checkpoint
    assert int(re.search(r"(\d+) steps", again.output).group(1)) == 3 * 45  # batch 32: 45 steps an epoch
    other = runner.invoke(main, ["train", "cnn", "--checkpoint-dir", str(run), "--resume"])
    assert other.exit_code != 0 and "written by `funcgrad train mlp`, not `funcgrad train cnn`" in other.output
    fresh = runner.invoke(main, ["train", "mlp", "--epochs", "1", "--checkpoint-dir", str(tmp_path / "new"),
                                 "--resume", "--quiet"])
    assert fresh.exit_code == 0 and "starting from scratch" in fresh.output


def test_help_shows_options_and_defaults():
    runner = CliRunner()
    launch = runner.invoke(main, ["launch", "--help"]).output
    assert all(option in launch for option in ("--nproc-per-node", "--nnodes", "--master-port", "--max-restarts"))
    train = runner.invoke(main, ["train", "--help"]).output
    assert "mlp 30" in train and "default: 1" in train


def test_bench_finds_the_checkout_it_runs_in(monkeypatch):
    """After `pip install .` the package lives in site-packages: the checkout is found from here."""
    from funcgrad.cli import tools
    monkeypatch.chdir(os.path.join(REPO, "tests"))
    assert str(tools._benchmarks_folder()) == os.path.join(REPO, "benchmarks")


def _mpiexec():
    pytest.importorskip("mpi4py")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(mpiexec):
        pytest.skip("no mpiexec beside this Python (pip install 'funcgrad[mpi]')")
    return mpiexec


def test_mpi_backend_trains_one_job_or_refuses(tmp_path):
    """`train --nproc 2 --dist-backend mpi` runs under mpiexec as one job; the mpi backend under
    `funcgrad launch` (processes MPI sees as two worlds of one) refuses instead of training twice."""
    _mpiexec()
    proc = subprocess.run([sys.executable, "-m", "funcgrad.cli", "train", "mlp", "--nproc", "2", "--dist-backend",
                           "mpi", "--max-steps", "2", "--quiet"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0 and "on 2 processes (mpi" in proc.stdout, proc.stdout + proc.stderr
    script = tmp_path / "job.py"
    script.write_text("import funcgrad.dist as dist\ndist.init_process_group('mpi')\nprint('joined')\n")
    proc = subprocess.run([sys.executable, "-m", "funcgrad.cli", "launch", "--nproc-per-node", "2", str(script)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "joined" not in proc.stdout
    assert "MPI started this process in a world of 1, but WORLD_SIZE=2" in proc.stdout + proc.stderr


def test_info_finds_nvvm_under_the_simulator_too():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    probe = subprocess.run([sys.executable, "-c", "from numba.cuda.cudadrv import nvvm; nvvm.NVVM()"], env=env,
                           capture_output=True)
    if probe.returncode:
        pytest.skip("NVVM is missing: pip install 'funcgrad[cuda]'")
    out = subprocess.run([sys.executable, "-m", "funcgrad.cli", "info"], capture_output=True, text=True,
                         env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}, timeout=120).stdout
    assert "CUDA sim    on" in out and "; NVVM " in out and "no NVVM" not in out, out


def test_numpy_floating_point_warnings_do_not_point_at_funcgrad():
    """log(0) is -inf and 0/0 nan, as in jax.numpy, without a RuntimeWarning naming funcgrad's bind."""
    code = ("import numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "x = fnp.zeros(2)\nprint(fnp.log(x).tolist(), fg.jit(lambda v: v / v)(x).tolist())")
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[-inf, -inf] [nan, nan]", proc.stderr


def _step_losses(path) -> list[float]:
    with open(path) as f:
        return [r["train_loss"] for r in map(json.loads, f) if "peak_memory_bytes" in r]


def test_every_layout_gives_the_single_process_losses(tmp_path):
    """gpt on 4 processes as tp x pp (1F1B) and as dp x pp with ZeRO-3 (GPipe): each step's loss is
    the one process's on the same global batch (a dp job takes dp * --batch-size a step)."""
    common = ["train", "gpt", "--max-steps", "4", "--seed", "3", "--quiet", "--log-every", "1"]
    one = tmp_path / "one.jsonl"
    result = CliRunner().invoke(main, [*common, "--batch-size", "16", "--metrics", str(one)])
    assert result.exit_code == 0, result.output
    expected = _step_losses(one)
    assert len(expected) == 4
    for layout in (["--tp", "2", "--pp", "2", "--microbatches", "2", "--batch-size", "16"],
                   ["--pp", "2", "--zero", "3", "--microbatches", "4", "--pp-schedule", "gpipe", "--batch-size", "8"]):
        metrics = tmp_path / "layout.jsonl"
        proc = subprocess.run([sys.executable, "-m", "funcgrad.cli", *common, "--nproc", "4", "--metrics", str(metrics),
                               *layout], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode == 0 and "layout: dp=" in proc.stdout, proc.stdout + proc.stderr
        got = _step_losses(metrics)
        assert got == pytest.approx(expected, rel=2e-6), (layout, got, expected)
        with open(metrics) as f:
            assert all(r["peak_memory_bytes"] > 0 for r in map(json.loads, f) if "step" in r)


@pytest.mark.parametrize("args,says", [
    (["--nproc", "4", "--tp", "3"], "4 processes do not split into tp=3 x pp=1 groups"),
    (["--nproc", "3", "--pp", "3"], "pp=3 stages exceed the model's 2 blocks"),
    (["--nproc", "2", "--tp", "2", "--model-is-mlp"], "--tp, --pp and --zero train the gpt model, not mlp"),
    (["--nproc", "2", "--pp", "2", "--microbatches", "3"], "the batch of 64 does not split into 3 equal micro-batches"),
    (["--microbatches", "2"], "--microbatches splits the batch of a pipeline: give --pp too"),
    (["--log-every", "2"], "--log-every writes to --metrics: give both"),
    (["--nproc", "2", "--zero", "1", "--precision", "bf16"], "--precision bf16/fp16 does not combine with --tp"),
    (["--nproc", "2", "--zero", "1", "--grad-accum", "2"], "--grad-accum does not combine with --tp"),
])
def test_a_layout_that_cannot_work_is_one_line_before_any_process_starts(args, says):
    model = "mlp" if "--model-is-mlp" in args else "gpt"
    args = [a for a in args if a != "--model-is-mlp"]
    result = CliRunner().invoke(main, ["train", model, *args])
    assert result.exit_code != 0 and says in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_layout_checkpoint_resumes_under_another_layout(tmp_path):
    """Saved by tp x pp after 3 steps, resumed by dp=4 with ZeRO-3 (the same global batch of 16):
    steps 4-6 have the losses of the run that was never interrupted."""
    common = [sys.executable, "-m", "funcgrad.cli", "train", "gpt", "--seed", "2", "--quiet", "--log-every", "1",
              "--nproc", "4", "--checkpoint-dir", str(tmp_path / "ckpt")]
    whole = tmp_path / "whole.jsonl"
    result = CliRunner().invoke(main, ["train", "gpt", "--seed", "2", "--quiet", "--log-every", "1", "--max-steps", "6",
                                       "--batch-size", "16", "--metrics", str(whole)])
    assert result.exit_code == 0, result.output
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    for args, metrics in ((["--tp", "2", "--pp", "2", "--microbatches", "2", "--batch-size", "16", "--max-steps", "3"],
                           first), (["--zero", "3", "--batch-size", "4", "--max-steps", "6", "--resume"], second)):
        proc = subprocess.run([*common, *args, "--metrics", str(metrics)], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
        assert proc.returncode == 0 and "checkpoint: " in proc.stdout, proc.stdout + proc.stderr
    assert sorted(os.listdir(tmp_path / "ckpt" / "sharded"))[0] == "manifest.json"
    assert _step_losses(first) + _step_losses(second) == pytest.approx(_step_losses(whole), rel=2e-6)

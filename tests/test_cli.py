"""The command line, driven in-process through click and as a real subprocess."""
import os
import re
import subprocess
import sys

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

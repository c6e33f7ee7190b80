"""CUDA kernels: matmul TFLOP/s against cuBLAS, reduction and elementwise bandwidth against a
device-to-device copy, and the MLP, CNN and GPT training steps (time and kernel launches per
step) against PyTorch on the GPU.

    python benchmarks/gpu_kernels.py              # on a machine with an NVIDIA GPU
    python benchmarks/gpu_kernels.py --simulator  # tiny sizes in numba's simulator (checks the paths)
    python benchmarks/gpu_kernels.py --host-only  # funcgrad's host work per step, without a GPU

The steps are bound by the host (Python work per launch), so --host-only times that work on any
machine: the training steps at their real sizes in the simulator with every kernel launch counted
and skipped (the simulator's 8-thread blocks split a few more reductions into two launches).

It starts with the registers, shared memory and occupancy ptxas gives the hot kernels (from PTX,
without a GPU: funcgrad.cuda.ptx.resources).

Peers (CuPy or PyTorch with CUDA) are used when installed. Targets on a GPU: float32 matmul at
4096^3 >= 60% of cuBLAS SGEMM; reductions and elementwise >= 70% of copy bandwidth.
"""
from __future__ import annotations

import argparse
import os
import sys

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--simulator", action="store_true", help="run every case with tiny sizes in numba's simulator")
parser.add_argument("--host-only", action="store_true",
                    help="time the training steps' host work: real sizes, simulator, kernel launches skipped")
args = parser.parse_args()
if args.simulator or args.host_only:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
from benchmarks.common import have, median_seconds  # noqa: E402
from funcgrad import nn, optim  # noqa: E402
from funcgrad.train import make_train_step  # noqa: E402

SIM = args.simulator
REPEATS = 1 if SIM else 10


def skip_launches() -> None:
    """Count every kernel launch and run none (--host-only: the simulator would run each GPU thread
    in Python, and what is timed is the work around the launches)."""
    import importlib
    import pkgutil

    import funcgrad.cuda.kernels as kernels
    from funcgrad.cuda import runtime

    def skipped(kernel, grid, block, *arguments):
        runtime.launches.count += 1
    for info in pkgutil.iter_modules(kernels.__path__):
        module = importlib.import_module(f"{kernels.__name__}.{info.name}")
        if getattr(module, "launch", None) is runtime.launch:
            module.launch = skipped


def timed(fn) -> float:
    """Median seconds of fn() with the device synchronised, so kernel time is what is measured."""
    def run():
        out = fn()
        fg.cuda.synchronize()
        return out
    return median_seconds(run, repeats=REPEATS, warmup=1)


def torch_cuda():
    if SIM or args.host_only or not have("torch"):
        return None
    import torch
    return torch if torch.cuda.is_available() else None


def matmul_rows():
    torch = torch_cuda()
    sizes = [24] if SIM else [1024, 2048, 4096, 8192]
    for dtype in (fg.float32, fg.bfloat16):
        for n in sizes:
            a = fg.device_put(fg.asarray(np.random.default_rng(0).standard_normal((n, n)).astype(dtype)), "cuda")
            t = timed(lambda: a @ a)
            tflops = 2 * n ** 3 / t / 1e12
            peer = ""
            if torch is not None:
                ta = torch.randn(n, n, device="cuda", dtype=getattr(torch, np.dtype(dtype).name))
                tt = median_seconds(lambda: (ta @ ta, torch.cuda.synchronize()), repeats=REPEATS, warmup=1)
                peer = f"  cuBLAS {2 * n ** 3 / tt / 1e12:8.2f} TFLOP/s  ratio {tt / t:5.2f}"
            print(f"matmul {np.dtype(dtype).name:8s} {n:5d}^3  {t * 1e3:9.3f} ms  {tflops:8.3f} TFLOP/s{peer}")


def bandwidth_rows():
    n = 1 << 10 if SIM else 1 << 26
    x = fg.device_put(fnp.ones((n,)), "cuda")
    y = fg.device_put(fnp.ones((n,)), "cuda")
    from funcgrad.cuda.buffer import empty
    dest = empty((n,), np.float32)
    t_copy = timed(lambda: dest.data[:n].copy_to_device(x._value.data[:n]))
    copy_gbs = 2 * 4 * n / t_copy / 1e9
    print(f"device-to-device copy {n} floats  {t_copy * 1e3:9.3f} ms  {copy_gbs:8.1f} GB/s")
    rows = [("elementwise x + y", lambda: x + y, 3 * 4 * n), ("sum(x)", lambda: fnp.sum(x), 4 * n),
            ("row sums (1024 cols)", lambda: fnp.sum(fnp.reshape(x, (-1, 32 if SIM else 1024)), axis=1), 4 * n),
            ("softmax rows (1024)", lambda: fg.nn.functional.softmax(fnp.reshape(x, (-1, 32 if SIM else 1024)), -1),
             8 * n)]
    for name, fn, nbytes in rows:
        t = timed(fn)
        gbs = nbytes / t / 1e9
        print(f"{name:24s} {t * 1e3:9.3f} ms  {gbs:8.1f} GB/s  {100 * gbs / copy_gbs:5.1f}% of copy")


def _torch_step(torch, net, loss, *batch):
    opt = torch.optim.AdamW(net.parameters(), 1e-3)

    def step():
        opt.zero_grad()
        loss(net(*batch[:-1]), batch[-1]).backward()
        opt.step()
        torch.cuda.synchronize()
    return median_seconds(step, repeats=REPEATS, warmup=2)


def step_row(name: str, model, loss, data, torch_time=None):
    """A jitted AdamW training step on the device: its time, its kernel launches, and PyTorch
    CUDA's time for the same model where given (torch_time: torch -> seconds)."""
    model = fg.device_put(model, "cuda")
    opt = optim.adamw(1e-3)
    step = make_train_step(lambda m, b, k: (loss(m(b[0]), b[1]), {}), opt)
    data = fg.device_put(tuple(fg.asarray(x) for x in data), "cuda")
    key = fg.device_put(fg.random.key(1), "cuda")
    state = [model, opt.init(model), fg.amp.DynamicLossScale.create()]

    def one():
        state[0], state[1], state[2], out, _ = step(state[0], state[1], state[2], data, key)
        return out
    one()  # traced and compiled: the launches below are a step's own
    fg.cuda.reset_launch_count()
    one()
    launches = fg.cuda.launch_count()
    t = timed(one) if not SIM else float("nan")  # the simulator runs each step once: it checks the path
    line = f"{name:40s} {t * 1e3:9.3f} ms  {launches:4d} launches"
    torch = torch_cuda()
    if torch is not None and torch_time is not None:
        tt = torch_time(torch)
        line += f"  PyTorch CUDA {tt * 1e3:9.3f} ms  ratio {t / tt:5.2f}x"
    print(line)


def step_rows():
    """The MLP, the MNIST-size CNN and a GPT: launches per step and time (the MLP and the GPT at tiny
    sizes in the simulator, which runs each step once to check its path)."""
    from funcgrad.models import CNN, GPT
    rng = np.random.default_rng(0)
    batch, sizes = (8, (16, 32, 4)) if SIM else (128, (784, 256, 10))
    x, y = rng.standard_normal((batch, sizes[0])).astype(np.float32), rng.integers(0, sizes[2], batch)

    def torch_mlp(torch):
        net = torch.nn.Sequential(torch.nn.Linear(sizes[0], sizes[1]), torch.nn.ReLU(),
                                  torch.nn.Linear(sizes[1], sizes[2])).cuda()
        return _torch_step(torch, net, torch.nn.functional.cross_entropy, torch.tensor(x, device="cuda"),
                           torch.tensor(y, device="cuda"))
    step_row(f"MLP {sizes} batch {batch}", nn.MLP(sizes[0], [sizes[1]], sizes[2], key=fg.random.key(0)),
             nn.losses.cross_entropy, (x, y), torch_mlp)
    if not SIM:  # its 32- and 64-channel convolutions take the simulator over 15 minutes even at 6x6
        side, n = 28, 64
        images, labels = rng.standard_normal((n, 1, side, side)).astype(np.float32), rng.integers(0, 10, n)
        step_row(f"CNN {side}x{side} batch {n}", CNN(side, 1, 10, dropout=0.0, key=fg.random.key(0)),
                 nn.losses.cross_entropy, (images, labels))
    vocab, length, dim, n = (16, 4, 8, 2) if SIM else (64, 64, 128, 16)
    tokens = rng.integers(0, vocab, (n, length))
    step_row(f"GPT dim {dim} seq {length} batch {n}", GPT(vocab, length, dim=dim, depth=2, heads=4 if not SIM else 2,
                                                          key=fg.random.key(0)),
             lambda logits, t: nn.losses.cross_entropy(fnp.reshape(logits, (-1, vocab)), fnp.reshape(t, (-1,))),
             (tokens, tokens))


def resource_rows():
    """What ptxas allots the hot kernels (registers, shared memory, spills) and the occupancy that
    gives, from their PTX for compute capability 9.0: no GPU needed (a process without the simulator)."""
    import subprocess
    for pattern in ("matmul[float32", "fused", "sum[float32", "softmax[float32", "attention", "cumsum[float32", "argsort",
                    "solve[float32"):
        result = subprocess.run([sys.executable, "-m", "funcgrad.cuda.ptx", "--resources", pattern],
                                env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}, capture_output=True, text=True)
        if result.returncode:
            print(f"resources of {pattern}: {result.stderr.strip().splitlines()[-1:]}")
            return
        print("\n".join(result.stdout.splitlines()[0 if pattern.startswith("matmul") else 1:]))

if __name__ == "__main__":
    if not fg.cuda.is_available():
        sys.exit("no CUDA device: run on a GPU machine, or pass --simulator")
    if args.host_only:
        skip_launches()
        print("host work per training step (simulator, kernel launches skipped)")
        step_rows()
        sys.exit()
    print(f"device: {'numba CUDA simulator' if fg.cuda.simulator() else 'NVIDIA GPU'}")
    resource_rows()
    matmul_rows()
    bandwidth_rows()
    step_rows()
    print(fg.cuda.memory_summary())

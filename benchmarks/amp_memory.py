"""Peak memory of one training step, float32 against bfloat16 autocast, on the CPU.

The 1024-2048-1024-10 MLP, batch 256, as in the classic mixed-precision comparison. Two figures:
the activation memory the tape holds after the forward pass, and the peak of the forward and
backward pass above what was allocated before it (which also counts the float32 gradients).
Target: bf16 <= 0.65 x fp32; a last line repeats the step at batch 2048, where the activations
dominate. When PyTorch is installed, the same step under torch.autocast is
measured beside it (its CPU allocations, from torch.profiler's memory events) as the peer.

    python benchmarks/amp_memory.py
"""
from __future__ import annotations

import gc
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import funcgrad as fg  # noqa: E402
from benchmarks.common import have  # noqa: E402
from funcgrad import nn  # noqa: E402


def measure(model, x, y, low) -> tuple[float, float, float]:
    loss_fn = lambda m: nn.cross_entropy(m(x), y)  # noqa: E731
    gc.collect()
    base = fg.memory_allocated()
    with fg.amp.autocast(low or fg.bfloat16, enabled=low is not None):
        out, f_vjp = fg.vjp(loss_fn, model)
    activations = fg.memory_allocated() - base
    del out, f_vjp
    gc.collect()
    base = fg.memory_allocated()
    fg.reset_peak_memory_stats()
    with fg.amp.autocast(low or fg.bfloat16, enabled=low is not None):
        loss, grads = fg.value_and_grad(loss_fn)(model)
    step_peak = fg.max_memory_allocated() - base
    return activations, step_peak, float(loss)


def torch_peaks(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """PyTorch's forward+backward peak above its start, fp32 and bf16 autocast, from the
    running 'Total Allocated' of the profiler's memory events."""
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    tx, ty = torch.tensor(x), torch.tensor(y)
    peaks = []
    for low in (False, True):
        model.zero_grad(set_to_none=True)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=low):
                loss = F.cross_entropy(model(tx), ty)
            loss.backward()
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "trace.json")
            prof.export_chrome_trace(path)
            with open(path) as f:
                events = [e["args"] for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]"]
        start = events[0]["Total Allocated"] - events[0]["Bytes"]
        peaks.append(max(e["Total Allocated"] for e in events) - start)
    return peaks[0], peaks[1]


def main():
    keys = fg.random.split(fg.random.key(0), 4)
    model = nn.Sequential([nn.Linear(1024, 2048, key=keys[0]), nn.relu, nn.Linear(2048, 1024, key=keys[1]), nn.relu,
                           nn.Linear(1024, 10, key=keys[2])])
    x = fg.random.normal(keys[3], (256, 1024))
    y = np.arange(256) % 10
    fp32 = measure(model, x, y, None)
    bf16 = measure(model, x, y, fg.bfloat16)
    mb = 2 ** 20
    print(f"MLP 1024-2048-1024-10, batch 256, {model.num_parameters():,} float32 parameters "
          f"({model.num_parameters() * 4 / mb:.1f} MB)")
    print(f"{'':<28}{'fp32':>10}{'bf16':>10}{'bf16/fp32':>11}")
    print(f"{'activations on the tape':<28}{fp32[0] / mb:>8.2f}MB{bf16[0] / mb:>8.2f}MB{bf16[0] / fp32[0]:>11.2f}")
    print(f"{'fwd+bwd peak (with grads)':<28}{fp32[1] / mb:>8.2f}MB{bf16[1] / mb:>8.2f}MB{bf16[1] / fp32[1]:>11.2f}")
    print(f"{'loss':<28}{fp32[2]:>10.4f}{bf16[2]:>10.4f}")
    if have("torch"):
        t32, t16 = torch_peaks(np.asarray(x), y)
        print(f"{'PyTorch fwd+bwd peak':<28}{t32 / mb:>8.2f}MB{t16 / mb:>8.2f}MB{t16 / t32:>11.2f}"
              "   (torch.autocast keeps bf16 weight copies)")
    grads = model.num_parameters() * 4
    print(f"the float32 gradients alone are {grads / mb:.2f}MB = {grads / fp32[1]:.2f} x the fp32 peak: the lowest "
          f"whole-step ratio any autocast keeping float32 gradients can reach here")
    print("target: bf16 <= 0.65 x fp32")
    big = 2048  # where activations, not gradients, fill the step: the share autocast can shrink
    xb = fg.random.normal(keys[3], (big, 1024))
    yb = np.arange(big) % 10
    peak32, peak16 = measure(model, xb, yb, None)[1], measure(model, xb, yb, fg.bfloat16)[1]
    print(f"batch {big}: fwd+bwd peak {peak32 / mb:.2f}MB fp32, {peak16 / mb:.2f}MB bf16, ratio {peak16 / peak32:.2f}")


if __name__ == "__main__":
    main()

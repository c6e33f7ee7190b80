"""Peak memory of one training step, float32 against bfloat16 autocast, on the CPU.

The 1024-2048-1024-10 MLP, batch 256, as in the classic mixed-precision comparison. Two figures:
the activation memory the tape holds after the forward pass, and the peak of the forward and
backward pass above what was allocated before it (which also counts the float32 gradients).
Target: bf16 <= 0.65 x fp32.

    python benchmarks/amp_memory.py
"""
from __future__ import annotations

import gc
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import funcgrad as fg  # noqa: E402
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
    print("target: bf16 <= 0.65 x fp32")


if __name__ == "__main__":
    main()

"""Convolution passes on the CPU: funcgrad's direct passes (cpu/direct.py) beside its im2col GEMMs
(the direct passes turned off) and PyTorch's (oneDNN), on the same arrays in one run.

Each shape is a 3x3 stride-1 conv padded by 1, float32: the forward pass, the input gradient and
the weight gradient. Timed in interleaved rounds with a pause before each block (so OpenBLAS's or
OpenMP's spinning threads are asleep); ratios are time / funcgrad direct in the same round, the
median over rounds (above 1: slower).

    python benchmarks/conv.py [--rounds N] [--shapes N,C,H,O ...]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import have, interleaved_samples, paired_ratio  # noqa: E402

# (batch, in channels, image side, out channels): the MNIST CNN's conv2, the 8x8 digits CNN's,
# ResNet-like stages, and two shapes the direct passes decline (thin input; 7x7 images)
SHAPES = [(64, 32, 28, 64), (64, 32, 8, 64), (16, 64, 56, 64), (32, 128, 16, 128), (64, 1, 28, 32), (8, 256, 7, 256)]
PADDING, ONE = ((1, 1), (1, 1)), (1, 1)


def passes(shape):
    """{pass: {implementation: fn}} for one shape."""
    from funcgrad.cpu import conv as cpu_conv, direct
    n, c, side, o = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, side, side)).astype(np.float32)
    w = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    g = rng.standard_normal((n, o, side, side)).astype(np.float32)
    y, dx = np.empty((n, o, side, side), np.float32), np.empty_like(x)

    def funcgrad(direct_on: bool):
        def with_setting(fn):
            def run():
                saved = direct.MIN_CHANNELS
                direct.MIN_CHANNELS = saved if direct_on else 1 << 30
                try:
                    fn()
                finally:
                    direct.MIN_CHANNELS = saved
            return run
        return {"forward": with_setting(lambda: cpu_conv.conv(x, w, ONE, PADDING, ONE, 1, y)),
                "input grad": with_setting(lambda: cpu_conv.conv_input_grad(g, w, (side, side), ONE, PADDING, ONE, 1,
                                                                            dx)),
                "weight grad": with_setting(lambda: cpu_conv.conv_weight_grad(x, g, (3, 3), ONE, PADDING, ONE, 1))}
    impls = {"funcgrad direct": funcgrad(True), "funcgrad im2col": funcgrad(False)}
    if have("torch"):
        import torch
        tx, tw, tg = (torch.from_numpy(a) for a in (x, w, g))

        def backward(mask):
            return lambda: torch.ops.aten.convolution_backward(tg, tx, tw, None, [1, 1], [1, 1], [1, 1], False,
                                                               [0, 0], 1, mask)
        impls["PyTorch"] = {"forward": lambda: torch.nn.functional.conv2d(tx, tw, padding=1),
                            "input grad": backward([True, False, False]), "weight grad": backward([False, True, False])}
    return {p: {name: fns[p] for name, fns in impls.items()} for p in ("forward", "input grad", "weight grad")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shapes", nargs="*", help="N,C,H,O each (default: the shapes above)")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shapes] if args.shapes else SHAPES
    from funcgrad.cpu import conv as cpu_conv
    print(f"3x3 stride-1 convolutions, float32, {os.cpu_count()} CPU cores; medians of {args.rounds} interleaved "
          "rounds, ratios to funcgrad direct (above 1: slower)")
    print(f"{'shape (N, C, H, O)':<22}{'pass':<13}{'direct?':<9}{'funcgrad direct':>20}{'funcgrad im2col':>20}"
          f"{'PyTorch':>20}")
    for shape in shapes:
        n, c, side, o = shape
        runs_direct = [cpu_conv.direct_forward((n, c, side, side), (3, 3), c, o, ONE, PADDING, ONE, np.float32),
                       cpu_conv.direct_input_grad((side, side), (3, 3), c, o, ONE, ONE, np.float32)]
        for name, fns in passes(shape).items():
            samples = interleaved_samples(fns, rounds=args.rounds, block=0.2, settle=0.2)
            cells = []
            for impl in ("funcgrad direct", "funcgrad im2col", "PyTorch"):
                if impl not in samples:
                    cells.append(f"{'n/a':>20}")
                    continue
                median = sorted(samples[impl])[len(samples[impl]) // 2]
                ratio = paired_ratio(samples, impl, "funcgrad direct")
                cells.append(f"{median * 1e3:>11.2f}ms {ratio:>5.2f}x")
            taken = runs_direct[1] if name == "input grad" else runs_direct[0]
            print(f"{str(shape):<22}{name:<13}{'yes' if taken else 'no':<9}" + "".join(cells))


if __name__ == "__main__":
    main()

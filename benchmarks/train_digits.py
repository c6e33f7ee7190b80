"""Train the MLP and the CNN on the bundled digits on the CPU; print wall time and test accuracy
per epoch. Targets: MLP >= 97% and CNN >= 98% test accuracy, each in under 60 s on 2 cores.

    python benchmarks/train_digits.py [--epochs-mlp 30] [--epochs-cnn 20]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import funcgrad as fg  # noqa: E402
from funcgrad import data, optim  # noqa: E402
from funcgrad.models import RECIPES  # noqa: E402
from funcgrad.train import fit  # noqa: E402


def run(name: str, epochs: int, lr: float, batch_size: int = 64, seed: int = 0) -> dict:
    x, y = data.load("digits", "train")
    xt, yt = data.load("digits", "test")
    k_init, k_train = fg.random.split(fg.random.key(seed))
    model = RECIPES[name].build(x, y, k_init)
    loader = data.DataLoader(data.ArrayDataset(x, y), batch_size=batch_size, shuffle=True, seed=seed)
    test = data.DataLoader(data.ArrayDataset(xt, yt), batch_size=512)
    opt = optim.adamw(optim.cosine_schedule(lr, epochs * len(loader)))
    print(f"\n{name}: {model.num_parameters():,} parameters, {epochs} epochs, batch {batch_size}, AdamW "
          f"{lr:g} with cosine decay")
    print(f"{'epoch':>6}{'train loss':>12}{'test acc':>10}{'epoch s':>9}{'total s':>9}")
    start = time.perf_counter()

    def report(record):
        print(f"{record['epoch']:>6}{record['train_loss']:>12.4f}{100 * record['test_accuracy']:>9.2f}%"
              f"{record['seconds']:>9.2f}{time.perf_counter() - start:>9.1f}")

    result = fit(model, opt, loader, RECIPES[name].loss, epochs=epochs, eval_loader=test, key=k_train,
                 on_epoch=report)
    return {"model": name, "accuracy": result.history[-1]["test_accuracy"], "seconds": time.perf_counter() - start}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs-mlp", type=int, default=30)
    parser.add_argument("--epochs-cnn", type=int, default=20)
    args = parser.parse_args(argv)
    results = [run("mlp", args.epochs_mlp, 3e-3), run("cnn", args.epochs_cnn, 3e-3)]
    full = args.epochs_mlp >= 30 and args.epochs_cnn >= 20  # the targets are for the full runs
    print(f"\n{'model':<6}{'test accuracy':>15}{'wall time':>12}{'target':>22}")
    for r, target in zip(results, (0.97, 0.98)):
        ok = r["accuracy"] >= target and r["seconds"] < 60
        verdict = ("met" if ok else "MISSED") if full else "(not judged: fewer epochs than the target's run)"
        print(f"{r['model']:<6}{100 * r['accuracy']:>14.2f}%{r['seconds']:>11.1f}s"
              f"{f'>= {100 * target:.0f}% in < 60 s':>22} {verdict}")


if __name__ == "__main__":
    main()

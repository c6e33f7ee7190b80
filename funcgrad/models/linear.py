"""Linear regression on y = 2x + 1 with noise: the smallest complete use of fg.grad."""
from __future__ import annotations

from typing import Iterator

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp


def make_data(n: int = 256, seed: int = 0) -> tuple[fg.Array, fg.Array]:
    """Points of y = 2x + 1 plus N(0, 0.05^2) noise, x uniform in [-1, 1)."""
    k_x, k_noise = fg.random.split(fg.random.key(seed))
    x = fg.random.uniform(k_x, (n, 1), minval=-1.0, maxval=1.0)
    y = 2.0 * x + 1.0 + 0.05 * fg.random.normal(k_noise, (n, 1))
    return x, y


def init_params() -> dict[str, fg.Array]:
    return {"w": fnp.zeros((1, 1)), "b": fnp.zeros((1,))}


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return fnp.mean((pred - y) ** 2)


def train(steps: int = 200, lr: float = 0.1, seed: int = 0) -> Iterator[tuple[int, float, dict]]:
    """Full-batch gradient descent; yields (step, loss, params) after every update."""
    x, y = make_data(seed=seed)
    params = init_params()
    step_fn = fg.value_and_grad(loss_fn)
    for step in range(1, steps + 1):
        loss, grads = step_fn(params, x, y)
        params = fg.tree_map(lambda p, g: p - lr * g, params, grads)
        yield step, float(loss), params

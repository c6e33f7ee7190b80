"""Image classifiers for the demo datasets: the classic MLP and a small CNN."""
from __future__ import annotations

import math

from .. import numpy as fnp
from .. import random
from .. import nn


def mlp(in_features: int = 64, num_classes: int = 10, hidden=(256,), dropout: float = 0.0, *, key) -> nn.MLP:
    """in_features -> hidden... -> num_classes with ReLU (784-256-10 is the classic MNIST script)."""
    return nn.MLP(in_features, tuple(hidden), num_classes, activation=nn.relu, dropout=dropout, key=key)


class CNN(nn.Module):
    """Two 3x3 conv layers (32, 64 channels), 2x2 max-pool, then a 128-unit MLP head.
    Accepts flat images (N, side*side) or (N, C, H, W)."""

    def __init__(self, image_size: int = 8, in_channels: int = 1, num_classes: int = 10, dropout: float = 0.25,
                 *, key):
        k1, k2, k3, k4 = random.split(key, 4)
        self.image_size, self.in_channels, self.dropout = image_size, in_channels, dropout
        self.conv1 = nn.Conv2d(in_channels, 32, 3, padding=1, key=k1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, key=k2)
        pooled = image_size // 2
        self.fc1 = nn.Linear(64 * pooled * pooled, 128, key=k3)
        self.fc2 = nn.Linear(128, num_classes, key=k4)

    def __call__(self, x, *, key=None):
        x = fnp.asarray(x)
        if x.ndim == 2:
            x = fnp.reshape(x, (x.shape[0], self.in_channels, self.image_size, self.image_size))
        k1, k2 = (None, None) if key is None else random.split(key)
        h = nn.relu(self.conv1(x))
        h = nn.max_pool2d(nn.relu(self.conv2(h)), 2)
        h = nn.dropout(fnp.reshape(h, (h.shape[0], -1)), self.dropout, k1)
        h = nn.dropout(nn.relu(self.fc1(h)), self.dropout, k2)
        return self.fc2(h)


def image_side(features: int) -> int:
    side = math.isqrt(features)
    if side * side != features:
        raise ValueError(f"{features} features are not a square image")
    return side

"""Demo models the command line trains: name -> (builder, default dataset, loss)."""
from __future__ import annotations

from typing import Callable, NamedTuple

from .. import data
from .classifiers import CNN, image_side, mlp
from .gpt import GPT, sequence_loss
from ..train import classification_loss, regression_loss


class Recipe(NamedTuple):
    build: Callable  # (x_train, y_train, key) -> model
    dataset: str
    loss: Callable
    task: str  # "classification", "regression" or "sequence"


def _linear(x, y, key):
    from .. import nn
    return nn.Linear(x.shape[1], y.shape[1], key=key)


def _num_classes(y) -> int:
    return int(y.max()) + 1


RECIPES = {
    "linear": Recipe(_linear, "linear", regression_loss, "regression"),
    "mlp": Recipe(lambda x, y, key: mlp(x.shape[1], _num_classes(y), key=key), "digits", classification_loss,
                  "classification"),
    "cnn": Recipe(lambda x, y, key: CNN(image_side(x.shape[1]), 1, _num_classes(y), key=key), "digits",
                  classification_loss, "classification"),
    "gpt": Recipe(lambda x, y, key: GPT(data.SEQUENCE_VOCAB, x.shape[1], key=key), "sort", sequence_loss,
                  "sequence"),
}

__all__ = ["RECIPES", "Recipe", "CNN", "GPT", "mlp", "sequence_loss"]

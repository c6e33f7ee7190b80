"""Demo models the command line trains: name -> (builder, the datasets it trains on, loss)."""
from __future__ import annotations

from typing import Callable, NamedTuple

from .. import data
from .classifiers import CNN, image_side, mlp
from .gpt import GPT, sequence_loss
from ..train import classification_loss, regression_loss


class Recipe(NamedTuple):
    build: Callable  # (x_train, y_train, key) -> model
    datasets: tuple[str, ...]  # the built-in datasets it trains on, its default first
    loss: Callable
    task: str  # "classification", "regression" or "sequence"

    @property
    def dataset(self) -> str:
        return self.datasets[0]


def _linear(x, y, key):
    from .. import nn
    return nn.Linear(x.shape[1], y.shape[1], key=key)


def _num_classes(y) -> int:
    return int(y.max()) + 1


RECIPES = {
    "linear": Recipe(_linear, ("linear",), regression_loss, "regression"),
    "mlp": Recipe(lambda x, y, key: mlp(x.shape[1], _num_classes(y), key=key),
                  ("digits", "mnist", "fashion_mnist", "spirals"), classification_loss, "classification"),
    "cnn": Recipe(lambda x, y, key: CNN(image_side(x.shape[1]), 1, _num_classes(y), key=key),
                  ("digits", "mnist", "fashion_mnist"), classification_loss, "classification"),  # square images
    "gpt": Recipe(lambda x, y, key: GPT(data.SEQUENCE_VOCAB, x.shape[1], key=key), ("sort", "reverse"),
                  sequence_loss, "sequence"),
}


def check_dataset(model: str, dataset: str) -> None:
    """A one-line error when MODEL cannot train on DATASET, naming the datasets it can."""
    if dataset not in data.NAMES:
        raise ValueError(f"unknown dataset {dataset!r}; built in: {', '.join(data.NAMES)}")
    recipe = RECIPES[model]
    if dataset not in recipe.datasets:
        fits = [m for m, r in RECIPES.items() if dataset in r.datasets]
        raise ValueError(f"{model} trains on {', '.join(recipe.datasets)}, not {dataset}"
                         + (f" (a dataset for {', '.join(fits)})" if fits else ""))

__all__ = ["RECIPES", "Recipe", "CNN", "GPT", "check_dataset", "mlp", "sequence_loss"]

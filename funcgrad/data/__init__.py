"""Data loading: datasets, samplers, DataLoader, and the built-in datasets.

    x_train, y_train = data.load("digits", split="train")
    loader = data.DataLoader(data.ArrayDataset(x_train, y_train), batch_size=64, shuffle=True, seed=0)
"""
from .datasets import IGNORE, NAMES, SEQUENCE_VOCAB, data_dir, load, read_idx
from .dataset import (ArrayDataset, ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                      TensorDataset, random_split)
from .loader import (BatchSampler, DataLoader, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
                     SubsetRandomSampler, WeightedRandomSampler, default_collate)

__all__ = ["ArrayDataset", "TensorDataset", "Subset", "ConcatDataset", "StackDataset", "IterableDataset",
           "ChainDataset", "random_split", "DataLoader", "Dataset", "Sampler",
           "DistributedSampler", "RandomSampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "default_collate", "load", "read_idx",
           "data_dir", "NAMES", "IGNORE", "SEQUENCE_VOCAB"]

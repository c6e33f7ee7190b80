"""A tiny GPT: token and position embeddings, pre-norm causal transformer blocks, a linear head."""
from __future__ import annotations

from .. import numpy as fnp
from .. import random
from .. import nn


class GPT(nn.Module):
    def __init__(self, vocab_size: int, context: int, dim: int = 64, depth: int = 2, heads: int = 4,
                 dropout: float = 0.0, *, key):
        keys = random.split(key, depth + 3)
        self.vocab_size, self.context, self.dropout = vocab_size, context, dropout
        self.token_embedding = nn.Embedding(vocab_size, dim, key=keys[0])
        self.position_embedding = nn.init.normal(keys[1], (context, dim), std=0.02)
        self.blocks = [nn.TransformerBlock(dim, heads, dropout=dropout, causal=True, key=k) for k in keys[3:]]
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size, key=keys[2])

    def __call__(self, tokens, *, key=None):
        """tokens (batch, length <= context) of ints -> logits (batch, length, vocab)."""
        length = fnp.asarray(tokens).shape[-1]
        if length > self.context:
            raise ValueError(f"sequence of length {length} exceeds the model's context {self.context}")
        h = self.token_embedding(tokens) + self.position_embedding[:length]
        keys = [None] * len(self.blocks) if key is None else random.split(key, len(self.blocks))
        for block, k in zip(self.blocks, keys):
            h = block(h, key=k)
        return self.head(self.ln_f(h))


def sequence_loss(model, batch, key=None):
    """Next-token cross-entropy over the answer positions (targets of -100 are ignored)."""
    tokens, targets = batch
    logits = model(tokens, key=key)
    flat_logits = fnp.reshape(logits, (-1, logits.shape[-1]))
    flat_targets = fnp.reshape(targets, (-1,))
    loss = nn.cross_entropy(flat_logits, flat_targets, ignore_index=-100)
    mask = flat_targets != -100
    hits = (fnp.argmax(flat_logits, axis=-1) == flat_targets) & mask
    return loss, {"accuracy": fnp.sum(hits) / fnp.maximum(fnp.sum(mask), 1)}

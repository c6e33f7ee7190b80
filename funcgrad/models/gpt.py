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
        h = TokenEmbedding(self.token_embedding, self.position_embedding, self.context)(tokens)
        keys = [None] * len(self.blocks) if key is None else random.split(key, len(self.blocks))
        for block, k in zip(self.blocks, keys):
            h = block(h, key=k)
        return self.head(self.ln_f(h))

    def sequential(self) -> nn.Sequential:
        """The model as `depth` layers applied in order, for pipeline.split: its blocks, the
        embedding riding with the first and the final norm and head with the last (Megatron's
        layout: a pipeline of P stages needs P <= depth). Without dropout keys it computes what
        the model does."""
        layers = list(self.blocks)
        layers[0] = nn.Sequential([TokenEmbedding(self.token_embedding, self.position_embedding, self.context),
                                   layers[0]])
        layers[-1] = nn.Sequential([layers[-1], self.ln_f, self.head])
        return nn.Sequential(layers)

    def from_sequential(self, seq: nn.Sequential) -> "GPT":
        """This GPT with the parameters of seq, a sequential() of a model like it (or its gradients)."""
        layers = list(seq.layers)
        if len(layers) != len(self.blocks):
            raise ValueError(f"from_sequential needs {len(self.blocks)} layers (one per block), got {len(layers)}")
        layers[-1], ln_f, head = layers[-1].layers  # first: with one block, the embedding rides inside
        embed, layers[0] = layers[0].layers
        return self.replace(token_embedding=embed.token_embedding, position_embedding=embed.position_embedding,
                            blocks=layers, ln_f=ln_f, head=head)


class TokenEmbedding(nn.Module):
    """The GPT's input layer: token embeddings plus learned positions."""

    def __init__(self, token_embedding: nn.Embedding, position_embedding, context: int):
        self.token_embedding, self.position_embedding, self.context = token_embedding, position_embedding, context

    def __call__(self, tokens, *, key=None):
        length = fnp.asarray(tokens).shape[-1]
        if length > self.context:
            raise ValueError(f"sequence of length {length} exceeds the model's context {self.context}")
        return self.token_embedding(tokens) + self.position_embedding[:length]


def sequence_loss(model, batch, key=None):
    """Next-token cross-entropy over the answer positions (targets of -100 are ignored)."""
    tokens, targets = batch
    logits = model(tokens, key=key)
    flat_logits = fnp.reshape(logits, (-1, logits.shape[-1]))
    flat_targets = fnp.reshape(targets, (-1,))
    mask = flat_targets != -100
    hits = (fnp.argmax(flat_logits, axis=-1) == flat_targets) & mask
    return token_loss(logits, targets), {"accuracy": fnp.sum(hits) / fnp.maximum(fnp.sum(mask), 1)}


def token_loss(logits, targets):
    """The cross-entropy of logits (..., vocab) for targets (...), ignoring targets of -100: the
    loss of sequence_loss, and a pipeline's loss_fn (outputs, targets)."""
    return nn.cross_entropy(fnp.reshape(logits, (-1, logits.shape[-1])), fnp.reshape(targets, (-1,)),
                            ignore_index=-100)

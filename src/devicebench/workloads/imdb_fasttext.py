"""`imdb_fasttext`: the Keras example imdb_fasttext.py, embedding 50 over words and bigrams.

The Keras example numbers every bigram seen in training (about 1.2 million on IMDb); hashing
into a fixed number of buckets (as fastText itself does) keeps the model the same size for every
source and framework.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from devicebench.workloads.base import TaskSpec
from devicebench.workloads.classic import ClassicWorkload, token_ids

_BIGRAM_PRIME = 1_000_003


def right_align(rows: list[np.ndarray], length: int) -> np.ndarray:
    """Keep each row's last `length` ids, right-aligned and left-padded with 0 (Keras default)."""
    out = np.zeros((len(rows), length), dtype=np.int64)
    for i, row in enumerate(rows):
        row = row[-length:]
        if len(row):
            out[i, -len(row) :] = row
    return out


def add_bigrams(x: np.ndarray, vocab: int, buckets: int, maxlen: int) -> np.ndarray:
    """fastText features: each review's words followed by its hashed bigrams, last `maxlen` kept."""
    x = np.asarray(x, dtype=np.int64)
    pairs = (x[:, :-1] * _BIGRAM_PRIME + x[:, 1:]) % buckets + vocab
    valid = (x[:, :-1] > 0) & (x[:, 1:] > 0)
    rows = [np.concatenate([u[u > 0], b[v]]) for u, b, v in zip(x, pairs, valid, strict=True)]
    return right_align(rows, maxlen)


class ImdbFastText(ClassicWorkload):
    spec = TaskSpec(
        name="imdb_fasttext",
        dataset="imdb",
        models=("fasttext",),
        num_classes=2,
        epochs=5,
        batch_sizes=(32,),
        optimizer="adam",
        learning_rate=0.001,
        optimizer_options={"eps": 1e-7},
        source="keras examples imdb_fasttext.py: 20,000 words + bigrams, maxlen 400, "
        "embedding 50, global average pooling, sigmoid",
        kind="binary_text",
        options={"vocab_size": 20_000, "bigram_buckets": 100_000, "maxlen": 400, "embed": 50},
    )

    def inputs(self, x: np.ndarray) -> np.ndarray:
        vocab, buckets = (
            int(self.spec.option("vocab_size")),
            int(self.spec.option("bigram_buckets")),
        )
        return add_bigrams(x, vocab, buckets, int(self.spec.option("maxlen")))

    def torch_model(self, model: str, *, outputs: int, lstm_kernel: str) -> Any:
        from torch import nn

        class FastText(nn.Module):
            """Embedding, global average pooling, one logit."""

            def __init__(self, rows: int, embed: int) -> None:
                super().__init__()
                self.embedding = nn.Embedding(rows, embed)
                self.out = nn.Linear(embed, 1)

            def forward(self, x):
                return self.out(self.embedding(x).mean(dim=1)).squeeze(1)

        return FastText(self.vocabulary(), int(self.spec.option("embed")))

    def keras_layers(self, keras: Any, model: str, *, outputs: int, lstm_kernel: str) -> list:
        layers = keras.layers
        return [
            keras.Input((int(self.spec.option("maxlen")),), dtype="int32"),
            layers.Embedding(self.vocabulary(), int(self.spec.option("embed"))),
            layers.GlobalAveragePooling1D(),
            layers.Dense(1, activation="sigmoid"),
        ]

    def flops_inputs(self, batch: int) -> Any:
        return token_ids(self.vocabulary(), batch, int(self.spec.option("maxlen")))


WORKLOAD = ImdbFastText()

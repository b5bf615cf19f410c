"""A task's model inputs from its dataset, the same arrays for every framework.

Done once, before any timing, in NumPy: image pixels scaled to [0, 1] in channels-first layout
(Keras backends transpose to channels-last), token ids cut to the task's sequence length, fastText
bigram features added. Frameworks then only copy these arrays to their device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from devicebench.tasks import TaskSpec

IMAGE_SHAPES = {"mnist_mlp": (784,), "mnist_cnn": (1, 28, 28), "cifar10_cnn": (3, 32, 32)}
_BIGRAM_PRIME = 1_000_003


@dataclass
class TaskArrays:
    """Inputs and labels of one task; labels are class ids (0/1 for binary tasks)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int  # classes of the metrics (2 for binary tasks)
    outputs: int  # width of the model's last layer (1 for binary tasks)


def right_align(rows: list[np.ndarray], length: int) -> np.ndarray:
    """Keep each row's last `length` ids, right-aligned and left-padded with 0 (Keras default)."""
    out = np.zeros((len(rows), length), dtype=np.int64)
    for i, row in enumerate(rows):
        row = row[-length:]
        if len(row):
            out[i, -len(row) :] = row
    return out


def add_bigrams(x: np.ndarray, vocab: int, buckets: int, maxlen: int) -> np.ndarray:
    """fastText features: each review's words followed by its hashed bigrams, last `maxlen` kept.

    The Keras example numbers every bigram seen in training (about 1.2 million on IMDb); hashing
    into a fixed number of buckets (as fastText itself does) keeps the model the same size for
    every source and framework.
    """
    x = np.asarray(x, dtype=np.int64)
    pairs = (x[:, :-1] * _BIGRAM_PRIME + x[:, 1:]) % buckets + vocab
    valid = (x[:, :-1] > 0) & (x[:, 1:] > 0)
    rows = [np.concatenate([u[u > 0], b[v]]) for u, b, v in zip(x, pairs, valid, strict=True)]
    return right_align(rows, maxlen)


def _inputs(spec: TaskSpec, x: np.ndarray) -> np.ndarray:
    if spec.name in IMAGE_SHAPES:
        return (x.astype(np.float32) / 255.0).reshape(len(x), *IMAGE_SHAPES[spec.name])
    if spec.name == "imdb_fasttext":
        vocab, buckets = int(spec.option("vocab_size")), int(spec.option("bigram_buckets"))
        return add_bigrams(x, vocab, buckets, int(spec.option("maxlen")))
    if spec.name == "imdb_bilstm":
        return np.ascontiguousarray(x[:, -int(spec.option("maxlen")) :].astype(np.int64))
    return x.astype(np.int64)  # textgen_lstm: character ids, one-hot inside the model


def task_arrays(spec: TaskSpec, dataset: Any) -> TaskArrays:
    """The task's inputs for a loaded dataset."""
    y_train = np.asarray(dataset.y_train, dtype=np.int64)
    y_test = np.asarray(dataset.y_test, dtype=np.int64)
    binary = spec.kind == "binary_text"
    return TaskArrays(
        x_train=_inputs(spec, dataset.x_train),
        y_train=y_train,
        x_test=_inputs(spec, dataset.x_test),
        y_test=y_test,
        num_classes=2 if binary else int(dataset.num_classes),
        outputs=1 if binary else int(dataset.num_classes),
    )


def vocabulary(spec: TaskSpec) -> int:
    """Embedding rows of a text task (words plus bigram buckets for fastText)."""
    return int(spec.option("vocab_size")) + int(spec.options.get("bigram_buckets", 0))

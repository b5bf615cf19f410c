"""What a serve workload hands the scoring server: request decoding, batching and the model.

A leaf (NumPy only): the serve workloads (devicebench.workloads.serve_image, serve_text) build a
Scorer, and the server (devicebench.serving.app) runs it, without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class BadRequest(ValueError):
    """A body the server cannot score (answered 400 with this message)."""


@dataclass
class Scorer:
    """One task's request decoding, batch collation and model."""

    content_type: str  # the media type a request must declare
    body: str  # what the body must be, for the messages of rejected requests
    decode: Callable[[bytes], Any]  # picklable (decoder processes run it); raises BadRequest
    collate: Callable[[list[Any]], Any]  # decoded requests -> one model batch
    predict: Callable[[Any], tuple[np.ndarray, np.ndarray]]  # batch -> top classes, scores
    parameters: int
    warmup: Any  # one decoded sample: batches of it are scored before the server answers
    info: dict[str, Any] = field(default_factory=dict)  # task settings for /health and records
    buckets: tuple[int, ...] = ()  # the batch sizes the model is given (empty: as formed)

    def score(self, samples: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Top classes and scores of `samples`: collated, padded up to the next bucket by
        repeating the last sample (a GPU pays for every batch shape it has not seen), scored,
        and cut back to the samples given."""
        size = next((b for b in self.buckets if b >= len(samples)), len(samples))
        padded = samples + samples[-1:] * (size - len(samples))
        classes, scores = self.predict(self.collate(padded))
        return classes[: len(samples)], scores[: len(samples)]

    def warm_up(self, max_batch: int) -> None:
        """Score a batch of every size the model will be given (each bucket, or `max_batch`),
        so that no request waits while the device prepares a new shape."""
        for size in self.buckets or (max_batch,):
            self.predict(self.collate([self.warmup] * size))

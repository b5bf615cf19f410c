"""What a scoring server does that depends on its task: the body it takes and the model it runs.

The server (app.py, ray_app.py), its dynamic batching, the clients, LoadGen and the serve cell
are the same for every serve task; a `Scorer` carries what differs:

- serve_image: JPEG bytes (image/jpeg), decoded and resized with Pillow, stacked into one
  uint8 batch, scored by an image classifier (models.py).
- serve_text: UTF-8 review text (text/plain), tokenized with the text_classify workload's
  WordPiece and cut to the cell's seq_len, the batch padded to its longest sequence, scored by
  a transformers sequence classifier (text_models.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TASKS = ("serve_image", "serve_text")
# What each task's clients send, and what its server takes (text: UTF-8, declared or not).
CONTENT_TYPES = {"serve_image": "image/jpeg", "serve_text": "text/plain"}
CLIENT_CONTENT_TYPES = {"serve_image": "image/jpeg", "serve_text": "text/plain; charset=utf-8"}


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


def batch_buckets(spec: str, device: str, max_batch: int) -> tuple[int, ...]:
    """The batch sizes a server pads its batches to. `auto`: on a GPU the powers of two below
    `max_batch` and `max_batch` (on the H100 a MobileNetV2 batch of a size not seen before took
    1.5-1.9 s against 5 ms, benchmarks/batch_shapes.py), on a CPU none; `none`: none; or a
    comma-separated list of sizes, `max_batch` added."""
    if spec == "none" or (spec == "auto" and not device.startswith("cuda")):
        return ()
    if spec == "auto":
        sizes = {1 << k for k in range(max_batch.bit_length()) if 1 << k < max_batch}
    else:
        try:
            sizes = {int(size) for size in spec.split(",") if size.strip()}
        except ValueError:
            message = f"batch buckets {spec!r}: give auto, none or sizes like 1,4,16"
            raise ValueError(message) from None
        if any(size < 1 or size > max_batch for size in sizes):
            raise ValueError(f"batch buckets {spec!r}: each size must be 1..{max_batch}")
    return tuple(sorted(sizes | {max_batch}))


def make_scorer(
    task: str,
    framework: str,
    model: str,
    device: str,
    precision: str,
    *,
    max_batch: int,
    image_size: int = 224,
    seq_len: int = 128,
    tokenizer: Path | str | None = None,
    buckets: str = "auto",
    max_pixels: int | None = None,
) -> Scorer:
    """The scorer of `task`, with its model built (random weights) and placed on `device`,
    padding its batches to `buckets` (see batch_buckets); images over `max_pixels` (None: the
    default of decode.py) are refused."""
    sizes = batch_buckets(buckets, device, max_batch)
    if task == "serve_image":
        from devicebench.serving.models import image_scorer

        limit = {"max_pixels": max_pixels} if max_pixels else {}
        scorer = image_scorer(framework, model, device, precision, image_size, **limit)
    elif task == "serve_text":
        from devicebench.serving.text_models import text_scorer

        if not tokenizer:
            raise ValueError("serve_text needs the tokenizer file (--tokenizer)")
        scorer = text_scorer(framework, model, device, precision, seq_len, tokenizer)
    else:
        raise ValueError(f"unknown serve task {task!r}; known: {', '.join(TASKS)}")
    scorer.buckets = sizes
    scorer.info["batch_buckets"] = list(sizes)
    return scorer


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Why this serve cell cannot run here (an architecture a library lacks), or None."""
    if settings["task"] == "serve_image":
        from devicebench.serving.models import skip_reason as image_skip_reason

        return image_skip_reason(settings["framework"], settings["model"])
    return None  # serve_text: its workload module's skip_reason hook (Keras cells)

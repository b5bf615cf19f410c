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
    warmup: Any  # a full batch, scored once before the server answers its health check
    info: dict[str, Any] = field(default_factory=dict)  # task settings for /health and records


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
) -> Scorer:
    """The scorer of `task`, with its model built (random weights) and placed on `device`."""
    if task == "serve_image":
        from devicebench.serving.models import image_scorer

        return image_scorer(framework, model, device, precision, max_batch, image_size)
    if task == "serve_text":
        from devicebench.serving.text_models import text_scorer

        if not tokenizer:
            raise ValueError("serve_text needs the tokenizer file (--tokenizer)")
        return text_scorer(framework, model, device, precision, max_batch, seq_len, tokenizer)
    raise ValueError(f"unknown serve task {task!r}; known: {', '.join(TASKS)}")


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Why this serve cell cannot run here (an architecture a library lacks), or None."""
    if settings["task"] == "serve_image":
        from devicebench.serving.models import skip_reason as image_skip_reason

        return image_skip_reason(settings["framework"], settings["model"])
    return None  # serve_text: its workload module's skip_reason hook (Keras cells)

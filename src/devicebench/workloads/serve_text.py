"""`serve_text`: the text_classify models behind the scoring server, scoring IMDb review text.

The serving study's text counterpart of serve_image: clients send the test split's reviews as
UTF-8 text, the server tokenizes each with the WordPiece text_classify trains on the data at data
preparation (cut to the cell's ``seq_len``), batches them dynamically (padded to the batch's
longest) and answers the sequence classifier's top class and score. The server, clients, LoadGen
and the record are serve_image's (devicebench.serving); this module only declares the task and
loads its request bodies. A serve task has no ``make_backend``: its model lives in the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.workloads import text_classify
from devicebench.workloads.base import ServeWorkload, TaskSpec

SPEC = TaskSpec(
    name="serve_text",
    dataset="imdb",
    models=tuple(text_classify.MODELS),
    num_classes=2,
    epochs=1,  # unused: a serve cell does not train
    batch_sizes=(32,),
    optimizer="none",
    learning_rate=1.0,
    source="streaming text scoring: the BERT-family sequence classifiers of text_classify "
    "behind an HTTP scoring API, 20-50 concurrent clients sending IMDb test reviews as UTF-8 "
    "text; batch_size is the server's largest dynamic batch",
    kind="serve",
    axes={
        "seq_len": (128,),
        "server": ("uvicorn", "ray-serve"),
        "clients": (20, 30, 50),
        "replicas": (1,),
    },
    modes=("serve",),
)


def validate(task_settings: dict[str, Any]) -> None:
    """A seq_len above a model's positions is an error before any cell runs (as text_classify)."""
    text_classify.validate(task_settings)


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Keras cells are recorded skipped, with text_classify's reason: keras-hub only."""
    from devicebench.workloads.base import keras_skip_reason

    return keras_skip_reason("serve_text", settings, text_classify.keras_missing(settings["model"]))


@dataclass
class ReviewTexts:
    """The request bodies of a serve_text cell: test reviews as UTF-8 bytes, and the tokenizer
    file the server loads."""

    x_test: list[bytes]
    y_test: np.ndarray
    tokenizer: Path
    num_classes: int = 2


def load_data(settings: dict[str, Any]) -> ReviewTexts:
    """The test split's reviews (the first `test_samples` if set), in the imdb loader's order."""
    from devicebench.data import verify_manifest

    manifest = Path(settings["data"])
    verify_manifest(manifest)
    tokenizer = text_classify.prepare_data(manifest.parent)  # cached at data preparation
    texts, labels = text_classify.reviews(manifest.parent)["test"]
    count = int(settings.get("test_samples") or len(texts))
    bodies = [text.encode("utf-8") for text in texts[:count]]
    return ReviewTexts(bodies, labels[:count], tokenizer)


class ServeText(ServeWorkload):
    """serve_text behind the registry: the functions above as its methods."""

    spec = SPEC
    content_type = "text/plain"
    client_content_type = "text/plain; charset=utf-8"

    def validate(self, task_settings: dict[str, Any]) -> None:
        validate(task_settings)

    def skip_reason(self, settings: dict[str, Any]) -> str | None:
        return skip_reason(settings)

    def load_data(self, settings: dict[str, Any]) -> Any:
        return load_data(settings)


WORKLOAD = ServeText()

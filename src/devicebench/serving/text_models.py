"""The text classifiers a server scores with: the text_classify workload's models and tokenizer.

A request is one review as UTF-8 text. The server tokenizes it with the WordPiece trained on the
dataset's own text at data preparation (the file text_classify caches beside the manifest), cut
to the cell's seq_len as the workload cuts it. A batch is padded to its longest sequence, not to
seq_len (dynamic padding, as a service does: short reviews cost less), with [PAD] (id 0) and an
attention mask. The model is the workload's transformers sequence classifier, random weights.
"""

from __future__ import annotations

from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.serving.scoring import CONTENT_TYPES, BadRequest, Scorer

PAD_ID = 0  # text_classify.SPECIALS: [PAD] is 0


class BadText(BadRequest):
    """A body that is not UTF-8 text with something to score."""


@lru_cache(maxsize=4)
def load_tokenizer(path: str, seq_len: int):
    """The workload's tokenizer cutting to `seq_len`, no padding (the batch pads); one per
    process (decoder processes load their own)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(path)
    tokenizer.no_padding()
    tokenizer.enable_truncation(seq_len)
    return tokenizer


def decode_text(body: bytes, tokenizer: str, seq_len: int) -> np.ndarray:
    """One review's token ids ([CLS] ... [SEP], at most `seq_len`)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadText(f"the body is not valid UTF-8: {error}") from None
    if not text.strip():
        raise BadText("the body has no text (only white space): send one review as UTF-8 text")
    ids = load_tokenizer(str(tokenizer), seq_len).encode(text).ids
    return np.asarray(ids, dtype=np.int64)


def pad_longest(rows: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Token ids padded with [PAD] to the batch's longest row, and the mask of real tokens."""
    longest = max(len(row) for row in rows)
    ids = np.full((len(rows), longest), PAD_ID, dtype=np.int64)
    mask = np.zeros((len(rows), longest), dtype=np.int64)
    for index, row in enumerate(rows):
        ids[index, : len(row)] = row
        mask[index, : len(row)] = 1
    return {"input_ids": ids, "attention_mask": mask}


class TextClassifier:
    """Scores a padded batch of token ids: top class and its softmax score per sequence."""

    def __init__(self, model: str, device: str, precision: str, seq_len: int, **overrides: Any):
        import torch

        from devicebench.workloads import text_classify

        if model not in text_classify.MODELS:
            known = ", ".join(text_classify.MODELS)
            raise ValueError(f"unknown text model {model!r}; known: {known}")
        positions = text_classify.max_positions(model)
        if seq_len > positions:
            raise ValueError(f"seq_len {seq_len} is above {model}'s {positions} positions")
        self.device, self.seq_len = device, seq_len
        self.device_type = torch.device(device).type
        if precision == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        self.model = text_classify.build_model(model, 0, **overrides).eval().to(device)
        self.parameters = sum(p.numel() for p in self.model.parameters())

    def predict(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        import torch

        with torch.inference_mode():
            inputs = {k: torch.from_numpy(v).to(self.device) for k, v in batch.items()}
            with torch.autocast(self.device_type, dtype=self.dtype, enabled=bool(self.dtype)):
                logits = self.model(**inputs)
            scores, classes = torch.softmax(logits.float(), dim=-1).max(dim=-1)
            return classes.cpu().numpy(), scores.cpu().numpy()


def text_scorer(
    framework: str,
    model: str,
    device: str,
    precision: str,
    seq_len: int,
    tokenizer: Path | str,
) -> Scorer:
    """serve_text: UTF-8 text in, tokenized and cut to `seq_len`, padded to the batch's longest,
    scored by the sequence classifier (torch only, as the text_classify workload)."""
    from devicebench.workloads.base import keras_skip_reason
    from devicebench.workloads.text_classify import keras_missing

    settings = {"framework": framework, "model": model}
    reason = keras_skip_reason("serve_text", settings, keras_missing(model))
    if reason:
        raise ValueError(reason)
    if not Path(tokenizer).is_file():
        raise ValueError(f"tokenizer file {tokenizer} not found: prepare the imdb data first")
    classifier = TextClassifier(model, device, precision, seq_len)
    return Scorer(
        content_type=CONTENT_TYPES["serve_text"],
        body="one review as UTF-8 text",
        decode=partial(decode_text, tokenizer=str(tokenizer), seq_len=seq_len),
        collate=pad_longest,
        predict=classifier.predict,
        parameters=classifier.parameters,
        warmup=np.full(seq_len, 5, dtype=np.int64),  # 5: the first non-special id
        info={"seq_len": seq_len, "padding": "longest in batch", "tokenizer": Path(tokenizer).name},
    )

"""`serve_text`: the text_classify models behind the scoring server, scoring IMDb review text.

The serving study's text counterpart of serve_image: clients send the test split's reviews as
UTF-8 text, the server tokenizes each with the WordPiece text_classify trains on the data at data
preparation (cut to the cell's ``seq_len``), batches them dynamically (padded to the batch's
longest) and answers the sequence classifier's top class and score. The server, clients, LoadGen
and the record are serve_image's (devicebench.serving); this module only declares the task and
loads its request bodies. A serve task has no ``make_backend``: its model lives in the server.

What the server scores with: a request is one review as UTF-8 text, tokenized with the
WordPiece text_classify caches beside the manifest and cut to the cell's seq_len; a batch is
padded to its longest sequence, not to seq_len (dynamic padding, as a service does: short
reviews cost less), with [PAD] (id 0) and an attention mask; the model is text_classify's
transformers sequence classifier, random weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.engines import IN_PROCESS, cell_engine, is_in_process
from devicebench.serving.decode import cut_text, text_chars
from devicebench.serving.scorer import BadRequest, Scorer
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
    work_axes=("seq_len",),
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
    """The registry's handle on this module: its functions are the Workload methods."""

    spec = SPEC
    content_type = "text/plain"
    client_content_type = "text/plain; charset=utf-8"
    # MLPerf Inference's BERT Server bound (BERT-99, datacenter): 130 ms, for BERT-base too; the
    # other encoders classify the same texts and take the same bound (RoBERTa-base is BERT-base's
    # size; the distilled ones are smaller: a lighter model must meet at least what BERT does).
    # bert-tiny is the quick config's test model. A model added to text_classify needs its line.
    p99_bounds_ms = {
        model: 130.0
        for model in ("bert-base", "roberta-base", "distilbert-base", "tinybert", "minilm")
    } | {"bert-tiny": 130.0}

    validate = staticmethod(validate)
    skip_reason = staticmethod(skip_reason)
    load_data = staticmethod(load_data)

    def make_scorer(
        self, framework: str, model: str, device: str, precision: str, **options: Any
    ) -> Scorer:
        tokenizer = options.get("tokenizer")
        if not tokenizer:
            raise ValueError("serve_text needs the tokenizer file (--tokenizer)")
        seq_len, engine = int(options["seq_len"]), cell_engine(options)
        return text_scorer(framework, model, device, precision, seq_len, tokenizer, engine)

    def server_arguments(
        self, *, image_size: int, seq_len: int, tokenizer: Path | str | None
    ) -> list[str]:
        return [
            "--task",
            self.spec.name,
            "--seq-len",
            str(seq_len),
            "--tokenizer",
            str(tokenizer or ""),
        ]

    def request_fields(self, serve: dict[str, Any], health: dict[str, Any]) -> dict[str, Any]:
        return {"seq_len": health.get("seq_len"), "padding": health.get("padding")}


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
    """One review's token ids ([CLS] ... [SEP], at most `seq_len`), from its first
    text_chars(seq_len) characters only (serving/decode.py)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadText(f"the body is not valid UTF-8: {error}") from None
    if not text.strip():
        raise BadText("the body has no text (only white space): send one review as UTF-8 text")
    ids = load_tokenizer(str(tokenizer), seq_len).encode(cut_text(text, seq_len)).ids
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

        from devicebench.frameworks.torch_device import autocast_dtype

        if model not in text_classify.MODELS:
            known = ", ".join(text_classify.MODELS)
            raise ValueError(f"unknown text model {model!r}; known: {known}")
        positions = text_classify.max_positions(model)
        if seq_len > positions:
            raise ValueError(f"seq_len {seq_len} is above {model}'s {positions} positions")
        self.device, self.seq_len = device, seq_len
        self.device_type = torch.device(device).type
        self.dtype = autocast_dtype(precision)
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


class EngineTextClassifier(TextClassifier):
    """The sequence classifier exported to an inference engine (devicebench.engines), scoring
    batches padded to seq_len: the exported model's inputs have a fixed sequence length."""

    def __init__(self, model: str, device: str, precision: str, seq_len: int, engine: str):
        import torch

        from devicebench import engines
        from devicebench.engines.base import LoadOptions
        from devicebench.frameworks.transformer_backend import Positional

        super().__init__(model, device, "fp32", seq_len)
        example = {
            "input_ids": np.full((1, seq_len), 5, dtype=np.int64),
            "attention_mask": np.ones((1, seq_len), dtype=np.int64),
        }
        options = LoadOptions(precision=precision, threads=torch.get_num_threads(), device=device)
        wrapped = Positional(self.model, tuple(example)).eval()
        self.loaded = engines.get(engine).load(wrapped, example, options)
        self.engine_info = {"engine": engine, "engine_ran": str(self.loaded.info.get("format_ran"))}

    def predict(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        logits = np.asarray(self.loaded.run(batch), dtype=np.float32)
        exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities = exp / exp.sum(axis=-1, keepdims=True)
        return probabilities.argmax(axis=-1), probabilities.max(axis=-1)


def pad_to(rows: list[np.ndarray], seq_len: int) -> dict[str, np.ndarray]:
    """As pad_longest, every batch padded to `seq_len` (an engine's fixed input shape)."""
    ids = np.full((len(rows), seq_len), PAD_ID, dtype=np.int64)
    mask = np.zeros((len(rows), seq_len), dtype=np.int64)
    for index, row in enumerate(rows):
        ids[index, : len(row)] = row[:seq_len]
        mask[index, : min(len(row), seq_len)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def text_scorer(
    framework: str,
    model: str,
    device: str,
    precision: str,
    seq_len: int,
    tokenizer: Path | str,
    engine: str = IN_PROCESS,
) -> Scorer:
    """serve_text: UTF-8 text in, tokenized and cut to `seq_len`, padded to the batch's longest
    (to seq_len on an inference engine), scored by the sequence classifier (torch only, as the
    text_classify workload, or its export on `engine`)."""
    reason = skip_reason({"framework": framework, "model": model})
    if reason:
        raise ValueError(reason)
    if not Path(tokenizer).is_file():
        raise ValueError(f"tokenizer file {tokenizer} not found: prepare the imdb data first")
    info: dict[str, Any] = {"seq_len": seq_len, "padding": "longest in batch"}
    collate: Any = pad_longest
    if is_in_process(engine):
        classifier = TextClassifier(model, device, precision, seq_len)
    else:
        classifier = EngineTextClassifier(model, device, precision, seq_len, engine)
        collate = partial(pad_to, seq_len=seq_len)
        info |= {"padding": "to seq_len (the engine's fixed shape)", **classifier.engine_info}
    return Scorer(
        content_type=ServeText.content_type,
        body="one review as UTF-8 text",
        decode=partial(decode_text, tokenizer=str(tokenizer), seq_len=seq_len),
        collate=collate,
        predict=classifier.predict,
        parameters=classifier.parameters,
        warmup=np.full(seq_len, 5, dtype=np.int64),  # 5: the first non-special id
        info=info | {"tokenizer": Path(tokenizer).name, "text_chars": text_chars(seq_len)},
    )


WORKLOAD = ServeText()

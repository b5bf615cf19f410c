"""conll_ner: token-classification NER on CoNLL-2003, the Spark NLP NER benchmark's workload.

Data: the ``conll2003`` dataset of devicebench.data (the real files from ``path``, or synthetic
sentences in the same column format); models train on ``eng.train`` and are scored on
``eng.testa`` (3,250 sentences, the study's test set). Preparing it parses every file, so a
malformed line stops the workflow before any cell, naming file and line; this module then builds
the WordPiece tokenizer from the training words (data/wordpiece.py, deterministic) beside the
manifest. Models (models.py): ``bert_tokencls`` and ``bilstm_cnn_bert``, ``_tiny`` variants for
quick runs. Quality: entity-level precision, recall and F1 (micro and macro, exact spans, seqeval)
and token accuracy. Axes: ``embedding`` (live: BERT runs inside each step; cached: precomputed
once, untimed; bilstm_cnn_bert only) and ``train_fraction`` (share of training sentences, a
seeded subset: how the GPU's lead grows with data). Keras cells are recorded skipped (BERT
is in keras-hub only, which cannot be installed here).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.atomic import atomic_path
from devicebench.workloads.base import TaskSpec, Workload

# name -> (architecture, BERT size); models.py builds them (torch only, imported lazily).
MODELS = {
    "bert_tokencls": ("bert_tokencls", "base"),
    "bilstm_cnn_bert": ("bilstm_cnn_bert", "base"),
    "bert_tokencls_tiny": ("bert_tokencls", "tiny"),
    "bilstm_cnn_bert_tiny": ("bilstm_cnn_bert", "tiny"),
}


def model_spec(name: str) -> tuple[str, str]:
    """(architecture, BERT size) of a conll_ner model name."""
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown conll_ner model {name!r}; known: {', '.join(MODELS)}") from None


SPEC = TaskSpec(
    name="conll_ner",
    dataset="conll2003",
    models=tuple(MODELS),
    num_classes=9,  # O and B-/I- of PER, LOC, ORG, MISC
    epochs=10,
    batch_sizes=(32, 64, 256, 512, 1024, 2048),
    optimizer="adam",
    learning_rate=0.003,
    source="Spark NLP NER benchmark: NerDL (char-CNN + BiLSTM over BERT-base embeddings) on "
    "CoNLL-2003, 14,041 train / 3,250 test sentences, 10 epochs, Adam lr 0.003; plus "
    "BertForTokenClassification fine-tuned whole",
    kind="ner",
    options={"max_positions": 512, "max_pieces": 128, "max_chars": 20},
    axes={"embedding": ("live", "cached"), "train_fraction": (1.0, 0.5, 0.1)},
)
# weights: pretrained loads a BERT checkpoint (this class for bert_tokencls, its encoder for
# bilstm_cnn_bert's frozen embeddings) and its own tokenizer beside it.
PRETRAINED_CLASS = "AutoModelForTokenClassification"
PRETRAINED_TOKENIZER = True
TOKENIZER = "wordpiece-cased.json"
# FLOPs are counted at a representative sentence (CoNLL-2003's mean is 14.5 words): 16 words,
# 24 word pieces with [CLS] and [SEP], 8 characters per word.
FLOP_WORDS, FLOP_PIECES, FLOP_CHARS = 16, 24, 8


def validate(task_settings: dict[str, Any]) -> None:
    """Pretrained checkpoints must be BERTs: both models are built around BERT's classes."""
    if task_settings.get("weights") != "pretrained":
        return
    from devicebench.frameworks import pretrained

    for model in task_settings.get("models", list(SPEC.models)):
        source = task_settings["pretrained"][model]
        kind = pretrained.model_config(pretrained.locate(model, source)).get("model_type")
        if kind != "bert":
            raise ValueError(
                f"pretrained.{model}: {source} holds a {kind!r} model; conll_ner's models are "
                "built around BERT, so the checkpoint must be a BERT (model_type 'bert')"
            )


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Keras has no port of these models here; cached embeddings need a frozen BERT."""
    from devicebench.workloads.base import keras_hub_only, keras_skip_reason

    if reason := keras_skip_reason("conll_ner", settings, keras_hub_only("BERT")):
        return reason
    architecture = MODELS[settings["model"]][0]
    if settings.get("embedding", "live") == "cached" and architecture != "bilstm_cnn_bert":
        return (
            f"embedding=cached applies to bilstm_cnn_bert only: {settings['model']} fine-tunes "
            "its own embeddings, so they cannot be computed before training"
        )
    return None


def prepare_data(data_dir: Path) -> Path:
    """The WordPiece tokenizer of the training words, beside the manifest (atomic, cached)."""
    from devicebench.data import conll, verify_manifest, wordpiece

    path = Path(data_dir) / TOKENIZER
    if path.exists():
        return path
    info = verify_manifest(Path(data_dir) / "manifest.json")
    train = next(Path(data_dir) / f["name"] for f in info["files"] if f["role"] == "train")
    tokenizer = wordpiece.train_wordpiece(s.words for s in conll.read_conll(train))
    with atomic_path(path) as tmp:
        wordpiece.save(tokenizer, str(tmp))
    print(f"[devicebench] built {path.name} ({tokenizer.get_vocab_size()} pieces)", flush=True)
    return path


@dataclass
class NerData:
    """Encoded splits (inputs.NerArrays), the test sentences to score, and their origin."""

    train: Any
    test: Any
    test_sentences: list
    num_labels: int
    num_chars: int
    vocab_size: int
    name: str
    source: str
    synthetic: bool


def load_data(settings: dict[str, Any]) -> NerData:
    """Verify and parse the files; train on a seeded `train_fraction` of the training sentences."""
    from devicebench.data import conll, load_dataset, wordpiece
    from devicebench.workloads.conll_ner.inputs import char_vocabulary, encode

    fraction = float(settings.get("train_fraction", 1.0))
    if not 0 < fraction <= 1:
        raise ValueError(f"train_fraction={fraction} must be in (0, 1]")
    data = load_dataset(
        settings["data"],
        train_samples=settings.get("train_samples"),
        test_samples=settings.get("test_samples"),
    )
    train = [conll.Sentence(w, t) for w, t in zip(data.x_train, data.y_train, strict=True)]
    test = [conll.Sentence(w, t) for w, t in zip(data.x_test, data.y_test, strict=True)]
    chars = char_vocabulary(train)  # from every training sentence, whatever the fraction
    keep = max(1, round(fraction * len(train)))
    chosen = np.random.default_rng(int(settings["seed"])).permutation(len(train))[:keep]
    train = [train[i] for i in sorted(chosen)]
    vocab_size = wordpiece.BERT_VOCAB
    if settings.get("weights") == "pretrained":  # the checkpoint's own WordPiece
        from devicebench.frameworks import pretrained

        tokenizer = pretrained.load_tokenizer(settings["model"], settings["pretrained"])
        tokenizer, vocab_size = tokenizer.backend_tokenizer, len(tokenizer)
    else:
        tokenizer = wordpiece.load(prepare_data(Path(settings["data"]).parent))
    options = {
        "max_len": int(SPEC.option("max_pieces")),
        "max_chars": int(SPEC.option("max_chars")),
    }
    print(
        f"[devicebench] conll_ner: {len(train)} training sentences (train_fraction {fraction:g}), "
        f"{len(test)} test sentences",
        flush=True,
    )
    return NerData(
        train=encode(train, tokenizer, chars, **options),
        test=encode(test, tokenizer, chars, **options),
        test_sentences=test,
        num_labels=len(conll.LABELS),
        num_chars=len(chars) + 2,
        vocab_size=vocab_size,
        name=data.name,
        source=data.source,
        synthetic=data.synthetic,
    )


def make_backend(spec: TaskSpec, settings: dict[str, Any], dataset: NerData):
    from devicebench.workloads.conll_ner.backend import NerBackend

    return NerBackend(spec, settings, dataset, model_spec(settings["model"]))


def quality(dataset: NerData, predicted: np.ndarray, loss: float) -> dict[str, float]:
    """Entity-level scores (seqeval) and token accuracy of word-level predictions [N, W]."""
    from devicebench.workloads.conll_ner.inputs import decode
    from devicebench.workloads.conll_ner.metrics import entity_scores

    tags = decode(predicted, dataset.test, dataset.test_sentences)
    return entity_scores([s.tags for s in dataset.test_sentences], tags) | {"loss": loss}


def flops_per_sample(settings: dict[str, Any], mode: str) -> float:
    """FLOPs of one representative sentence: train = forward + backward (the frozen BERT of a
    live bilstm_cnn_bert forward only, a cached one none), infer = forward."""
    from devicebench.data.conll import LABELS
    from devicebench.frameworks import pretrained
    from devicebench.workloads.conll_ner.backend import count_flops

    config = None
    if settings.get("weights") == "pretrained":  # the checkpoint's own BERT
        config = pretrained.load_config(str(settings["model"]), settings["pretrained"], len(LABELS))
    return count_flops(
        model_spec(str(settings["model"])),
        str(settings.get("embedding", "live")),
        mode,
        words=FLOP_WORDS,
        pieces=FLOP_PIECES,
        chars=FLOP_CHARS,
        config=config,
    )


class ConllNer(Workload):
    """The registry's handle on this module: its functions are the Workload methods."""

    spec = SPEC
    pretrained_class = PRETRAINED_CLASS
    pretrained_tokenizer = PRETRAINED_TOKENIZER

    validate = staticmethod(validate)
    skip_reason = staticmethod(skip_reason)
    prepare_data = staticmethod(prepare_data)
    load_data = staticmethod(load_data)

    def make_backend(self, settings: dict[str, Any], dataset: Any) -> Any:
        return make_backend(self.spec, settings, dataset)

    quality = staticmethod(quality)
    flops_per_sample = staticmethod(flops_per_sample)


WORKLOAD = ConllNer()

"""`text_classify`: IMDb sentiment with BERT-family sequence classifiers.

The models are built from transformers configurations at their published sizes with random
weights (offline; speed does not depend on the weights). The tokenizer is a WordPiece trained with
`tokenizers` on the dataset's own training text when the data is prepared (deterministic, cached
next to the dataset's manifest under results/data). Each review becomes ``[CLS] tokens [SEP]``
cut to the cell's ``seq_len`` and padded, with an attention mask. With ``weights: pretrained``
the model and its own tokenizer come from a local copy instead (workloads/pretrained.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.atomic import atomic_path
from devicebench.workloads.base import TaskSpec, Workload
from devicebench.workloads.text_tokens import cache_path, cached_splits

# name -> (transformers family, configuration keywords). Published sizes: BERT-base (Devlin et
# al. 2019), RoBERTa-base, DistilBERT-base, TinyBERT General 4L-312D, MiniLM-L12-H384, and the
# 2-layer 128-hidden BERT (google/bert_uncased_L-2_H-128_A-2) for quick runs.
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "bert-base": ("bert", {}),
    "roberta-base": ("roberta", {"vocab_size": 50265, "max_position_embeddings": 514}),
    "distilbert-base": ("distilbert", {}),
    "tinybert": (
        "bert",
        {"hidden_size": 312, "num_hidden_layers": 4, "intermediate_size": 1200},
    ),
    "minilm": ("bert", {"hidden_size": 384, "intermediate_size": 1536}),
    "bert-tiny": (
        "bert",
        {
            "hidden_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 512,
        },
    ),
}

SPEC = TaskSpec(
    name="text_classify",
    dataset="imdb",
    models=tuple(MODELS),
    num_classes=2,
    epochs=3,
    batch_sizes=(32,),
    optimizer="adamw",
    learning_rate=2e-5,
    optimizer_options={"weight_decay": 0.01},
    source="BERT-family sequence classification fine-tuning (Devlin et al. 2019 GLUE recipe: "
    "AdamW 2e-5, batch 32, 3 epochs) on IMDb; random weights, WordPiece trained on the data",
    kind="sequence",
    options={"vocab_size": 30522},
    axes={"seq_len": (128, 512), "compile": ("eager", "compiled")},
    work_axes=("seq_len",),
)

# weights: pretrained loads the checkpoint with this class, and its own tokenizer beside it.
PRETRAINED_CLASS = "AutoModelForSequenceClassification"
PRETRAINED_TOKENIZER = True

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4: [PAD] is 0
FIT_LOOP = (
    "hand-written loop over transformers sequence classifiers: shuffled index gather of token "
    "ids and attention mask on the device, AdamW, autocast (+ GradScaler for fp16), no "
    "per-step sync; torch.compile when compile=compiled"
)


def max_positions(model: str) -> int:
    """Longest sequence the model's position embeddings cover (RoBERTa keeps 2 for padding)."""
    family, kwargs = MODELS[model]
    positions = int(kwargs.get("max_position_embeddings", 512))
    return positions - 2 if family == "roberta" else positions


def pretrained_positions(model: str, source: str) -> int:
    """Longest sequence a pretrained checkpoint's position embeddings cover."""
    from devicebench.frameworks import pretrained

    config = pretrained.model_config(pretrained.locate(model, source))
    positions = int(config.get("max_position_embeddings", 512))
    return positions - 2 if config.get("model_type") == "roberta" else positions


def validate(task_settings: dict[str, Any]) -> None:
    """A seq_len above a model's positions is an error before any cell runs."""
    models = task_settings.get("models", list(SPEC.models))
    for model in models:
        positions = max_positions(model)
        if task_settings.get("weights") == "pretrained":  # sources located by the config check
            positions = pretrained_positions(model, task_settings["pretrained"][model])
        for index, value in enumerate(task_settings.get("seq_lens", [])):
            if int(value) > positions:
                raise ValueError(
                    f"seq_lens[{index}]: {value} is above {model}'s {positions} "
                    "positions; use a shorter seq_len or drop that model"
                )


def keras_missing(model: str) -> str:
    """Why a model has no Keras port here: its family is in keras-hub only (serve_text says it
    too)."""
    from devicebench.workloads.base import keras_hub_only

    family = MODELS[model][0] if model in MODELS else "bert"
    names = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT"}
    return keras_hub_only(names[family])


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Keras cells are recorded skipped: the BERT family is in keras-hub only (not installable)."""
    from devicebench.workloads.base import keras_skip_reason

    return keras_skip_reason("text_classify", settings, keras_missing(settings["model"]))


def tokenizer_path(data_dir: Path, vocab_size: int | None = None) -> Path:
    size = int(vocab_size or SPEC.option("vocab_size"))
    return Path(data_dir) / f"wordpiece-{size}.json"


def train_tokenizer(texts: list[str], vocab_size: int):
    """A BERT-style uncased WordPiece tokenizer whose vocabulary is learned from `texts`.

    Normalization, pre-tokenization, WordPiece encoding and the [CLS]/[SEP] template are
    `tokenizers`' own. The vocabulary is chosen here, not by its WordPieceTrainer: that trainer
    numbers its alphabet and breaks ties between merges in hash order, which changes from run to
    run, and the study needs the same tokenizer from the same data. Chosen: the special tokens,
    every character seen (alone and as a ``##`` continuation, so no word is ever unknown), then
    the most frequent words, ties broken alphabetically (the rule of the classic imdb vocabulary).
    """
    from collections import Counter

    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    counts: Counter[str] = Counter()
    for text in texts:
        normalized = normalizer.normalize_str(text)
        counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(normalized))
    chars = sorted({c for word in counts for c in word})
    tokens = [*SPECIALS, *chars, *(f"##{c}" for c in chars)]
    if len(tokens) > vocab_size:
        raise ValueError(f"vocab_size {vocab_size} is below the {len(tokens)} characters seen")
    seen = set(tokens)
    ranked = sorted((w for w in counts if w not in seen), key=lambda w: (-counts[w], w))
    tokens += ranked[: vocab_size - len(tokens)]
    vocab = {token: index for index, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return tokenizer


def reviews(data_dir: Path) -> dict[str, tuple[list[str], np.ndarray]]:
    """Each split's review texts and labels, verified and in the imdb loader's shuffled order."""
    from devicebench.data import imdb, verify_manifest

    info = verify_manifest(Path(data_dir) / "manifest.json")
    archive = next(Path(data_dir) / f["name"] for f in info["files"] if f["role"] == "archive")
    out = {}
    for seed, (split, items) in enumerate(imdb.read_texts(archive).items()):
        order = np.random.default_rng(seed).permutation(len(items))  # as imdb.read_archive
        out[split] = (
            [" ".join(items[i][0]) for i in order],
            np.array([items[i][1] for i in order], dtype=np.int64),
        )
    return out


def prepare_data(data_dir: Path) -> Path:
    """Train the WordPiece tokenizer on the training reviews once; cached beside the manifest."""
    path = tokenizer_path(data_dir)
    if path.exists():
        return path
    texts, _ = reviews(data_dir)["train"]
    tokenizer = train_tokenizer(texts, int(SPEC.option("vocab_size")))
    with atomic_path(path) as tmp:
        tokenizer.save(str(tmp))
    print(f"[devicebench] trained {path.name} on {len(texts)} reviews", flush=True)
    return path


@dataclass
class TextData:
    """Token ids, attention masks and labels of both splits (what the backend and driver read)."""

    splits: dict[str, dict[str, np.ndarray]]
    num_classes: int
    name: str
    source: str
    synthetic: bool

    @property
    def y_test(self) -> np.ndarray:
        return self.splits["test"]["labels"]


def encode(tokenizer: Any, texts: list[str], seq_len: int) -> dict[str, np.ndarray]:
    """[CLS] ids [SEP] cut to seq_len, padded with [PAD] (0); the mask marks real tokens."""
    tokenizer.enable_truncation(seq_len)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]", length=seq_len)
    encoded = tokenizer.encode_batch(texts)
    return {
        "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
    }


def encode_pretrained(tokenizer: Any, texts: list[str], seq_len: int) -> dict[str, np.ndarray]:
    """A checkpoint's own tokenizer: its special tokens and padding, cut to seq_len."""
    encoded = tokenizer(
        texts, truncation=True, max_length=seq_len, padding="max_length", return_tensors="np"
    )
    return {key: encoded[key].astype(np.int64) for key in ("input_ids", "attention_mask")}


def load_data(settings: dict[str, Any]) -> TextData:
    """The cell's reviews tokenized to its seq_len; the first N of each split as configured.

    Random weights: the WordPiece trained on the data; pretrained: the checkpoint's tokenizer.
    """
    from tokenizers import Tokenizer

    from devicebench.data import verify_manifest
    from devicebench.frameworks import pretrained

    manifest = Path(settings["data"])
    info = verify_manifest(manifest)
    seq_len = int(settings.get("seq_len", SPEC.axes["seq_len"][0]))
    wanted = {
        s: int(settings.get(f"{s}_samples") or info[f"{s}_samples"]) for s in ("train", "test")
    }

    def tokenized(tokenizer: Any, tokenize: Callable) -> dict[str, dict[str, np.ndarray]]:
        splits = {}
        for split, (texts, labels) in reviews(manifest.parent).items():
            n = min(wanted[split], len(texts))
            splits[split] = tokenize(tokenizer, texts[:n], seq_len) | {"labels": labels[:n]}
        return splits

    if pretrained.is_pretrained(settings):
        tokenizer = pretrained.load_tokenizer(settings["model"], settings["pretrained"])
        splits = tokenized(tokenizer, encode_pretrained)
    else:  # tokenized once per data, tokenizer, seq_len and sizes (text_tokens)
        vocabulary = prepare_data(manifest.parent)
        splits = cached_splits(
            cache_path(manifest, info, vocabulary, seq_len, wanted),
            lambda: tokenized(Tokenizer.from_file(str(vocabulary)), encode),
        )
    return TextData(splits, 2, info["dataset"], info["source"], bool(info["synthetic"]))


def build_model(model: str, seed: int, **overrides: Any):
    """The classifier at its published size with random weights from `seed`; forward -> logits.

    `overrides` replace configuration keys (tests shrink a family to a tiny size with them).
    """
    import torch
    import transformers

    family, kwargs = MODELS[model]
    config_class, model_class = {
        "bert": (transformers.BertConfig, transformers.BertForSequenceClassification),
        "roberta": (transformers.RobertaConfig, transformers.RobertaForSequenceClassification),
        "distilbert": (
            transformers.DistilBertConfig,
            transformers.DistilBertForSequenceClassification,
        ),
    }[family]
    extra: dict[str, Any] = {"num_labels": 2, "pad_token_id": 0}
    if family == "roberta":
        extra |= {"type_vocab_size": 1, "layer_norm_eps": 1e-5}
    torch.manual_seed(seed)
    from devicebench.frameworks.transformer_backend import Logits

    return Logits(model_class(config_class(**(kwargs | extra | overrides))))


def make_backend(spec: TaskSpec, settings: dict[str, Any], dataset: TextData):
    from devicebench.frameworks.transformer_backend import TransformerBackend, weights_builder

    build, weights = weights_builder(
        settings, PRETRAINED_CLASS, 2, lambda seed: build_model(settings["model"], seed)
    )
    return TransformerBackend(
        spec, settings, dataset.splits, build, lambda b: b, FIT_LOOP, weights=weights
    )


def flops_per_sample(settings: dict[str, Any], mode: str) -> float:
    """Counted on the CPU over one sequence at the cell's seq_len (FLOPs do not depend on data)."""
    import torch

    from devicebench.frameworks.transformer_backend import architecture
    from devicebench.measure.flops import count_flops, net_for_counting

    seq_len = int(settings.get("seq_len", SPEC.axes["seq_len"][0]))
    if settings.get("weights") == "pretrained":  # the checkpoint's own architecture
        model = architecture(PRETRAINED_CLASS, str(settings["model"]), settings["pretrained"], 2)
    else:
        name = str(settings["model"])
        model = net_for_counting((SPEC.name, name), lambda: build_model(name, 0))
    inputs = {
        "input_ids": torch.full((1, seq_len), len(SPECIALS), dtype=torch.long),
        "attention_mask": torch.ones(1, seq_len, dtype=torch.long),
    }
    return count_flops(model, inputs, mode)


class TextClassify(Workload):
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

    flops_per_sample = staticmethod(flops_per_sample)


WORKLOAD = TextClassify()

"""The conll_ner torch backend: device-resident sentences, batches trimmed on the host, no sync.

Same contract and timing discipline as frameworks/torch_backend.py. Each batch is cut to its
longest sentence (dynamic padding, as NER pipelines do): the lengths are read from host arrays
indexed by a host-side shuffle, so no step waits on the device. ``embeddings: live`` runs the frozen
BERT inside every step (the Spark NLP pipeline); ``cached`` computes every sentence's word
embeddings once, untimed, and trains the tagger on them. The frozen BERT is built from the
study's seed alone, so live and cached cells embed with the same weights. With ``weights:
pretrained`` the BERT (frozen, or fine-tuned whole with a fresh head) is the checkpoint's.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from devicebench.frameworks.torch_device import TorchDevice, autocast_dtype, timed_batches
from devicebench.measure.precision import apply_precision_math
from devicebench.workloads.conll_ner import models as ner_models
from devicebench.workloads.conll_ner.inputs import IGNORE, NerArrays


def build_encoder(config: Any, seed: int) -> ner_models.FrozenBertEmbeddings:
    """The frozen BERT of bilstm_cnn_bert, from the study's seed alone (live = cached weights)."""
    torch.manual_seed(seed)
    return ner_models.FrozenBertEmbeddings(config)


def build_trained(architecture: str, config: Any, num_chars: int, seed: int) -> torch.nn.Module:
    """The part that trains: the whole BertForTokenClassification, or the tagger."""
    torch.manual_seed(seed)
    if architecture == "bert_tokencls":
        return ner_models.BertTokenClassifier(config)
    return ner_models.build_tagger(config, num_chars, config.num_labels)


def count_flops(
    model: tuple[str, str],
    embedding: str,
    mode: str,
    *,
    words: int,
    pieces: int,
    chars: int,
    config: Any = None,
) -> float:
    """FLOPs per sentence of `model` ((architecture, BERT size)) at one sentence shape, on CPU.

    Training counts the trained part's forward and backward plus, for a live bilstm_cnn_bert,
    the frozen BERT's forward; a cached one reads its embeddings, so BERT costs nothing per step.
    The LSTM's matrix products are added by formula (the counter does not see inside aten::lstm).
    """
    from devicebench.data.conll import LABELS
    from devicebench.data.wordpiece import BERT_VOCAB
    from devicebench.measure.flop_formulas import flop_counter
    from devicebench.measure.flops import with_backward

    architecture, size = model
    if config is None:  # a pretrained checkpoint passes its own
        config = ner_models.bert_config(size, BERT_VOCAB, len(LABELS))
    count, num_chars = 2, 100
    ids = torch.randint(5, config.vocab_size, (count, pieces))
    mask = torch.ones(count, pieces, dtype=torch.int64)
    starts = torch.arange(1, words + 1).repeat(count, 1)
    spelled = torch.randint(2, num_chars, (count, words, chars))
    trained = build_trained(architecture, config, num_chars, 0)
    backward = with_backward(mode)
    trained.train(backward)
    counter = flop_counter()
    with counter, torch.set_grad_enabled(backward):
        if architecture == "bert_tokencls":
            out = trained(ids, mask)
        else:
            if embedding == "live":
                embedded = build_encoder(config, 0)(ids, mask, starts)
            else:
                embedded = torch.zeros(count, words, config.hidden_size)
            out = trained(embedded, spelled, torch.full((count,), words))
        if backward:
            out.sum().backward()
    flops = counter.get_total_flops() / count
    if architecture == "bilstm_cnn_bert":  # the counter has no formula for aten::lstm: add it
        lstm = trained.lstm
        per_step = 2 * 4 * lstm.hidden_size * (lstm.input_size + lstm.hidden_size)
        forward = 2 * words * per_step  # two directions, multiply-adds as 2 FLOPs
        flops += 3 * forward if backward else forward  # backward = 2 x forward
    return flops


_FIELDS = ("input_ids", "attention_mask", "token_labels", "word_start", "chars", "word_labels")


class _Split:
    """One split's arrays on the device, its lengths on the host."""

    def __init__(self, arrays: NerArrays, device: torch.device) -> None:
        self.tensors = {k: torch.as_tensor(getattr(arrays, k), device=device) for k in _FIELDS}
        self.pieces = torch.as_tensor(arrays.pieces)
        self.words = torch.as_tensor(arrays.words)
        self.size = len(arrays)
        self.cache: torch.Tensor | None = None  # word embeddings, embeddings: cached


class NerBackend(TorchDevice):
    """A conll_ner model, its optimizer and both splits on the device, for one cell."""

    name = "torch"

    def __init__(
        self, spec: Any, settings: dict[str, Any], dataset: Any, model: tuple[str, str]
    ) -> None:
        self.spec, self.settings = spec, settings
        self.device = torch.device(settings["device"])
        self.batch_size = int(settings["batch_size"])
        self.architecture, self.size = model  # (architecture, BERT size) of the model's name
        self.embeddings = str(settings.get("embedding", "live"))
        if self.embeddings not in ("live", "cached"):
            raise ValueError(f"embedding must be live or cached, not {self.embeddings!r}")
        if self.embeddings == "cached" and self.architecture != "bilstm_cnn_bert":
            raise ValueError(
                f"embedding=cached applies to bilstm_cnn_bert only, not {settings['model']}"
            )
        apply_precision_math(settings["precision"])  # fp32 is fp32: TF32 only for tf32
        self.num_labels = dataset.num_labels
        self.num_chars = dataset.num_chars
        self.weights: dict[str, Any] = {"weights": "random"}
        self.source = settings["pretrained"] if settings.get("weights") == "pretrained" else None
        if self.source is not None:
            from devicebench.frameworks import pretrained

            self.config = pretrained.load_config(settings["model"], self.source, self.num_labels)
        else:
            self.config = ner_models.bert_config(
                self.size, dataset.vocab_size, self.num_labels, int(spec.option("max_positions"))
            )
        self.train = _Split(dataset.train, self.device)
        self.test = _Split(dataset.test, self.device)
        self.host_generator = torch.Generator()
        self.autocast_dtype = autocast_dtype(settings["precision"])
        self.scaler = torch.amp.GradScaler(
            self.device.type, enabled=settings["precision"] == "fp16"
        )
        self.encoder: ner_models.FrozenBertEmbeddings | None = None
        self.model: torch.nn.Module | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        if self.architecture == "bilstm_cnn_bert":
            if self.source is not None:
                bert = self._load("AutoModel", int(settings["seed"]), add_pooling_layer=False)
                self.encoder = ner_models.FrozenBertEmbeddings(self.config, bert)
            else:
                self.encoder = build_encoder(self.config, int(settings["seed"]))
            self.encoder.to(self.device)
            if self.embeddings == "cached":
                start = time.perf_counter()
                for split in (self.train, self.test):
                    split.cache = self._embed_all(split)
                self.cache_s = time.perf_counter() - start

    @property
    def fit_loop(self) -> str:
        how = {
            "bert_tokencls": "BertForTokenClassification fine-tuned whole",
            "bilstm_cnn_bert": f"frozen BERT ({self.embeddings} embeddings) + char-CNN + BiLSTM",
        }[self.architecture]
        return (
            f"hand-written loop: {how}; host-side shuffle, batches trimmed to their longest "
            "sentence, first word piece labelled, autocast, no per-step sync"
        )

    @property
    def model_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "architecture": self.architecture,
            "bert_size": self.size,
            "embedding": self.embeddings if self.encoder is not None else "fine-tuned",
            "vocab_size": self.config.vocab_size,
            "max_pieces": int(self.train.tensors["input_ids"].shape[1]),
            **self.weights,
        }
        if self.encoder is not None:
            info["frozen_bert_parameters"] = sum(p.numel() for p in self.encoder.parameters())
        if getattr(self, "cache_s", None) is not None:
            info["embedding_cache_s"] = self.cache_s
        return info

    @property
    def train_samples(self) -> int:
        return self.train.size

    @property
    def test_samples(self) -> int:
        return self.test.size

    @torch.no_grad()
    def _embed_all(self, split: _Split) -> torch.Tensor:
        """Every sentence's word embeddings [N, W, H] (embeddings: cached), outside timing."""
        parts = []
        for start in range(0, split.size, 256):
            index = torch.arange(start, min(start + 256, split.size))
            batch = self._batch(split, index, index.to(self.device), full_width=True)
            with self._autocast():
                parts.append(self.encoder(*batch["pieces"]).float())
        return torch.cat(parts)

    def _load(self, auto_class: str, seed: int, **options: Any) -> torch.nn.Module:
        """The checkpoint's BERT (weights: pretrained); the record learns what was loaded."""
        from devicebench.frameworks import pretrained

        net, info = pretrained.load_model(
            auto_class, self.settings["model"], self.source, self.num_labels, seed, **options
        )
        self.weights = info
        return net

    def new_model(self, seed: int) -> None:
        """A fresh model and optimizer from `seed`; the frozen BERT stays as it is."""
        if self.source is not None and self.architecture == "bert_tokencls":
            bert = self._load("AutoModelForTokenClassification", seed)
            self.model = ner_models.BertTokenClassifier(self.config, bert)
        else:
            self.model = build_trained(self.architecture, self.config, self.num_chars, seed)
        self.model.to(self.device)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=float(self.settings["learning_rate"])
        )
        self.host_generator.manual_seed(seed)

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def _batch(
        self, split: _Split, host_index: torch.Tensor, index: torch.Tensor, full_width=False
    ) -> dict[str, Any]:
        """A batch cut to its longest sentence; lengths come from the host, never the device."""
        t = split.tensors
        pieces = int(split.pieces[host_index].max())
        words = t["word_start"].shape[1] if full_width else int(split.words[host_index].max())
        return {
            "pieces": (
                t["input_ids"][index, :pieces],
                t["attention_mask"][index, :pieces],
                t["word_start"][index, :words],
            ),
            "token_labels": t["token_labels"][index, :pieces],
            "word_labels": t["word_labels"][index, :words],
            "chars": t["chars"][index, :words],
            "lengths": split.words[host_index].clamp(min=1),
            "index": index,
            "words": words,
        }

    def _logits(self, split: _Split, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits, labels) of a batch: per piece for bert_tokencls, per word for the tagger."""
        if self.architecture == "bert_tokencls":
            ids, mask, _ = batch["pieces"]
            return self.model(ids, mask), batch["token_labels"]
        if split.cache is not None:
            embedded = split.cache[batch["index"], : batch["words"]]
        else:
            embedded = self.encoder(*batch["pieces"])
        return self.model(embedded, batch["chars"], batch["lengths"]), batch["word_labels"]

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        flat = logits.float().reshape(-1, logits.shape[-1])
        return F.cross_entropy(flat, labels.reshape(-1), ignore_index=IGNORE)

    def train_steps(self, steps: int) -> None:
        """`steps` optimizer steps over one shuffled pass; synchronizes at the end."""
        model, optimizer, batch_size, split = (
            self.model,
            self.optimizer,
            self.batch_size,
            self.train,
        )
        model.train()
        order = torch.randperm(split.size, generator=self.host_generator)
        order_device = order.to(self.device, non_blocking=True)
        for step in range(steps):
            window = slice(step * batch_size, (step + 1) * batch_size)
            batch = self._batch(split, order[window], order_device[window])
            with self._autocast():
                loss = self._loss(*self._logits(split, batch))
            optimizer.zero_grad(set_to_none=True)
            if self.scaler.is_enabled():
                self.scaler.scale(loss).backward()
                self.scaler.step(optimizer)
                self.scaler.update()
            else:
                loss.backward()
                optimizer.step()
        self.sync()

    def _test_batches(self, steps: int | None = None):
        count = steps if steps is not None else -(-self.test.size // self.batch_size)
        for step in range(count):
            host = torch.arange(
                step * self.batch_size, min((step + 1) * self.batch_size, self.test.size)
            )
            yield self._batch(self.test, host, host.to(self.device, non_blocking=True))

    @torch.inference_mode()
    def infer_batches(self, steps: int) -> list[float]:
        """Forward `steps` test batches in order; each batch's latency in seconds."""
        self.model.eval()

        def forward(batch) -> None:
            with self._autocast():
                self._logits(self.test, batch)

        return timed_batches(self.device, self._test_batches(steps), forward, self.sync)

    @torch.inference_mode()
    def evaluate(self) -> tuple[np.ndarray, float]:
        """Word-level label ids [N, W] for the whole test set and its mean loss (untimed)."""
        self.model.eval()
        width = self.test.tensors["word_start"].shape[1]
        predicted = torch.zeros((self.test.size, width), dtype=torch.int64)
        total, count = torch.zeros((), device=self.device), 0
        for batch in self._test_batches():
            with self._autocast():
                logits, labels = self._logits(self.test, batch)
            total += self._loss(logits, labels) * len(labels)
            count += len(labels)
            if self.architecture == "bert_tokencls":  # the first piece of each word
                starts = batch["pieces"][2].unsqueeze(-1).expand(-1, -1, logits.shape[-1])
                logits = logits.gather(1, starts)
            rows = batch["index"].cpu()
            predicted[rows, : logits.shape[1]] = logits.argmax(-1).cpu()
        return predicted.numpy(), float(total.item() / count)

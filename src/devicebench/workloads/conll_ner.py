"""conll_ner: token-classification NER on CoNLL-2003, the Spark NLP NER benchmark's workload.

Data: the CoNLL-2003 English files (``path``: a folder holding train/testa/testb in the column
format) or ``synthetic`` sentences written in the same format; models are scored on testa (3,250
sentences, the study's test set). Preparation parses every file (a malformed line stops it,
naming file and line), builds the WordPiece vocabulary from the training words and pins every
file by SHA-256 in the manifest. Models: see ner_models. Quality: entity-level precision, recall
and F1 (micro and macro, exact spans, seqeval) and token accuracy. Axes: ``embedding`` (live,
cached) and ``train_fraction`` (the share of training sentences a cell trains on).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.data import conll, wordpiece
from devicebench.data.download import DataIntegrityError, sha256_file, verify_file

DATASET = "conll2003"
SOURCES = ("synthetic", "path")  # no public download with a published checksum exists
TOKENIZER = "tokenizer.json"
TEST_SPLIT = "testa"  # the Spark NLP study's 3,250 test sentences
MAX_PIECES, MAX_CHARS = 128, 20
ORIGINAL = {
    "epochs": 10,
    "learning_rate": 0.003,
    "batch_sizes": (32, 64, 256, 512, 1024, 2048),
}


@dataclass
class NerDataset:
    """Loaded conll_ner data: encoded splits, the test sentences to score, where it came from."""

    train: Any  # NerArrays
    test: Any  # NerArrays
    test_sentences: list[conll.Sentence]
    num_labels: int
    num_chars: int
    vocab_size: int
    name: str
    source: str
    synthetic: bool
    train_fraction: float


def prepare(
    source: str,
    out_dir: str | Path,
    *,
    train_samples: int | None = None,
    test_samples: int | None = None,
    seed: int = 0,
    path: str | Path | None = None,
    expected_sha256: Mapping[str, str] | None = None,
) -> Path:
    """Write the CoNLL files, the tokenizer and a manifest pinning them; return its path."""
    if source not in SOURCES:
        raise ValueError(
            f"unknown conll2003 source {source!r}; choose one of {SOURCES} (CoNLL-2003 has no "
            "public download with a published checksum: use path with your copy)"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").unlink(missing_ok=True)  # a half-prepared folder must not look ready
    if source == "synthetic":
        sizes = {
            "train": train_samples or conll.SIZES["train"],
            "testa": test_samples or conll.SIZES["testa"],
            "testb": test_samples or conll.SIZES["testb"],
        }
        files = conll.write_synthetic(out, seed, sizes)
    else:
        if path is None:
            raise ValueError("source 'path' needs path=<folder holding eng.train, eng.testa, …>")
        files = {}
        for split in conll.SPLITS:
            src = conll.find_file(Path(path), split)
            if expected_sha256 and src.name in expected_sha256:
                verify_file(src, expected_sha256[src.name])
            files[split] = out / conll.FILE_NAMES[split][0]
            shutil.copyfile(src, files[split])
    splits = {split: conll.read_conll(p) for split, p in files.items()}  # all, before any work
    tokenizer = wordpiece.train_wordpiece(s.words for s in splits["train"])
    files["tokenizer"] = wordpiece.save(tokenizer, out / TOKENIZER)
    manifest = {
        "dataset": DATASET,
        "source": source,
        "synthetic": source == "synthetic",
        "train_samples": _count("train_samples", train_samples, len(splits["train"])),
        "test_samples": _count("test_samples", test_samples, len(splits[TEST_SPLIT])),
        "seed": seed if source == "synthetic" else None,
        "files": [
            {"name": p.name, "role": role, "sha256": sha256_file(p), "size": p.stat().st_size}
            for role, p in files.items()
        ],
    }
    manifest_path = out / "manifest.json"
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(manifest_path)
    return manifest_path


def _count(what: str, n: int | None, available: int) -> int:
    if n is None:
        return available
    if not 0 < n <= available:
        raise ValueError(f"{what}={n} must be between 1 and {available}, the number available")
    return n


def _verified(manifest: Path) -> tuple[dict, dict[str, Path]]:
    info = json.loads(manifest.read_text())
    if info.get("dataset") != DATASET:
        raise DataIntegrityError(f"{manifest} is not a {DATASET} manifest")
    paths = {}
    for entry in info["files"]:
        paths[entry["role"]] = manifest.parent / entry["name"]
        verify_file(paths[entry["role"]], entry["sha256"])
    return info, paths


def load(
    manifest: str | Path,
    *,
    train_samples: int | None = None,
    test_samples: int | None = None,
    train_fraction: float = 1.0,
    seed: int = 0,
) -> NerDataset:
    """Verify, parse and encode; train on a seeded `train_fraction` of the training sentences."""
    from devicebench.workloads.ner_inputs import char_vocabulary, encode

    if not 0 < train_fraction <= 1:
        raise ValueError(f"train_fraction={train_fraction} must be in (0, 1]")
    info, paths = _verified(Path(manifest))
    train = conll.read_conll(paths["train"])
    test = conll.read_conll(paths[TEST_SPLIT])
    train = train[: _count("train_samples", train_samples or info["train_samples"], len(train))]
    test = test[: _count("test_samples", test_samples or info["test_samples"], len(test))]
    chars = char_vocabulary(train)
    keep = max(1, round(train_fraction * len(train)))
    order = np.random.default_rng(seed).permutation(len(train))[:keep]
    train = [train[i] for i in sorted(order)]
    tokenizer = wordpiece.load(paths["tokenizer"])
    options = {"max_len": MAX_PIECES, "max_chars": MAX_CHARS}
    return NerDataset(
        train=encode(train, tokenizer, chars, **options),
        test=encode(test, tokenizer, chars, **options),
        test_sentences=test,
        num_labels=len(conll.LABELS),
        num_chars=len(chars) + 2,
        vocab_size=wordpiece.BERT_VOCAB,
        name=DATASET,
        source=info["source"],
        synthetic=bool(info["synthetic"]),
        train_fraction=train_fraction,
    )


def quality(dataset: NerDataset, predicted: np.ndarray, loss: float) -> dict[str, float]:
    """Entity-level scores (seqeval) and token accuracy of word-level predictions [N, W]."""
    from devicebench.workloads.ner_inputs import decode
    from devicebench.workloads.ner_metrics import entity_scores

    tags = decode(predicted, dataset.test, dataset.test_sentences)
    scores = entity_scores([s.tags for s in dataset.test_sentences], tags)
    return scores | {"loss": loss}

"""IMDb reviews from the aclImdb text archive, tokenised here into word ids.

Why the text archive: the Keras ``imdb.npz`` stores ragged object arrays that only load with
pickle, and the study never unpickles a downloaded file. The archive's reviews are read straight
out of ``aclImdb_v1.tar.gz`` (no extraction), lower-cased, stripped of ``<br />`` and split into
``[a-z0-9']+`` words; the vocabulary is the training split's most frequent words (ties broken
alphabetically): id 0 pads, 1 is out-of-vocabulary, 2 … vocab_size-1 are words. Each review keeps
its last 400 ids, right-aligned and left-padded with 0 (Keras ``pad_sequences`` defaults), and
each split is shuffled with a fixed seed so that its first N samples hold both classes.
The synthetic source writes the same archive layout with pseudo-word reviews whose class shows
in the words they use, so one reader serves both sources.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections import Counter
from pathlib import Path

import numpy as np

VOCAB_SIZE, STORED_LEN = 20_000, 400
PAD, OOV = 0, 1
_MEMBER = re.compile(r"^aclImdb/(train|test)/(pos|neg)/[^/]+\.txt$")
_WORD = re.compile(r"[a-z0-9']+")


class ImdbFormatError(ValueError):
    """An archive without the aclImdb layout, or with reviews that are not UTF-8 text."""


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("<br />", " "))


def _read_reviews(path: Path) -> dict[str, list[tuple[list[str], int]]]:
    reviews: dict[str, list[tuple[str, list[str], int]]] = {"train": [], "test": []}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                match = _MEMBER.match(member.name)
                if not match or not member.isfile():
                    continue
                text = tar.extractfile(member).read().decode("utf-8")
                split, label = match.group(1), int(match.group(2) == "pos")
                reviews[split].append((member.name, tokenize(text), label))
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as e:
        raise ImdbFormatError(f"{path}: not a readable aclImdb tar.gz archive ({e})") from e
    for split, items in reviews.items():
        if not items:
            raise ImdbFormatError(f"{path}: no aclImdb/{split}/(pos|neg)/*.txt reviews")
        items.sort(key=lambda item: item[0])
    return {
        split: [(words, label) for _, words, label in items] for split, items in reviews.items()
    }


def read_texts(path: Path) -> dict[str, list[tuple[list[str], int]]]:
    """Each split's reviews as (words, label) in member-name order, before read_archive's shuffle
    (for tokenizers trained on the text itself)."""
    return _read_reviews(path)


def build_vocabulary(texts: list[list[str]], size: int = VOCAB_SIZE) -> dict[str, int]:
    counts = Counter(word for words in texts for word in words)
    ranked = sorted(counts, key=lambda w: (-counts[w], w))[: size - 2]
    return {word: index + 2 for index, word in enumerate(ranked)}


def encode(words: list[str], vocab: dict[str, int], length: int = STORED_LEN) -> np.ndarray:
    ids = np.array([vocab.get(w, OOV) for w in words][-length:] or [], dtype=np.int32)
    out = np.full(length, PAD, dtype=np.int32)
    if len(ids):
        out[-len(ids) :] = ids
    return out


def read_archive(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Train and test splits: ids (N×400 int32) and labels (1 = positive)."""
    reviews = _read_reviews(path)
    vocab = build_vocabulary([words for words, _ in reviews["train"]])
    splits = {}
    for seed, split in enumerate(("train", "test")):
        x = np.stack([encode(words, vocab) for words, _ in reviews[split]])
        y = np.array([label for _, label in reviews[split]], dtype=np.uint8)
        order = np.random.default_rng(seed).permutation(len(y))
        splits[split] = (x[order], y[order])
    return splits


def synthetic_reviews(seed: int, n: int, split: str) -> list[tuple[str, int]]:
    """Pseudo-word reviews: Zipf-distributed filler plus words that lean to one class."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 20, split == "test"]))
    words = np.array([f"w{i}" for i in range(VOCAB_SIZE - 2)])
    zipf = 1.0 / np.arange(1, len(words) + 1)
    zipf /= zipf.sum()
    cues = {0: words[100:300:2], 1: words[101:301:2]}
    labels = rng.permutation(np.arange(n) % 2)
    out = []
    for label in labels:
        length = int(rng.integers(40, 300))
        text = rng.choice(words, size=length, p=zipf)
        slots = rng.random(length) < 0.15
        text[slots] = rng.choice(cues[int(label)], size=int(slots.sum()))
        out.append((" ".join(text), int(label)))
    return out


def write_synthetic(path: Path, seed: int, n_train: int, n_test: int) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for split, n in (("train", n_train), ("test", n_test)):
            for i, (text, label) in enumerate(synthetic_reviews(seed, n, split)):
                data = text.encode()
                info = tarfile.TarInfo(f"aclImdb/{split}/{'pos' if label else 'neg'}/{i}_0.txt")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

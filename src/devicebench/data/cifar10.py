"""CIFAR-10, binary version: records of one label byte and 3,072 pixel bytes (R, G, B planes).

The loader reads the record files straight out of the published ``cifar-10-binary.tar.gz`` (no
extraction, no pickle: the Python version of CIFAR-10 is pickled and never read here). The
synthetic generator writes the same archive layout, so one reader serves both sources.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np

from devicebench.data import synthetic

FOLDER = "cifar-10-batches-bin"
TRAIN_FILES = tuple(f"{FOLDER}/data_batch_{i}.bin" for i in range(1, 6))
TEST_FILES = (f"{FOLDER}/test_batch.bin",)
SHAPE = (3, 32, 32)
RECORD = 1 + 3 * 32 * 32
NUM_CLASSES = 10
CLASSES = "airplane automobile bird cat deer dog frog horse ship truck".split()


class CifarFormatError(ValueError):
    """A CIFAR-10 binary archive whose layout or records are not what the format says."""


def decode_records(raw: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Images (N×3×32×32 uint8) and labels from concatenated binary records."""
    if len(raw) % RECORD:
        raise CifarFormatError(
            f"{where}: {len(raw)} bytes is not a whole number of {RECORD}-byte records "
            "(truncated file?)"
        )
    records = np.frombuffer(raw, dtype=np.uint8).reshape(-1, RECORD)
    labels = records[:, 0].copy()
    if labels.size and labels.max() >= NUM_CLASSES:
        raise CifarFormatError(f"{where}: label {int(labels.max())} is not below {NUM_CLASSES}")
    return records[:, 1:].reshape(-1, *SHAPE).copy(), labels


def encode_records(images: np.ndarray, labels: np.ndarray) -> bytes:
    """The binary records for images (N×3×32×32 uint8) and labels."""
    flat = images.reshape(len(images), -1).astype(np.uint8)
    return np.concatenate([labels.astype(np.uint8)[:, None], flat], axis=1).tobytes()


def read_archive(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Train and test splits from the archive (members are read, never extracted)."""
    splits = {}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for split, names in (("train", TRAIN_FILES), ("test", TEST_FILES)):
                parts = []
                for name in names:
                    try:
                        member = tar.extractfile(name)
                    except KeyError:
                        raise CifarFormatError(f"{path}: member {name} is missing") from None
                    parts.append(decode_records(member.read(), f"{path}:{name}"))
                splits[split] = (
                    np.concatenate([p[0] for p in parts]),
                    np.concatenate([p[1] for p in parts]),
                )
    except (tarfile.TarError, EOFError, OSError) as e:
        raise CifarFormatError(f"{path}: not a readable tar.gz archive ({e})") from e
    return splits


def write_archive(path: Path, splits: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """Write splits in the published layout (training records spread over five files)."""
    members = {f"{FOLDER}/batches.meta.txt": ("\n".join(CLASSES) + "\n").encode()}
    images, labels = splits["train"]
    for name, index in zip(TRAIN_FILES, np.array_split(np.arange(len(labels)), 5), strict=True):
        members[name] = encode_records(images[index], labels[index])
    members[TEST_FILES[0]] = encode_records(*splits["test"])
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def make_synthetic(seed: int, n: int, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Learnable 32×32 colour images: a smooth colour pattern per class, shifted, plus noise."""
    child = np.random.SeedSequence([seed, 10]).spawn(3)
    glyph_rng = np.random.default_rng(child[0])
    side, shift = 38, 3
    glyphs = synthetic._upsample(glyph_rng.standard_normal((NUM_CLASSES, 3, 5, 5)), side)
    glyphs = (glyphs - glyphs.min()) / (glyphs.max() - glyphs.min())
    rng = np.random.default_rng(child[1 if split == "train" else 2])
    labels = rng.permutation(np.arange(n) % NUM_CLASSES).astype(np.uint8)
    dy, dx = rng.integers(0, 2 * shift + 1, size=(2, n))
    rows = dy[:, None] + np.arange(32)[None, :]
    cols = dx[:, None] + np.arange(32)[None, :]
    img = glyphs[
        labels[:, None, None, None],
        np.arange(3)[None, :, None, None],
        rows[:, None, :, None],
        cols[:, None, None, :],
    ]
    img = img * rng.uniform(0.7, 1.1, size=(n, 1, 1, 1)) + 0.08 * rng.standard_normal(img.shape)
    return np.clip(np.rint(img * 255.0), 0, 255).astype(np.uint8), labels

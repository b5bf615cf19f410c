"""Images as a scoring service receives them: JPEG files in a zip (``train/`` and ``test/``).

Each member is ``<split>/<index>_<label>.jpg``. Synthetic images are CIFAR-10-style class patterns
upscaled to SIZE and JPEG-encoded once, at data preparation, so a serve cell sends real JPEG bytes
and the server decodes them as a service would. Real images come as a zip in the same layout
(source ``path``, with the user's SHA-256). Only JPEG bytes are kept: decoding is the server's job.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import numpy as np

from devicebench.data import cifar10

SIZE = 224
QUALITY = 90
NUM_CLASSES = 10
_MEMBER = re.compile(r"^(train|test)/(\d+)_(\d+)\.jpe?g$")


class JpegFormatError(ValueError):
    """A JPEG zip whose members do not follow ``<split>/<index>_<label>.jpg``."""


def encode_jpeg(image_hwc: np.ndarray, quality: int = QUALITY) -> bytes:
    """JPEG bytes of one H×W×3 uint8 image."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image_hwc).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def make_synthetic(seed: int, n: int, split: str, size: int = SIZE) -> tuple[list[bytes], list]:
    """`n` JPEG-encoded synthetic images of `size`×`size` and their labels."""
    from PIL import Image

    images, labels = cifar10.make_synthetic(seed, n, split)
    encoded = []
    for chw in images:
        small = Image.fromarray(np.ascontiguousarray(chw.transpose(1, 2, 0)))
        encoded.append(encode_jpeg(np.asarray(small.resize((size, size), Image.BILINEAR))))
    return encoded, [int(label) for label in labels]


def write_archive(path: Path, splits: dict[str, tuple[list[bytes], list[int]]]) -> None:
    """A stored (uncompressed: JPEG is compressed already) zip of every split's images."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for split, (payloads, labels) in splits.items():
            for index, (payload, label) in enumerate(zip(payloads, labels, strict=True)):
                archive.writestr(f"{split}/{index:06d}_{label}.jpg", payload)


def read_archive(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per split: an object array of JPEG bytes, in index order, and int64 labels."""
    found: dict[str, list[tuple[int, int, bytes]]] = {"train": [], "test": []}
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            if name.endswith("/"):
                continue
            match = _MEMBER.match(name)
            if not match:
                raise JpegFormatError(
                    f"{path}: member {name!r} is not <train|test>/<index>_<label>.jpg"
                )
            split, index, label = match.group(1), int(match.group(2)), int(match.group(3))
            found[split].append((index, label, archive.read(name)))
    splits = {}
    for split, items in found.items():
        items.sort()
        payloads = np.empty(len(items), dtype=object)
        payloads[:] = [item[2] for item in items]
        splits[split] = (payloads, np.array([item[1] for item in items], dtype=np.int64))
    return splits

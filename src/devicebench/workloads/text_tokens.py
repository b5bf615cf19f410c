"""text_classify's token arrays, made once per data set, tokenizer, seq_len and split sizes.

Every text_classify cell read the review archive and ran WordPiece over each review again: about
5 s of a 2-core VM cell's fixed cost at the H100 study's size (8,192 + 2,048 reviews), for arrays
that are the same each time. The first cell writes them beside the manifest (atomically, as the
tokenizer is); the others load them. The key holds the archive's SHA-256 from the verified
manifest and the tokenizer file's own, so other data or another tokenizer never hits it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from devicebench.atomic import atomic_path

Splits = dict[str, dict[str, np.ndarray]]


def cache_path(
    manifest: Path, info: dict, tokenizer_file: Path, seq_len: int, counts: dict
) -> Path:
    """Where the arrays of this data, tokenizer, seq_len and split sizes are kept."""
    files = sorted((f["name"], f["sha256"]) for f in info["files"])
    tokenizer = hashlib.sha256(tokenizer_file.read_bytes()).hexdigest()
    key = json.dumps([files, tokenizer, int(seq_len), sorted(counts.items())])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return manifest.parent / f"tokens-{seq_len}-{digest}.npz"


def cached_splits(path: Path, make: Callable[[], Splits]) -> Splits:
    """The arrays stored at `path`, or made now by `make` and stored there (where writable)."""
    if path.exists():
        with np.load(path) as stored:
            splits: Splits = {}
            for name in stored.files:
                split, key = name.split("/", 1)
                splits.setdefault(split, {})[key] = stored[name]
            return splits
    splits = make()
    arrays = {
        f"{split}/{key}": value for split, part in splits.items() for key, value in part.items()
    }
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, **arrays)
    except OSError:  # a read-only data folder: every cell tokenizes, as before
        pass
    return splits

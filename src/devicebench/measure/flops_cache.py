"""FLOP counts kept on disk, once per model and shape: a cell of a model already counted reads
them instead of building and tracing the network again (1-3 s a cell on the GPU host).

The key is the task, the model, the settings a count depends on (the task's own axes: seq_len,
image size ...; the weights and the dataset) and a digest of the code that counts (workloads,
frameworks, the counter and its formulas), so a change to any of them counts afresh. The folder
is DEVICEBENCH_FLOPS_CACHE, else results/cache/flops of the repository.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from devicebench.atomic import atomic_path
from devicebench.cache_dirs import cache_folder

PACKAGE = Path(__file__).resolve().parents[1]
# Settings besides a task's own axes that a count may depend on.
SHAPE_SETTINGS = ("weights", "pretrained", "dataset")


def cache_dir() -> Path:
    return cache_folder("DEVICEBENCH_FLOPS_CACHE", PACKAGE.parents[1] / "results/cache/flops")


@cache
def code_digest() -> str:
    """A digest of every source file a count runs through."""
    digest = hashlib.sha256()
    folders = [PACKAGE / "workloads", PACKAGE / "frameworks"]
    files = [p for folder in folders for p in sorted(folder.rglob("*.py"))]
    files += [PACKAGE / "measure" / "flops.py", PACKAGE / "measure" / "flop_formulas.py"]
    for path in files:
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(task: str, model: str, axes: tuple[str, ...], cell: Mapping[str, Any]) -> str:
    shape = {k: cell[k] for k in (*axes, *SHAPE_SETTINGS) if k in cell}
    blob = json.dumps([task, model, shape, code_digest()], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def cached(key: str, count: Callable[[], dict[str, float | None]]) -> dict[str, float | None]:
    """The counts under `key`, counted now (and kept) where the cache has none."""
    path = cache_dir() / f"{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    counts = count()
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(counts))
    except OSError:  # a read-only tree still counts, it only does not keep the count
        pass
    return counts

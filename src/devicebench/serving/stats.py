"""What a uvicorn scoring server counts: answers, rejections and the batch sizes it formed.

One row of counters per replica in a table of int64. A one-process server keeps its table in
memory; replicas (supervisor.py) share one memory-mapped file, each writing only its own row (one
writer per row: no lock), so GET /stats, answered by whichever replica took the connection,
sums them all, including replicas that died and were started again.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

import numpy as np

COUNTS = ("ok", "rejected_400", "rejected_408", "rejected_413", "rejected_415")
# full garbage collections while serving and their summed pause (gc_pause.py)
COUNTS += ("gc_full_collections", "gc_full_pause_us")
HEAD = ("pid", "starts", "peak_rss_kb", *COUNTS)  # then one column per batch size 0..max_batch
COLUMN = {name: index for index, name in enumerate(HEAD)}


class ServerStats:
    """The counters of replica `slot` in a table of `replicas` rows."""

    def __init__(self, rows: np.ndarray, slot: int = 0):
        self.rows, self.slot = rows, slot
        self.max_batch = rows.shape[1] - len(HEAD) - 1

    @classmethod
    def in_memory(cls, max_batch: int) -> ServerStats:
        """The table of a server of one process."""
        return cls(np.zeros((1, len(HEAD) + max_batch + 1), dtype=np.int64))

    @classmethod
    def shared(cls, path: Path, replicas: int, max_batch: int, slot: int = 0) -> ServerStats:
        """The table in the file at `path`, made (zeroed) when it does not exist yet."""
        shape = (replicas, len(HEAD) + max_batch + 1)
        mode = "r+" if path.exists() else "w+"
        return cls(np.memmap(path, dtype=np.int64, mode=mode, shape=shape), slot)

    def started(self) -> None:
        """This process now serves the row (the first time, or after its predecessor died)."""
        self.rows[self.slot, COLUMN["pid"]] = os.getpid()
        self.rows[self.slot, COLUMN["starts"]] += 1
        self._peak()

    def count(self, name: str, amount: int = 1) -> None:
        if name not in COLUMN or name in HEAD[:3]:
            raise KeyError(f"not a server count: {name!r}; counts: {', '.join(COUNTS)}")
        self.rows[self.slot, COLUMN[name]] += amount

    def batch(self, size: int) -> None:
        """A batch of `size` requests (before padding) was scored."""
        self.rows[self.slot, len(HEAD) + size] += 1
        self._peak()

    def _peak(self) -> None:
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        column = COLUMN["peak_rss_kb"]
        self.rows[self.slot, column] = max(int(self.rows[self.slot, column]), peak_kb)

    def snapshot(self) -> dict[str, Any]:
        """The sums over all replicas; with more than one, each replica's own row as well."""
        self._peak()
        rows = np.array(self.rows)
        out = _summary(rows.sum(axis=0))
        del out["pid"], out["starts"]  # a replica's own, not a sum
        out["peak_rss_mb"] = float(rows[:, COLUMN["peak_rss_kb"]].sum()) / 1024
        if len(rows) > 1:
            out["replicas"] = {str(slot): _summary(row) for slot, row in enumerate(rows)}
        return out


def _summary(row: np.ndarray) -> dict[str, Any]:
    sizes = row[len(HEAD) :]
    summary: dict[str, Any] = {
        "batch_sizes": {str(size): int(n) for size, n in enumerate(sizes) if n},
        "counts": {name: int(row[COLUMN[name]]) for name in COUNTS if row[COLUMN[name]]},
        "peak_rss_mb": float(row[COLUMN["peak_rss_kb"]]) / 1024,
    }
    summary |= {"pid": int(row[COLUMN["pid"]]), "starts": int(row[COLUMN["starts"]])}
    return summary

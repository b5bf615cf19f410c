"""Whether a cell's results folder can take its record, checked before the cell measures anything.

An unwritable or full results folder used to be found only when the record was written, after
the whole measurement: the result was lost, with a raw traceback (a full disk's message named no
file). `check_output` makes the folder, writes and syncs a small probe file in it and checks its
free space, and raises OutputUnusable naming the folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# A record is tens of KB, a serve cell's logs and LoadGen's files a few MB: 64 MB leaves room.
# DEVICEBENCH_MIN_FREE_MB changes it (e.g. larger on a shared scratch disk).
MIN_FREE_MB = 64


class OutputUnusable(RuntimeError):
    """The results folder cannot take the cell's record (the message names it and why)."""


def min_free_mb() -> int:
    return int(os.environ.get("DEVICEBENCH_MIN_FREE_MB", MIN_FREE_MB))


def check_output(path: Path, *folders: Path) -> None:
    """Raise OutputUnusable unless the folder of `path` (and each of `folders`, e.g. the cell's
    log folder) can be created, written and has at least min_free_mb() free."""
    for folder in (Path(path).parent, *map(Path, folders)):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise OutputUnusable(f"results folder {folder} cannot be created: {error}") from None
        try:
            fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-check-")
            try:
                os.write(fd, b"\0" * 4096)
                os.fsync(fd)
            finally:
                os.close(fd)
                os.unlink(probe)
        except OSError as error:
            raise OutputUnusable(f"results folder {folder} is not writable: {error}") from None
        free_mb = shutil.disk_usage(folder).free / 2**20
        if free_mb < min_free_mb():
            raise OutputUnusable(
                f"results folder {folder} has {free_mb:,.0f} MB free, less than the "
                f"{min_free_mb():,} MB a cell needs (DEVICEBENCH_MIN_FREE_MB)"
            )

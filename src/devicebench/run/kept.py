"""A cell's last record kept aside (`<record>~kept`) until its successor is written.

Snakemake removes a job's output before it runs the job again (a changed input, code or
config), so a rerun that dies, or fails on a broken input, would leave the cell with no record
at all: the measurement is gone. Each record written is therefore also linked (a hard link: no
space) at `<record>~kept`, which Snakemake does not know and never removes. The next record of
the cell replaces the link; where that successor is a failure and the kept record was ok, the
ok one is moved to `<record>~<its created date>` first, so a good measurement is never lost to a
failed rerun. To restore one by hand: `cp '<record>~kept' '<record>'`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from devicebench.atomic import atomic_path


def kept_path(record_path: str | os.PathLike[str]) -> Path:
    """Where the last record of the cell whose record is `record_path` is kept."""
    path = Path(record_path)
    return path.with_name(f"{path.name}~kept")


def keep(record_path: str | os.PathLike[str], record: dict[str, Any]) -> Path | None:
    """Keep the record just written at `record_path` aside; returns where an ok predecessor
    replaced by a failure was moved (None if none was)."""
    path, kept = Path(record_path), kept_path(record_path)
    moved = None
    if record.get("status") != "ok" and (previous := _read(kept)):
        if previous.get("status") == "ok":
            created = str(previous.get("provenance", {}).get("created") or "undated")
            moved = path.with_name(f"{path.name}~{re.sub(r'[^0-9A-Za-z:+-]', '_', created)}")
            os.replace(kept, moved)
    with atomic_path(kept) as tmp:
        tmp.unlink()
        try:
            os.link(path, tmp)
        except OSError:  # a file system without hard links
            shutil.copyfile(path, tmp)
    return moved


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None

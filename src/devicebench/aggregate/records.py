"""Reading one cell record for the aggregates: a record that is not what a cell writes is reported
with its path and what is wrong (an `error` row in not_ok), never a crash and never an `ok` row.

A record `[]` crashed the serving table (AttributeError, no file named); a record whose status
said ok but that held no timings showed as an `ok` row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STATUSES = ("ok", "oom", "timeout", "error", "skipped")


def problem(record: Any) -> str | None:
    """What makes `record` (parsed JSON) not a cell record, or None when it is one."""
    if not isinstance(record, Mapping):
        return f"not a JSON object but {type(record).__name__}"
    axes = record.get("axes")
    if not isinstance(axes, Mapping):
        return "no axes"
    status = record.get("status")
    if status not in STATUSES:
        return f"status {status!r} is none of {', '.join(STATUSES)}"
    if status != "ok":
        return None
    timings = record.get("timings")
    if not isinstance(timings, Mapping) or not timings:
        return "status ok but no timings"
    throughput = record.get("throughput")
    if not isinstance(throughput, Mapping) or not _number(throughput.get("samples_per_s")):
        return "status ok but no throughput.samples_per_s"
    if not axes.get("mode"):
        return "status ok but no mode among its axes"
    if axes["mode"] == "serve":
        if not isinstance(record.get("serving"), Mapping):
            return "status ok but no serving section"
    elif not _number(timings.get("median_s")):
        return "status ok but no timings.median_s"
    return None


def read_record(path: str | Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the record, None), or (None, why it cannot be used: the path and the reason)."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return None, f"unreadable record {path}: {error}"
    wrong = problem(record)
    if wrong:
        return None, f"malformed record {path}: {wrong}"
    return dict(record), None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

"""Reading one cell record for the aggregates: a record that is not what a cell writes is reported
with its path and what is wrong (an `error` row in not_ok), never a crash and never an `ok` row.

A record `[]` crashed the serving table (AttributeError, no file named); a record whose status
said ok but that held no timings showed as an `ok` row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from devicebench.scenarios import modes

STATUSES = ("ok", "oom", "timeout", "error", "skipped")
SCHEMA_VERSIONS = (1,)  # the record layouts this reader knows (devicebench.record)


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
    version = record.get("schema_version", 1)  # absent: hand-made (tests), read as the first
    if version not in SCHEMA_VERSIONS:
        return f"schema version {version!r} is not one this reader knows ({SCHEMA_VERSIONS})"
    if status != "ok":
        return None
    timings = record.get("timings")
    if not isinstance(timings, Mapping) or not timings:
        return "status ok but no timings"
    throughput = record.get("throughput")
    if not isinstance(throughput, Mapping) or not _number(throughput.get("samples_per_s")):
        return "status ok but no throughput.samples_per_s"
    if not _positive(throughput["samples_per_s"]):
        return f"throughput.samples_per_s {throughput['samples_per_s']!r} is not a positive number"
    if not axes.get("mode"):
        return "status ok but no mode among its axes"
    if axes["mode"] in modes(serves=True):
        if not isinstance(record.get("serving"), Mapping):
            return "status ok but no serving section"
        return None
    if not _number(timings.get("median_s")):
        return "status ok but no timings.median_s"
    return _timing_problem(timings, throughput, str(axes["mode"]))


def _timing_problem(timings: Mapping[str, Any], throughput: Mapping[str, Any], mode: str):
    """Timings that do not add up: a median that is not the repetitions' median, a throughput
    that is not the pass's samples over it, a timed window that ends before it starts."""
    median = timings["median_s"]
    if not _positive(median):
        return f"timings.median_s {median!r} is not a positive number"
    repetitions = timings.get("repetitions_s")
    if isinstance(repetitions, list) and repetitions:
        if not all(_positive(r) for r in repetitions):
            return "timings.repetitions_s holds a value that is not a positive number"
        middle = sorted(repetitions)
        n = len(middle)
        expected = (middle[(n - 1) // 2] + middle[n // 2]) / 2
        if not math.isclose(expected, median, rel_tol=1e-6):
            return f"timings.median_s {median!r} is not the median of repetitions_s ({expected!r})"
    samples = throughput.get("samples_per_pass")
    if mode in modes(fixed_passes=True) and _positive(samples):
        rate = samples / median
        if not math.isclose(rate, throughput["samples_per_s"], rel_tol=1e-3):
            return (
                f"throughput.samples_per_s {throughput['samples_per_s']!r} is not "
                f"samples_per_pass / median_s ({rate:.6g})"
            )
    start, end = timings.get("timed_start"), timings.get("timed_end")
    if _number(start) and _number(end) and not end >= start:
        return f"timings.timed_end {end!r} is before timed_start {start!r}"
    return None


def duplicates(rows: list[Mapping[str, Any]]) -> dict[int, str]:
    """Rows (by index) whose cell_id another row has too, with the other paths: none of them can
    be the cell's one measurement."""
    paths: dict[Any, list[str]] = {}
    for row in rows:
        if isinstance(row.get("cell_id"), str):
            paths.setdefault(row["cell_id"], []).append(str(row.get("record_path")))
    found = {}
    for index, row in enumerate(rows):
        same = paths.get(row.get("cell_id"), [])
        if len(same) > 1:
            others = [p for p in same if p != str(row.get("record_path"))]
            found[index] = f"duplicate cell id {row['cell_id']}: also in {', '.join(others)}"
    return found


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


def _positive(value: Any) -> bool:
    """A finite number above zero (JSON's NaN and Infinity parse as floats)."""
    return _number(value) and math.isfinite(value) and value > 0

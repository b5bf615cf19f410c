"""Where a cell's time goes outside its timed window: its fixed cost, per record and per group.

A cell's fixed cost (process start, imports, data, model, warm-up: everything before
`timings.timed_start`) and its tail (after `timings.timed_end` until the record is written) decide
how many cells a lease holds. New records carry `timings.marks` (devicebench.measure.marks); older
ones only `timed_start`/`timed_end` and `provenance.created` (whole seconds, taken by the runner
before its worker starts), and Snakemake's log adds each job's start and end (whole seconds).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from devicebench.snakemake_log import Job

GROUP_AXES = ("task", "device", "mode")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def created_time(record: Mapping[str, Any]) -> float | None:
    """provenance.created (runner start, before the worker) as epoch seconds, else None."""
    text = (record.get("provenance") or {}).get("created")
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except (TypeError, ValueError):
        return None


def created_offset(record: Mapping[str, Any]) -> str | None:
    """The UTC offset of the host clock that wrote the record ('+0000'), from provenance.created."""
    text = (record.get("provenance") or {}).get("created")
    return text[-5:] if isinstance(text, str) and created_time(record) is not None else None


def _spans(marks: list[tuple[str, float]], start: float) -> dict[str, float]:
    """Seconds each stage took: a mark's time minus the one before (the first: minus `start`)."""
    spans, before = {}, start
    for name, when in marks:
        spans[name] = when - before
        before = when
    return spans


def record_cost(record: Mapping[str, Any], job: Job | None = None) -> dict[str, Any]:
    """One record's fixed cost, its stages, timed window and tail (seconds; None where unknown)."""
    axes = record.get("axes") or {}
    timings = record.get("timings") if isinstance(record.get("timings"), Mapping) else {}
    marks = timings.get("marks") if isinstance(timings.get("marks"), Mapping) else {}
    marks = sorted(
        ((str(k), v) for k, v in marks.items() if _number(v) is not None), key=lambda kv: kv[1]
    )
    timed_start, timed_end = _number(timings.get("timed_start")), _number(timings.get("timed_end"))
    row: dict[str, Any] = {
        "cell_id": record.get("cell_id"),
        **{str(axis): value for axis, value in axes.items() if not isinstance(value, dict)},
        "status": record.get("status"),
        "timed": timed_start is not None and timed_end is not None,
    }
    marked = dict(marks)
    start = marked.get("process_start")
    row["start_from"] = "process_start"
    if start is None and job is not None:
        start, row["start_from"] = job.start, "log (1 s)"
    if start is None and (created := created_time(record)) is not None:
        start, row["start_from"] = created, "created (1 s, runner started)"
        marks = []
    elif not marks and (created := created_time(record)) is not None:  # an older record
        marks = [("created (1 s)", created)]
    if start is None:
        row["start_from"] = None
    written = marked.get("record_written", job.end if job and job.end else None)
    before = [(n, t) for n, t in marks if n != "process_start" and timed_start and t <= timed_start]
    after = [(n, t) for n, t in marks if timed_end and t > timed_end]
    row["fixed_s"] = timed_start - start if start is not None and timed_start else None
    row["phases"] = (
        _spans([*before, ("timed_start", timed_start)], start)
        if start is not None and timed_start
        else {}
    )
    row["window_s"] = timed_end - timed_start if row["timed"] else None
    row["after_s"] = written - timed_end if written is not None and timed_end else None
    row["after_phases"] = _spans(after, timed_end) if timed_end and after else {}
    row["job_s"] = job.end - job.start if job and job.end is not None else None
    row["spawn_s"] = (
        marked["process_start"] - job.start if job and "process_start" in marked else None
    )
    row["process_start"], row["record_written"] = marked.get("process_start"), written
    return row


def match_job(record: Mapping[str, Any], jobs: Iterable[Job]) -> Job | None:
    """The log's job that wrote `record`: its cell, the latest start before the timed window."""
    timings = record.get("timings") if isinstance(record.get("timings"), Mapping) else {}
    anchor = _number(timings.get("timed_start")) or created_time(record)
    mine = [job for job in jobs if job.cell_id == record.get("cell_id")]
    if anchor is not None:
        mine = [job for job in mine if job.start <= anchor + 1]  # whole-second stamps
    return max(mine, key=lambda job: job.start) if mine else None


def record_gaps(rows: list[dict[str, Any]]) -> list[float]:
    """Seconds from one record written to the next cell's process start (marked records only)."""
    marked = sorted(
        (row for row in rows if row["process_start"] and row["record_written"]),
        key=lambda row: row["process_start"],
    )
    return [
        nxt["process_start"] - row["record_written"]
        for row, nxt in zip(marked, marked[1:], strict=False)
        if nxt["process_start"] >= row["record_written"]
    ]


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def phase_order(rows: list[dict[str, Any]], key: str = "phases") -> list[str]:
    """Stage names in the order they happen (by their median position among the records)."""
    places: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        for place, name in enumerate(row[key]):
            places[name].append(place)
    return sorted(places, key=lambda name: (statistics.median(places[name]), name))


def summarize(rows: list[dict[str, Any]], by: tuple[str, ...] = GROUP_AXES) -> list[dict]:
    """Per group (default task, device, mode): count and the median of every figure (over the
    cells with a timed window; `untimed_job_s`: the job of a skipped or failed one)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row.get(axis) for axis in by)].append(row)
    phases, afters = phase_order(rows), phase_order(rows, "after_phases")
    summary = []
    for key in sorted(groups, key=lambda k: tuple(str(v) for v in k)):
        members = groups[key]
        timed = [row for row in members if row["timed"]]
        summary.append(
            {
                **dict(zip(by, key, strict=True)),
                "cells": len(members),
                "timed": len(timed),
                "start_from": sorted({str(row["start_from"]) for row in members}),
                **{  # cells with a timed window; a skipped or failed one costs its job alone
                    f"{figure}": _median(row[figure] for row in timed)
                    for figure in ("fixed_s", "window_s", "after_s", "job_s", "spawn_s")
                },
                "untimed_job_s": _median(row["job_s"] for row in members if not row["timed"]),
                "gap_s": _median(row.get("gap_s") for row in members),
                "phases": {n: _median(r["phases"].get(n) for r in members) for n in phases},
                "after_phases": {
                    n: _median(r["after_phases"].get(n) for r in members) for n in afters
                },
            }
        )
    return summary


def load_records(folder: str | Path) -> list[dict[str, Any]]:
    """Every cell record (a JSON object with axes and a cell_id) under `folder`, by path."""
    records = []
    for path in sorted(Path(folder).rglob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if (
            isinstance(record, dict)
            and isinstance(record.get("axes"), dict)
            and "cell_id" in record
        ):
            records.append(record)
    return records

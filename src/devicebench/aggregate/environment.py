"""The `environment` table: one row per distinct host and software stack that produced cells.

Numbers are only comparable within one stack; this table shows at a glance which hosts, CPUs,
GPUs, drivers and library versions a run's records came from, and how many cells each ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from devicebench.aggregate.records import read_record

# What makes two records' environments "the same stack" (a row of the table).
KEY_COLUMNS = [
    "hostname",
    "cpu_model",
    "cpu_flags",
    "cpu_cores",
    "memory_gb",
    "python",
    "libraries",
    "gpu_name",
    "gpu_driver",
    "cuda",
    "cudnn",
]
COLUMNS = [*KEY_COLUMNS, "threads", "frameworks", "cells", "slurm_jobs"]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value)


def environment_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per record that has an environment section."""
    rows = []
    for record in records:
        env = record.get("environment")
        if not isinstance(env, Mapping) or not env:
            continue
        axes = record.get("axes") if isinstance(record.get("axes"), Mapping) else {}
        row = {key: _text(env.get(key)) for key in KEY_COLUMNS}
        row["threads"] = env.get("threads")
        row["framework"] = axes.get("framework")
        row["slurm_job_id"] = env.get("slurm_job_id")
        rows.append(row)
    return rows


def environment_table(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Group records by host and stack; count cells and SLURM jobs, list thread counts."""
    rows = environment_rows(records)
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    frame = pd.DataFrame(rows)
    out = []
    for key, group in frame.groupby(KEY_COLUMNS, sort=True, dropna=False):
        threads = sorted({int(t) for t in group["threads"].dropna()})
        jobs = {j for j in group["slurm_job_id"] if j}
        out.append(
            dict(zip(KEY_COLUMNS, key, strict=True))
            | {
                "threads": " ".join(map(str, threads)),
                "frameworks": " ".join(
                    sorted({f for f in group["framework"] if isinstance(f, str)})
                ),
                "cells": len(group),
                "slurm_jobs": len(jobs),
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def read_records(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The records that parse; unreadable ones are reported by the cells table instead."""
    records = []
    for path in paths:
        record, wrong = read_record(path)
        if not wrong:  # the cells table (not_ok) reports it, with the reason
            records.append(record)
    return records

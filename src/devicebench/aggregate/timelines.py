"""Tables read from the records' nested sections: utilization timelines and profiled operators.

The tidy cells frame keeps one row per cell; these keep many rows per cell (one per sample, one
per operator), so they are read here, apart, from the same records.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from devicebench.aggregate.collect import device_label
from devicebench.aggregate.records import read_record

MAX_POINTS = 300
GROUP = ["task", "model", "framework", "precision", "batch_size", "mode"]
TIMELINE_COLUMNS = [
    *GROUP[:3],
    "device_label",
    *GROUP[3:],
    "cell",
    "t",
    "cpu_percent_mean",
    "gpu_util",
    "gpu_mem_mb",
    "gpu_power_w",
]
OPS_COLUMNS = [
    *GROUP,
    "device_label",
    "cell",
    "ranked_by",
    "rank",
    "op",
    "calls",
    "self_ms",
    "self_pct",
]


def _records(paths: Iterable[Path]) -> Iterable[dict[str, Any]]:
    for path in paths:
        record, wrong = read_record(path)
        if not wrong and record.get("status") == "ok":
            yield record


NOT_AXES = {"task", "device", "threads", "threads_requested"}


def _cell(record: dict[str, Any]) -> dict[str, Any]:
    """The cell's axes and its full name within the task, e.g. mlp/torch/cuda/fp32/b128/infer
    (extra axes as name=value), so a chart draws one line per cell, never one per label."""
    axes = record.get("axes") or {}
    out = {key: axes.get(key) for key in GROUP}
    out["device_label"] = device_label(axes.get("device"), axes.get("threads"))
    parts = [str(axes.get(k)) for k in ("model", "framework")] + [out["device_label"]]
    parts += [str(axes.get("precision")), f"b{axes.get('batch_size')}", str(axes.get("mode"))]
    parts += [f"{k}={v}" for k, v in axes.items() if k not in NOT_AXES and k not in GROUP]
    out["cell"] = "/".join(parts)
    return out


def utilization_table(paths: Iterable[Path]) -> pd.DataFrame:
    """Every ok cell's sampled timeline, thinned to at most MAX_POINTS samples per cell."""
    rows = []
    for record in _records(paths):
        timeline = record.get("utilization") or {}
        times = timeline.get("t") or []
        if not times:
            continue
        cell = _cell(record)
        step = max(1, -(-len(times) // MAX_POINTS))
        for i in range(0, len(times), step):
            row = dict(cell, t=times[i])
            for key in ("cpu_percent_mean", "gpu_util", "gpu_mem_mb", "gpu_power_w"):
                series = timeline.get(key) or []
                row[key] = series[i] if i < len(series) else None
            rows.append(row)
    return pd.DataFrame(rows, columns=TIMELINE_COLUMNS)


def profile_ops_table(paths: Iterable[Path]) -> pd.DataFrame:
    """Profiled cells' top operators, long form: CPU cells ranked by self CPU time, GPU cells by
    self device (CUDA) time, which is where each device spends its time."""
    rows = []
    for record in _records(paths):
        profile = record.get("profile") or {}
        if not profile:
            continue
        cell = _cell(record)
        on_device = bool(profile.get("top_self_device"))
        ranked, key = ("self_device", "device") if on_device else ("self_cpu", "cpu")
        for rank, op in enumerate(profile.get(f"top_{ranked}", []), start=1):
            rows.append(
                dict(
                    cell,
                    ranked_by=ranked,
                    rank=rank,
                    op=op.get("op"),
                    calls=op.get("calls"),
                    self_ms=op.get(f"self_{key}_ms"),
                    self_pct=op.get(f"self_{key}_pct"),
                )
            )
    return pd.DataFrame(rows, columns=OPS_COLUMNS)


def top_ops_side_by_side(ops: pd.DataFrame) -> pd.DataFrame:
    """One row per rank, each device's operator, self time and share side by side."""
    if ops.empty:
        return pd.DataFrame(columns=[*GROUP, "rank"])
    frames = []
    for keys, group in ops.groupby(GROUP, dropna=False, sort=True):
        wide = pd.DataFrame({"rank": sorted(group["rank"].unique())})
        for label, part in group.groupby("device_label", sort=True):
            part = part.set_index("rank")
            wide[f"{label} op"] = wide["rank"].map(part["op"])
            wide[f"{label} self ms"] = wide["rank"].map(part["self_ms"])
            wide[f"{label} %"] = wide["rank"].map(part["self_pct"])
        for name, value in zip(GROUP, keys, strict=True):
            wide.insert(GROUP.index(name), name, value)
        frames.append(wide)
    return pd.concat(frames, ignore_index=True)

"""Scaling efficiency of data-parallel training: throughput(N) / (N x throughput(1)).

Reads cell records (the workflow's) or the DDP benchmark's records (same `axes`, `status` and
`throughput` sections), one row per workload and world size, so a buyer sees what each added
GPU buys. Plain pandas here: the benchmark prints this table on a GPU host with no Altair.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from devicebench.aggregate.pairing import CROSSING, PAIRING, base_elsewhere, record_pairing
from devicebench.aggregate.records import read_record
from devicebench.scenarios import modes

# What makes two cells the same workload apart from their world size.
WORKLOAD = ["task", "model", "framework", "device", "threads", "precision", "batch_size"]
COLUMNS = [
    *WORKLOAD,
    "gpus",
    "global_batch_size",
    "status",
    "samples_per_s",
    "samples_per_s_1",
    "speedup",
    "efficiency",
    *PAIRING,
    "note",
]


def load_rows(paths: Iterable[Path]) -> pd.DataFrame:
    """One row per train record: its workload axes, world size (1 when unset) and throughput."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        record, wrong = read_record(path)
        if wrong:
            continue  # the cells table (not_ok) reports it, with the reason
        axes = record.get("axes", {})
        if "mode" in axes and axes["mode"] not in modes(trains=True, to_target=False):
            continue
        gpus = int(axes.get("gpus", 1) or 1)
        row = {key: axes.get(key) for key in WORKLOAD}
        row |= {
            "gpus": gpus,
            "global_batch_size": int(axes.get("batch_size") or 0) * gpus,
            "status": record.get("status"),
            "samples_per_s": (record.get("throughput") or {}).get("samples_per_s"),
            **record_pairing(record),
        }
        rows.append(row)
    columns = [*WORKLOAD, "gpus", "global_batch_size", "status", "samples_per_s", *PAIRING]
    return pd.DataFrame(rows, columns=columns)


def scaling_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Speedup and efficiency of every world size against the same workload on one device.

    A workload with no ok one-device row has no efficiency (NaN), rather than a made-up base.
    """
    if rows.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = rows.copy()
    for key in PAIRING:  # rows from records older than the pairing keys
        rows[key] = rows[key].astype("object").where(rows[key].notna(), "") if key in rows else ""
    ok = rows["status"] == "ok"
    paired = [*WORKLOAD, *PAIRING]  # one machine boot and one code version per ratio
    base = (
        rows[ok & (rows["gpus"] == 1)]
        .groupby(paired, dropna=False)["samples_per_s"]
        .median()
        .rename("samples_per_s_1")
        .reset_index()
    )
    loose = rows[WORKLOAD].map(repr).agg("\x1f".join, axis=1)
    crossed = base_elsewhere(loose, ok & (rows["gpus"] == 1))
    table = rows.merge(base, on=paired, how="left")
    table["note"] = np.where(table["samples_per_s_1"].isna() & crossed.to_numpy(), CROSSING, "")
    table.loc[table["status"] != "ok", "samples_per_s"] = float("nan")
    table["speedup"] = table["samples_per_s"] / table["samples_per_s_1"]
    table["efficiency"] = table["speedup"] / table["gpus"]
    table = table.sort_values([*WORKLOAD, "gpus"], kind="stable").reset_index(drop=True)
    return table[COLUMNS]


def format_table(table: pd.DataFrame) -> str:
    """The scaling table as Markdown, numbers rounded for reading."""
    shown = table.copy()
    for column in ("samples_per_s", "samples_per_s_1"):
        shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:,.0f}")
    for column in ("speedup", "efficiency"):
        shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    header = "| " + " | ".join(shown.columns) + " |"
    rule = "|" + "---|" * len(shown.columns)
    lines = ["| " + " | ".join(str(v) for v in row) + " |" for row in shown.itertuples(index=False)]
    return "\n".join([header, rule, *lines]) + "\n"


def scaling_chart(table: pd.DataFrame):
    """Bars of efficiency per workload and world size, with the ideal (1.0) as a rule."""
    import altair as alt

    data = table.dropna(subset=["efficiency"]).copy()
    data["workload"] = (
        data["task"].astype(str)
        + " · "
        + data["device"].astype(str)
        + " · "
        + data["precision"].astype(str)
        + " · batch "
        + data["batch_size"].astype(str)
        + "/device"
    )
    data["gpus"] = data["gpus"].astype(str)
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("workload:N", title=None),
            yOffset="gpus:N",
            x=alt.X(
                "efficiency:Q", title="scaling efficiency = throughput(N) / (N × throughput(1))"
            ),
            color=alt.Color("gpus:N", title="GPUs / ranks"),
            tooltip=["workload", "gpus", "samples_per_s", "speedup", "efficiency"],
        )
    )
    ideal = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(x="x:Q")
    return (bars + ideal).properties(title="Data-parallel scaling efficiency", width=480)

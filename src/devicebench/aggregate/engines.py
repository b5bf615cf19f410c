"""Infer cells side by side per engine (in-process, Spark batch, Spark streaming).

The same trained model scored each way: throughput relative to the in-process cell, and whether
the accuracy is the same (it must be: Spark only moves the rows, the model is the same).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from devicebench.aggregate.collect import extra_axis_columns
from devicebench.aggregate.pairing import CROSSING, base_elsewhere, pairing_columns
from devicebench.aggregate.tables import _group_key, _select, _sorted
from devicebench.engines import IN_PROCESS
from devicebench.scenarios import modes

BASE_ENGINE = IN_PROCESS
KEYS = ["task", "model", "framework", "device_label", "precision", "batch_size"]
VALUES = ["status", "samples_per_s", "first_call_s", "p50_ms", "p99_ms", "accuracy"]
COLUMNS = [
    *KEYS,
    "engine",
    *VALUES,
    "inprocess_samples_per_s",
    "relative_throughput",
    "inprocess_accuracy",
    "accuracy_equal",
    "note",
    "cell_id",
    "base_cell_id",
]


def engine_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per infer cell where the config has an engine axis, against the fp32 in-process
    (torch) cell of the same model, device and batch: Spark, ONNX Runtime and OpenVINO cells,
    and their bf16 and int8 cells.

    p50/p99 are per batch in-process and per Spark job's micro-batch end to end in streaming.
    """
    if "engine" not in df.columns:
        return pd.DataFrame(columns=COLUMNS)
    others = [c for c in extra_axis_columns(df) if c != "engine"]
    keys = [*KEYS, *others]
    pair = pairing_columns(df)  # one machine boot and one code version per ratio
    infer = df[df["mode"].isin(modes(scores=True, serves=False))].copy()  # batch inference
    if infer.empty:  # a serving study's engines: the serving tables compare them
        return pd.DataFrame(columns=COLUMNS)
    # A task's `engines` key gives its torch (in-process) cells no axis: they are the base too.
    infer["engine"] = infer["engine"].fillna(BASE_ENGINE)
    work = _select(infer, [*keys, *pair, "engine", *VALUES, "cell_id"])
    # Each cell against the fp32 in-process cell of its model, whatever its own format.
    group_keys = [k for k in keys if k != "precision"]
    work["_group"] = _group_key(work, [*group_keys, *pair])
    fp32 = work["precision"].eq("fp32") if "precision" in work else True
    work["_is_base"] = work["engine"].eq(BASE_ENGINE) & fp32
    # before the filter below: a base of another boot or version still marks a row unpaired
    work["_crossed"] = base_elsewhere(_group_key(work, group_keys), work["_is_base"])
    work = work[work.groupby("_group")["engine"].transform(lambda e: (e != BASE_ENGINE).any())]
    base = work[work["_is_base"]].drop_duplicates("_group")
    base = base[["_group", "status", "samples_per_s", "accuracy", "cell_id"]].rename(
        columns={
            "cell_id": "base_cell_id",
            "status": "_base_status",
            "samples_per_s": "inprocess_samples_per_s",
            "accuracy": "inprocess_accuracy",
        }
    )
    out = work.merge(base, on="_group", how="left")
    ok = out["status"].eq("ok")
    base_ok = out["_base_status"].eq("ok")
    both = ok & base_ok
    out["relative_throughput"] = np.where(
        both, out["samples_per_s"] / out["inprocess_samples_per_s"], np.nan
    )
    out["accuracy_equal"] = (out["accuracy"] == out["inprocess_accuracy"]).where(both)
    crossed = out["_crossed"].to_numpy() & out["_base_status"].isna().to_numpy()
    missing = np.where(crossed, CROSSING, "inprocess_missing")
    out["note"] = np.where(~ok, "not_ok", np.where(base_ok, "", missing))
    out = out[[*keys, *COLUMNS[len(KEYS) :]]]
    return _sorted(out, [*keys, "engine"])

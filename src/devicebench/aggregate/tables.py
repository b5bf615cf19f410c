"""Derived tables from the tidy cells frame: timing, speedup against a base device, quality.

Each keeps failed cells as rows (with their status) so a reader sees what is missing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from devicebench.aggregate.collect import extra_axis_columns
from devicebench.aggregate.pairing import CROSSING, base_elsewhere, pairing_columns
from devicebench.aggregate.quality_gate import quality_reason
from devicebench.scenarios import modes

LATENCY_MODES = ("infer", "serve")


def timing_table(df: pd.DataFrame) -> pd.DataFrame:
    """Speed per cell: median, spread, noise flag, throughput, and latency for inference."""
    keys = [
        "task",
        "model",
        "framework",
        "device_label",
        "precision",
        "mode",
        "batch_size",
        *extra_axis_columns(df),
    ]
    values = ["status", "median_s", "iqr_s", "cov", "noisy", "samples_per_s", "p50_ms", "p99_ms"]
    out = _select(df, [*keys, *values, "synthetic", "message"])
    not_latency = ~out["mode"].isin(LATENCY_MODES)
    out.loc[not_latency, ["p50_ms", "p99_ms"]] = np.nan
    return _sorted(out, keys)


def not_ok_table(df: pd.DataFrame) -> pd.DataFrame:
    """Every cell that did not finish ok (skipped, failed, oom, timeout), with its reason.

    Charts never draw these (a missing bar would read as zero); this table names them instead.
    """
    keys = [
        "task",
        "model",
        "framework",
        "device_label",
        "precision",
        "mode",
        "batch_size",
        *extra_axis_columns(df),
    ]
    failed = df[df["status"].ne("ok")] if "status" in df else df.iloc[0:0]
    return _sorted(_select(failed, [*keys, "status", "message"]), keys)


def speedup_table(df: pd.DataFrame, base: str) -> pd.DataFrame:
    """Speedup of every cell over the base device's cell with the same other axes: the ratio of
    their throughputs, each row naming both cells (`cell_id`, `base_cell_id`).

    `base` is a device label ("cpu:16t", "cuda") or a plain device name ("cpu"); a plain name
    picks, per comparison group, the row of that device with the most threads, so the baseline
    is the strongest configuration of that device rather than an arbitrary one. The base is
    chosen whatever its status: if it failed, the group gets NaN and a `base_missing` note
    instead of silently falling back to a weaker base.
    """
    keys = [
        "task",
        "model",
        "framework",
        "precision",
        "batch_size",
        "mode",
        *extra_axis_columns(df),
    ]
    pair = pairing_columns(df)  # one machine boot and one code version per ratio
    cols = [*keys, *pair, "device", "threads", "device_label", "status", "median_s"]
    cols += ["samples_per_s", "cell_id", "synthetic"]
    work = _select(df, cols)
    work["_group"] = _group_key(work, [*keys, *pair])
    is_base = work["device_label"].eq(base) | work["device"].eq(base)
    crossed = base_elsewhere(_group_key(work, keys), is_base)
    bases = _resolve_base(work, base)
    merged = work.merge(bases, on="_group", how="left")
    ok = merged["status"].eq("ok") & (merged["samples_per_s"] > 0)
    base_ok = merged["base_status"].eq("ok") & (merged["base_samples_per_s"] > 0)
    # throughput over throughput: a CPU repetition may hold fewer steps than a GPU one
    ratio = merged["samples_per_s"] / merged["base_samples_per_s"]
    merged["speedup"] = np.where(ok & base_ok, ratio, np.nan)
    crossed = crossed.to_numpy() & merged["base_label"].isna().to_numpy()
    merged["note"] = np.where(
        ~merged["status"].eq("ok"),
        "not_ok",
        np.where(base_ok, "", np.where(crossed, CROSSING, "base_missing")),
    )
    out_cols = [
        *keys,
        "device_label",
        "status",
        "samples_per_s",
        "base_label",
        "base_status",
        "base_samples_per_s",
        "speedup",
        "cell_id",
        "base_cell_id",
        "note",
        "synthetic",
        *pair,
    ]
    order = [*keys[:4], "mode", "batch_size", *keys[6:], "device_label"]
    return _sorted(merged[out_cols], order)


def quality_table(df: pd.DataFrame) -> pd.DataFrame:
    """Held-out quality of training and converge cells, with the spread across devices.

    Quality must agree across hardware, but only where it means something: `accuracy_spread`
    (max - min over cells that differ only in device) is taken over converge cells that reached
    their target and over train cells whose quality is not n/a (quality_na: synthetic data,
    random weights) and that trained the same number of steps (train_steps), since a CPU cell
    given fewer steps than a GPU cell is apart by its training budget, not its device.
    """
    extras = extra_axis_columns(df)
    group = ["task", "model", "framework", "precision", "batch_size", *extras]
    keys = ["mode", *group[:4], "device_label", "batch_size", *extras]
    values = ["status", "accuracy", "f1_macro", "f1_micro", "loss", "synthetic", "dataset"]
    values += ["quality_na", "train_steps"]
    values += ["converged", "target_metric", "target_value", "time_to_target_s"]
    if "quality_na" not in df and len(
        df
    ):  # the collected frame, before the analysis stage marked it
        df = df.assign(quality_na=df.apply(quality_reason, axis=1).replace("", np.nan))
    out = _select(df, [*keys, *values])
    out = out[out["mode"].isin(modes(trains=True))]
    if out.empty:
        out["accuracy_spread"] = pd.Series(dtype="float64")
        return out.reset_index(drop=True)
    gkey = _group_key(out, ["mode", "train_steps", *group])
    converged = out["converged"].astype("boolean").fillna(False).astype(bool)
    fixed = out["mode"].isin(modes(trains=True, to_target=False))
    trained = fixed & out["quality_na"].isna() & out["accuracy"].notna()
    to_target = out["mode"].isin(modes(to_target=True))
    compared = out["status"].eq("ok") & ((to_target & converged) | trained)
    metric = out["target_metric"].where(compared)
    acc = out["accuracy"].where(compared)
    if "f1_micro" in out:  # a converge cell is compared on the metric it was trained to
        acc = acc.where(metric.ne("f1_micro"), out["f1_micro"])
    spread = acc.groupby(gkey).transform("max") - acc.groupby(gkey).transform("min")
    devices = out["device_label"].where(compared).groupby(gkey).transform("nunique")
    out["accuracy_spread"] = spread.where(compared & devices.gt(1))
    return _sorted(out, keys)


def _resolve_base(work: pd.DataFrame, base: str) -> pd.DataFrame:
    """One base row per comparison group: the exact device label, else the most-threaded device."""
    cand = work[(work["device_label"] == base) | (work["device"] == base)].copy()
    threads = cand["threads"].astype("float64").fillna(-1.0)
    cand["_rank"] = threads.where(cand["device_label"] != base, np.inf)
    chosen = cand.sort_values("_rank", ascending=False, kind="stable").drop_duplicates("_group")
    return pd.DataFrame(
        {
            "_group": chosen["_group"].to_numpy(),
            "base_label": chosen["device_label"].to_numpy(),
            "base_status": chosen["status"].to_numpy(),
            "base_median_s": chosen["median_s"].astype("float64").to_numpy(),
            "base_samples_per_s": pd.to_numeric(chosen["samples_per_s"]).to_numpy("float64"),
            "base_cell_id": _select(chosen, ["cell_id"])["cell_id"].to_numpy(),
        }
    )


def _group_key(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """A hashable key per row that treats NaN as a value (groupby would drop it)."""
    if df.empty:
        return pd.Series([], dtype="str", index=df.index)
    parts = [df[k].astype("object").map(lambda v: "<NA>" if pd.isna(v) else repr(v)) for k in keys]
    return pd.concat(parts, axis=1).agg("\x1f".join, axis=1)


def _select(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Columns in order, creating any missing one as NaN (a CSV may lack optional columns)."""
    out = pd.DataFrame(index=df.index)
    for col in cols:
        out[col] = df[col] if col in df.columns else np.nan
    return out


def _sorted(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if df.empty:
        return df.reset_index(drop=True)
    return df.sort_values(keys, na_position="last", kind="stable").reset_index(drop=True)

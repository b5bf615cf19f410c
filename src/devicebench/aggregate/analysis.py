"""Cost, achieved FLOP/s, MFU and agreement: columns computed from the cells, never by a rerun.

Prices come from a user-editable file (config/prices.yaml) read here, in the aggregate stage, so
a price change reruns only the aggregates. Cost is defined on the measured work: a cell's cost is
its hourly price times its median repetition time; samples per dollar is its throughput over the
hourly price.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from devicebench.aggregate.collect import extra_axis_columns
from devicebench.aggregate.pairing import pairing_columns
from devicebench.aggregate.tables import _group_key, _resolve_base, _select, _sorted
from devicebench.measure.peaks import achieved_tflops, device_peak

CELL_KEYS = ["task", "model", "framework", "device_label", "precision", "batch_size", "mode"]


def load_prices(path: str | Path) -> dict[str, Any]:
    """The price file as a mapping (see config/prices.yaml for its layout)."""
    with open(path) as handle:
        prices = yaml.safe_load(handle) or {}
    if not isinstance(prices, dict):
        raise ValueError(f"price file {path}: expected a mapping at the top level")
    return prices


def price_per_hour(device: Any, threads: Any, gpu_name: Any, prices: dict[str, Any]) -> float:
    """The hourly price of the resources one cell occupies; NaN when the file has none."""
    device = str(device)
    if device == "cpu":
        per_vcpu = (prices.get("cpu") or {}).get("per_vcpu_hour")
        if per_vcpu is None or pd.isna(threads):
            return math.nan
        return float(per_vcpu) * int(threads)
    if device == "cuda":
        name = gpu_name if isinstance(gpu_name, str) else ""
        for entry in prices.get("cuda") or []:
            if str(entry.get("match", "")).lower() in name.lower() and name:
                return float(entry["per_hour"])
        return math.nan
    entry = prices.get(device) or {}
    return float(entry["per_hour"]) if "per_hour" in entry else math.nan


def add_analysis(
    cells: pd.DataFrame,
    prices: dict[str, Any],
    base: str,
    targets: dict[str, float] | None = None,
) -> pd.DataFrame:
    """cells plus price, cost, samples per dollar, relative time/cost, FLOP/s, MFU."""
    df = cells.copy()
    targets = targets or {}
    ok = df["status"].eq("ok")
    # a data-parallel cell occupies (and is priced and peaked for) all of its GPUs
    gpus = _gpu_count(df)
    df["price_per_hour"] = [
        price_per_hour(d, t, g, prices) * n
        for d, t, g, n in zip(
            df["device"], df["threads"], df.get("gpu_name", np.nan), gpus, strict=True
        )
    ]
    df["cost_usd"] = (df["price_per_hour"] * df["median_s"] / 3600.0).where(ok)
    per_usd = df["samples_per_s"] * 3600.0 / df["price_per_hour"].replace(0, np.nan)
    df["samples_per_usd"] = per_usd.where(ok)
    df["target_accuracy"] = df["task"].map(lambda t: targets.get(t, np.nan)).astype("float64")
    reached = ok & df["mode"].eq("train") & (df["accuracy"] >= df["target_accuracy"])
    df["cost_to_target_usd"] = df["cost_usd"].where(reached)
    if "time_to_target_s" in df:  # converge cells: the price of the time they took to the target
        converged = ok & df["mode"].eq("converge") & df["time_to_target_s"].notna()
        to_target = df["price_per_hour"] * df["time_to_target_s"] / 3600.0
        df["cost_to_target_usd"] = to_target.where(converged, df["cost_to_target_usd"])
    # the peak of the math that ran (model.precision_math), else of the precision axis
    math = df["precision_math"] if "precision_math" in df.columns else df["precision"]
    math = math.where(math.notna() & math.ne("nan"), df["precision"])
    peaks = [
        device_peak(d, g, p)
        for d, g, p in zip(df["device"], df.get("gpu_name", np.nan), math, strict=True)
    ]
    df["peak_tflops"] = [
        np.nan if p is None else p * n for (p, _), n in zip(peaks, gpus, strict=True)
    ]
    df["peak_source"] = [s or np.nan for _, s in peaks]
    df["achieved_tflops"] = [
        achieved_tflops(f, s) if k else np.nan
        for f, s, k in zip(df["flops_per_sample"], df["samples_per_s"], ok, strict=True)
    ]
    df["mfu"] = df["achieved_tflops"] / df["peak_tflops"]
    return _relative(df, base)


def _gpu_count(df: pd.DataFrame) -> list[int]:
    """GPUs per cell: the `gpus` axis on CUDA cells (1 where absent), 1 elsewhere."""
    counts = df["gpus"] if "gpus" in df.columns else pd.Series(np.nan, index=df.index)
    return [
        int(n) if str(d) == "cuda" and not pd.isna(n) else 1
        for d, n in zip(df["device"], counts, strict=True)
    ]


def _relative(df: pd.DataFrame, base: str) -> pd.DataFrame:
    """Time and cost relative to the base configuration (as in the 2017 study's charts)."""
    keys = ["task", "model", "framework", "precision", "batch_size", "mode", *_extras(df)]
    keys += pairing_columns(df)  # relative cost only within one boot and code version
    work = df.copy()
    work["_group"] = _group_key(work, keys)
    bases = _resolve_base(work, base)
    base_cost = work.set_index(["_group", "device_label"])["cost_usd"]
    bases["base_cost_usd"] = [
        base_cost.get((g, label), np.nan)
        for g, label in zip(bases["_group"], bases["base_label"], strict=True)
    ]
    merged = work.merge(
        bases[["_group", "base_median_s", "base_cost_usd"]], on="_group", how="left"
    )
    merged.index = df.index
    ok = merged["status"].eq("ok")
    df["relative_time"] = (merged["median_s"] / merged["base_median_s"]).where(ok)
    df["relative_cost"] = (merged["cost_usd"] / merged["base_cost_usd"]).where(ok)
    df["base_cost_usd"] = merged["base_cost_usd"]
    return df


def _extras(df: pd.DataFrame) -> list[str]:
    return extra_axis_columns(df)


def cost_table(df: pd.DataFrame) -> pd.DataFrame:
    """Cost per cell: price, cost of the measured work, samples per dollar, relative to base."""
    keys = [*CELL_KEYS, *_extras(df)]
    values = [
        "status",
        "median_s",
        "samples_per_s",
        "price_per_hour",
        "cost_usd",
        "samples_per_usd",
        "relative_time",
        "relative_cost",
        "accuracy",
        "target_accuracy",
        "cost_to_target_usd",
        "converged",
        "time_to_target_s",
        "energy_to_target_j",
        "joules_per_sample",
        "samples_per_kwh",
        "energy_reason",
        "synthetic",
    ]
    return _sorted(_select(df, [*keys, *values]), keys)


def efficiency_table(df: pd.DataFrame) -> pd.DataFrame:
    """Utilization and achieved FLOP/s per cell, with MFU against the datasheet peak."""
    keys = [*CELL_KEYS, *_extras(df)]
    values = [
        "status",
        "samples_per_s",
        "cpu_util_mean",
        "cpu_util_peak",
        "gpu_util_mean",
        "gpu_util_peak",
        "gpu_mem_peak_mb",
        "gpu_power_mean_w",
        "flops_per_sample",
        "achieved_tflops",
        "peak_tflops",
        "mfu",
        "peak_source",
        "synthetic",
    ]
    return _sorted(_select(df, [*keys, *values]), keys)


def add_agreement(quality: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Flag training cells whose accuracy differs across devices by more than `tolerance`."""
    out = quality.copy()
    spread = out["accuracy_spread"]
    out["accuracy_tolerance"] = tolerance
    out["accuracy_agrees"] = (spread <= tolerance + 1e-12).astype("boolean").where(spread.notna())
    return out

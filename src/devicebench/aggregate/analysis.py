"""Cost, achieved FLOP/s, MFU and agreement: columns computed from the cells, never by a rerun.

Prices come from a user-editable file (config/prices.yaml) read here, in the aggregate stage, so
a price change reruns only the aggregates. Cost is defined on the measured work: a cell's cost is
its hourly price times its median repetition time; samples per dollar is its throughput over the
hourly price.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from devicebench.aggregate.collect import extra_axis_columns
from devicebench.aggregate.machines import apply_machine_prices
from devicebench.aggregate.pairing import pairing_columns
from devicebench.aggregate.pricing import load_prices, price_per_hour, shape_priced  # noqa: F401
from devicebench.aggregate.quality_gate import mark_quality
from devicebench.aggregate.tables import _group_key, _resolve_base, _select, _sorted
from devicebench.measure.peaks import achieved_tflops, device_peak
from devicebench.scenarios import modes

CELL_KEYS = ["task", "model", "framework", "device_label", "precision", "batch_size", "mode"]


def add_analysis(
    cells: pd.DataFrame,
    prices: dict[str, Any],
    base: str,
    targets: dict[str, float] | None = None,
) -> pd.DataFrame:
    """cells plus price, cost, samples per dollar, relative time/cost, FLOP/s, MFU."""
    df = mark_quality(cells)  # quality n/a where it cannot mean anything
    targets = targets or {}
    ok = df["status"].eq("ok")
    gpus = _gpu_count(df)
    df = price_cells(df, prices)
    df["cost_usd"] = (df["price_per_hour"] * df["median_s"] / 3600.0).where(ok)
    per_usd = df["samples_per_s"] * 3600.0 / df["price_per_hour"].replace(0, np.nan)
    df["samples_per_usd"] = per_usd.where(ok)
    df["target_accuracy"] = df["task"].map(lambda t: targets.get(t, np.nan)).astype("float64")
    fixed = df["mode"].isin(modes(trains=True, to_target=False))  # a fixed-length run
    reached = ok & fixed & (df["accuracy"] >= df["target_accuracy"])
    df["cost_to_target_usd"] = df["cost_usd"].where(reached)
    if "time_to_target_s" in df:  # converge cells: the price of the time they took to the target
        converged = ok & df["mode"].isin(modes(to_target=True)) & df["time_to_target_s"].notna()
        to_target = df["price_per_hour"] * df["time_to_target_s"] / 3600.0
        df["cost_to_target_usd"] = to_target.where(converged, df["cost_to_target_usd"])
    # the peak of the math that ran (model.precision_math), else of the precision axis
    ran = df["precision_math"] if "precision_math" in df.columns else df["precision"]
    ran = ran.where(ran.notna() & ran.ne("nan"), df["precision"])
    peaks = [
        device_peak(d, g, p)
        for d, g, p in zip(df["device"], df.get("gpu_name", np.nan), ran, strict=True)
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


def price_cells(cells: pd.DataFrame, prices: dict[str, Any]) -> pd.DataFrame:
    """cells with `price_per_hour`, `priced_as` and `machine` at `prices`: the aggregate and
    the verdict's repricing price a cell the same way (as rented; a declared machine as itself)."""
    df = cells.copy()
    # a data-parallel cell occupies (and is priced and peaked for) all of its GPUs
    gpus = _gpu_count(df)
    copies = df["copies"] if "copies" in df.columns else pd.Series(1, index=df.index)
    priced = list(zip(df["device"], df["threads"], _column(df, "gpu_name"), copies, strict=True))
    df["price_per_hour"] = [
        price_per_hour(d, t, g, prices, c) * n for (d, t, g, c), n in zip(priced, gpus, strict=True)
    ]
    df["priced_as"] = [shape_priced(d, t, g, prices, c) for d, t, g, c in priced]
    return apply_machine_prices(df, prices)  # a declared machine is priced as itself


def _column(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(np.nan, index=df.index)


def _gpu_count(df: pd.DataFrame) -> list[int]:
    """GPUs per cell: the `gpus` axis on CUDA cells (1 where absent), 1 elsewhere."""
    counts = df["gpus"] if "gpus" in df.columns else pd.Series(np.nan, index=df.index)
    return [
        int(n) if str(d) == "cuda" and not pd.isna(n) else 1
        for d, n in zip(df["device"], counts, strict=True)
    ]


def _relative(df: pd.DataFrame, base: str) -> pd.DataFrame:
    """Time and cost of equal work relative to the base configuration (as the 2017 study's charts
    show them): ratios of throughput and of cost per sample, never of repetition times, since a
    CPU repetition may hold fewer steps than a GPU one."""
    keys = ["task", "model", "framework", "precision", "batch_size", "mode", *_extras(df)]
    keys += pairing_columns(df)  # relative cost only within one boot and code version
    work = df.copy()
    if "cell_id" not in work:  # a hand-made frame: rows are their own ids
        work["cell_id"] = work.index.astype(str)
    work["_group"] = _group_key(work, keys)
    bases = _resolve_base(work, base)
    per_sample = (work["price_per_hour"] / work["samples_per_s"]).where(work["status"].eq("ok"))
    base_cost = pd.Series(per_sample.to_numpy(), index=work["cell_id"].astype(str))
    base_cost = base_cost[~base_cost.index.duplicated()]
    # float even when no group has a base (an empty map would leave a string column)
    bases["base_usd_per_sample"] = (
        bases["base_cell_id"].astype(str).map(base_cost).astype("float64")
    )
    merged = work.merge(
        bases[["_group", "base_samples_per_s", "base_usd_per_sample", "base_cell_id"]],
        on="_group",
        how="left",
    )
    merged.index = df.index
    ok = merged["status"].eq("ok") & (merged["samples_per_s"] > 0)
    df["relative_time"] = (merged["base_samples_per_s"] / merged["samples_per_s"]).where(ok)
    df["relative_cost"] = (per_sample / merged["base_usd_per_sample"]).where(ok)
    df["base_cost_usd"] = (
        merged["base_usd_per_sample"] * merged["median_s"].where(ok) * (merged["samples_per_s"])
    )  # the base's cost of this cell's measured work
    if "cell_id" in df:
        df["base_cell_id"] = merged["base_cell_id"]
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

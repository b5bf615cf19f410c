"""Each device at its best: the fastest and the cheapest ok cell of the CPU and of the GPU.

Same-configuration speedups (speedup.csv) divide by the CPU at the GPU's batch, which may be the
CPU's worse one. This table instead sets, per workload and mode, the CPU's best cell (any batch,
precision, threads, engine, compile) against the GPU's best, and prices the difference: the GPU's
hourly price at which its cost per sample equals the CPU's (the break-even price).

Cells are compared only within one (boot_id, code_version) group: one machine boot and one code
version, so two leases or two code versions never make a ratio; machines the user declared (see
machines.py) are compared across boots, the row naming both. A cell whose reduced format (bf16,
int8, another engine) agrees with torch fp32 on fewer than 99 % of held-out predictions of a
model that learned something (quality_below_reference) is never a device's best: its speed was
bought with its answers; where the check cannot vouch (synthetic data, random weights, a constant
fp32 reference) the cell counts and the row says "quality unverified".

Every ratio is of throughputs (equal work). `speedup` is always the fastest GPU cell over the
fastest CPU cell (best against best), whatever the pick; `cost_ratio` is of the pick's cells,
with its range over the repetitions and a confidence (noise.py). Converge rows compare cost to
the target instead of cost per sample.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from devicebench.aggregate import noise, serving_best
from devicebench.aggregate.collect import extra_axis_columns, format_value
from devicebench.aggregate.machines import declared_pairs
from devicebench.aggregate.outranked import mark_outranked
from devicebench.aggregate.quality_gate import unverified_reason
from devicebench.aggregate.stale_confirm import mark_stale_confirms
from devicebench.aggregate.values import key_text as _text
from devicebench.aggregate.values import number_or_none as _number
from devicebench.aggregate.verdict_words import finding
from devicebench.aggregate.work import groups_of_one_work
from devicebench.engines.agreement import REQUIRED
from devicebench.scenarios import modes

GROUP = ["task", "mode", "boot_id", "code_version", "model"]
PICKS = {"fastest": "samples_per_s", "cheapest": "usd_per_million"}
SIDE = ["cell", "config", "samples_per_s", "usd_per_million", "joules_per_sample", "priced_as"]
COLUMNS = [
    "task",
    "mode",
    "pick",
    "boot_id",
    "code_version",
    *(f"cpu_{c}" for c in SIDE),
    "gpu_cell",
    "gpu_config",
    "gpu_name",
    *(f"gpu_{c}" for c in SIDE[2:]),
    "speedup",
    "cheaper",
    "cost_ratio",
    "breakeven_gpu_usd_per_hour",
    "note",
    "model",  # a task with several models compares each model on its own
    "work",  # and each work (prompt and output lengths, sequence length) on its own
    "p99_bound_ms",  # a serve row's latency bound: its rates are the highest that met it
    "cost_ratio_low",
    "cost_ratio_high",
    "confidence",
    "speedup_cpu_cell",
    "speedup_gpu_cell",
    "gpu_util_mean",
    "quality",
    "cpu_machine",
    "gpu_machine",
    "crosses_machines",
    "outranked",  # a device's pick beaten by its pick of this work on another machine
    "finding",
]
DEVICES = {"cpu": "cpu", "gpu": "cuda"}
# Axes named in the configuration text in their own words; any other extra axis follows as
# "name value".
NAMED_AXES = ("framework", "precision", "compile", "batch_size", "threads", "gpus", "engine")


def best_table(cells: pd.DataFrame, prices: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per (task, mode, boot_id, code_version, model, pick) over the ok cells, plus the
    rows of each comparison declared in `prices` (CPU machine against GPU machine).

    `cells` is the analysed cells frame (add_analysis: samples_per_s, price_per_hour, gpus).
    Serve cells are judged at their model's p99 bound instead (aggregate.serving_best).
    """
    serve = serving_best.is_serve(cells)
    table = _best_of(cells[~serve], prices)
    extras = [c for c in extra_axis_columns(cells) if c not in GROUP]

    def name(cell: pd.Series) -> str:
        return config_name(cell, extras)

    served = serving_best.serve_rows(cells[serve], name, COLUMNS)
    served = mark_stale_confirms(_worded(served), cells[serve], name)
    if served.empty:
        return table
    return served if table.empty else pd.concat([table, served], ignore_index=True)


def _worded(rows: pd.DataFrame) -> pd.DataFrame:
    """Serve rows with the confidence and finding every other row has (one rule, one wording)."""
    if rows.empty:
        return rows
    rows = rows.copy()
    rows["confidence"] = [
        noise.confidence(r, lo, hi) or np.nan
        for r, lo, hi in zip(
            rows["cost_ratio"], rows["cost_ratio_low"], rows["cost_ratio_high"], strict=True
        )
    ]
    rows["finding"] = [finding(r) for r in rows.to_dict("records")]
    return rows


def _best_of(cells: pd.DataFrame, prices: dict[str, Any] | None) -> pd.DataFrame:
    """best_table's rows of every mode but serve."""
    ok = cells[cells["status"].eq("ok") & (pd.to_numeric(cells["samples_per_s"]) > 0)].copy()
    below = ok.get("quality_below_reference", pd.Series(False, index=ok.index))
    # kept in the group, so a device whose every cell disagrees says so rather than "no ok cell"
    ok["_below"] = below.astype("boolean").fillna(False).astype(bool)
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    for col in ("boot_id", "code_version", "model", "machine"):
        if col not in ok.columns:
            ok[col] = np.nan
    ok["usd_per_million"] = usd_per_million(ok["price_per_hour"], ok["samples_per_s"])
    rows = []
    for where, group in groups_of_one_work(ok, GROUP):
        for pick, column in PICKS.items():
            rows.append(_pair(where, pick, column, group, cells))
    for cpu_machine, gpu_machine in declared_pairs(prices or {}):
        rows += _declared_rows(ok, cells, cpu_machine, gpu_machine)
    return mark_outranked(pd.DataFrame(rows, columns=COLUMNS))


def _declared_rows(
    ok: pd.DataFrame, cells: pd.DataFrame, cpu_machine: str, gpu_machine: str
) -> list[dict[str, Any]]:
    """Rows of one declared comparison: the CPU machine's CPU cells against the GPU machine's
    GPU cells, per task, mode, code version and model."""
    device = ok["device"].astype(str)
    mine = ok[
        (device.eq("cpu") & ok["machine"].eq(cpu_machine))
        | (device.eq("cuda") & ok["machine"].eq(gpu_machine))
    ].copy()
    if mine.empty:
        return []
    rows = []
    for where, group in groups_of_one_work(mine, [k for k in GROUP if k != "boot_id"]):
        where["boot_id"] = " + ".join(sorted({_text(b) for b in group["boot_id"]} - {""}))
        for pick, column in PICKS.items():
            row = _pair(where, pick, column, group, cells)
            row.update(cpu_machine=cpu_machine, gpu_machine=gpu_machine, crosses_machines=True)
            crossing = f"crosses machines: CPU on {cpu_machine}, GPU on {gpu_machine}"
            row["note"] = "; ".join(n for n in (crossing, row["note"]) if n)
            row["finding"] = finding(row)
            rows.append(row)
    return rows


def usd_per_million(price_per_hour: pd.Series, samples_per_s: pd.Series) -> pd.Series:
    """Cost of a million samples at an hourly price and a throughput (cost.csv's basis)."""
    per_usd = pd.to_numeric(samples_per_s) * 3600.0 / pd.to_numeric(price_per_hour)
    return (1e6 / per_usd.replace(0, np.nan)).astype("float64")


def config_name(cell: pd.Series, extras: list[str]) -> str:
    """A readable name of a cell's configuration, e.g. "torch bf16 compiled, batch 256"."""
    head = " ".join(
        _show(cell[k]) for k in ("framework", "precision", "compile") if _present(cell, k)
    )
    parts = [head] if head else []
    if _present(cell, "batch_size"):
        parts.append(f"batch {int(cell['batch_size'])}")
    if str(cell.get("device")) == "cpu" and _present(cell, "threads"):
        parts.append(f"{int(cell['threads'])} threads")
    if _present(cell, "gpus") and _number(cell["gpus"]) not in (None, 1.0):
        parts.append(f"{int(float(cell['gpus']))} GPUs")
    if _present(cell, "engine"):
        parts.append(f"engine {_show(cell['engine'])}")
    parts += [f"{k} {_show(cell[k])}" for k in extras if k not in NAMED_AXES and _present(cell, k)]
    return ", ".join(parts)


def _pair(
    key: dict[str, str], pick: str, column: str, group: pd.DataFrame, cells: pd.DataFrame
) -> dict[str, Any]:
    """The best CPU and GPU cell of one group by `column`, set side by side."""
    extras = [c for c in extra_axis_columns(cells) if c not in GROUP]
    row: dict[str, Any] = {**key, "pick": pick, "crosses_machines": False}
    notes = []
    if not key["boot_id"]:
        notes.append("boot_id not recorded: one machine not checked")
    converge = key.get("mode") in modes(to_target=True) and "cost_to_target_usd" in group
    if converge and pick == "cheapest":
        column = "cost_to_target_usd"  # a converge row is judged on the cost to the target
    chosen, fastest = {}, {}
    for side, device in DEVICES.items():
        on_device = group[group["device"].astype(str).eq(device)]
        agreeing = on_device[~on_device["_below"]]
        mine = agreeing[pd.to_numeric(agreeing[column], errors="coerce").notna()]
        if mine.empty:
            notes.append(_why_none(on_device, agreeing, device))
            continue
        ascending = pick == "cheapest"
        best = mine.sort_values([column, "cell_id"], ascending=[ascending, True]).iloc[0]
        fastest[side] = agreeing.sort_values(
            ["samples_per_s", "cell_id"], ascending=[False, True]
        ).iloc[0]
        chosen[side] = best
        row[f"{side}_cell"] = best.get("cell_id")
        row[f"{side}_config"] = config_name(best, extras)
        row[f"{side}_samples_per_s"] = float(best["samples_per_s"])
        row[f"{side}_usd_per_million"] = float(best["usd_per_million"])
        row[f"{side}_joules_per_sample"] = _number(best.get("joules_per_sample", np.nan))
        row[f"{side}_priced_as"] = best.get("priced_as")
        notes.append(noise.steadiness_note(best, side))
        why = unverified_reason(best)
        if why:  # no trained fp32 reference vouches for this pick's answers
            row["quality"] = "quality unverified"
            notes.append(f"{side} pick's {why}")
    if "gpu" in chosen:
        row["gpu_name"] = chosen["gpu"].get("gpu_name")
        row["gpu_util_mean"] = _number(chosen["gpu"].get("gpu_util_mean"))
        notes.append(noise.utilisation_note(row["gpu_util_mean"]))
    if len(chosen) == 2:
        cpu, gpu = chosen["cpu"], chosen["gpu"]
        row["speedup"] = float(fastest["gpu"]["samples_per_s"] / fastest["cpu"]["samples_per_s"])
        row["speedup_cpu_cell"] = fastest["cpu"].get("cell_id")
        row["speedup_gpu_cell"] = fastest["gpu"].get("cell_id")
        ratio = (
            float(cpu[column]) / float(gpu[column])
            if converge and pick == "cheapest"
            else (float(cpu["usd_per_million"]) / float(gpu["usd_per_million"]))
        )
        row["cost_ratio"] = ratio
        row["cheaper"] = "gpu" if ratio > 1 else "cpu"
        if not (converge and pick == "cheapest"):
            row["cost_ratio_low"], row["cost_ratio_high"] = noise.cost_ratio_range(cpu, gpu, ratio)
        else:  # the median cost to target of each side's runs, the range over its runs
            row["cost_ratio_low"], row["cost_ratio_high"] = noise.to_target_range(cpu, gpu, ratio)
            notes.append(_runs_note(cpu, gpu))
        low, high = row.get("cost_ratio_low"), row.get("cost_ratio_high")
        row["confidence"] = noise.confidence(ratio, low, high)
        per_gpu = float(gpu["price_per_hour"]) / _gpu_count(gpu)
        row["breakeven_gpu_usd_per_hour"] = per_gpu * ratio
    row["note"] = "; ".join(n for n in notes if n)
    row["finding"] = finding(row)
    return row


def _runs_note(cpu: pd.Series, gpu: pd.Series) -> str:
    """How many converge runs each side's cost to target is the median of."""
    runs = [int(_number(c.get("converge_runs")) or 1) for c in (cpu, gpu)]
    if runs == [1, 1]:
        return "cost to target, one run a side: no range"
    return f"median cost to target of {runs[0]} CPU and {runs[1]} GPU runs, range over the runs"


def _why_none(on_device: pd.DataFrame, agreeing: pd.DataFrame, device: str) -> str:
    """Why a device has no best cell in a group: none ok, none agreeing with fp32, none priced."""
    if on_device.empty:
        return f"no ok {device} cell"
    if "converged" in on_device and on_device["mode"].isin(modes(to_target=True)).all():
        reached = on_device["converged"].astype("boolean").fillna(False).astype(bool)
        if not reached.any():
            best = pd.to_numeric(on_device.get("accuracy"), errors="coerce").max()
            runs = pd.to_numeric(on_device.get("converge_runs"), errors="coerce").max()
            every = f" in all {int(runs)} of its runs" if runs > 1 else ""
            return f"no {device} converge cell reached its target{every} (best held-out {best:.3f})"
    if agreeing.empty:
        shares = pd.to_numeric(on_device.get("agreement_fp32"), errors="coerce").dropna()
        low, high = f"{shares.min():.3f}", f"{shares.max():.3f}"
        span = "" if shares.empty else f" ({low})" if low == high else f" ({low}-{high})"
        share = f"{REQUIRED:.0%}"
        return f"every ok {device} cell agrees with fp32 on under {share} of predictions{span}"
    return f"no priced ok {device} cell"


def _show(value: Any) -> str:
    """An axis value as written in the config (128, not 128.0 from a column with gaps)."""
    number = _number(value) if not isinstance(value, str) else None
    return format_value(int(number) if number is not None and number.is_integer() else value)


def _gpu_count(cell: pd.Series) -> float:
    count = _number(cell.get("gpus", np.nan))
    return count if count and count > 0 else 1.0


def _present(cell: pd.Series, key: str) -> bool:
    return key in cell.index and _text(cell[key]) != ""

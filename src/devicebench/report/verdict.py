"""The verdict: per workload and mode, the best CPU against the best GPU configuration.

Its rows come from tables/best.csv (one row per task, mode, machine, code version and pick); the
verdict uses the `cheapest` pick. Prices are an input: the costs are worked out again here from
each side's measured throughput and the prices file given, so a buyer's own prices change the
verdict without rerunning a cell. Every sentence is computed from those rows.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from devicebench.aggregate import noise
from devicebench.aggregate.analysis import _gpu_count, price_cells
from devicebench.aggregate.verdict_words import finding

BEST_COLUMNS = [
    *"task mode pick boot_id code_version cpu_cell cpu_config cpu_samples_per_s".split(),
    *"cpu_usd_per_million cpu_joules_per_sample gpu_cell gpu_config gpu_name".split(),
    *"gpu_samples_per_s gpu_usd_per_million gpu_joules_per_sample speedup cheaper".split(),
    *"cost_ratio breakeven_gpu_usd_per_hour note".split(),
]  # and, where a task has several models, `model` (each model compared on its own)
SIDES = ("cpu", "gpu")


def load_best(folder: Path) -> pd.DataFrame | None:
    """tables/best.csv, or None where the study's tables predate it."""
    path = Path(folder) / "best.csv"
    if not path.exists():
        return None
    best = pd.read_csv(path, dtype={"boot_id": "str", "code_version": "str", "note": "str"})
    missing = [c for c in BEST_COLUMNS if c not in best]
    if missing:
        raise ValueError(f"{path}: missing columns {', '.join(missing)}")
    return best


def _priced(cells: pd.DataFrame, prices: dict[str, Any]) -> dict[str, tuple[float, int, str]]:
    """Per cell id: its hourly price at `prices` (all its GPUs for a DDP cell; a declared
    machine as itself), its GPU count and the shape it is priced as."""
    if cells.empty or "cell_id" not in cells:
        return {}
    priced = price_cells(cells, prices)
    return {
        str(cid): (float(p), n, s if isinstance(s, str) else "")
        for cid, p, n, s in zip(
            priced["cell_id"],
            priced["price_per_hour"],
            _gpu_count(cells),
            priced["priced_as"],
            strict=True,
        )
    }


def reprice(best: pd.DataFrame, cells: pd.DataFrame, prices: dict[str, Any]) -> pd.DataFrame:
    """best.csv worked out again at `prices`: each side's cost per million samples and shape,
    the cost ratio (per sample, or to the target on converge rows) with its range over the
    repetitions scaled by the same price change, cheaper, confidence, break-even GPU price and
    the finding's words. A side whose cell is not in `cells` keeps the table's cost (column
    `priced` says which). Speedups are of throughputs and do not change."""
    found = _priced(cells, prices)
    out = best.copy()
    for column in ("cost_ratio_low", "cost_ratio_high", "confidence", "finding"):
        if column not in out:
            out[column] = np.nan
    repriced = pd.Series(True, index=out.index)
    factor = {}
    for side in SIDES:
        cell = out[f"{side}_cell"].astype("object")
        hit = cell.map(lambda c: found.get(str(c)) if pd.notna(c) else None)
        price = hit.map(lambda f: f[0] if f else math.nan).astype("float64")
        out[f"{side}_gpus"] = hit.map(lambda f: f[1] if f else 1)
        fresh = price / (out[f"{side}_samples_per_s"] * 3600.0) * 1e6
        known = cell.isna() | price.notna()
        old = pd.to_numeric(out[f"{side}_usd_per_million"], errors="coerce")
        out[f"{side}_price_per_hour"] = price
        out[f"{side}_usd_per_million"] = fresh.where(known, old)
        factor[side] = out[f"{side}_usd_per_million"] / old
        shape = hit.map(lambda f: f[2] if f else None)
        kept = out.get(f"{side}_priced_as", pd.Series(None, index=out.index, dtype="object"))
        out[f"{side}_priced_as"] = shape.where(known & shape.notna(), kept)
        repriced &= known
    out["priced"] = np.where(repriced, "these prices", "the aggregate's prices")
    cpu, gpu = out["cpu_usd_per_million"], out["gpu_usd_per_million"]
    change = factor["cpu"] / factor["gpu"]  # how the price change moves any CPU/GPU cost ratio
    old_ratio = pd.to_numeric(out["cost_ratio"], errors="coerce")
    # the table's ratio (per sample, or to the target on converge rows) moved by the price
    # change; per sample where a hand-made table has none
    out["cost_ratio"] = (old_ratio * change).fillna(cpu / gpu)
    for end in ("low", "high"):
        out[f"cost_ratio_{end}"] = pd.to_numeric(out[f"cost_ratio_{end}"], errors="coerce") * change
    ratio = out["cost_ratio"]
    out["cheaper"] = np.where(ratio.notna(), np.where(ratio > 1, "gpu", "cpu"), None)
    per_gpu = out["gpu_price_per_hour"] / out["gpu_gpus"]  # per GPU, as prices are
    kept = pd.to_numeric(out["breakeven_gpu_usd_per_hour"], errors="coerce") * factor["cpu"]
    out["breakeven_gpu_usd_per_hour"] = (per_gpu * ratio).fillna(kept).where(ratio.notna())
    out["confidence"] = [
        noise.confidence(r, lo, hi)
        for r, lo, hi in zip(ratio, out["cost_ratio_low"], out["cost_ratio_high"], strict=True)
    ]
    out["confidence"] = out["confidence"].replace("", np.nan)
    out["finding"] = [finding(row) for row in out.to_dict("records")]
    return out


def too_close(row: pd.Series) -> bool:
    """Whether a paired verdict row is too close to call (noise.confidence: its range crosses
    even or its ratio lies within the lease-to-lease variance)."""
    return (
        noise.confidence(
            row.get("cost_ratio"), row.get("cost_ratio_low"), row.get("cost_ratio_high")
        )
        == noise.TOO_CLOSE
    )


def verdict_rows(best: pd.DataFrame) -> pd.DataFrame:
    """The rows the verdict shows: pick == cheapest, none outranked (a device's pick beaten on
    another machine); rows with both devices first, then in task and mode order. `label` names
    the row (its model too where the task has several)."""
    rows = best[best["pick"].astype(str).eq("cheapest")]
    if "outranked" in rows:  # a pair without each device at its best (aggregate.outranked)
        rows = rows[~rows["outranked"].astype("boolean").fillna(False).astype(bool)]
    rows = labelled(rows)
    rows["_unpaired"] = rows["cost_ratio"].isna()
    keys = [k for k in ("task", "mode", "model", "work", "boot_id", "code_version") if k in rows]
    return rows.sort_values(["_unpaired", *keys], kind="stable", na_position="last")


def labelled(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` (one pick) with a `label` naming each: task and mode, the model where the task
    has several and the work where the model has several (prompt/output lengths), the code
    version and boot where the same workload appears twice (`workload`: the label without them)."""
    rows = rows.copy()
    rows["label"] = rows["task"].astype(str) + " " + rows["mode"].astype(str)
    named = pd.Series("", index=rows.index)
    if "model" in rows:
        several = rows.groupby(["task", "mode"])["model"].transform("nunique").gt(1)
        named[several] = rows.loc[several, "model"].astype(str)
    if "work" in rows:
        work = _text(rows["work"], "")
        several = work.groupby([rows["task"], rows["mode"], _text(rows["model"], "")]).transform(
            "nunique"
        ).gt(1)  # fmt: skip
        named[several] = [
            ", ".join(part for part in pair if part)
            for pair in zip(named[several], work[several], strict=True)
        ]
    given = named.ne("")
    rows.loc[given, "label"] += " (" + named[given] + ")"
    rows["workload"] = rows["label"]  # the label without the machine that tells two apart
    twice = rows["label"].duplicated(keep=False)  # the same workload on two machines or codes
    where = _text(rows["code_version"], "?") + " " + _text(rows["boot_id"], "").str[:8]
    rows.loc[twice, "label"] += " [" + where[twice].str.strip() + "]"
    return rows


def number(value: Any, digits: int = 3) -> str:
    """A figure to `digits` significant digits with thousands separators; '—' when missing."""
    if value is None or (isinstance(value, float | np.floating) and not math.isfinite(value)):
        return "—"
    if isinstance(value, str):
        return value
    value = float(value)
    if value.is_integer() and abs(value) >= 1:
        return f"{value:,.0f}"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= digits - 1:
        return f"{value:,.0f}"
    return f"{value:,.{digits - 1 - magnitude}f}"


def times(value: Any) -> str:
    """A ratio as '3.2x'; within 1 % of 1 with four digits, so 0.996 never reads as 1.00x."""
    shown = number(value)
    if shown == "—":
        return shown
    near_one = abs(float(value) - 1) < 0.01 and float(value) != 1
    return f"{number(value, 4) if near_one else shown}x"


def lead(row: pd.Series, won: str = "{side}, {by}") -> str:
    """Which device is cheaper and by how much, as `won` words it ('GPU, 85x'); 'too close to
    call (CPU 1.2x)' where noise.confidence says so; '—' without a pair."""
    ratio = row["cost_ratio"]
    if pd.isna(ratio):
        return "—"
    side = "GPU" if float(ratio) > 1 else "CPU"
    by = times(ratio if side == "GPU" else 1 / ratio)
    return f"{noise.TOO_CLOSE} ({side} {by})" if too_close(row) else won.format(side=side, by=by)


def _label(row: pd.Series) -> str:
    return str(row.get("label", f"{row['task']} {row['mode']}"))


def _has(row: pd.Series, side: str) -> bool:
    return pd.notna(row.get(f"{side}_samples_per_s"))


def sentences(
    best: pd.DataFrame, prices: dict[str, Any], why_no_gpu: str | None = None
) -> list[str]:
    """Three or four sentences computed from the verdict rows (and the fastest picks)."""
    rows = verdict_rows(best)
    if rows.empty:
        return ["tables/best.csv has no row with pick 'cheapest': there is nothing to compare."]
    paired = rows[rows["cost_ratio"].notna()]
    out = []
    if paired.empty:
        return unpaired(rows, why_no_gpu)
    even = paired[paired.apply(too_close, axis=1)]
    gpu_wins = paired[paired["cheaper"].eq("gpu") & ~paired.index.isin(even.index)]
    cpu_wins = paired[paired["cheaper"].eq("cpu") & ~paired.index.isin(even.index)]

    def listed(part: pd.DataFrame) -> str:
        return f" ({', '.join(_label(r) for _, r in part.iterrows())})" if len(part) else ""

    tie = f", and {len(even)} {noise.TOO_CLOSE}{listed(even)}" if len(even) else ""
    out.append(
        f"Per sample, the GPU is cheaper in {len(gpu_wins)} of {len(paired)} workload-modes"
        f"{listed(gpu_wins)} and the CPU in {len(cpu_wins)}{listed(cpu_wins)}{tie}."
    )
    extremes = []
    if not gpu_wins.empty:
        top = gpu_wins.loc[gpu_wins["cost_ratio"].idxmax()]
        extremes.append(
            f"the GPU's widest lead is {_label(top)}, {times(top['cost_ratio'])} cheaper "
            f"(US${number(top['gpu_usd_per_million'])} vs US${number(top['cpu_usd_per_million'])}"
            " per million samples)"
        )
    if not cpu_wins.empty:
        top = cpu_wins.loc[cpu_wins["cost_ratio"].idxmin()]
        extremes.append(
            f"the CPU's widest lead is {_label(top)}, {times(1 / top['cost_ratio'])} cheaper "
            f"(US${number(top['cpu_usd_per_million'])} vs US${number(top['gpu_usd_per_million'])}"
            " per million samples)"
        )
    joined = "; ".join(extremes)
    out.append(f"{joined[:1].upper()}{joined[1:]}.")
    fastest = labelled(best[best["pick"].astype(str).eq("fastest") & best["speedup"].notna()])
    if not fastest.empty:
        low = fastest.loc[fastest["speedup"].idxmin()]
        high = fastest.loc[fastest["speedup"].idxmax()]
        span = f"{times(low['speedup'])} ({_label(low)})"
        if len(fastest) > 1:
            span = f"from {span} to {times(high['speedup'])} ({_label(high)})"
        out.append(f"Fastest GPU over fastest CPU configuration: {span}.")
    cheap = paired.loc[paired["breakeven_gpu_usd_per_hour"].idxmin()]
    dear = paired.loc[paired["breakeven_gpu_usd_per_hour"].idxmax()]
    used = sorted({number(p) for p in paired.get("gpu_price_per_hour", []) if pd.notna(p)})
    at = f" (the prices used charge US${' / '.join(used)} per GPU-hour)" if used else ""
    out.append(
        f"The GPU costs no more per sample than the CPU while its hourly price stays under the "
        f"break-even column: from US${number(cheap['breakeven_gpu_usd_per_hour'])} "
        f"({_label(cheap)}) to US${number(dear['breakeven_gpu_usd_per_hour'])} ({_label(dear)})"
        f"{at}."
    )
    return out


def _notes(value: Any) -> list[str]:
    return [n.strip() for n in str(value).split(";") if n.strip()] if pd.notna(value) else []


def common_notes(best: pd.DataFrame) -> list[str]:
    """Notes every verdict row carries (said once under the table, not on each row)."""
    rows = verdict_rows(best)
    if rows.empty:
        return []
    each = [set(_notes(v)) for v in rows["note"]]
    return sorted(set.intersection(*each))


def _drop(note: str, common: list[str]) -> str:
    return "; ".join(n for n in _notes(note) if n not in common)


def _text(column: pd.Series, empty: str) -> pd.Series:
    return column.astype("object").map(lambda v: empty if pd.isna(v) else str(v))


def unpaired(rows: pd.DataFrame, why_no_gpu: str | None) -> list[str]:
    """What the verdict can say when no row has both sides: which side is missing, and why."""
    has = {side: rows.apply(_has, axis=1, side=side).any() for side in SIDES}
    missing = [side.upper() for side in SIDES if not has[side]]
    what = f"no {' and no '.join(missing)} cell ran ok" if missing else "no pair ran ok"
    notes = sorted({n for v in rows["note"] for n in _notes(v)})
    reason = f" ({'; '.join(notes)})" if notes else ""
    out = [
        f"No workload has both a CPU and a GPU cell: {what}{reason}, so this study gives no "
        "CPU/GPU verdict; the table shows the best configuration each side had."
    ]
    if why_no_gpu and not has["gpu"]:
        out.append(f"Why: {why_no_gpu}.")
    for side in SIDES:
        part = rows[rows[f"{side}_usd_per_million"].notna()]
        if part.empty:
            continue
        low = part.loc[part[f"{side}_usd_per_million"].idxmin()]
        high = part.loc[part[f"{side}_usd_per_million"].idxmax()]
        out.append(
            f"On the {side.upper()} a million samples cost from "
            f"US${number(low[f'{side}_usd_per_million'])} ({_label(low)}) to "
            f"US${number(high[f'{side}_usd_per_million'])} ({_label(high)})."
        )
    return out


def display_table(best: pd.DataFrame) -> pd.DataFrame:
    """The verdict table as shown: one row per workload and mode (and machine, if several)."""
    rows = verdict_rows(best)
    shown = pd.DataFrame(
        {
            "workload": rows["task"].astype(str),
            "mode": rows["mode"].astype(str),
            "cheaper, by": rows.apply(lead, axis=1),
            "CPU US$ / M samples": rows["cpu_usd_per_million"].map(number),
            "GPU US$ / M samples": rows["gpu_usd_per_million"].map(number),
            "break-even GPU US$/h": rows["breakeven_gpu_usd_per_hour"].map(number),
            "speedup": rows["speedup"].map(times),
            "best CPU configuration": _text(rows["cpu_config"], "—"),
            "CPU samples/s": rows["cpu_samples_per_s"].map(number),
            "best GPU configuration": _text(rows["gpu_config"], "—"),
            "GPU samples/s": rows["gpu_samples_per_s"].map(number),
            "CPU J / sample": rows["cpu_joules_per_sample"].map(number),
            "GPU J / sample": rows["gpu_joules_per_sample"].map(number),
            "note": _text(rows["note"], "").map(lambda n: _drop(n, common_notes(best))),
        }
    )
    if "model" in rows:
        shown.insert(1, "model", _text(rows["model"], "—"))
    if "work" in rows:  # prompt/output lengths, sequence length: what one sample is
        shown.insert(2 if "model" in rows else 1, "work", _text(rows["work"], "—"))
    if rows["code_version"].nunique(dropna=False) > 1:
        shown["code version"] = _text(rows["code_version"], "—").to_numpy()
    if rows["boot_id"].nunique(dropna=False) > 1:
        shown["machine (boot id)"] = _text(rows["boot_id"], "—").str[:8].to_numpy()
    return shown.reset_index(drop=True)


def compact(shown: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The verdict table without columns that are empty in every row, and what they were."""
    empty = [c for c in shown.columns if shown[c].isin(["—", ""]).all() and c != "workload"]
    return shown.drop(columns=empty), [c for c in empty if c != "note"]


def why_no_gpu(cells: pd.DataFrame) -> str | None:
    """The recorded reasons the GPU cells did not run ok, or None where some ran ok."""
    if cells.empty or "device" not in cells:
        return None
    gpu = cells[cells["device"].astype(str).isin(["cuda", "mps"])]
    if gpu["status"].eq("ok").any():
        return None
    if gpu.empty:
        return "the study's grid has no GPU cell"
    reasons = sorted({f"{s}: {m}" for s, m in zip(gpu["status"], gpu["message"], strict=True)})
    return f"{len(gpu)} GPU cells were {'; '.join(reasons)}"

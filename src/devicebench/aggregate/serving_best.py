"""best.csv's serve rows: each device's best server judged at the model's p99 latency bound.

A serve verdict is not the closed-loop throughput: it is `max_valid_qps`, the highest Poisson
rate whose p99 stayed under the bound in LoadGen's Server scenario, confirmed by repeated runs
(devicebench.serving.slo), and the cost per 1,000 requests at that rate. Per (task, mode,
boot_id, code_version, model) group: the CPU's and the GPU's best confirmed cell by that rate
(`fastest`) and by its cost (`cheapest`); a device none of whose cells met the bound says so
("CPU: no rate meets p99 <= 15 ms"); a group whose records predate the search says that instead
of a verdict. Where a device has a confirm record (plan.confirm: its best sweep cell confirmed,
axis `confirm: best`), only that record judges it: the sweep cells' probes are context (their
search status is probed, never a verdict), and a confirm step that found nothing to confirm says
why. A sweep confirmed on another machine or code version (its confirm blocks ran in a later
session), or one whose cells a later confirm step weighed against a later sweep's, gives no row
of its own: the confirm records' group holds the verdict. best.py calls
`serve_rows` (its own logic is for the other modes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from devicebench.aggregate import noise
from devicebench.aggregate.values import key_text as _text
from devicebench.aggregate.values import number_or_none as _number
from devicebench.aggregate.work import groups_of_one_work
from devicebench.scenarios import modes

GROUP = ["task", "mode", "boot_id", "code_version", "model"]
DEVICES = {"cpu": "cpu", "gpu": "cuda"}
SHOWN = {"cpu": "CPU", "gpu": "GPU"}
PREDATES = "predates_search"
PREDATES_NOTE = (
    "no latency-bound search (serving.slo): the record predates it or its config set no "
    "serve.slo; closed-loop throughput only, no verdict"
)

# the columns slo_columns adds to the cells frame (collect.py knows them: never extra axes)
SLO_CELL_COLUMNS = (
    "slo_status", "slo_message", "p99_bound_ms", "max_valid_qps", "inprocess_ratio", "slo_role",
    "confirmed_cell", "run_qps_low", "run_qps_high", "probe_qps", "confirm_candidates",
)  # fmt: skip
CONFIRM_AXIS = "confirm"  # plan.confirm's axis of a confirm record (value: best)
ROLES = {"confirm": "confirmed best", "sweep": "sweep (probes only)"}


def slo_role(record: Mapping[str, Any]) -> str:
    """What a serve record is to the verdict: the confirm record of a sweep, a sweep cell
    (probes only), or '' (a cell that confirms itself, or no search)."""
    axes = record.get("axes") or {}
    if isinstance(axes, Mapping) and axes.get(CONFIRM_AXIS):
        return ROLES["confirm"]
    serving = record.get("serving") if isinstance(record.get("serving"), Mapping) else {}
    found = serving.get("slo") if isinstance(serving.get("slo"), Mapping) else {}
    settings = found.get("settings") if isinstance(found.get("settings"), Mapping) else {}
    sweep = found.get("status") == "probed" or settings.get("confirm") == "best"
    return ROLES["sweep"] if sweep else ""


def slo_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict's columns of the cells frame (collect.py) for a serve record; {} otherwise."""
    axes = record.get("axes") or {}
    if not isinstance(axes, Mapping) or axes.get("mode") not in modes(serves=True):
        return {}
    serving = record.get("serving") if isinstance(record.get("serving"), Mapping) else {}
    found = serving.get("slo") if isinstance(serving.get("slo"), Mapping) else None
    if found is None:
        return {"slo_status": PREDATES, "slo_message": PREDATES_NOTE}
    confirm = record.get("confirm") if isinstance(record.get("confirm"), Mapping) else {}
    return {
        "slo_status": found.get("status"),
        "slo_message": found.get("message"),
        "p99_bound_ms": found.get("p99_bound_ms"),
        "max_valid_qps": found.get("max_valid_qps"),
        "inprocess_ratio": serving.get("inprocess_ratio"),
        "slo_role": slo_role(record),
        "confirmed_cell": confirm.get("chosen_cell"),
        "confirm_candidates": _candidates(confirm),
        "probe_qps": found.get("probe_qps"),  # a sweep cell's: what stale_confirm compares
        **_run_span(found.get("run_qps")),
    }


def _candidates(confirm: Mapping[str, Any]) -> str | None:
    """The sweep cells a confirm step weighed (one cell id a line), or None."""
    found = confirm.get("candidates") if isinstance(confirm.get("candidates"), list) else []
    ids = [str(c["cell_id"]) for c in found if isinstance(c, Mapping) and c.get("cell_id")]
    return "\n".join(ids) or None


def _run_span(values: Any) -> dict[str, float | None]:
    """The lowest and highest confirming run's rate: the range the verdict's ratio carries."""
    numbers = [_number(v) for v in values] if isinstance(values, list) else []
    numbers = [v for v in numbers if v is not None and v > 0]
    low, high = (min(numbers), max(numbers)) if numbers else (None, None)
    return {"run_qps_low": low, "run_qps_high": high}


def is_serve(cells: pd.DataFrame) -> pd.Series:
    """Which rows of the cells frame are serve cells."""
    if "mode" not in cells:
        return pd.Series(False, index=cells.index)
    return cells["mode"].astype(str).isin(modes(serves=True))


def serve_rows(
    cells: pd.DataFrame, name: Callable[[pd.Series], str], columns: list[str]
) -> pd.DataFrame:
    """best.csv's rows (its `columns`) for the serve cells among `cells` (analysed: with
    price_per_hour); `name` is best.py's configuration text of one cell."""
    serve = cells[is_serve(cells)].copy()
    if serve.empty:
        return pd.DataFrame(columns=columns)
    wanted = [*GROUP, "slo_status", "max_valid_qps", "p99_bound_ms", "gpus", "gpu_name"]
    for column in [*wanted, "slo_role", "slo_message", "confirmed_cell", "cell_id"]:
        if column not in serve:
            serve[column] = np.nan
    weighed = serve.get("confirm_candidates", pd.Series(dtype=object)).dropna().astype(str)
    confirmed = set(serve["confirmed_cell"].dropna().astype(str))
    confirmed |= {cell for cells in weighed for cell in cells.splitlines()}
    rows = []
    for base, group in groups_of_one_work(serve, GROUP):
        if _judged_elsewhere(group, confirmed):
            continue
        predates = group["slo_status"].fillna(PREDATES).astype(str).eq(PREDATES).all()
        for pick in ("fastest", "cheapest"):  # the verdict shows `cheapest`: the note with it
            empty = base | {"pick": pick, "note": PREDATES_NOTE}
            rows.append(empty if predates else _pair(base, pick, group, name))
    return pd.DataFrame(rows, columns=columns)


def _judged_elsewhere(group: pd.DataFrame, confirmed: set[str]) -> bool:
    """A sweep whose cells a confirm step weighed (it confirmed the best of them, on the machine
    that ran it, perhaps another): the confirm's group gives the verdict, this one no row."""
    roles = group["slo_role"].map(_text)
    cells = set(group["cell_id"].dropna().astype(str))
    return bool(roles.eq(ROLES["sweep"]).all() and cells & confirmed)


def _pair(
    base: dict[str, Any], pick: str, group: pd.DataFrame, name: Callable[[pd.Series], str]
) -> dict[str, Any]:
    bound = _first(group["p99_bound_ms"])
    rate = pd.to_numeric(group["max_valid_qps"], errors="coerce")
    ok = group[group["status"].astype(str).eq("ok") & group["slo_status"].eq("ok") & (rate > 0)]
    ok = ok.assign(
        _rate=pd.to_numeric(ok["max_valid_qps"]),
        usd_per_million=pd.to_numeric(ok["price_per_hour"])
        / 3600
        / pd.to_numeric(ok["max_valid_qps"])
        * 1e6,  # fmt: skip
    )
    row: dict[str, Any] = base | {"pick": pick, "p99_bound_ms": bound}
    notes = [f"judged at p99 <= {bound:g} ms: LoadGen Server max_valid_qps" if bound else ""]
    chosen, unserved = {}, {}
    for side, device in DEVICES.items():
        mine = ok[ok["device"].astype(str).eq(device)]
        confirmed = _confirmed(group, device)
        if confirmed is not None:  # a confirm step judged this device: its record alone
            mine = mine[mine.index.isin(confirmed.index)]
        if pick == "cheapest":
            mine = mine[mine["usd_per_million"].notna()]
        if mine.empty:
            judged = group if confirmed is None else confirmed
            notes.append(_why_none(judged, side, device, bound))
            unserved[side] = _no_rate(judged, device)
            continue
        column, ascending = ("_rate", False) if pick == "fastest" else ("usd_per_million", True)
        best = mine.sort_values([column, "cell_id"], ascending=[ascending, True]).iloc[0]
        chosen[side] = best
        row[f"{side}_cell"] = best.get("cell_id")
        row[f"{side}_config"] = name(best)
        row[f"{side}_samples_per_s"] = float(best["_rate"])
        row[f"{side}_usd_per_million"] = _number(best["usd_per_million"])
        row[f"{side}_priced_as"] = best.get("priced_as")  # the instance shape its price is of
        cost = _number(best["usd_per_million"])
        if cost is not None:
            notes.append(f"{SHOWN[side]} ${cost / 1000:.4g} per 1,000 requests at that rate")
    if "gpu" in chosen:
        row["gpu_name"] = chosen["gpu"].get("gpu_name")
    if len(chosen) == 2:
        cpu, gpu = chosen["cpu"], chosen["gpu"]
        row["speedup"] = float(gpu["_rate"]) / float(cpu["_rate"])
        if _number(cpu["usd_per_million"]) and _number(gpu["usd_per_million"]):
            ratio = float(cpu["usd_per_million"]) / float(gpu["usd_per_million"])
            row["cost_ratio"] = ratio
            row["cheaper"] = "gpu" if ratio > 1 else "cpu"
            row["cost_ratio_low"], row["cost_ratio_high"] = _ratio_range(cpu, gpu, ratio)
            if not np.isnan(row["cost_ratio_low"]):
                notes.append("range over each side's confirming runs")
            gpus = _number(gpu.get("gpus")) or 1.0
            row["breakeven_gpu_usd_per_hour"] = float(gpu["price_per_hour"]) / gpus * ratio
    elif len(chosen) == 1:
        (side,) = chosen
        (other,) = set(DEVICES) - {side}
        if unserved.get(other):  # no rate at all, not just none confirmed: a verdict
            row["cheaper"] = side
            notes.append(f"only the {SHOWN[side]} serves at the bound")
        else:  # an unconfirmed rate is not a missing one: no verdict until it confirms
            notes.append(f"no verdict until the {SHOWN[other]}'s rate at the bound confirms")
    row["note"] = "; ".join(n for n in notes if n)
    return row


def _ratio_range(cpu: pd.Series, gpu: pd.Series, ratio: float) -> tuple[float, float]:
    """The CPU/GPU cost ratio's (low, high) over each side's confirming runs (noise.py's one
    rule); NaN where a side's runs are not recorded."""
    spans = []
    for side in (cpu, gpu):
        low, high = _number(side.get("run_qps_low")), _number(side.get("run_qps_high"))
        if low is None or high is None:
            return np.nan, np.nan
        spans.append((low, float(side["_rate"]), high))
    return noise.ratio_range(ratio, *spans)


def _why_none(group: pd.DataFrame, side: str, device: str, bound: float | None) -> str:
    """Why a device has no rate at the bound: no cell, none searched, none that met it."""
    mine = group[group["device"].astype(str).eq(device)]
    who = SHOWN[side]
    if mine.empty:
        return f"{who}: no serve cell"
    statuses = mine["slo_status"].fillna(PREDATES).astype(str)
    if statuses.eq(PREDATES).all():
        return f"{who}: {PREDATES_NOTE}"
    at = f"p99 <= {bound:g} ms" if bound else "its bound"
    if _no_rate(group, device):
        return f"{who}: no rate meets {at}"
    roles = mine["slo_role"].map(_text)
    if roles.eq(ROLES["confirm"]).all() and statuses.eq("no_candidate").all():
        return f"{who}: nothing confirmed: {_text(mine['slo_message'].iloc[0])}"
    counts = statuses.value_counts().sort_index()
    said = ", ".join(f"{status} {count}" for status, count in counts.items())
    if roles.eq(ROLES["sweep"]).all():
        only = "" if statuses.eq("probed").all() else f" ({said})"
        return f"{who}: sweep probes only{only}, no confirm record on this machine and code version"
    return f"{who}: no confirmed rate at {at} ({said})"


def _no_rate(group: pd.DataFrame, device: str) -> bool:
    """Whether a device's records say no rate meets the bound at all (every search down to its
    lowest rate INVALID), as against a rate found but not confirmed or not searched."""
    statuses = group.loc[group["device"].astype(str).eq(device), "slo_status"].astype(str)
    return bool(not statuses.empty and statuses.eq("no_rate").all())


def _confirmed(group: pd.DataFrame, device: str) -> pd.DataFrame | None:
    """A device's confirm records in a group, or None where it has none (cells that confirm
    themselves, or only a sweep)."""
    mine = group[group["device"].astype(str).eq(device)]
    mine = mine[mine["slo_role"].map(_text).eq(ROLES["confirm"])]
    return None if mine.empty else mine


def _first(values: pd.Series) -> float | None:
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    return float(numbers.iloc[0]) if not numbers.empty else None

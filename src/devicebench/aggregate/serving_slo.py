"""The serving verdict's tables: each serve cell at its model's p99 bound, and every LoadGen run.

`serving_slo`: one row per serve record: the latency-bound search's status and message, the bound,
`max_valid_qps` (the median of the confirming runs' scheduled rates) with each run's value, the
runs' count, length and queries, LoadGen's early-stopping verdict, cost per 1,000 requests at
that rate, the closed-loop rate beside it, and the in-process yardstick (`inprocess_ratio`,
flagged under 0.8). A record from before the search (the published H100 serve cells) reads
`predates_search`: its closed-loop rate is context, not a verdict.

A sweep of `serve.slo.confirm: best` shows its cells as `slo_role` "sweep (probes only)" (status
probed, their probe rate as context) and each device's confirm record as "confirmed best", naming
the sweep cell it confirmed (`confirmed_cell`); only the latter carries a verdict.

`serving_slo_runs`: one row per LoadGen Server run of the searches (probes and confirming runs):
offered rate, scheduled rate, p99, LoadGen's verdict. The p99-against-rate chart draws them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from devicebench.aggregate.analysis import price_per_hour
from devicebench.aggregate.collect import device_label
from devicebench.aggregate.pairing import record_pairing
from devicebench.aggregate.records import read_record
from devicebench.aggregate.serving_best import ROLES, slo_columns, slo_role
from devicebench.engines import IN_PROCESS
from devicebench.scenarios import modes

IDENTITY = [
    "task", "model", "framework", "engine", "device_label", "precision", "batch_size", "server",
    "replicas", "clients", "batch_wait_ms",
]  # fmt: skip
SLO_COLUMNS = [
    *IDENTITY, "status", "slo_role", "slo_status", "slo_message", "p99_bound_ms", "max_valid_qps",
    "confirmed_cell", "run_qps",
    "runs", "duration_s", "queries_min", "early_stopping_met", "probe_qps", "probes",
    "closed_loop_rps", "inprocess_samples_per_s", "inprocess_ratio", "inprocess_below_target",
    "inprocess_note", "price_per_hour", "cost_per_1k_requests_at_bound_usd", "cell_id", "boot_id",
    "code_version",
]  # fmt: skip
RUN_COLUMNS = [
    *IDENTITY, "series", "phase", "target_qps", "scheduled_qps", "p99_ms", "p50_ms", "valid",
    "validity", "early_stopping_met", "queries", "http_errors", "p99_bound_ms", "max_valid_qps",
    "confirmed_at_qps", "slo_status", "cell_id", "boot_id", "code_version",
]  # fmt: skip


def _identity(record: Mapping[str, Any]) -> dict[str, Any]:
    axes = record.get("axes") or {}
    row = {key: axes.get(key) for key in IDENTITY if key in axes}
    return row | {
        "engine": axes.get("engine", IN_PROCESS),
        "server": axes.get("server", "uvicorn"),
        "replicas": int(axes.get("replicas", 1)),
        "batch_wait_ms": (record.get("serving") or {}).get("batch_wait_ms"),
        "device_label": device_label(axes.get("device"), axes.get("threads")),
    }


def _slo_row(record: Mapping[str, Any], prices: dict[str, Any]) -> dict[str, Any]:
    axes = record.get("axes") or {}
    serving = record.get("serving") or {}
    found = serving.get("slo") or {}
    yardstick = serving.get(IN_PROCESS) or {}
    env = record.get("environment") or {}
    price = price_per_hour(axes.get("device"), axes.get("threads"), env.get("gpu_name"), prices)
    rate = found.get("max_valid_qps")
    queries = [q for q in found.get("queries") or [] if q is not None]
    row = _identity(record) | slo_columns(record)
    row |= {
        "status": record.get("status"),
        "run_qps": " ".join(f"{v:.4g}" for v in found.get("run_qps") or []),
        "runs": found.get("runs"),
        "duration_s": found.get("duration_s"),
        "queries_min": min(queries) if queries else None,
        "early_stopping_met": found.get("early_stopping_met"),
        "probes": len(found.get("probes") or []) if found else None,
        "closed_loop_rps": (serving.get("pool") or {}).get("requests_per_s"),
        "inprocess_samples_per_s": yardstick.get("samples_per_s"),
        "inprocess_below_target": serving.get("inprocess_below_target"),
        "inprocess_note": serving.get("inprocess_note"),
        "price_per_hour": price,
        "cost_per_1k_requests_at_bound_usd": (
            price / 3600 / rate * 1000 if rate and not math.isnan(price) else None
        ),
        "cell_id": record.get("cell_id"),
        **record_pairing(record),
    }
    return row


def _serve_records(paths: list[Path]):
    for path in paths:
        record, wrong = read_record(path)
        if not wrong and (record.get("axes") or {}).get("mode") in modes(serves=True):
            yield record


def slo_table(paths: list[Path], prices: dict[str, Any]) -> pd.DataFrame:
    """One row per serve record among `paths` (ok or not: a failed cell says so)."""
    rows = [_slo_row(record, prices) for record in _serve_records(paths)]
    df = pd.DataFrame(rows, columns=SLO_COLUMNS)
    df["batch_wait_ms"] = pd.to_numeric(df["batch_wait_ms"])  # NaN where a record has none
    keys = ["task", "model", "device_label", "framework", "engine", "precision", "batch_size"]
    order = [*keys, "server", "replicas", "clients", "batch_wait_ms"]
    return df.sort_values(order, kind="stable").reset_index(drop=True)


def slo_runs_table(paths: list[Path]) -> pd.DataFrame:
    """One row per LoadGen Server run of every search among `paths`."""
    rows = []
    for record in _serve_records(paths):
        found = (record.get("serving") or {}).get("slo")
        if not isinstance(found, Mapping):
            continue
        base = _identity(record) | record_pairing(record) | {"cell_id": record.get("cell_id")}
        series = [str(base.get(k)) for k in ("framework", "engine", "precision", "batch_size")]
        series += [f"{base.get('server')} x{base.get('replicas')}", f"{base.get('clients')} cl"]
        if "batch_wait" in (record.get("axes") or {}):  # a window of the batch_wait sweep
            series += [f"wait {base['batch_wait_ms']:g} ms"]
        series += ["confirm"] if slo_role(record) == ROLES["confirm"] else []
        base |= {
            "series": " · ".join(series),
            "p99_bound_ms": found.get("p99_bound_ms"),
            "max_valid_qps": found.get("max_valid_qps"),
            "confirmed_at_qps": found.get("confirmed_at_qps"),
            "slo_status": found.get("status"),
        }
        for run in [*(found.get("probes") or []), *(found.get("confirms") or [])]:
            rows.append(base | {key: run.get(key) for key in RUN_COLUMNS if key in run})
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def verdict_p99(runs: pd.DataFrame) -> pd.DataFrame:
    """Per search with a verdict: the point (max_valid_qps, median p99 of its VALID confirming
    runs at that rate) the chart marks."""
    if runs.empty:
        return runs.assign(verdict_p99_ms=[])
    ok = runs[runs["slo_status"].astype(str).eq("ok") & runs["phase"].astype(str).eq("confirm")]
    ok = ok[ok["valid"].astype(bool) & ok["target_qps"].eq(ok["confirmed_at_qps"])]
    rows = []
    for _, group in ok.groupby("cell_id", sort=True):
        first = group.iloc[0].to_dict()
        p99 = [float(v) for v in group["p99_ms"].dropna()]
        rows.append(first | {"verdict_p99_ms": statistics.median(p99) if p99 else None})
    return pd.DataFrame(rows, columns=[*RUN_COLUMNS, "verdict_p99_ms"])

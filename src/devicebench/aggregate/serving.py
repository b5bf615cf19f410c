"""The serving table: one row per serve cell, as a client saw the server, with its price.

Every serve task shares it: samples_per_s counts images (serve_image) or review texts
(serve_text), one per request; seq_len is the text cells' token limit (empty for images).

Throughput and latency come from the closed-loop client pool; LoadGen's Offline throughput,
SingleStream p90 and the highest Server QPS it called VALID sit beside them. Cost per 1,000
requests = hourly price of the cell's device / 3,600 / requests per second x 1,000. Replica
scaling efficiency = throughput at N replicas / (N x throughput at 1 replica) of the same server,
model, framework, device, precision, batch and clients (1.0: linear scaling; NaN without the
1-replica cell).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from devicebench.aggregate.analysis import price_per_hour
from devicebench.aggregate.collect import device_label
from devicebench.aggregate.pairing import record_pairing
from devicebench.aggregate.records import read_record
from devicebench.aggregate.serving_best import ROLES, slo_role
from devicebench.engines import IN_PROCESS
from devicebench.scenarios import modes

SERVING_COLUMNS = [
    "task", "model", "framework", "engine", "device_label", "precision", "batch_size", "seq_len",
    "server", "replicas", "clients", "batch_wait_ms", "status", "slo_role", "message", "requests",
    "requests_per_s",
    "samples_per_s", "images_per_s", "p50_ms",
    "p90_ms", "p99_ms", "max_ms", "errors", "error_rate", "stability_cov", "mean_batch",
    "largest_batch", "server_peak_mb", "window_s", "window_requests", "window_meets_minimum",
    "client_capacity_rps", "client_bound", "joules_per_sample", "offline_samples_per_s",
    "offline_valid",
    "singlestream_p90_ms", "server_highest_valid_qps", "server_lowest_qps_tried",
    "server_search_stopped", "server_p99_met_up_to_qps",
    "replica_scaling_efficiency",
    "price_per_hour", "cost_per_1k_requests_usd", "requests_per_usd", "cell_id", "boot_id",
    "code_version",
]  # fmt: skip


def _scores_images(task: Any) -> bool:
    """Whether a serve task's requests are images (its pool counts images_per_s too)."""
    from devicebench.workloads import NAMES, get

    return task in NAMES and get(task).client_content_type.startswith("image/")


def _batch_stats(sizes: dict[str, int]) -> tuple[float, float]:
    """Mean images per formed batch and the largest batch formed."""
    if not sizes:
        return math.nan, math.nan
    batches = sum(sizes.values())
    images = sum(int(size) * count for size, count in sizes.items())
    return images / batches, float(max(int(size) for size in sizes))


def _loadgen(section: dict[str, Any]) -> dict[str, Any]:
    offline = section.get("Offline") or {}
    single = section.get("SingleStream") or {}
    server = section.get("Server") or {}
    if server and "runs" not in server:  # one Server run, no search
        server = {
            "highest_valid_qps": server["target_qps"] if server.get("valid") else None,
            "runs": [server],
        }
    runs = [run for run in server.get("runs", []) if run.get("target_qps")]
    tried = [run["target_qps"] for run in runs]
    # INVALID with the p99 under the bound: 459 queries with a few over it are too few for
    # LoadGen's early-stopping estimate, which is not the same as a missed bound
    met = [run["target_qps"] for run in runs if run.get("latency_met")]
    return {
        "offline_samples_per_s": offline.get("result"),
        "offline_valid": offline.get("valid"),
        "singlestream_p90_ms": single.get("result"),
        "server_highest_valid_qps": server.get("highest_valid_qps"),
        # with no VALID run, the highest valid QPS lies below this (the search's lowest)
        "server_lowest_qps_tried": min(tried) if tried else None,
        "server_search_stopped": server.get("stopped"),  # a run the cap left out, and why
        "server_p99_met_up_to_qps": max(met) if met else None,
    }


def _steady(serving: dict[str, Any], energy: dict[str, Any]) -> dict[str, Any]:
    """The steady window, the client pool's own capacity and the energy per request."""
    window = serving.get("steady_window") or {}
    capacity = (serving.get("pool") or {}).get("client_capacity") or {}
    return {
        "window_s": window.get("window_s"),
        "window_requests": window.get("window_requests"),
        "window_meets_minimum": window.get("meets_minimum"),
        "client_capacity_rps": capacity.get("requests_per_s"),
        "client_bound": serving.get("client_bound"),
        "joules_per_sample": energy.get("joules_per_sample"),
    }


def _row(record: dict[str, Any], prices: dict[str, Any]) -> dict[str, Any]:
    axes = record.get("axes", {})
    serving = record.get("serving") or {}
    pool = serving.get("pool") or {}
    latency = pool.get("latency_ms") or {}
    env = record.get("environment") or {}
    label = device_label(axes.get("device"), axes.get("threads"))
    price = price_per_hour(axes.get("device"), axes.get("threads"), env.get("gpu_name"), prices)
    rate = pool.get("requests_per_s")
    mean_batch, largest = _batch_stats(serving.get("batch_sizes") or {})
    row = {key: axes.get(key) for key in SERVING_COLUMNS if key in axes}
    row |= {
        "server": axes.get("server", "uvicorn"),
        "engine": axes.get("engine", IN_PROCESS),  # what scored: torch in the server, or an engine
        "replicas": int(axes.get("replicas", 1)),
        "batch_wait_ms": serving.get("batch_wait_ms"),  # the window its server batched in
        "device_label": label,
        "status": record.get("status"),
        "slo_role": slo_role(record),  # a sweep's confirm record repeats a sweep cell
        "message": record.get("message"),
        "requests": pool.get("requests"),
        "requests_per_s": rate,
        "samples_per_s": pool.get("samples_per_s", pool.get("images_per_s")),
        "images_per_s": pool.get("images_per_s") if _scores_images(axes.get("task")) else None,
        **{f"{p}_ms": latency.get(p) for p in ("p50", "p90", "p99", "max")},
        "errors": pool.get("errors"),
        "error_rate": pool.get("error_rate"),
        "stability_cov": pool.get("stability_cov"),
        "mean_batch": mean_batch,
        "largest_batch": largest,
        "server_peak_mb": (record.get("memory") or {}).get("peak_host_mb"),
        **_steady(serving, record.get("energy") or {}),
        **_loadgen(serving.get("loadgen") or {}),
        "price_per_hour": price,
        "cell_id": record.get("cell_id"),
        **record_pairing(record),
    }
    if rate and not math.isnan(price):
        row["cost_per_1k_requests_usd"] = price / 3600 / rate * 1000
        row["requests_per_usd"] = rate * 3600 / price if price else math.inf
    return row


def serving_table(paths: list[Path], prices: dict[str, Any]) -> pd.DataFrame:
    """One row per serve record (ok or not) among `paths`."""
    rows = []
    for path in paths:
        record, wrong = read_record(path)
        if wrong:
            continue  # the cells table (not_ok) reports it, with the reason
        if (record.get("axes") or {}).get("mode") in modes(serves=True):
            rows.append(_row(record, prices))
    df = pd.DataFrame(rows, columns=SERVING_COLUMNS)
    df["batch_wait_ms"] = pd.to_numeric(df["batch_wait_ms"])  # NaN where a record has none
    df = add_replica_scaling(df)
    keys = ["task", "model", "framework", "device_label", "precision", "batch_size", "seq_len"]
    keys += ["clients", "engine"]
    order = [*keys, "server", "replicas", "batch_wait_ms"]
    return df.sort_values(order, kind="stable").reset_index(drop=True)


SCALING_KEYS = [
    "task", "model", "framework", "engine", "device_label", "precision", "batch_size", "seq_len",
    "server", "batch_wait_ms", "boot_id", "code_version",  # one machine boot, one code version
]  # fmt: skip


def add_replica_scaling(df: pd.DataFrame) -> pd.DataFrame:
    """replica_scaling_efficiency: requests/s at N replicas / (N x requests/s at 1 replica)."""
    df = df.copy()
    df["replica_scaling_efficiency"] = math.nan
    if df.empty:
        return df
    ok = df["status"].eq("ok") & df["requests_per_s"].notna()
    keys = [*SCALING_KEYS, "clients"]
    sweep = ~df["slo_role"].eq(ROLES["confirm"])  # the base: sweep cells, not a confirm's repeat
    single = (
        df[ok & sweep & df["replicas"].eq(1)]
        .groupby(keys, dropna=False)["requests_per_s"]
        .mean()
        .rename("_single")
    )
    merged = df[keys].merge(single, left_on=keys, right_index=True, how="left")
    rate = df["requests_per_s"].astype(float).where(ok)
    single_rate = merged["_single"].to_numpy(dtype=float)
    df["replica_scaling_efficiency"] = rate / (df["replicas"].astype(float) * single_rate)
    return df

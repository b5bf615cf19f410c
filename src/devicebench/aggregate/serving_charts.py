"""The serving charts: throughput against concurrent clients and against Ray Serve replicas, and
latency percentiles per cell."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from devicebench.aggregate.charts import _empty, log_if_wide
from devicebench.engines import IN_PROCESS

IDENTITY = [
    "model", "framework", "engine", "device_label", "precision", "batch_size", "server", "replicas",
]  # fmt: skip


SERIES_TITLE = "framework · engine · precision · batch · server · replicas"
LEGEND = alt.Legend(labelLimit=0, titleLimit=0, symbolType="stroke", symbolStrokeWidth=2)


def _ok(serving: pd.DataFrame) -> pd.DataFrame:
    df = serving[serving["status"].astype(str).eq("ok")].copy() if not serving.empty else serving
    if df.empty:
        return df
    if "replicas" not in df:  # a table from before the replicas axis: one server process each
        df["replicas"] = 1
    if "engine" not in df:  # a table from before serve cells took an engine: torch in-process
        df["engine"] = IN_PROCESS
    series = ["framework", "engine", "precision", "batch_size", "server", "replicas"]
    df["series"] = df[series].astype(str).agg(" · ".join, axis=1)
    df["cell"] = df[[*IDENTITY, "clients"]].astype(str).agg(" · ".join, axis=1)
    if "batch_wait_ms" in df and df["batch_wait_ms"].nunique() > 1:  # a batch_wait sweep
        tag = " · wait " + df["batch_wait_ms"].map(lambda ms: f"{ms:g} ms" if pd.notna(ms) else "?")
        df["series"] += tag
        df["cell"] += tag
    if "seq_len" in df:  # text cells: their token limit tells them apart
        text = df["seq_len"].notna()
        tag = " · seq " + df.loc[text, "seq_len"].astype(int).astype(str)
        df.loc[text, "series"] += tag
        df.loc[text, "cell"] += tag
    return df


def _data(df: pd.DataFrame, cols: list[str]) -> alt.Data:
    frame = df[cols].astype("object").where(df[cols].notna(), None)
    return alt.Data(values=json.loads(frame.to_json(orient="records")))


def throughput_vs_clients(serving: pd.DataFrame) -> alt.TopLevelMixin:
    """Requests per second against the pool's concurrent clients, a line per served cell."""
    title = "Serving throughput vs concurrent clients (closed-loop pool)"
    df = _ok(serving)
    if df.empty:
        return _empty(title, ["no serve cell finished ok"])
    cols = [*IDENTITY, "series", "clients", "requests_per_s", "p99_ms", "cost_per_1k_requests_usd"]
    chart = (
        alt.Chart(_data(df, cols))
        .mark_line(point=True)
        .encode(
            x=alt.X("clients:Q", title="concurrent clients"),
            y=alt.Y("requests_per_s:Q", title="requests/s", scale=log_if_wide(df.requests_per_s)),
            color=alt.Color("device_label:N", title="device"),
            strokeDash=alt.StrokeDash("series:N", title=SERIES_TITLE, legend=LEGEND),
            detail="series:N",
            tooltip=[*(f"{c}:N" for c in IDENTITY), "clients:Q", "requests_per_s:Q", "p99_ms:Q"],
        )
        .properties(width=360, height=220)
        .facet(row=alt.Row("model:N", title=None))
        .resolve_scale(y="independent")
    )
    return chart.properties(title=title)


def latency_percentiles(serving: pd.DataFrame) -> alt.TopLevelMixin:
    """p50, p90, p99 and max latency of every served cell, as the clients measured them."""
    title = "Serving latency percentiles per cell (closed-loop pool)"
    df = _ok(serving)
    if df.empty:
        return _empty(title, ["no serve cell finished ok"])
    long = df.melt(
        id_vars=["cell", "model"],
        value_vars=["p50_ms", "p90_ms", "p99_ms", "max_ms"],
        var_name="percentile",
        value_name="latency_ms",
    )
    long["percentile"] = long["percentile"].str.removesuffix("_ms")
    chart = (
        alt.Chart(_data(long, ["cell", "model", "percentile", "latency_ms"]))
        .mark_point(filled=True)
        .encode(
            x=alt.X("latency_ms:Q", title="latency (ms)", scale=alt.Scale(type="log")),
            y=alt.Y("cell:N", title=None, axis=alt.Axis(labelLimit=0)),
            color=alt.Color("percentile:N", sort=["p50", "p90", "p99", "max"]),
            tooltip=["cell:N", "percentile:N", "latency_ms:Q"],
        )
        .properties(width=420)
    )
    return chart.properties(title=title)


def replica_scaling(serving: pd.DataFrame) -> alt.TopLevelMixin:
    """Requests per second against server replicas (any server: uvicorn processes or Ray Serve
    replicas), with the scaling efficiency in the tooltip (throughput at N / (N x at 1))."""
    df = _ok(serving)
    if not df.empty:
        counts = df.groupby(["model", "device_label", "server"])["replicas"].transform("nunique")
        df = df[counts.gt(1)].copy()
    servers = ", ".join(sorted(df["server"].astype(str).unique())) if not df.empty else "any"
    title = f"Serving throughput vs replicas ({servers} server, closed-loop pool)"
    if df.empty:
        return _empty(title, ["no served model ran at more than one replica count"])
    if "replica_scaling_efficiency" not in df:
        df["replica_scaling_efficiency"] = None
    df["line"] = (
        df[["framework", "precision", "batch_size", "server", "clients"]]
        .astype(str)
        .agg(" · ".join, axis=1)
    )
    cols = [*IDENTITY, "clients", "line", "requests_per_s", "replica_scaling_efficiency"]
    chart = (
        alt.Chart(_data(df, cols))
        .mark_line(point=True)
        .encode(
            x=alt.X("replicas:Q", title="replicas", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("requests_per_s:Q", title="requests/s"),
            color=alt.Color("device_label:N", title="device"),
            strokeDash=alt.StrokeDash(
                "line:N", title="framework · precision · batch · server · clients", legend=LEGEND
            ),
            detail="line:N",
            tooltip=[
                *(f"{c}:N" for c in IDENTITY),
                "clients:Q",
                "requests_per_s:Q",
                alt.Tooltip("replica_scaling_efficiency:Q", format=".2f"),
            ],
        )
        .properties(width=360, height=220)
        .facet(row=alt.Row("model:N", title=None))
        .resolve_scale(y="independent")
    )
    return chart.properties(title=title)

"""The write-up's chart rules on hand-made tables: log axes where values span more than 10x (bars
drawn from the decade below), one legend per encoded field, no placeholder emitted, timelines one
panel per cell, replica charts for whichever server the records name."""

from __future__ import annotations

import json

import pandas as pd
from test_findings_wording import serve_table

from devicebench.aggregate import charts, serving_charts
from devicebench.aggregate.writeup_charts import drawn_charts, utilization_timeline


def cells(values: list[float]) -> pd.DataFrame:
    n = len(values)
    return pd.DataFrame(
        {
            "task": ["t"] * n,
            "model": ["m"] * n,
            "framework": ["torch", "keras-torch"] * (n // 2) + ["torch"] * (n % 2),
            "device_label": ["cpu:16t", "cuda"] * (n // 2) + ["cuda"] * (n % 2),
            "precision": ["fp32"] * n,
            "batch_size": [32 * (i + 1) for i in range(n)],
            "mode": ["train"] * n,
            "status": ["ok"] * n,
            "samples_per_s": values,
            "median_s": [1.0 / v for v in values],
            "iqr_s": [0.0] * n,
        }
    )


def test_bars_use_a_log_axis_only_where_values_span_more_than_10x():
    wide = charts.throughput_per_cell(cells([50.0, 500_000.0])).to_dict()
    encoding = wide["spec"]["encoding"]
    assert encoding["x"]["scale"]["type"] == "log"
    assert encoding["x2"] == {"datum": 10}  # bars start at the decade below the least value
    narrow = charts.throughput_per_cell(cells([50.0, 400.0])).to_dict()
    assert "type" not in narrow["spec"]["encoding"]["x"]["scale"]
    assert "x2" not in narrow["spec"]["encoding"]


def test_one_legend_per_encoded_field():
    spec = json.dumps(charts.time_vs_batch(cells([10.0, 2000.0, 30.0, 40.0])).to_dict())
    assert '"shape"' not in spec  # series by dash only: one legend naming the varying axes
    assert spec.count('"field": "series"') >= 1 and '"titleLimit": 0' in spec


def test_placeholders_are_never_emitted():
    tables = {
        "cells": cells([10.0, 20.0]),
        "speedup": pd.DataFrame(),
        "utilization": pd.DataFrame(columns=["task", "cell", "t", "cpu_percent_mean", "gpu_util"]),
        "profile_ops": pd.DataFrame(columns=["rank"]),
    }
    drawn = drawn_charts(tables)
    assert "throughput_per_cell" in drawn
    assert {"utilization_timeline", "top_ops", "speedup_vs_batch"}.isdisjoint(drawn)
    assert charts.is_empty(charts._empty("x", []))


def test_timelines_are_one_small_panel_per_cell():
    timeline = pd.DataFrame(
        {
            "task": ["t"] * 4,
            "cell": ["a", "a", "b", "b"],
            "t": [0.0, 0.1, 0.0, 0.1],
            "cpu_percent_mean": [90.0, 95.0, 10.0, 12.0],
            "gpu_util": [None, None, 50.0, 60.0],
        }
    )
    spec = utilization_timeline(timeline).to_dict()
    assert spec["facet"]["field"] == "cell" and spec["columns"] == 3
    assert spec["spec"]["encoding"]["color"]["field"] == "metric"


def test_replica_chart_names_the_server_the_records_name():
    rows = serve_table({}, {"replicas": 8, "requests_per_s": 790.0})
    chart = serving_charts.replica_scaling(rows)
    assert not charts.is_empty(chart)
    assert "uvicorn server" in json.dumps(chart.to_dict()["title"])
    assert charts.is_empty(serving_charts.replica_scaling(rows.iloc[:1]))

"""The engines table: infer cells per engine against the in-process cell of the same model."""

from __future__ import annotations

import math

import pandas as pd

from devicebench.aggregate.engines import engine_table


def cells(rows: list[dict]) -> pd.DataFrame:
    base = {
        "task": "mnist_mlp",
        "model": "mlp",
        "framework": "torch",
        "device": "cpu",
        "threads": 2,
        "device_label": "cpu:2t",
        "precision": "fp32",
        "batch_size": 128,
        "mode": "infer",
    }
    return pd.DataFrame([base | row for row in rows])


def test_each_engine_is_set_against_its_inprocess_cell():
    table = engine_table(
        cells(
            [
                {"engine": "inprocess", "status": "ok", "samples_per_s": 4000.0, "accuracy": 0.5},
                {"engine": "spark", "status": "ok", "samples_per_s": 1000.0, "accuracy": 0.5},
                {"engine": "spark-streaming", "status": "error", "samples_per_s": None},
                {"engine": "spark", "status": "ok", "samples_per_s": 10.0, "accuracy": 0.25}
                | {"task": "mnist_cnn", "model": "cnn"},
            ]
        )
    )
    by = {(r.task, r.engine): r for r in table.itertuples()}
    spark = by["mnist_mlp", "spark"]
    assert spark.relative_throughput == 0.25 and spark.accuracy_equal == True  # noqa: E712
    assert by["mnist_mlp", "inprocess"].relative_throughput == 1.0
    failed = by["mnist_mlp", "spark-streaming"]
    assert failed.note == "not_ok" and math.isnan(failed.relative_throughput)
    lone = by["mnist_cnn", "spark"]  # no in-process cell to compare with: said, not guessed
    assert lone.note == "inprocess_missing" and math.isnan(lone.relative_throughput)


def test_a_different_accuracy_shows():
    table = engine_table(
        cells(
            [
                {"engine": "inprocess", "status": "ok", "samples_per_s": 4.0, "accuracy": 0.5},
                {"engine": "spark", "status": "ok", "samples_per_s": 1.0, "accuracy": 0.4},
            ]
        )
    )
    assert table.set_index("engine").loc["spark", "accuracy_equal"] == False  # noqa: E712


def test_no_engine_axis_gives_an_empty_table_with_its_columns():
    table = engine_table(cells([{"status": "ok", "samples_per_s": 1.0}]))
    assert table.empty and "relative_throughput" in table.columns


def test_a_serving_study_with_engines_gives_an_empty_table():
    # serve cells with an engine axis and no batch-inference cell (config/h200_serving.yaml)
    serve = {"mode": "serve", "status": "ok", "samples_per_s": 70.0}
    table = engine_table(cells([serve | {"engine": "openvino"}, serve | {"device": "cuda"}]))
    assert table.empty and "relative_throughput" in table.columns

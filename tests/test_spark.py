"""Spark infer cells for real, in local mode on the CPU: a batch job, a stream, task retries.

Each test starts a JVM (slow on a small machine), so there are few of them, on a tiny data set.
"""

from __future__ import annotations

import shlex

import pytest

from devicebench.data import prepare_dataset
from devicebench.plan.cellspec import CellSpec
from devicebench.plan.config import check_config
from devicebench.plan.grid import expand_grid, make_cell
from devicebench.run.runner import run_cell
from devicebench.spark import SparkOptions
from devicebench.spark.session import java_missing, master_url

# CI machines have Java 17; elsewhere the tests that start a JVM say why they cannot run
needs_java = pytest.mark.skipif(bool(java_missing()), reason=str(java_missing()))

RUN = {
    "dataset": "mnist",
    "epochs": 1,
    "steps_per_epoch": 4,
    "learning_rate": 0.001,
    "repetitions": 3,
    "warmup_steps": 1,
    "seed": 7,
    "timeout_s": 600,
    "noise_cov": 0.1,
}


def infer_cell(engine: str | None, **spark):
    values = {
        "task": "mnist_mlp",
        "model": "mlp",
        "framework": "torch",
        "device": "cpu",
        "threads": 2,
        "precision": "fp32",
        "batch_size": 32,
        "mode": "infer",
    }
    extra = {} if engine is None else {"engine": engine}
    return make_cell(values, extra, RUN, spark)


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mnist")
    prepare_dataset("mnist", "synthetic", folder, seed=7, train_samples=256, test_samples=128)
    return folder / "manifest.json"


@pytest.fixture(scope="module")
def inprocess(mnist, tmp_path_factory):
    out = tmp_path_factory.mktemp("inprocess") / "cell.json"
    record = run_cell(infer_cell(None), data=mnist, out=out)
    assert record["status"] == "ok", record["message"]
    return record


@needs_java
def test_a_spark_batch_cell_survives_a_dead_worker_and_scores_as_in_process(
    mnist, inprocess, tmp_path
):
    marker = tmp_path / "first-attempt-died"
    record = run_cell(
        infer_cell("spark", max_failures=2),
        data=mnist,
        out=tmp_path / "spark.json",
        extra={"spark_fail_once": str(marker)},
    )
    assert record["status"] == "ok", record["message"]
    assert "engine~spark/" in record["cell_id"]
    assert marker.exists()  # a task's Python worker died on its first attempt ...
    assert record["spark"]["failed_task_attempts"] >= 1  # ... and Spark ran it again
    assert record["spark"]["master"] == "local[2,2]"
    assert record["quality"]["accuracy"] == inprocess["quality"]["accuracy"]
    assert record["quality"]["f1_macro"] == inprocess["quality"]["f1_macro"]
    assert record["quality"]["loss"] == pytest.approx(inprocess["quality"]["loss"], rel=1e-5)
    assert record["quality"]["predictions_equal_inprocess"] is True
    assert record["throughput"]["samples_per_pass"] == 128
    assert record["spark"]["max_task_attempt"] >= 1  # the rows of partition 0 came from a retry
    assert len(record["timings"]["repetitions_s"]) == 3


@needs_java
def test_a_spark_streaming_cell_records_latency_per_micro_batch(mnist, inprocess, tmp_path):
    record = run_cell(
        infer_cell("spark-streaming", stream_interval_s=0.05),
        data=mnist,
        out=tmp_path / "stream.json",
    )
    assert record["status"] == "ok", record["message"]
    assert record["quality"]["accuracy"] == inprocess["quality"]["accuracy"]
    runs = record["spark"]["micro_batches"]
    assert len(runs) == 3
    for micro in runs:
        assert sum(m["rows"] for m in micro) == 128  # 4 Parquet files of 32 rows, all scored
        assert all(m["latency_s_max"] >= m["latency_s_mean"] > 0 for m in micro)
    assert record["timings"]["latency_ms"]["p99"] >= record["timings"]["latency_ms"]["p50"] > 0


@needs_java
def test_a_task_that_dies_on_every_attempt_fails_the_cell_after_max_failures(mnist, tmp_path):
    record = run_cell(
        infer_cell("spark", max_failures=2),
        data=mnist,
        out=tmp_path / "fails.json",
        extra={"spark_fail_every_attempt": True},
    )
    assert record["status"] == "error"
    assert "failed 2 times" in record["message"], record["message"]  # spark.task.maxFailures
    assert (tmp_path / "fails.json").exists()


def test_the_engine_axis_reaches_infer_cells_and_spark_settings_reach_spark_cells(tiny_config):
    before = {c.cell_id for c in expand_grid(check_config(tiny_config))}
    tiny_config |= {
        "infer_engines": ["inprocess", "spark"],
        "spark": {"master": "spark://head:7077", "max_failures": 3},
    }
    cells = expand_grid(check_config(tiny_config))
    infer = [c for c in cells if c.values["mode"] == "infer"]
    assert {c.cell_id.split("/engine~")[1] for c in infer} == {
        "inprocess/mode~infer",
        "spark/mode~infer",
    }
    assert all("engine~" not in c.cell_id for c in cells if c.values["mode"] == "train")
    assert all("engine~" not in c for c in before)  # configs without the axis keep their paths
    spark = next(c for c in infer if c.values["engine"] == "spark")
    spec = CellSpec.from_json(shlex.split(spark.cli_args())[1])  # what run_cell.py receives
    assert spec.values["engine"] == "spark"
    assert spec.engine_options == SparkOptions(master="spark://head:7077", max_failures=3)
    assert master_url(spec.run_settings() | {"threads_resolved": 2}) == "spark://head:7077"
    assert "master" not in spark.cell_id  # options, not axes: they stay out of the cell path
    inprocess = next(c for c in infer if c.values["engine"] == "inprocess")
    assert inprocess.engine_options is None
    assert "engine_options" not in inprocess.run_settings()


def test_a_bad_engine_is_refused_naming_the_key(tiny_config):
    with pytest.raises(ValueError, match="infer_engines"):
        check_config(tiny_config | {"infer_engines": ["flink"]})


def test_the_master_is_local_with_the_cells_threads_unless_a_url_is_given():
    assert master_url({"threads_resolved": 3}) == "local[3,4]"
    retries = {"engine_options": {"max_failures": 1}}  # as CellSpec.run_settings() carries it
    assert master_url({"threads_resolved": 3} | retries) == "local[3,1]"
    url = "spark://head:7077"
    assert master_url({"threads_resolved": 3, "engine_options": {"master": url}}) == url


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"framework": "keras-torch"}, "torch models on CPU"), ({"device": "cuda"}, "on cuda")],
)
def test_a_spark_cell_it_cannot_run_is_skipped_with_the_reason(mnist, tmp_path, change, reason):
    cell = infer_cell("spark")
    cell = make_cell(cell.values | change, {"engine": "spark"}, dict(cell.settings))
    record = run_cell(cell, data=mnist, out=tmp_path / "skip.json")
    assert record["status"] == "skipped" and reason in record["message"], record["message"]


def test_without_java_spark_says_so(monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "Java 17" in java_missing()

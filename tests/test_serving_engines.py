"""Serve cells on the CPU inference engines, for real: a tiny BERT (serve_text) and MobileNetV2 at
32 px (serve_image) behind the scoring server, exported to ONNX Runtime and OpenVINO, every
request answered; an int8 serve cell is skipped with its reason (the server has no calibration
data)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from devicebench.data import prepare_dataset
from devicebench.workloads import text_classify

ENGINES = ["onnxruntime", "openvino"]


@pytest.fixture(scope="module")
def imdb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("imdb")
    manifest = prepare_dataset("imdb", "synthetic", folder, train_samples=64, test_samples=48)
    text_classify.prepare_data(manifest.parent)
    return manifest


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jpeg")
    return prepare_dataset("jpeg_images", "synthetic", folder, train_samples=8, test_samples=32)


def serve_cell(task: str, model: str, engine: str, precision: str = "fp32", **extra):
    from devicebench.plan.grid import make_cell

    values = dict(task=task, model=model, framework="torch", device="cpu", threads=1)
    values |= dict(precision=precision, batch_size=4, mode="serve")
    serve = {"requests": 24, "warmup_requests": 4, "stability_window_s": 0.05}
    serve |= {"loadgen_scenarios": []} | ({"image_size": 32} if task == "serve_image" else {})
    settings = {"dataset": "imdb" if task == "serve_text" else "jpeg_images", "epochs": 1}
    settings |= {"steps_per_epoch": None, "learning_rate": 1.0, "repetitions": 1}
    settings |= {"warmup_steps": 1, "seed": 1, "timeout_s": 300, "noise_cov": 0.1}
    settings |= {"min_repetition_s": 0.0, "serve": json.dumps(serve)}
    axes = {"clients": 4, "server": "uvicorn", "replicas": 1, "engine": engine, **extra}
    return make_cell(values, axes, settings)


def _run(the_cell, data, tmp_path):
    from devicebench.run.runner import run_cell

    out = tmp_path / "cell.json"
    return run_cell(the_cell, data=data, out=out, extra={"log_dir": str(tmp_path)})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_serve_text_cell_scores_through_the_engine(imdb, tmp_path, engine):
    record = _run(serve_cell("serve_text", "bert-tiny", engine, seq_len=32), imdb, tmp_path)
    assert record["status"] == "ok", record["message"]
    serving = record["serving"]
    assert serving["engine"] == engine and serving["engine_ran"] == "fp32"
    assert serving["padding"].startswith("to seq_len")
    assert serving["pool"]["ok"] == 24 and serving["pool"]["errors"] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_serve_image_cell_scores_through_the_engine(images, tmp_path, engine):
    record = _run(serve_cell("serve_image", "mobilenetv2", engine), images, tmp_path)
    assert record["status"] == "ok", record["message"]
    serving = record["serving"]
    assert serving["engine"] == engine and serving["engine_ran"] == "fp32"
    assert serving["pool"]["ok"] == 24 and serving["pool"]["errors"] == 0


def test_an_int8_serve_cell_is_skipped_with_the_reason(imdb, tmp_path):
    the_cell = serve_cell("serve_text", "bert-tiny", "openvino", "int8", seq_len=32)
    record = _run(the_cell, imdb, tmp_path)
    assert record["status"] == "skipped"
    assert "no training data to calibrate" in record["message"]


def published_serving(pattern: str) -> pd.DataFrame:
    """The serving table of the published H100 study's serve cells under `pattern`."""
    from devicebench.aggregate.serving import serving_table

    folder = Path(__file__).resolve().parents[1] / "results/published/h100/cells"
    return serving_table(sorted(folder.glob(pattern)), {})


@pytest.fixture(scope="module")
def published_resnet50():
    return published_serving("task~serve_image/model~resnet50/**/*.json")


def test_the_serving_table_tells_engine_cells_apart_on_the_published_records(published_resnet50):
    """Two CPU bf16 serve cells of one model, torch in-process and OpenVINO: each its own row,
    and neither is the other's one-replica base for replica scaling."""
    table = published_resnet50
    cpu_bf16 = table[table["device_label"].str.startswith("cpu") & table["precision"].eq("bf16")]
    assert sorted(cpu_bf16["engine"]) == ["inprocess", "openvino"]
    one_replica = table[table["replicas"].eq(1) & table["status"].eq("ok")]
    assert one_replica["replica_scaling_efficiency"].tolist() == [1.0] * len(one_replica)


def test_a_server_search_without_a_valid_run_says_how_low_it_went(published_resnet50):
    """The published CPU fp32 ResNet-50 cell: LoadGen's Server runs at 28.3, 14.2 and 7.1 QPS
    were all INVALID, so there is no highest valid QPS, and the table says it lies below 7.1."""
    table = published_resnet50
    cpu_fp32 = table[table["device_label"].str.startswith("cpu") & table["precision"].eq("fp32")]
    (row,) = cpu_fp32.itertuples()
    assert pd.isna(row.server_highest_valid_qps)
    assert row.server_lowest_qps_tried == pytest.approx(7.08, abs=0.01)
    valid = table[table["server_highest_valid_qps"].notna()]
    assert (valid["server_lowest_qps_tried"] <= valid["server_highest_valid_qps"]).all()


def test_an_invalid_server_run_whose_p99_met_the_bound_is_told_apart():
    """The published BERT-base GPU cell: Server runs at 330.7, 165.3 and 82.7 QPS were all
    INVALID, but at 165.3 and 82.7 the measured p99 (97.7 and 94.6 ms) was under the 100 ms
    bound; only LoadGen's early-stopping estimate failed. The table keeps the two apart."""
    table = published_serving("task~serve_text/model~bert-base/**/*.json")
    (gpu,) = table[table["device_label"].eq("cuda")].itertuples()
    assert pd.isna(gpu.server_highest_valid_qps)
    assert gpu.server_lowest_qps_tried == pytest.approx(82.66, abs=0.01)
    assert gpu.server_p99_met_up_to_qps == pytest.approx(165.3, abs=0.1)
    openvino = table[table["engine"].eq("openvino")].iloc[0]  # VALID at 14.2, p99 met at 28.5
    assert openvino["server_p99_met_up_to_qps"] >= openvino["server_highest_valid_qps"] > 0

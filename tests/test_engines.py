"""Inference engines and number formats on the CPU, for real: cells of every torch workload scored
by ONNX Runtime and OpenVINO agree with torch fp32; int8 and bf16 cells carry the agreement;
export stays outside the timed window; skips and config errors name their reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devicebench import engines
from devicebench.data import prepare_dataset
from devicebench.engines.agreement import agreement, verdict
from devicebench.engines.cpu_features import cpu_features, format_note
from devicebench.engines.openvino_engine import OpenVINOOptions
from devicebench.plan.cellspec import CellSpec
from devicebench.plan.config import check_config
from devicebench.plan.grid import expand_grid, make_cell
from devicebench.run.runner import run_cell
from devicebench.workloads import get, specs

RUN = {
    "epochs": 1,
    "steps_per_epoch": 2,
    "learning_rate": 0.001,
    "repetitions": 3,
    "warmup_steps": 1,
    "seed": 7,
    "timeout_s": 600,
    "noise_cov": 0.1,
    "min_repetition_s": 0.0,
}
# (task, model, batch) of every torch workload whose backend hands its model to an engine.
WORKLOADS = [
    ("mnist_mlp", "mlp", 32),
    ("mnist_cnn", "cnn", 32),
    ("cifar10_cnn", "cnn", 16),
    ("imdb_fasttext", "fasttext", 16),
    ("imdb_bilstm", "bilstm", 16),
    ("textgen_lstm", "lstm", 32),
    ("text_classify", "bert-tiny", 8),
    ("cifar10_finetune", "vit-tiny", 8),
]


def cell(task: str, model: str, batch: int, engine: str | None, precision: str = "fp32", **kw):
    spec = specs()[task]
    values = {
        "task": task,
        "model": model,
        "framework": kw.pop("framework", "torch"),
        "device": kw.pop("device", "cpu"),
        "threads": 2,
        "precision": precision,
        "batch_size": batch,
        "mode": kw.pop("mode", "infer"),
    }
    extra = {axis: axis_values[0] for axis, axis_values in spec.axes.items()}
    if task == "text_classify":
        extra["seq_len"] = 32
    if engine:
        extra["engine"] = engine
    return make_cell(values, extra, RUN | {"dataset": spec.dataset} | kw)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Tiny synthetic data sets (and the text workload's tokenizer), by dataset name."""
    manifests = {}
    for name in ("mnist", "cifar10", "imdb", "nietzsche"):
        folder = tmp_path_factory.mktemp(name)
        manifests[name] = prepare_dataset(
            name, "synthetic", folder, seed=7, train_samples=128, test_samples=64
        )
    get("text_classify").prepare_data(manifests["imdb"].parent)
    return manifests


def _run(data, tmp_path, the_cell):
    dataset = dict(the_cell.settings)["dataset"]
    record = run_cell(the_cell, data=data[dataset], out=tmp_path / "cell.json")
    assert record["status"] == "ok", record.get("traceback", record["message"])
    return record


@pytest.mark.parametrize("engine", ["onnxruntime", "openvino"])
@pytest.mark.parametrize(("task", "model", "batch"), WORKLOADS)
def test_each_engine_scores_each_torch_workload_as_torch_fp32_does(
    data, tmp_path, task, model, batch, engine
):
    record = _run(data, tmp_path, cell(task, model, batch, engine))
    quality = record["quality"]
    assert quality["agreement_fp32"] >= 0.99, quality
    assert quality["quality_below_reference"] is False
    assert abs(quality["accuracy"] - quality["reference_accuracy"]) <= 0.01
    assert record["engine"]["name"] == engine and record["engine"]["format_ran"] == "fp32"
    # export, quantization and compilation happen before warm-up, outside the timed window
    assert record["engine"]["prepared_at"] <= record["timings"]["timed_start"]
    assert record["engine"]["export_s"] >= 0 and record["engine"]["prepare_s"] > 0


@pytest.mark.parametrize(
    ("engine", "precision", "ran"),
    [
        ("onnxruntime", "int8", "int8"),
        ("openvino", "int8", "int8"),
        ("openvino", "bf16", None),
        (None, "bf16", "bf16 autocast"),
    ],
)
def test_reduced_format_cells_carry_their_agreement_with_fp32(
    data, tmp_path, engine, precision, ran
):
    record = _run(data, tmp_path, cell("mnist_cnn", "cnn", 32, engine, precision))
    quality, section = record["quality"], record["engine"]
    assert 0.0 <= quality["agreement_fp32"] <= 1.0
    assert quality["quality_below_reference"] == (quality["agreement_fp32"] < 0.99)
    assert quality["reference_accuracy"] is not None and quality["accuracy"] is not None
    assert set(section["cpu_features"]) >= {"amx_bf16", "avx512_vnni", "avx512_bf16"}
    if ran:
        assert section["format_ran"] == ran
    else:  # OpenVINO says which precision it ran: bf16, or f32 where the CPU has no bf16
        assert section["format_ran"] in ("bf16", "fp32")
    if precision == "int8":
        assert section["quantization"] and section["calibration_batches"] >= 1


def test_a_bf16_train_cell_is_checked_against_fp32_too(data, tmp_path):
    record = _run(data, tmp_path, cell("mnist_mlp", "mlp", 32, None, "bf16", mode="train"))
    assert 0.0 <= record["quality"]["agreement_fp32"] <= 1.0


@pytest.mark.parametrize(
    ("engine", "precision", "change", "reason"),
    [
        ("onnxruntime", "fp32", {"framework": "keras-torch"}, "runs torch models"),
        ("onnxruntime", "bf16", {}, "no bf16 kernels"),
        ("openvino", "fp32", {"device": "cuda"}, "runs on cpu"),
        ("onnxruntime", "fp32", {"mode": "train"}, "infer and serve cells only"),
        (None, "int8", {}, "post-training format"),
    ],
)
def test_a_cell_an_engine_cannot_run_is_skipped_with_the_reason(
    data, tmp_path, engine, precision, change, reason
):
    the_cell = cell("mnist_cnn", "cnn", 32, engine, precision, **change)
    record = run_cell(the_cell, data=data["mnist"], out=tmp_path / "skip.json")
    assert record["status"] == "skipped" and reason in record["message"], record["message"]


def test_a_cuda_cell_without_the_cuda_provider_is_skipped_with_the_providers():
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider")
    reason = engines.get("onnxruntime").skip_reason("cuda", "fp32")
    assert "no CUDAExecutionProvider" in reason and "CPUExecutionProvider" in reason


def test_an_engine_that_is_not_installed_is_skipped_naming_the_package(monkeypatch):
    monkeypatch.setattr(type(engines.get("openvino")), "package", "openvino_not_here")
    settings = {"engine": "openvino", "precision": "fp32", "mode": "infer"}
    reason = engines.skip_reason(settings | {"framework": "torch", "device": "cpu"})
    assert reason == "engine openvino: the openvino_not_here package is not installed"


def test_missing_calibration_data_is_a_clear_error():
    import numpy as np
    import torch

    from devicebench.engines.base import LoadOptions

    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten()).eval()
    options = LoadOptions(precision="int8", convolutional=True)
    with pytest.raises(ValueError, match="needs calibration data"):
        engines.get("onnxruntime").load(net, {"x": np.zeros((2, 1, 5, 5), np.float32)}, options)


def test_engines_add_cells_and_keep_the_in_process_ids(tiny_config):
    before = {c.cell_id: c.config_hash() for c in expand_grid(check_config(tiny_config))}
    task = next(iter(tiny_config["tasks"]))
    tiny_config["tasks"][task] |= {
        "engines": ["inprocess", "onnxruntime", "openvino"],
        "precisions": ["fp32", "int8"],
    }
    tiny_config["openvino"] = {"hint": "THROUGHPUT", "requests": 4}
    cells = expand_grid(check_config(tiny_config))
    after = {c.cell_id: c.config_hash() for c in cells}
    assert all(after.get(cell_id) == digest for cell_id, digest in before.items())
    added = [c for c in cells if c.cell_id not in before]
    assert added and all(c.values["engine"] in engines.MODEL_ENGINES for c in added)
    assert all(c.values["mode"] == "infer" for c in added)
    int8 = [c for c in cells if c.values["precision"] == "int8"]
    assert int8 and all(c.values.get("engine") in engines.MODEL_ENGINES for c in int8)
    openvino = next(c for c in added if c.values["engine"] == "openvino")
    assert openvino.engine_options == OpenVINOOptions(hint="THROUGHPUT", requests=4)
    settings = CellSpec.from_json(openvino.to_json()).run_settings()
    assert OpenVINOOptions.of(settings) == OpenVINOOptions(hint="THROUGHPUT", requests=4)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"engines": ["tensorrt"]}, "engines"),
        ({"precisions": ["fp6"]}, "precisions"),  # int4 is a format now (LLM weight-only)
    ],
)
def test_an_unknown_engine_or_format_is_a_config_error(tiny_config, change, key):
    task = next(iter(tiny_config["tasks"]))
    tiny_config["tasks"][task] |= change
    with pytest.raises(ValueError, match=key):
        check_config(tiny_config)


def test_agreement_and_its_flag():
    assert agreement([1, 2, 3, 4], [1, 2, 3, 5]) == 0.75
    flagged = verdict(0.98, 0.51)
    assert flagged["quality_below_reference"] and flagged["reference_accuracy"] == 0.51
    assert not verdict(0.995, 0.5)["quality_below_reference"]


def test_agreement_with_a_one_class_reference_says_it_tells_nothing():
    import numpy as np

    constant = verdict(1.0, 0.48, np.ones(256, dtype=np.int64))
    assert "predicts class 1 for all 256 held-out samples" in constant["agreement_note"]
    assert "agreement_note" not in verdict(1.0, 0.7, np.array([0, 1, 1, 0]))


def test_cpu_features_say_whether_a_format_is_native():
    amx = cpu_features(["amx_bf16", "amx_int8", "avx512f"])
    assert amx["native_bf16"] and amx["native_int8"] and format_note("bf16", amx) is None
    plain = cpu_features(["avx2"])
    assert "emulated" in format_note("bf16", plain) and format_note("int8", plain)


@pytest.mark.parametrize("engine", ["onnxruntime", "openvino"])
def test_the_scoring_server_serves_through_an_engine_as_torch_does(tmp_path, engine):
    import httpx

    from devicebench.data import load_dataset
    from devicebench.serving.process import ServerProcess

    manifest = prepare_dataset(
        "jpeg_images", "synthetic", tmp_path, train_samples=4, test_samples=8
    )
    images = list(load_dataset(manifest).x_test)
    server = {"framework": "torch", "model": "mobilenetv2", "image_size": 32, "threads": 1}
    answers = {}
    for name in ("inprocess", engine):
        with ServerProcess(**server, engine=name, max_batch=4) as running:
            replies = [
                httpx.post(
                    f"{running.url}/predict",
                    content=image,
                    headers={"content-type": "image/jpeg"},
                    timeout=60,
                )
                for image in images
            ]
            assert all(r.status_code == 200 for r in replies), replies[0].text
            answers[name] = [r.json()["class"] for r in replies]
            if name != "inprocess":
                assert running.health["engine"] == engine, running.health
    assert answers[engine] == answers["inprocess"]  # same weights, same top-1


def test_the_engines_table_sets_int8_and_bf16_cells_against_fp32_torch():
    import pandas as pd

    from devicebench.aggregate.engines import engine_table

    base = {"task": "mnist_cnn", "model": "cnn", "framework": "torch", "device": "cpu"}
    base |= {"threads": 2, "device_label": "cpu:2t", "batch_size": 32, "mode": "infer"}
    rows = [
        {"engine": None, "precision": "fp32", "samples_per_s": 100.0},  # no axis: torch
        {"engine": None, "precision": "bf16", "samples_per_s": 150.0},
        {"engine": "openvino", "precision": "int8", "samples_per_s": 400.0},
        {"engine": None, "precision": "fp32", "samples_per_s": 50.0, "task": "mnist_mlp"},
    ]
    frame = pd.DataFrame([base | {"status": "ok", "accuracy": 0.5} | row for row in rows])
    table = engine_table(frame)
    by = {(r.engine, r.precision): r.relative_throughput for r in table.itertuples()}
    assert by == {("inprocess", "fp32"): 1.0, ("inprocess", "bf16"): 1.5, ("openvino", "int8"): 4.0}


def test_a_transformer_int8_cell_trains_in_fp32_and_quantizes_after(data, tmp_path):
    record = _run(data, tmp_path, cell("text_classify", "bert-tiny", 8, "onnxruntime", "int8"))
    section = record["engine"]
    assert section["trained_in"] == "fp32" and section["quantization"] == "dynamic"
    assert 0.0 <= record["quality"]["agreement_fp32"] <= 1.0


EXIT_SCRIPT = """
import os, sys
from devicebench.engines.export import cache_dir
path = cache_dir()
(path / "model.onnx").write_bytes(b"onnx")
pid = os.fork()
if pid == 0:
    sys.exit(0)  # a forked child runs the hooks it inherited
os.waitpid(pid, 0)
print(path, (path / "model.onnx").exists())
"""


def test_a_process_removes_its_engine_cache_at_exit_and_its_forked_child_does_not(monkeypatch):
    monkeypatch.delenv("DEVICEBENCH_ENGINE_CACHE", raising=False)
    done = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, check=True
    )
    path, kept_after_child = done.stdout.split()
    assert kept_after_child == "True", done.stdout
    assert not Path(path).exists(), f"{path} outlived its process"

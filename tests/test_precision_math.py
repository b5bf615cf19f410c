"""Precision is what it says: torch's TF32 switches follow the cell's precision on every path."""

from __future__ import annotations

import pytest
import torch

from devicebench.cell import run_cell
from devicebench.data import prepare_dataset
from devicebench.frameworks.transformer_backend import set_matmul_precision
from devicebench.grid import make_cell
from devicebench.precision_math import apply_precision, apply_precision_math, torch_math_flags

TF32_ON = {"matmul_allow_tf32": True, "cudnn_allow_tf32": True, "float32_matmul_precision": "high"}
TF32_OFF = {
    "matmul_allow_tf32": False,
    "cudnn_allow_tf32": False,
    "float32_matmul_precision": "highest",
}
EXPECTED = {"fp32": TF32_OFF, "tf32": TF32_ON, "bf16": TF32_OFF, "fp16": TF32_OFF}


def _set_all(tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


@pytest.fixture(autouse=True)
def _restore():
    before = torch_math_flags()
    yield
    _set_all(before["cudnn_allow_tf32"])
    torch.backends.cuda.matmul.allow_tf32 = before["matmul_allow_tf32"]
    torch.set_float32_matmul_precision(before["float32_matmul_precision"])


@pytest.mark.parametrize("precision", sorted(EXPECTED))
def test_each_precision_sets_both_switches_from_either_state(precision):
    for start in (True, False):  # torch's own default is cuDNN TF32 on
        _set_all(start)
        info = apply_precision_math(precision)
        assert info == {"precision_math": precision, "precision_flags": EXPECTED[precision]}
        assert torch_math_flags() == EXPECTED[precision]


@pytest.mark.parametrize("precision", sorted(EXPECTED))
def test_the_worker_and_the_transformer_loop_set_it(precision):
    _set_all(precision != "tf32")
    settings = {"framework": "keras-torch", "precision": precision}
    assert apply_precision(settings, before_backend=True)["precision_flags"] == EXPECTED[precision]
    _set_all(precision != "tf32")
    set_matmul_precision(precision)
    assert torch_math_flags() == EXPECTED[precision]
    tensorflow = {"framework": "keras-tensorflow", "precision": precision}
    assert apply_precision(tensorflow, before_backend=True) == {}


def test_an_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        apply_precision_math("fp8")


@pytest.mark.parametrize(
    ("framework", "precision"),
    [("torch", "fp32"), ("torch", "tf32"), ("keras-torch", "fp32"), ("keras-tensorflow", "fp32")],
)
def test_a_cell_records_the_math_it_ran(tmp_path, framework, precision):
    prepare_dataset("mnist", "synthetic", tmp_path, seed=7, train_samples=64, test_samples=32)
    values = {
        "task": "mnist_mlp",
        "model": "mlp",
        "framework": framework,
        "device": "cpu",
        "threads": 1,
        "precision": precision,
        "batch_size": 16,
        "mode": "train",
    }
    run = {
        "dataset": "mnist",
        "epochs": 1,
        "steps_per_epoch": 2,
        "repetitions": 2,
        "learning_rate": 0.01,
    }
    run |= {"warmup_steps": 1, "seed": 7, "timeout_s": 300, "noise_cov": 0.1}
    record = run_cell(
        make_cell(values, {}, run), data=tmp_path / "manifest.json", out=tmp_path / "r.json"
    )
    assert record["status"] == "ok", record["message"]
    assert record["model"]["precision_math"] == precision
    flags = {"tensorflow_tf32": False} if framework == "keras-tensorflow" else EXPECTED[precision]
    assert record["model"]["precision_flags"] == flags
    assert record["environment"]["boot_id"] and record["environment"]["hostname"]
    assert record["provenance"]["code_clean"] == (
        not record["provenance"]["code_version"].endswith("+dirty")
    )


def test_mfu_takes_the_peak_of_the_math_that_ran():
    import pandas as pd

    from devicebench.aggregate import analysis

    row = {
        "task": "mnist_cnn",
        "model": "cnn",
        "framework": "torch",
        "device": "cuda",
        "threads": 16,
        "device_label": "cuda",
        "precision": "tf32",
        "batch_size": 128,
        "mode": "train",
        "status": "ok",
        "median_s": 1.0,
        "samples_per_s": 1e6,
        "flops_per_sample": 1e8,
        "accuracy": 0.5,
        "gpu_name": "NVIDIA H100 80GB HBM3",
    }
    cells = pd.DataFrame([row | {"precision_math": "tf32"}, row | {"precision_math": None}])
    out = analysis.add_analysis(cells, {}, "cpu")
    assert list(out["peak_tflops"]) == [494.5, 494.5]  # recorded math, else the axis
    cells.loc[0, "precision_math"] = "fp32"
    assert analysis.add_analysis(cells, {}, "cpu")["peak_tflops"][0] == 67.0

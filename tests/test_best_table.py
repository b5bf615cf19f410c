"""best.csv: each device at its best, paired only within one boot and code version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from devicebench.aggregate import analysis
from devicebench.aggregate.best import COLUMNS, best_table
from devicebench.aggregate.collect import collect_records

REPO = Path(__file__).resolve().parents[1]
PRICES = {"cpu": {"per_vcpu_hour": 0.05}, "cuda": [{"match": "H100", "per_hour": 4.0}]}
BOOT, CODE = "b-1", "0.1.0+abc1234"


def record(tmp: Path, name: str, *, device: str, rate: float, **more) -> Path:
    """A hand-made ok record of mnist_cnn train at `rate` samples/s."""
    axes = {
        "task": "mnist_cnn",
        "model": "cnn",
        "framework": "torch",
        "device": device,
        "threads": more.pop("threads", 16 if device == "cpu" else None),
        "precision": more.pop("precision", "fp32"),
        "batch_size": more.pop("batch", 128),
        "mode": "train",
    }
    axes.update(more.pop("axes", {}))
    batch = axes["batch_size"]
    body = {
        "cell_id": name,
        "axes": axes,
        "status": more.pop("status", "ok"),
        "timings": {"median_s": batch / rate, "repetitions_s": [batch / rate]},
        "throughput": {"samples_per_s": rate},
        "environment": {
            "gpu_name": "NVIDIA H100 80GB HBM3" if device == "cuda" else None,
            "boot_id": more.pop("boot", BOOT),
        },
        "provenance": {"code_version": more.pop("code", CODE)},
        "quality": more.pop("quality", {}),
    }
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(body))
    return path


def table(paths: list[Path]) -> pd.DataFrame:
    cells = analysis.add_analysis(collect_records(paths), PRICES, "cpu")
    return best_table(cells)


def test_fastest_and_cheapest_of_each_device_with_the_breakeven_price(tmp_path):
    paths = [
        record(tmp_path, "cpu16", device="cpu", rate=1000.0),  # 0.80 $/h
        record(tmp_path, "cpu4", device="cpu", rate=400.0, threads=4),  # 0.20 $/h: cheaper
        record(tmp_path, "cpu_big", device="cpu", rate=700.0, batch=2048),
        record(tmp_path, "gpu", device="cuda", rate=50000.0),  # 4 $/h
        record(tmp_path, "gpu_bf16", device="cuda", rate=80000.0, precision="bf16"),
        record(tmp_path, "gpu_fail", device="cuda", rate=1e9, status="failed"),
    ]
    best = table(paths)
    assert list(best.columns) == COLUMNS
    by = best.set_index("pick")
    fast, cheap = by.loc["fastest"], by.loc["cheapest"]
    assert (fast.cpu_cell, fast.gpu_cell) == ("cpu16", "gpu_bf16")  # the failed cell never wins
    assert fast.cpu_config == "torch fp32, batch 128, 16 threads"
    assert fast.gpu_config == "torch bf16, batch 128"
    assert fast.gpu_name == "NVIDIA H100 80GB HBM3"
    assert fast.speedup == pytest.approx(80.0)
    # by hand: cost per million samples = price per hour / (rate x 3600) x 1e6
    cpu_cost = 0.80 / (1000 * 3600) * 1e6
    gpu_cost = 4.0 / (80000 * 3600) * 1e6
    assert fast.cpu_usd_per_million == pytest.approx(cpu_cost)
    assert fast.gpu_usd_per_million == pytest.approx(gpu_cost)
    assert fast.cost_ratio == pytest.approx(cpu_cost / gpu_cost) and fast.cheaper == "gpu"
    # at the break-even price the GPU's cost per sample equals the CPU's
    breakeven = fast.breakeven_gpu_usd_per_hour
    assert breakeven == pytest.approx(4.0 * cpu_cost / gpu_cost)
    assert breakeven / (80000 * 3600) * 1e6 == pytest.approx(cpu_cost)
    assert cheap.cpu_cell == "cpu4" and cheap.gpu_cell == "gpu_bf16"
    assert cheap.cpu_usd_per_million == pytest.approx(0.20 / (400 * 3600) * 1e6)
    assert fast.note == "" and pd.isna(fast.cpu_joules_per_sample)
    assert (fast.boot_id, fast.code_version, fast.task, fast["mode"]) == (
        BOOT,
        CODE,
        "mnist_cnn",
        "train",
    )


def test_pairs_only_within_one_boot_and_code_version(tmp_path):
    paths = [
        record(tmp_path, "cpu", device="cpu", rate=1000.0),
        record(tmp_path, "gpu_other_boot", device="cuda", rate=5e4, boot="b-2"),
        record(tmp_path, "gpu_other_code", device="cuda", rate=5e4, code="0.1.0+def5678+dirty"),
    ]
    best = table(paths)
    assert len(best) == 6  # three groups x two picks, none paired
    assert best["speedup"].isna().all()
    notes = dict(zip(best["boot_id"] + "/" + best["code_version"], best["note"], strict=False))
    assert notes[f"{BOOT}/{CODE}"] == "no ok cuda cell"
    assert notes[f"b-2/{CODE}"] == "no ok cpu cell"
    assert notes[f"{BOOT}/0.1.0+def5678+dirty"] == "no ok cpu cell"
    lone = best[best["gpu_cell"].eq("gpu_other_boot")].iloc[0]
    assert pd.isna(lone.cpu_cell) and pd.isna(lone.cpu_samples_per_s)


def test_engine_compile_gpus_and_other_axes_name_the_configuration(tmp_path):
    extra = {"compile": "compiled", "gpus": 2, "engine": "onnxruntime", "seq_len": 128}
    paths = [
        record(
            tmp_path, "cpu", device="cpu", rate=10.0, axes={"engine": "openvino", "seq_len": 128}
        ),
        record(tmp_path, "gpu", device="cuda", rate=100.0, precision="bf16", axes=extra),
    ]
    row = table(paths).set_index("pick").loc["fastest"]
    assert row.cpu_config == "torch fp32, batch 128, 16 threads, engine openvino, seq_len 128"
    assert row.work == "seq_len 128"
    gpu = "torch bf16 compiled, batch 128, 2 GPUs, engine onnxruntime, seq_len 128"
    assert row.gpu_config == gpu
    # two GPUs cost 8 $/h; the break-even price is per GPU
    assert row.breakeven_gpu_usd_per_hour == pytest.approx(4.0 * row.cost_ratio)


def test_a_cell_below_the_fp32_agreement_is_never_a_device_best(tmp_path):
    """An int8 cell twice as fast as fp32 but agreeing on 98 % of predictions is not the CPU's
    best; the same cell at 99.5 % is."""
    below = {"agreement_fp32": 0.98, "quality_below_reference": True}
    within = {"agreement_fp32": 0.995, "quality_below_reference": False}
    fp32 = record(tmp_path, "fp32", device="cpu", rate=1000.0)
    int8 = record(tmp_path, "int8", device="cpu", rate=2000.0, precision="int8", quality=below)
    best = table([fp32, int8]).set_index("pick")
    assert best.loc["fastest", "cpu_cell"] == "fp32" and best.loc["cheapest", "cpu_cell"] == "fp32"
    int8 = record(tmp_path, "int8", device="cpu", rate=2000.0, precision="int8", quality=within)
    assert table([fp32, int8]).set_index("pick").loc["fastest", "cpu_cell"] == "int8"


def test_a_device_whose_every_cell_disagrees_says_so(tmp_path):
    """The GPU's only cell is below the agreement: no GPU best, and the note says why, with the
    agreement, rather than that the GPU has no ok cell."""
    below = {"agreement_fp32": 0.977, "quality_below_reference": True}
    paths = [
        record(tmp_path, "cpu", device="cpu", rate=1000.0),
        record(tmp_path, "gpu", device="cuda", rate=5e4, precision="bf16", quality=below),
    ]
    row = table(paths).set_index("pick").loc["fastest"]
    assert row.cpu_cell == "cpu" and pd.isna(row.gpu_cell) and pd.isna(row.speedup)
    assert row.note == "every ok cuda cell agrees with fp32 on under 99% of predictions (0.977)"
    paths.append(record(tmp_path, "fp32", device="cuda", rate=2e4))
    row = table(paths).set_index("pick").loc["fastest"]
    assert row.gpu_cell == "fp32" and row.note == ""


def test_joules_per_sample_come_from_the_cells_frame_when_it_has_them(tmp_path):
    paths = [
        record(tmp_path, "cpu", device="cpu", rate=1000.0),
        record(tmp_path, "gpu", device="cuda", rate=5e4),
    ]
    cells = analysis.add_analysis(collect_records(paths), PRICES, "cpu")
    cells["joules_per_sample"] = cells["device"].map({"cpu": 0.3, "cuda": 0.01})
    row = best_table(cells).iloc[0]
    assert (row.cpu_joules_per_sample, row.gpu_joules_per_sample) == (0.3, 0.01)


def test_the_aggregate_script_writes_best_csv(tmp_path):
    paths = [
        record(tmp_path, "cpu", device="cpu", rate=1000.0),
        record(tmp_path, "gpu", device="cuda", rate=5e4),
    ]
    out = tmp_path / "tables"
    cmd = [sys.executable, str(REPO / "scripts" / "aggregate.py"), *map(str, paths)]
    subprocess.run([*cmd, "--tables", str(out)], check=True, capture_output=True)
    written = pd.read_csv(out / "best.csv")
    assert list(written.columns) == COLUMNS and len(written) == 2
    assert (out / "best.md").read_text().startswith("| task | mode | pick |")

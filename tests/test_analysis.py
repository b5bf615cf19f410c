"""Cost, FLOPs, peaks, agreement, operator tables, findings and the sampler, on small inputs."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest

from devicebench.aggregate import analysis
from devicebench.aggregate.timelines import top_ops_side_by_side
from devicebench.measure.flops import lstm_flops
from devicebench.measure.peaks import device_peak
from devicebench.measure.sampler import Sampler
from devicebench.report import findings
from devicebench.workloads import get


def flops_per_sample(task: str, model: str, mode: str) -> float:
    """The classic workload's count of one sample (its torch twin, torch.utils.flop_counter)."""
    return get(task).flops_per_sample({"task": task, "model": model}, mode)


PRICES = {
    "cpu": {"per_vcpu_hour": 0.05},
    "cuda": [{"match": "H100", "per_hour": 4.0}, {"match": "", "per_hour": 2.0}],
}


def test_mlp_flops_are_counted_not_guessed():
    forward = 2 * (784 * 512 + 512 * 512 + 512 * 10)
    assert flops_per_sample("mnist_mlp", "mlp", "infer") == forward
    train = flops_per_sample("mnist_mlp", "mlp", "train")
    # backward is about twice the forward, less the input gradient of the first layer
    assert 2 * forward < train < 3 * forward


def test_lstm_flops_are_added_by_hand_formula():
    # imdb_bilstm: embedding 128 -> BiLSTM 64 over 100 steps; 4 gates x 64 units x (128 + 64)
    # inputs, a multiply-add as 2 FLOPs, two directions, per step
    by_hand = 100 * 2 * (2 * 4 * 64 * (128 + 64))
    assert lstm_flops(128, 64, 100, directions=2) == by_hand
    infer = flops_per_sample("imdb_bilstm", "bilstm", "infer")
    assert by_hand < infer < 1.01 * by_hand  # the dense head adds little
    train = flops_per_sample("imdb_bilstm", "bilstm", "train")
    assert 3 * by_hand <= train < 3.1 * by_hand
    # textgen_lstm: 57 one-hot chars -> LSTM 128 over 40 steps, then a 57-way dense layer
    chars = 40 * 2 * 4 * 128 * (57 + 128) + 2 * 128 * 57
    assert flops_per_sample("textgen_lstm", "lstm", "infer") == pytest.approx(chars, rel=0.01)


def test_device_peaks_are_datasheet_figures():
    assert device_peak("cuda", "NVIDIA H100 80GB HBM3", "bf16")[0] == pytest.approx(989.4)
    assert device_peak("cuda", "NVIDIA H100 80GB HBM3", "fp32")[0] == 67.0
    assert device_peak("cuda", "NVIDIA H100 PCIe", "fp32")[0] == 51.0
    assert device_peak("cpu", None, "fp32") == (None, "")
    assert device_peak("cuda", "Unknown GPU", "fp32") == (None, "")


def _cells() -> pd.DataFrame:
    rows = []
    for device, threads, gpu, median in (("cpu", 4, None, 2.0), ("cuda", 16, "NVIDIA H100", 0.5)):
        rows.append(
            dict(
                task="mnist_mlp",
                model="mlp",
                framework="torch",
                device=device,
                threads=threads,
                device_label=f"cpu:{threads}t" if device == "cpu" else device,
                precision="fp32",
                batch_size=128,
                mode="train",
                status="ok",
                median_s=median,
                samples_per_s=1000 / median,
                accuracy=0.9,
                gpu_name=gpu,
                flops_per_sample=1e9,
            )
        )
    return pd.DataFrame(rows)


def test_cost_relative_cost_and_mfu():
    cells = analysis.add_analysis(_cells(), PRICES, "cpu", {"mnist_mlp": 0.85})
    cpu, gpu = cells.iloc[0], cells.iloc[1]
    assert cpu.price_per_hour == pytest.approx(0.2) and gpu.price_per_hour == 4.0
    assert cpu.cost_usd == pytest.approx(0.2 * 2.0 / 3600)
    assert gpu.samples_per_usd == pytest.approx(2000 * 3600 / 4.0)
    assert gpu.relative_time == pytest.approx(0.25)
    assert gpu.relative_cost == pytest.approx((4.0 * 0.5) / (0.2 * 2.0))
    assert gpu.achieved_tflops == pytest.approx(2.0)
    assert gpu.mfu == pytest.approx(2.0 / 67.0) and math.isnan(cpu.mfu)
    assert cells.cost_to_target_usd.notna().all()
    missed = analysis.add_analysis(_cells(), PRICES, "cpu", {"mnist_mlp": 0.95})
    assert missed.cost_to_target_usd.isna().all()


def test_disagreement_is_flagged():
    quality = pd.DataFrame({"accuracy_spread": [0.01, 0.05, np.nan]})
    flagged = analysis.add_agreement(quality, 0.02)
    assert flagged.accuracy_agrees.tolist()[:2] == [True, False]
    assert pd.isna(flagged.accuracy_agrees.iloc[2])


def test_gpu_crossover_names_the_batch_size_from_which_the_gpu_wins():
    speedup = pd.DataFrame(
        {
            "task": "t",
            "mode": "train",
            "device_label": "cuda",
            "status": "ok",
            "base_label": "cpu:16t",
            "batch_size": [32, 64, 128, 256],
            "speedup": [0.5, 1.2, 0.9, 3.0],
        }
    )
    (line,) = findings.gpu_crossover(speedup, "t")
    assert "from batch size 256 on" in line and "3.00×" in line


def test_top_ops_side_by_side():
    ops = pd.DataFrame(
        {
            "task": "t",
            "model": "m",
            "framework": "torch",
            "precision": "fp32",
            "batch_size": 32,
            "mode": "train",
            "device_label": ["cpu:2t", "cpu:2t", "cuda"],
            "ranked_by": ["self_cpu", "self_cpu", "self_device"],
            "rank": [1, 2, 1],
            "op": ["aten::mm", "aten::add", "sgemm"],
            "calls": 1,
            "self_ms": [3.0, 1.0, 0.5],
            "self_pct": [75.0, 25.0, 100.0],
        }
    )
    wide = top_ops_side_by_side(ops)
    assert wide["cpu:2t op"].tolist() == ["aten::mm", "aten::add"]
    assert wide["cuda op"].iloc[0] == "sgemm" and pd.isna(wide["cuda op"].iloc[1])


def test_sampler_process_records_a_timeline():
    sampler = Sampler("cpu", interval_s=0.05).start()
    time.sleep(0.4)
    result = sampler.stop()
    assert 3 <= result["summary"]["samples"] <= 12
    assert len(result["cpu_percent_per_core"][0]) >= 1
    assert 0 <= result["summary"]["cpu_util_mean"] <= 100
    assert result["gpu_util"] == [] and result["summary"]["gpu_util_mean"] is None
    assert Sampler("cpu", enabled=False).start().stop() is None


def test_a_two_gpu_cell_is_priced_and_peaked_for_both_gpus():
    cells = _cells()
    cells["gpus"] = [np.nan, 2]
    gpu = analysis.add_analysis(cells, PRICES, "cpu").iloc[1]
    assert gpu.price_per_hour == 8.0 and gpu.peak_tflops == pytest.approx(2 * 67.0)
    assert gpu.mfu == pytest.approx(2.0 / (2 * 67.0))
    assert gpu.samples_per_usd == pytest.approx(2000 * 3600 / 8.0)

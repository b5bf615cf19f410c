"""Converge rows from several runs a side: each side at its best batch, the median cost to the
target with the runs' range, and a side that never reached its target saying so."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pytest

from devicebench.aggregate import analysis
from devicebench.aggregate.best import best_table
from devicebench.aggregate.collect import collect_records
from devicebench.plan.config import ConfigError, check_config

PRICES = {"cpu": {"per_vcpu_hour": 0.05}, "cuda": [{"match": "H100", "per_hour": 4.0}]}


def converge_record(tmp: Path, name: str, device: str, batch: int, times: list) -> Path:
    """A hand-made ok converge record whose runs took `times` to the target (None: missed)."""
    reached = all(t is not None for t in times)
    body = {
        "cell_id": name,
        "axes": {
            "task": "mnist_mlp",
            "model": "mlp",
            "framework": "torch",
            "device": device,
            "threads": 16 if device == "cpu" else None,
            "precision": "fp32",
            "batch_size": batch,
            "mode": "converge",
        },
        "status": "ok",
        "timings": {"median_s": 1.0, "repetitions_s": [1.0] * len(times)},
        "throughput": {"samples_per_s": 1000.0},
        "environment": {
            "gpu_name": "NVIDIA H100 80GB HBM3" if device == "cuda" else None,
            "boot_id": "b-1",
        },
        "provenance": {"code_version": "v1"},
        "quality": {"accuracy": 0.9 if reached else 0.7},
        "converge": {
            "metric": "accuracy",
            "target": 0.88,
            "converged": reached,
            "runs": len(times),
            "runs_reached": sum(t is not None for t in times),
            "times_to_target_s": times,
            "time_to_target_s": statistics.median(times) if reached else None,
            "not_reached": None if reached else "run 2 stopped after 50 epoch(s)",
        },
    }
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(body))
    return path


def cheapest(paths: list[Path]) -> pd.Series:
    cells = analysis.add_analysis(collect_records(paths), PRICES, "cpu")
    best = best_table(cells)
    return best[best["pick"].eq("cheapest")].iloc[0]


def test_each_side_at_its_best_batch_with_the_median_and_the_runs_range(tmp_path):
    paths = [
        converge_record(tmp_path, "cpu-128", "cpu", 128, [14.0, 24.0, 30.0]),
        converge_record(tmp_path, "cpu-2048", "cpu", 2048, [60.0, 70.0, 80.0]),
        converge_record(tmp_path, "gpu-128", "cuda", 128, [5.0, 6.0, 9.0]),
        converge_record(tmp_path, "gpu-2048", "cuda", 2048, [2.0, 3.0, 4.0]),
    ]
    row = cheapest(paths)
    assert (row["cpu_cell"], row["gpu_cell"]) == ("cpu-128", "gpu-2048")  # each its best batch
    cpu_cost, gpu_cost = 0.8 * 24.0, 4.0 * 3.0  # 16 vCPUs x 0.05 $/h; medians of the runs
    assert row["cost_ratio"] == pytest.approx(cpu_cost / gpu_cost)
    low, high = 0.8 * 14.0 / (4.0 * 4.0), 0.8 * 30.0 / (4.0 * 2.0)  # fastest/slowest runs
    assert (row["cost_ratio_low"], row["cost_ratio_high"]) == pytest.approx((low, high))
    assert row["confidence"] == "too close to call"  # the runs' range crosses even
    assert "median cost to target of 3 CPU and 3 GPU runs" in row["note"]
    assert "over its runs" in row["finding"] and "to the target" in row["finding"]


def test_one_run_a_side_has_no_range_and_says_so(tmp_path):
    paths = [
        converge_record(tmp_path, "cpu", "cpu", 128, [40.0]),
        converge_record(tmp_path, "gpu", "cuda", 128, [2.0]),
    ]
    row = cheapest(paths)
    assert row["cost_ratio"] == pytest.approx(0.8 * 40.0 / (4.0 * 2.0))
    assert pd.isna(row["cost_ratio_low"]) and pd.isna(row["cost_ratio_high"])
    assert "one run a side: no range" in row["note"]


def test_a_side_whose_runs_missed_the_target_says_so(tmp_path):
    paths = [
        converge_record(tmp_path, "cpu", "cpu", 128, [40.0, None, 50.0]),
        converge_record(tmp_path, "gpu", "cuda", 128, [2.0, 3.0, 2.5]),
    ]
    row = cheapest(paths)
    assert pd.isna(row["cost_ratio"]) and pd.isna(row["cpu_cell"])
    assert "no cpu converge cell reached its target in all 3 of its runs" in row["note"]
    assert "no verdict" in row["finding"]


def _study(**converge) -> dict:
    task = {"converge": {"target": 0.85, **converge}}
    study = {"tasks": {"mnist_mlp": task}, "frameworks": ["torch"], "precisions": ["fp32"]}
    cpu = {"cpu": {"threads": [1]}}
    return study | {"devices": cpu, "modes": ["train", "converge"], "batch_sizes": [64]}


@pytest.mark.parametrize("runs", [0, 21, 1.5, True])
def test_a_run_count_that_cannot_run_is_a_config_error(runs):
    with pytest.raises(ConfigError, match="converge.runs"):
        check_config(_study(runs=runs))


def test_runs_that_cannot_fit_the_cell_timeout_are_a_config_error():
    with pytest.raises(ConfigError, match="need 900 s, more than the cell's timeout_s 400"):
        check_config(_study(runs=3, max_time_s=300) | {"timeout_s": 400})
    check_config(_study(runs=3, max_time_s=120) | {"timeout_s": 400})
    # a study that plans no converge cell keeps a short timeout whatever its converge section says
    check_config(_study(runs=3, max_time_s=300) | {"timeout_s": 1, "modes": ["train"]})

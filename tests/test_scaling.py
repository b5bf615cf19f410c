"""The scaling-efficiency table: throughput(N) / (N x throughput(1)) per workload."""

from __future__ import annotations

import json
import math

from devicebench.aggregate.scaling import format_table, load_rows, scaling_table


def record(path, gpus, samples_per_s, status="ok", task="mnist_cnn", mode="train"):
    axes = {"task": task, "model": "m", "framework": "torch", "device": "cuda", "threads": "all"}
    axes |= {"precision": "bf16", "batch_size": 256, "mode": mode}
    if gpus is not None:
        axes["gpus"] = gpus
    body = {"axes": axes, "status": status, "throughput": {"samples_per_s": samples_per_s}}
    body["timings"] = {"median_s": 1.0}  # what an ok record holds (aggregate/records.py)
    path.write_text(json.dumps(body))
    return path


def test_efficiency_is_throughput_over_n_times_one_device(tmp_path):
    paths = [
        record(tmp_path / "a.json", None, 1000.0),  # a cell without the axis is one device
        record(tmp_path / "b.json", 2, 1800.0),
        record(tmp_path / "c.json", 4, 0.0, status="oom"),
        record(tmp_path / "d.json", 2, 500.0, task="mnist_mlp"),  # no one-device base
        record(tmp_path / "e.json", None, 9.0, mode="infer"),  # not a train cell
    ]
    table = scaling_table(load_rows(paths))
    assert len(table) == 4
    two = table[(table.task == "mnist_cnn") & (table.gpus == 2)].iloc[0]
    assert two.efficiency == 0.9 and two.speedup == 1.8 and two.global_batch_size == 512
    failed = table[table.gpus == 4].iloc[0]
    assert failed.status == "oom" and math.isnan(failed.efficiency)
    assert math.isnan(table[table.task == "mnist_mlp"].iloc[0].efficiency)
    assert "0.900" in format_table(table)

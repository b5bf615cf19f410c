"""The verdict's rules on hand-made records: pricing as rented, packed copies, quality n/a and
unverified, the range and confidence of a ratio, and two declared machines across boots."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas as pd
import pytest
import yaml

from devicebench.aggregate import analysis, noise
from devicebench.aggregate.best import best_table
from devicebench.aggregate.collect import collect_records
from devicebench.aggregate.pricing import PriceFileError, load_prices, price_per_hour
from devicebench.aggregate.quality_gate import mark_quality
from devicebench.measure.devices import host_cores
from devicebench.plan.config import ConfigError
from devicebench.plan.gpu_compile import compiled_axes
from devicebench.plan.packing import copies_axes
from devicebench.record import new_record
from devicebench.run.copies_runner import merge, wait_at_barrier

REPO = Path(__file__).resolve().parents[1]
PRICES = load_prices(REPO / "config" / "prices.yaml")


def record(root: Path, device: str, rate: float, *, threads: int = 16, boot: str = "boot-a",
           host: str = "node1", copies: int | None = None, reps: tuple = (0.9, 1.0, 1.1),
           **quality) -> Path:  # fmt: skip
    axes = {"task": "mnist_mlp", "model": "mlp", "framework": "torch", "device": device}
    axes |= {"threads": threads, "precision": "fp32", "batch_size": 128, "mode": "infer"}
    if copies:
        axes["copies"] = copies
    cell_id = "/".join(f"{k}~{v}" for k, v in axes.items()) + f"/{boot}"
    rec = new_record(cell_id, axes)
    rec.update(status="ok", message="")
    rec["data"] = {"dataset": "mnist", "source": "path", "synthetic": False}
    gpu_name = "NVIDIA H100 80GB HBM3" if device == "cuda" else None
    rec["environment"] = {"cpu_cores": 16, "hostname": host, "boot_id": boot, "gpu_name": gpu_name}
    rec["provenance"] = {"seed": 0, "config_hash": "x", "code_version": "0.1.0+abc"}
    rec["timings"] = {"median_s": 1.0, "repetitions_s": list(reps), "min_s": min(reps),
                      "max_s": max(reps)}  # fmt: skip
    rec["throughput"] = {"samples_per_s": rate, "samples_per_pass": rate}
    rec["quality"] = {"accuracy": 0.9, **quality}
    rec["utilization"] = {"summary": {"gpu_util_mean": 19.0 if device == "cuda" else None}}
    path = root / (cell_id.replace("/", "_") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


def best(paths: list[Path], prices: dict) -> pd.DataFrame:
    cells = analysis.add_analysis(collect_records(paths), prices, "cpu")
    table = best_table(cells, prices)
    return table[table["pick"].eq("cheapest")]


def test_price_file_without_instance_shapes_is_refused(tmp_path: Path) -> None:
    bad = {"cpu": {"per_vcpu_hour": 0.04}, "cuda": [{"match": "H100", "per_hour": 4.0}]}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(PriceFileError, match="smallest rentable CPU instance"):
        load_prices(tmp_path / "p.yaml")
    bad["cpu"] = PRICES["cpu"]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(PriceFileError, match="cuda entry 0 lacks instance"):
        load_prices(tmp_path / "p.yaml")


def test_a_cell_below_the_smallest_instance_is_priced_as_it() -> None:
    per, smallest = PRICES["cpu"]["per_vcpu_hour"], PRICES["cpu"]["min_vcpus"]
    assert price_per_hour("cpu", 1, None, PRICES) == pytest.approx(per * smallest)
    assert price_per_hour("cpu", 16, None, PRICES) == pytest.approx(per * 16)
    assert price_per_hour("cpu", 1, None, PRICES, copies=16) == pytest.approx(per * 16)


def test_packed_copies_cheapen_the_cpu_only_when_measured(tmp_path: Path) -> None:
    gpu = record(tmp_path, "cuda", 10_000.0)
    alone = record(tmp_path, "cpu", 1_000.0, threads=1)
    row = best([gpu, alone], PRICES).iloc[0]
    assert row["cpu_priced_as"].startswith(f"{PRICES['cpu']['min_vcpus']} vCPUs")
    packed = record(tmp_path, "cpu", 12_000.0, threads=1, copies=16)
    row = best([gpu, alone, packed], PRICES).iloc[0]
    assert "copies~16" in row["cpu_cell"] and "16 packed copies" in row["cpu_priced_as"]


def test_copies_above_the_host_cores_is_a_config_error() -> None:
    cores = host_cores()
    with pytest.raises(ConfigError, match="exceeds the host's"):
        copies_axes({}, "mnist_mlp", {"cpu_copies": {"1": cores + 1}}, "cpu", 1, "infer")
    study = {"devices": {"cpu": {"threads": [1, 4], "cores": 16}}}
    with pytest.raises(ConfigError, match="exceeds the host's 16 cores"):
        copies_axes(study, "mnist_mlp", {"cpu_copies": {"4": 5}}, "cpu", 4, "infer")
    assert copies_axes(study, "mnist_mlp", {"cpu_copies": {"4": 4}}, "cpu", 4, "train") == [
        {},
        {"copies": 4},
    ]
    assert copies_axes(study, "mnist_mlp", {"cpu_copies": {"4": 4}}, "cpu", 1, "infer") == [{}]
    assert copies_axes(study, "mnist_mlp", {"cpu_copies": {"1": 2}}, "cuda", 1, "infer") == [{}]


def test_copies_wait_for_each_other_and_sum(tmp_path: Path) -> None:
    settings = {"copies": 3, "barrier_dir": str(tmp_path)}
    arrived: list[dict] = []

    def arrive(index: int) -> None:
        arrived.append(wait_at_barrier(settings | {"copy_index": index}))

    workers = [threading.Thread(target=arrive, args=(i,)) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [a["aligned"] for a in arrived] == [True] * 3
    results = [{"status": "ok", "throughput": {"samples_per_s": r}, "timings": {"barrier": a}}
               for r, a in zip((1.0, 2.0, 3.5), arrived, strict=True)]  # fmt: skip
    results[0]["energy"] = {"joules_per_sample": 3.0, "samples_per_kwh": 1.2e6}
    merged = merge(results)
    assert merged["throughput"]["samples_per_s"] == 6.5 and merged["packed"]["aligned"]
    assert merged["energy"]["joules_per_sample"] == 1.0
    failed = merge([results[0], {"status": "oom", "message": "out of memory"}])
    assert failed["status"] == "oom" and failed["message"].startswith("copy 1 of 2")
    assert wait_at_barrier({"copies": 1}) is None


def test_quality_is_na_on_synthetic_data_and_unverified_on_a_constant_reference() -> None:
    cells = pd.DataFrame({
        "mode": ["infer", "infer", "converge", "infer"],
        "synthetic": [True, False, True, False],
        "model_weights": ["random", "pretrained", None, "pretrained"],
        "accuracy": [0.5, 0.9, 0.88, 0.7],
        "agreement_fp32": [1.0, 0.95, None, 1.0],
        "agreement_note": [None, None, None, "the fp32 reference predicts class 0"],
        "quality_below_reference": [False, True, None, False],
    })  # fmt: skip
    marked = mark_quality(cells)
    assert marked["quality_na"].tolist()[0] == "synthetic data"
    assert pd.isna(marked["accuracy"][0]) and pd.isna(marked["agreement_fp32"][0])
    assert marked["accuracy"][2] == 0.88  # a converge cell keeps its figure
    assert marked["quality_check"][1] == "below reference"
    assert marked["quality_check"][3].startswith("unverified")


def test_range_and_confidence() -> None:
    assert noise.confidence(1.2, 1.1, 1.3) == noise.TOO_CLOSE  # within the lease variance
    assert noise.confidence(2.19, 0.9, 2.6) == noise.TOO_CLOSE  # the range crosses even
    assert noise.confidence(2.19, 1.49, 2.59) == noise.CLEAR
    cpu = pd.Series({"samples_per_s": 100.0, "median_s": 1.0, "min_s": 0.5, "max_s": 2.0})
    gpu = pd.Series({"samples_per_s": 1000.0, "median_s": 1.0, "min_s": 1.0, "max_s": 1.0})
    assert noise.cost_ratio_range(cpu, gpu, 4.0) == pytest.approx((2.0, 8.0))


def test_two_boots_pair_only_when_declared(tmp_path: Path) -> None:
    cpu = record(tmp_path, "cpu", 2_000.0, boot="boot-cpu", host="cpu01")
    gpu = record(tmp_path, "cuda", 50_000.0, boot="boot-gpu", host="gpu01")
    undeclared = best([cpu, gpu], PRICES)
    assert undeclared["cost_ratio"].isna().all()  # two boots: no verdict by default
    declared = PRICES | {
        "machines": [
            {"name": "cpu-server", "hostname": "cpu01", "instance": "c7i.4xlarge", "per_hour": 0.7},
            {"name": "gpu-server", "boot_id": "boot-gpu", "instance": "1x H100", "per_hour": 4.0},
        ],
        "compare": [{"cpu": "cpu-server", "gpu": "gpu-server"}],
    }
    (tmp_path / "prices.yaml").write_text(yaml.safe_dump(declared))
    rows = best([cpu, gpu], load_prices(tmp_path / "prices.yaml"))
    crossing = rows[rows["crosses_machines"].astype(bool)]
    assert len(crossing) == 1
    row = crossing.iloc[0]
    assert row["cost_ratio"] == pytest.approx((0.7 / 2_000.0) / (4.0 / 50_000.0))
    assert row["cpu_machine"] == "cpu-server" and row["gpu_machine"] == "gpu-server"
    assert "crosses machines" in row["note"] and "crosses machines" in row["finding"]
    assert "GPU pick ran at 19 %" in row["finding"]


def test_a_declaration_naming_an_unknown_machine_is_refused(tmp_path: Path) -> None:
    bad = PRICES | {"machines": [], "compare": [{"cpu": "a", "gpu": "b"}]}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(PriceFileError, match="undeclared machine"):
        load_prices(tmp_path / "p.yaml")


def test_compiled_gpu_cells_only_where_asked_and_only_torch_on_a_gpu() -> None:
    gpu = {"framework": "torch", "device": "cuda", "mode": "train"}
    assert compiled_axes("mnist_mlp", {"gpu_compiled": True}, {}, gpu) == [
        {},
        {"compile": "compiled"},
    ]
    assert compiled_axes("mnist_mlp", {}, {}, gpu) == [{}]
    for other in ({"framework": "keras-torch"}, {"device": "cpu"}, {"mode": "serve"}):
        assert compiled_axes("mnist_mlp", {"gpu_compiled": True}, {}, gpu | other) == [{}]
    with pytest.raises(ConfigError, match="own compile axis"):
        compiled_axes("text_classify", {"gpu_compiled": True}, {"compile": ()}, gpu)

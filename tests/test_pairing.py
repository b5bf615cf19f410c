"""Ratios pair only records of one boot_id and one code version; a crossing pair says why."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from devicebench.aggregate.collect import collect_records
from devicebench.aggregate.engines import engine_table
from devicebench.aggregate.pairing import CROSSING, crossing_reason, span_sentence
from devicebench.aggregate.reproducibility import compare_runs, reproducibility_findings
from devicebench.aggregate.scaling import load_rows, scaling_table
from devicebench.aggregate.tables import speedup_table
from devicebench.measure.machine import boot_id, machine_identity


def record(folder: Path, name: str, boot: str, code: str = "v1", **axes) -> Path:
    body = {
        "cell_id": name,
        "axes": {
            "task": "mnist_cnn",
            "model": "cnn",
            "framework": "torch",
            "device": "cpu",
            "threads": 4,
            "precision": "fp32",
            "batch_size": 128,
            "mode": "train",
        }
        | axes,
        "status": "ok",
        "timings": {"median_s": 1.0, "cov": 0.01},
        "throughput": {"samples_per_s": 100.0 * int(axes.get("gpus", 1))},
        "environment": {"boot_id": boot},
        "provenance": {"code_version": code},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(body))
    return path


def test_two_records_that_differ_only_in_boot_id_form_no_speedup(tmp_path):
    cells = collect_records(
        [
            record(tmp_path, "cpu", "boot-a"),
            record(tmp_path, "gpu", "boot-b", device="cuda", threads=None),
        ]
    )
    gpu = speedup_table(cells, "cpu").set_index("device_label").loc["cuda"]
    assert pd.isna(gpu.speedup) and gpu.note == CROSSING


def test_the_same_boot_and_code_pair(tmp_path):
    cells = collect_records(
        [
            record(tmp_path, "cpu", "boot-a"),
            record(tmp_path, "gpu", "boot-a", device="cuda", threads=None),
            record(tmp_path, "gpu2", "boot-a", code="v2", device="cuda", threads=None),
        ]
    )
    table = speedup_table(cells, "cpu")
    same = table[table["device_label"].eq("cuda") & table["code_version"].eq("v1")].iloc[0]
    other = table[table["device_label"].eq("cuda") & table["code_version"].eq("v2")].iloc[0]
    assert same.speedup == 1.0 and same.note == ""
    assert pd.isna(other.speedup) and other.note == CROSSING


def test_scaling_pairs_within_one_boot(tmp_path):
    one = record(tmp_path, "one", "boot-a", device="cuda", threads=16, gpus=1)
    two = record(tmp_path, "two", "boot-b", device="cuda", threads=16, gpus=2)
    table = scaling_table(load_rows([one, two])).set_index("gpus")
    assert pd.isna(table.loc[2, "efficiency"]) and table.loc[2, "note"] == CROSSING
    again = record(tmp_path, "again", "boot-b", device="cuda", threads=16, gpus=1)
    table = scaling_table(load_rows([one, two, again]))
    assert table[table["gpus"].eq(2)].iloc[0].efficiency == 1.0


def test_engines_and_reruns_pair_within_one_boot(tmp_path):
    cells = collect_records(
        [
            record(tmp_path, "in", "boot-a", mode="infer", engine="inprocess"),
            record(tmp_path, "spark", "boot-b", mode="infer", engine="spark"),
        ]
    )
    spark = engine_table(cells).set_index("engine").loc["spark"]
    assert pd.isna(spark.relative_throughput) and spark.note == CROSSING
    record(tmp_path / "published", "cell", "boot-a")
    record(tmp_path / "rerun", "cell", "boot-b")
    runs = compare_runs(tmp_path / "published", {"r": tmp_path / "rerun"})
    (line,) = reproducibility_findings(runs)
    assert line.startswith("r: 0 of 0 paired cells") and "1 cell(s) not compared" in line
    row = runs.iloc[0]
    assert pd.isna(row.change) and row.note == "unpaired: boot_id 'boot-a' vs 'boot-b'"
    assert crossing_reason({"boot_id": "x", "code_version": "1"}, {"boot_id": "x"}) == (
        "unpaired: code_version '1' vs ''"
    )


def test_a_record_names_its_machine_and_boot(tmp_path):
    fake = tmp_path / "boot_id"
    fake.write_text("1234-abcd\n")
    assert boot_id(fake) == "1234-abcd"
    assert boot_id(tmp_path / "absent") is None
    identity = machine_identity()
    assert identity["boot_id"] == boot_id() and identity["hostname"]
    assert isinstance(identity["gpu_uuids"], list)


def test_the_write_up_says_how_many_boots_and_code_versions_the_records_span():
    cells = pd.DataFrame(
        {
            "boot_id": ["a", "a", "b", None],
            "code_version": ["0.1+x", "0.1+x", "0.1+y+dirty", "0.1+x"],
        }
    )
    assert span_sentence(cells) == (
        "2 machine boot(s) (boot_id) and 2 code version(s) (1 with uncommitted changes); "
        "ratios pair only records of one boot and version; 1 record(s) predate boot_id"
    )

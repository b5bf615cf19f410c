"""Malformed records through the real aggregate script: each is a not_ok row naming its path and
what is wrong; none crashes a table or shows as ok."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
from test_aggregate import make_record

REPO = Path(__file__).resolve().parents[1]


def test_malformed_records_are_not_ok_rows_with_path_and_reason(tmp_path: Path) -> None:
    root = tmp_path / "cells"
    good = make_record(root, median_s=2.0)
    folder = good.parent
    bad = {
        "list.json": [],
        "number.json": 3,
        "ok-without-timings.json": json.loads(good.read_text()) | {"timings": {}},
        "ok-without-throughput.json": {
            k: v for k, v in json.loads(good.read_text()).items() if k != "throughput"
        },
        "serve-ok-without-serving.json": json.loads(good.read_text())
        | {"axes": {"task": "serve_image", "mode": "serve"}},
        "status-unknown.json": json.loads(good.read_text()) | {"status": "fine"},
    }
    for name, record in bad.items():
        (folder / name).write_text(json.dumps(record))
    tables = tmp_path / "tables"
    command = [sys.executable, str(REPO / "scripts" / "aggregate.py"), "--tables", str(tables)]
    done = subprocess.run(
        [*command, "--records", str(root)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    cells = pd.read_csv(tables / "cells.csv")
    assert (cells.status == "ok").sum() == 1
    not_ok = pd.read_csv(tables / "not_ok.csv")
    assert len(not_ok) == len(bad)
    reasons = {
        "list.json": "not a JSON object but list",
        "number.json": "not a JSON object but int",
        "ok-without-timings.json": "status ok but no timings",
        "ok-without-throughput.json": "no throughput.samples_per_s",
        "serve-ok-without-serving.json": "no serving section",
        "status-unknown.json": "status 'fine'",
    }
    for name, reason in reasons.items():
        (message,) = [m for m in not_ok.message if f"{folder / name}:" in m]
        assert message.startswith("malformed record") and reason in message, message
    assert pd.read_csv(tables / "serving.csv").empty


def test_records_whose_numbers_cannot_be_true_are_not_ok_and_never_win(tmp_path: Path) -> None:
    """Infinity, NaN or a negative throughput, timings that do not add up, an unknown schema
    version and two records of one cell: each a not_ok row with its reason, none in best.csv."""
    root = tmp_path / "cells"
    slow = make_record(root, median_s=4.0, batch_size=64)
    good = json.loads(make_record(root, median_s=2.0).read_text())
    folder = slow.parent
    throughput = good["throughput"]
    bad = {
        "infinity.json": good | {"throughput": throughput | {"samples_per_s": float("inf")}},
        "nan.json": good | {"throughput": throughput | {"samples_per_s": float("nan")}},
        "negative.json": good | {"throughput": throughput | {"samples_per_s": -5}},
        "median-not-of-repetitions.json": good | {"timings": good["timings"] | {"median_s": 0.01}},
        "ends-before-start.json": good
        | {"timings": good["timings"] | {"timed_end": 1_600_000_000.0}},
        "schema-2.json": good | {"schema_version": 2},
    }
    reasons = {
        "infinity.json": "samples_per_s inf is not a positive number",
        "nan.json": "samples_per_s nan is not a positive number",
        "negative.json": "samples_per_s -5 is not a positive number",
        "median-not-of-repetitions.json": "median_s 0.01 is not the median of repetitions_s",
        "ends-before-start.json": "timed_end 1600000000.0 is before timed_start",
        "schema-2.json": "schema version 2 is not one this reader knows",
    }
    for index, (name, record) in enumerate(bad.items()):  # each its own cell, as a run writes
        record = record | {"cell_id": f"{good['cell_id']}-{index}"}
        (folder / name).write_text(json.dumps(record))
    twin = folder / "copied-twin.json"  # the good record's cell id, a second time
    twin.write_text(json.dumps(good))
    tables = tmp_path / "tables"
    command = [sys.executable, str(REPO / "scripts" / "aggregate.py"), "--tables", str(tables)]
    done = subprocess.run(
        [*command, "--records", str(root)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    cells = pd.read_csv(tables / "cells.csv")
    assert list(cells[cells.status == "ok"].record_path) == [str(slow)]
    not_ok = pd.read_csv(tables / "not_ok.csv")
    for name, reason in reasons.items():
        (message,) = [m for m in not_ok.message if f"{folder / name}:" in m]
        assert reason in message, message
    duplicated = [m for m in not_ok.message if m.startswith("duplicate cell id")]
    assert len(duplicated) == 2 and any(str(twin) in m for m in duplicated)
    best = pd.read_csv(tables / "best.csv")
    assert set(best.cpu_samples_per_s.dropna()) == {1024 / 4.0}, best.to_string()

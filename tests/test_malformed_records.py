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

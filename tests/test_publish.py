"""benchmarks/publish_h100.py end to end on the CPU, at a tiny setting."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
from conftest import REPO


def test_publish_script_writes_records_and_a_speedup_table(tmp_path):
    out = tmp_path / "h100"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "publish_h100.py"),
            "--out",
            str(out),
            "--tasks",
            "mnist_mlp",
            "--frameworks",
            "torch",
            "--devices",
            "cuda",
            "cpu",
            "--cpu-threads",
            "1",
            "--batch-scale",
            "0.125",
            "--steps",
            "2",
            "--warmup-steps",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = sorted((out / "cells").rglob("*.json"))
    assert len(records) == 2 * 3 * 2  # devices x batch sizes x modes
    speedup = pd.read_csv(out / "tables" / "speedup.csv")
    cells = pd.read_csv(out / "tables" / "cells.csv")
    assert set(cells["batch_size"]) == {16, 64, 256}
    cpu = cells[cells["device"] == "cpu"]
    assert (cpu["status"] == "ok").all() and len(speedup) == len(cells)

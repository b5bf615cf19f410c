"""The rerun check: published records against rerun ones, into a table and the write-up."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devicebench.aggregate.reproducibility import compare_runs, reproducibility_findings
from devicebench.report import load_tables
from devicebench.report.page import build_page

REPO = Path(__file__).resolve().parents[1]
# real records of the earlier published study, kept as superseded
PUBLISHED = REPO / "results" / "published" / "h100" / "superseded" / "2026-11-23-mixed-leases"
CPU_CELL = "task~mnist_mlp/model~mlp/framework~torch/device~cpu/threads~all/precision~fp32/" + (
    "batch~128/mode~train"
)
GPU_CELL = "task~mnist_cnn/model~cnn/framework~torch/device~cuda/threads~all/precision~fp32/" + (
    "batch~2048/mode~train"
)


def rerun_of(folder: Path, cell_id: str, speed: float, accuracy_delta: float = 0.0) -> dict:
    """A published record as a rerun that ran `speed` times as fast, accuracy shifted."""
    record = json.loads((PUBLISHED / "cells" / f"{cell_id}.json").read_text())
    record["throughput"]["samples_per_s"] *= speed
    record["quality"]["accuracy"] += accuracy_delta
    record["provenance"]["created"] = "2026-11-24T00:00:00+0000"
    path = folder / f"{cell_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return record


def test_known_answers(tmp_path):
    rerun_of(tmp_path, CPU_CELL, 1.0)  # the same number: within any CoV, accuracy equal
    rerun_of(tmp_path, GPU_CELL, 1.5, accuracy_delta=0.01)  # 50 % faster: beyond its CoV
    table = compare_runs(PUBLISHED / "cells", {"again": tmp_path}).set_index("task")
    cpu, gpu = table.loc["mnist_mlp"], table.loc["mnist_cnn"]
    assert cpu["change"] == pytest.approx(0.0) and bool(cpu["within_cov"])
    assert bool(cpu["accuracy_equal"]) and bool(cpu["deterministic"])
    assert gpu["change"] == pytest.approx(0.5)
    assert not bool(gpu["within_cov"]) and not bool(gpu["accuracy_equal"])
    assert gpu["rerun_samples_per_s"] == pytest.approx(1.5 * gpu["published_samples_per_s"])
    (line,) = reproducibility_findings(table.reset_index())
    assert line.startswith("again: 1 of 2 paired cells' throughput within their CoV")
    assert "accuracy identical in 1 of 1 deterministic (CPU) cells" in line


def test_a_rerun_of_an_unpublished_cell_is_named(tmp_path):
    record = rerun_of(tmp_path, CPU_CELL, 1.0)
    record["cell_id"] = "task~nothing/mode~train"
    (tmp_path / f"{CPU_CELL}.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="task~nothing/mode~train: rerun in .* not published"):
        compare_runs(PUBLISHED / "cells", {"again": tmp_path})


def test_the_script_writes_the_table_and_the_write_up_shows_it(tmp_path):
    rerun_of(tmp_path / "rerun", CPU_CELL, 1.0)
    rerun_of(tmp_path / "rerun", GPU_CELL, 2.0)
    tables = tmp_path / "tables"
    shutil.copytree(PUBLISHED / "tables", tables)
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "reproducibility.py"), "--published",
         str(PUBLISHED / "cells"), "--rerun", f"second run={tmp_path / 'rerun'}",
         "--out", str(tables / "reproducibility")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "second run: 1 of 2 paired cells' throughput within their CoV" in done.stdout
    assert (tables / "reproducibility.md").read_text().count("second run") == 2
    page, _ = build_page(load_tables(tables), {"study": "h100"}, {})
    section = page.split('id="reproducibility"', 1)[1]
    assert "second run: 1 of 2" in section
    assert section.count("⚠ outside CoV") == 1


def test_the_script_refuses_a_malformed_rerun_argument(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "reproducibility.py"), "--published",
         str(PUBLISHED / "cells"), "--rerun", str(tmp_path), "--out", str(tmp_path / "t")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode != 0 and "expected LABEL=FOLDER" in done.stderr

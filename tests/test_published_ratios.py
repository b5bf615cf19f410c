"""Every published ratio recomputed from the published records (issue 36, "What to build" 1-2).

The records under results/published/h100/cells are read here directly (JSON, not through the
aggregate), and every speedup, relative cost and best-against-best ratio the aggregate gives for
them is worked out again from the two cells its row names: throughput over throughput (equal
work), each side priced as rented. The committed tables are checked the same way once they have
been regenerated with the columns that name both cells.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from devicebench.aggregate import analysis
from devicebench.aggregate.best import best_table
from devicebench.aggregate.collect import collect_records, read_table
from devicebench.aggregate.engines import engine_table
from devicebench.aggregate.pricing import load_prices
from devicebench.aggregate.tables import speedup_table
from devicebench.workloads import work_axes

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "results" / "published" / "h100"
PRICES = load_prices(REPO / "config" / "prices.yaml")


def _records() -> dict[str, dict]:
    out = {}
    for path in sorted((PUBLISHED / "cells").rglob("*.json")):
        record = json.loads(path.read_text())
        out[record["cell_id"]] = record
    return out


RECORDS = _records()


def _rate(cell_id: str) -> float:
    return float(RECORDS[cell_id]["throughput"]["samples_per_s"])


def _hourly(cell_id: str) -> float:
    """The rented price worked out from the price file's own words, not the aggregate's code."""
    axes, env = RECORDS[cell_id]["axes"], RECORDS[cell_id]["environment"]
    if axes["device"] == "cpu":
        vcpus = max(int(axes["threads"]) * int(axes.get("copies", 1)), PRICES["cpu"]["min_vcpus"])
        return vcpus * PRICES["cpu"]["per_vcpu_hour"]
    entry = next(e for e in PRICES["cuda"] if e["match"] in env["gpu_name"])
    return entry["per_hour"] * int(axes.get("gpus", 1))


def _same_machine(a: str, b: str) -> bool:
    pa, pb = RECORDS[a], RECORDS[b]
    return pa["environment"]["boot_id"] == pb["environment"]["boot_id"]


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    cells = analysis.add_analysis(collect_records(list((PUBLISHED / "cells").rglob("*.json"))),
                                  PRICES, "cpu")  # fmt: skip
    return {
        "cells": cells,
        "speedup": speedup_table(cells, "cpu"),
        "best": best_table(cells, PRICES),
        "engines": engine_table(cells),
    }


def check_speedup(speedup: pd.DataFrame) -> int:
    rows = speedup[speedup["speedup"].notna()]
    for row in rows.itertuples():
        expected = _rate(row.cell_id) / _rate(row.base_cell_id)
        assert row.speedup == pytest.approx(expected, rel=1e-9), row.cell_id
        assert _same_machine(row.cell_id, row.base_cell_id), row.cell_id
    return len(rows)


def check_best(best: pd.DataFrame) -> int:
    rows = best[best["cost_ratio"].notna() & best["mode"].ne("converge")]
    for row in rows.itertuples():
        cpu = _hourly(row.cpu_cell) / _rate(row.cpu_cell)
        gpu = _hourly(row.gpu_cell) / _rate(row.gpu_cell)
        assert row.cost_ratio == pytest.approx(cpu / gpu, rel=1e-9), row.cpu_cell
        best_speedup = _rate(row.speedup_gpu_cell) / _rate(row.speedup_cpu_cell)
        assert row.speedup == pytest.approx(best_speedup, rel=1e-9)
        assert row.cost_ratio_low <= row.cost_ratio <= row.cost_ratio_high or math.isnan(
            row.cost_ratio_low
        )
        fastest_cpu = max((c for c in RECORDS if _peer(c, row.cpu_cell)), key=_rate)
        assert _rate(row.speedup_cpu_cell) == _rate(fastest_cpu) or _excluded(fastest_cpu)
    return len(rows)


def _peer(cell_id: str, other: str) -> bool:
    """A cell of the same device, task, mode, model, work (seq_len, ...) and machine as `other`."""
    a, b = RECORDS[cell_id], RECORDS[other]
    keys = ("task", "mode", "model", "device", *work_axes())
    return (
        all(a["axes"].get(k) == b["axes"].get(k) for k in keys)
        and a["status"] == "ok"
        and _same_machine(cell_id, other)
        and a["provenance"]["code_version"] == b["provenance"]["code_version"]
    )


def _excluded(cell_id: str) -> bool:
    """A cell left out for a verified quality failure (real data, not a constant reference)."""
    quality = RECORDS[cell_id].get("quality") or {}
    synthetic = (RECORDS[cell_id].get("data") or {}).get("synthetic")
    return bool(quality.get("quality_below_reference")) and not synthetic


def test_every_speedup_is_a_ratio_of_throughputs(tables: dict[str, pd.DataFrame]) -> None:
    assert check_speedup(tables["speedup"]) > 50


def test_every_engine_ratio_is_of_throughputs(tables: dict[str, pd.DataFrame]) -> None:
    rows = tables["engines"][tables["engines"]["relative_throughput"].notna()]
    for row in rows.itertuples():
        expected = _rate(row.cell_id) / _rate(row.base_cell_id)
        assert row.relative_throughput == pytest.approx(expected, rel=1e-9), row.cell_id
        assert _same_machine(row.cell_id, row.base_cell_id)
    assert len(rows) > 10


def test_relative_cost_is_of_equal_work(tables: dict[str, pd.DataFrame]) -> None:
    cells = tables["cells"]
    rows = cells[cells["relative_cost"].notna() & cells["base_cell_id"].notna()]
    for row in rows.itertuples():
        mine = _hourly(row.cell_id) / _rate(row.cell_id)
        base = _hourly(row.base_cell_id) / _rate(row.base_cell_id)
        assert row.relative_cost == pytest.approx(mine / base, rel=1e-9), row.cell_id
    assert len(rows) > 50


def test_every_verdict_ratio_recomputes(tables: dict[str, pd.DataFrame]) -> None:
    assert check_best(tables["best"]) > 20


def test_no_cpu_pick_priced_below_the_smallest_instance(tables: dict[str, pd.DataFrame]) -> None:
    best = tables["best"]
    for cell in best["cpu_cell"].dropna():
        price = _hourly(cell)
        assert price >= PRICES["cpu"]["min_vcpus"] * PRICES["cpu"]["per_vcpu_hour"]
    one_thread = best[best["cpu_config"].str.contains(", 1 threads", na=False)]
    assert one_thread["cpu_priced_as"].str.startswith(f"{PRICES['cpu']['min_vcpus']} vCPUs").all()


def test_no_quality_figure_for_synthetic_or_random_cells(tables: dict[str, pd.DataFrame]) -> None:
    cells = tables["cells"]
    na = cells["quality_na"].notna()
    assert na.any()
    for column in ("accuracy", "f1_macro", "f1_micro", "agreement_fp32"):
        assert cells.loc[na, column].isna().all(), column


@pytest.mark.parametrize("name", ["speedup", "best"])
def test_committed_tables_recompute(name: str) -> None:
    path = PUBLISHED / "tables" / f"{name}.csv"
    table = read_table(path)
    named = {"speedup": "base_cell_id", "best": "speedup_cpu_cell"}[name]
    if named not in table:
        pytest.skip(f"{path} predates {named}: regenerate it (scripts/aggregate.py)")
    checked = check_speedup(table) if name == "speedup" else check_best(table)
    assert checked > 20

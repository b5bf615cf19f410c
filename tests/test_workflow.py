"""The workflow end to end: dry runs, a tiny real run, and rerunning only what changed."""

from __future__ import annotations

import copy
import json
import os

import pandas as pd
import pytest
from workflow import REPO, planned_cells, planned_jobs, snakemake, write_config

from devicebench.plan.config import load_config
from devicebench.plan.grid import expand_grid

pytestmark = pytest.mark.workflow


def test_default_config_dry_runs(tmp_path):
    config = (REPO / "config" / "config.yaml").read_text()
    (tmp_path / "config.yaml").write_text(config)
    jobs = planned_jobs(tmp_path)
    cells = expand_grid(load_config(REPO / "config" / "config.yaml"))
    assert jobs["cell"] == len(cells)
    assert jobs["tables"] == jobs["charts"] == jobs["report"] == 1
    assert jobs["prepare_data"] == len(load_config(REPO / "config" / "config.yaml")["datasets"])


def test_data_preparation_takes_the_timed_cells_slot(tmp_path):
    """profiles/default allows one `bench` slot: a data set prepared beside a timed cell would
    steal its cores, so prepare_data takes the slot as cells do (tables wait for every record)."""
    (tmp_path / "config.yaml").write_text((REPO / "config" / "config.yaml").read_text())
    done = snakemake(tmp_path, "--dry-run", "--cores", "2")
    slots: dict[str, set[str]] = {}
    for block in done.stdout.split("\nrule ")[1:] + done.stdout.split("\nlocalrule ")[1:]:
        rule = block.split(":", 1)[0]
        resources = next(line for line in block.splitlines() if "resources:" in line)
        slots.setdefault(rule, set()).add("bench=1" in resources)
    assert slots["prepare_data"] == {True}
    assert slots["cell"] == {True}
    assert slots["tables"] == {False}


def test_a_bad_config_stops_before_any_job(tmp_path, tiny_config):
    tiny_config["batch_sizes"] = [0]
    write_config(tmp_path, tiny_config)
    done = snakemake(tmp_path, "--dry-run", "--cores", "1", check=False)
    assert done.returncode != 0
    assert "batch_sizes[0]" in done.stdout + done.stderr
    assert not (tmp_path / "results").exists()


@pytest.fixture(scope="module")
def finished_run(finished_study):
    """The session's tiny study run (see conftest.finished_study)."""
    return finished_study


def test_tiny_run_produces_ok_rows_tables_and_charts(finished_run):
    workdir, config = finished_run
    cells = pd.read_csv(workdir / "results" / "tables" / "cells.csv")
    ok = cells[cells.status == "ok"]
    for task in config["tasks"]:
        for mode in ("train", "infer"):
            rows = ok[(ok.task == task) & (ok["mode"] == mode) & (ok.device == "cpu")]
            assert len(rows) == 1, (task, mode)
    assert (ok.samples_per_s > 0).all()
    train = ok[ok["mode"] == "train"]
    assert ok.synthetic.all()
    # synthetic data: no accuracy or F1 is shown, the reason is (aggregate.quality_gate)
    assert train.accuracy.isna().all() and train.f1_macro.isna().all()
    assert set(train.quality_na) == {"synthetic data"}
    gpu = cells[cells.device == "cuda"]
    assert set(gpu.status) <= {"ok", "skipped"}
    for name in ("timing", "speedup", "quality"):
        assert (workdir / "results" / "tables" / f"{name}.md").stat().st_size > 0
    for chart in ("time_vs_batch", "speedup_vs_batch", "throughput_per_cell", "accuracy_per_cell"):
        assert (workdir / "results" / "charts" / f"{chart}.png").read_bytes()[:4] == b"\x89PNG"
        assert (workdir / "results" / "charts" / f"{chart}.html").stat().st_size > 1000


def test_records_follow_the_cell_contract(finished_run):
    workdir, _ = finished_run
    records = [json.loads(p.read_text()) for p in (workdir / "results" / "cells").rglob("*.json")]
    ok = [r for r in records if r["status"] == "ok"]
    assert ok
    for record in ok:
        timings = record["timings"]
        assert len(timings["repetitions_s"]) >= 3
        assert timings["first_call_s"] > 0 and timings["median_s"] > 0
        assert timings["timed_start"] < timings["timed_end"]
        assert record["environment"]["threads"] == record["axes"]["threads"] == 1
        assert record["environment"]["threads_reported"]["torch_num_threads"] == 1
        assert record["provenance"]["seed"] == 7 and record["provenance"]["config_hash"]
        assert record["data"]["synthetic"] is True
    infer = [r for r in ok if r["axes"]["mode"] == "infer"]
    assert infer and all(r["timings"]["latency_ms"]["p99"] > 0 for r in infer)


def test_nothing_changed_plans_nothing(finished_run):
    workdir, _ = finished_run
    assert planned_jobs(workdir) == {}


def test_one_more_batch_size_plans_one_cell_and_the_aggregates(finished_run):
    workdir, config = finished_run
    changed = copy.deepcopy(config)
    changed["tasks"]["mnist_mlp"]["batch_sizes"] = [32, 16]
    # keep the new batch size to exactly one new cell: CPU, train
    changed["exclude"] = [
        {"task": "mnist_mlp", "batch_size": 16, "mode": "infer"},
        {"task": "mnist_mlp", "batch_size": 16, "device": "cuda"},
    ]
    write_config(workdir, changed)
    try:
        jobs = planned_jobs(workdir)
    finally:
        write_config(workdir, config)
    assert jobs == {"cell": 1, "tables": 1, "charts": 1, "report": 1, "all": 1}


def _planned_with(workdir, config, changed) -> tuple[dict[str, int], set[str]]:
    """Jobs and cells a dry run plans for `changed`; the finished run's config is put back."""
    write_config(workdir, changed)
    try:
        return planned_jobs(workdir), planned_cells(workdir)
    finally:
        write_config(workdir, config)


def test_adding_a_device_plans_only_its_cells(finished_run):
    workdir, config = finished_run
    changed = copy.deepcopy(config)
    changed["devices"]["cpu"]["threads"] = [1, 2]
    jobs, cells = _planned_with(workdir, config, changed)
    assert jobs == {"cell": 4, "tables": 1, "charts": 1, "report": 1, "all": 1}
    assert all("/device~cpu/threads~2/" in cell for cell in cells) and len(cells) == 4


def test_changing_one_tasks_epochs_plans_only_that_tasks_cells(finished_run):
    workdir, config = finished_run
    changed = copy.deepcopy(config)
    changed["tasks"]["mnist_cnn"]["epochs"] = 2
    jobs, cells = _planned_with(workdir, config, changed)
    expected = {
        f"results/cells/{cell.cell_id}.json"
        for cell in expand_grid(load_config(workdir / "config.yaml"))
        if cell.values["task"] == "mnist_cnn"
    }
    assert cells == expected and jobs["cell"] == len(expected)
    assert jobs["tables"] == jobs["charts"] == jobs["report"] == 1


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("src/devicebench/aggregate/charts.py", {"charts": 1, "report": 1, "all": 1}),
        ("src/devicebench/aggregate/tables.py", {"tables": 1, "charts": 1, "report": 1, "all": 1}),
        ("src/devicebench/report/page.py", {"report": 1, "all": 1}),
    ],
)
def test_editing_aggregate_code_reruns_aggregates_never_cells(finished_run, code, expected):
    workdir, _ = finished_run
    path = REPO / code
    text, before = path.read_bytes(), path.stat()
    path.write_bytes(text + b"\n# edited by a test\n")  # Snakemake compares content, not mtime
    try:
        assert planned_jobs(workdir) == expected
    finally:
        path.write_bytes(text)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

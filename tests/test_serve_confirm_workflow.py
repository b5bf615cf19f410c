"""The confirm step through the real workflow: a tiny replica sweep (MobileNetV2 at 32 px, 1 and
2 server processes on one CPU thread) with probes only, its confirm job chosen from the sweep
records and run for real, the tables judging by the confirm record, and a changed sweep
replanning only the new cell, the confirm job and the aggregates."""

from __future__ import annotations

import copy
import json
import re
import statistics

import pandas as pd
import pytest
from workflow import planned_cells, planned_jobs, snakemake, write_config

from devicebench.serving import slo

pytestmark = pytest.mark.workflow

CONFIRM = "results/cells/confirm/task~serve_image/model~mobilenetv2/device~cpu.json"
CONFIG = {
    "study": "serve-confirm-tiny",
    "seed": 3,
    "repetitions": 3,
    "min_repetition_s": 0.0,
    "warmup_steps": 1,
    "timeout_s": 300,
    "speedup_base": "cpu",
    "devices": {"cpu": {"threads": [1]}},
    "frameworks": ["torch"],
    "precisions": ["fp32"],
    "modes": ["serve"],
    "batch_sizes": [4],
    "datasets": {"jpeg_images": {"source": "synthetic", "train_samples": 4, "test_samples": 16}},
    "tasks": {
        "serve_image": {
            "models": ["mobilenetv2"],
            "batch_sizes": [4],
            "clients": [4],
            "replicas": [1, 2],
            "serve": {
                "image_size": 32,
                "requests": 24,
                "min_duration_s": 0,
                "min_requests": 0,
                "warmup_requests": 4,
                "stability_window_s": 0.05,
                "loadgen_scenarios": [],
                "inprocess_s": 0.5,
                "slo": {
                    "confirm": "best",
                    "p99_bounds_ms": {"mobilenetv2": 500},
                    "probe_s": 0.5,
                    "confirm_runs": 1,
                    "confirm_s": 0.5,
                    "max_probes": 2,
                    "min_qps": 20,
                    "budget_s": 60,
                    "confirm_probes": 2,
                    "confirm_budget_s": 60,
                },
            },  # fmt: skip
        }
    },
    "exclude": [],
}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("serve-confirm")
    write_config(workdir, CONFIG)
    planned = planned_jobs(workdir)
    snakemake(workdir, "--cores", "2", "results/tables/best.csv")
    return workdir, planned


def test_the_dag_has_one_confirm_job_over_the_sweep_records(swept):
    _, planned = swept
    assert planned["cell"] == 2 and planned["confirm_serve"] == 1 and planned["tables"] == 1


def test_the_confirm_record_confirms_the_sweep_cell_with_the_best_probe_rate(swept):
    workdir, _ = swept
    sweep = {}
    for path in (workdir / "results/cells/task~serve_image").rglob("mode~serve.json"):
        body = json.loads(path.read_text())
        assert body["status"] == "ok", body["message"]
        assert body["serving"]["slo"]["status"] in ("probed", "no_rate"), body["serving"]["slo"]
        assert body["serving"]["slo"]["runs"] == 0 and body["serving"]["slo"]["confirms"] == []
        sweep[body["cell_id"]] = body["serving"]["slo"]["probe_qps"] or 0.0
    confirm = json.loads((workdir / CONFIRM).read_text())
    rates = {cell: rate for cell, rate in sweep.items() if rate > 0}
    if not rates:  # this shared host met the bound nowhere: the record says so
        assert confirm["serving"]["slo"]["status"] == "no_rate", confirm["message"]
        return
    chosen = confirm["confirm"]["chosen_cell"]
    assert chosen == min(rates, key=lambda cell: (-rates[cell], cell))  # equal prices: rate
    assert confirm["axes"]["confirm"] == "best" and confirm["cell_id"] != chosen
    found = confirm["serving"]["slo"]
    assert found["status"] in slo.STATUSES and found["status"] != "probed"
    assert found["status"] != "loadgen_failed", found["message"]
    assert found["probes"][0]["target_qps"] == pytest.approx(rates[chosen])  # from the sweep's
    if found["status"] == "ok":
        assert found["runs"] == 1 and found["max_valid_qps"] == statistics.median(found["run_qps"])
    assert confirm["serving"]["inprocess_ratio"] > 0


def test_the_tables_judge_by_the_confirm_record_and_show_the_sweep_as_context(swept):
    workdir, _ = swept
    table = pd.read_csv(workdir / "results/tables/serving_slo.csv")
    roles = sorted(table["slo_role"])
    assert roles == ["confirmed best", "sweep (probes only)", "sweep (probes only)"], roles
    confirm = json.loads((workdir / CONFIRM).read_text())
    best = pd.read_csv(workdir / "results/tables/best.csv")
    row = best[best["mode"].eq("serve") & best["pick"].eq("fastest")].iloc[0]
    if confirm["serving"]["slo"]["status"] == "ok":
        assert row["cpu_cell"] == confirm["cell_id"]
        assert row["cpu_samples_per_s"] == confirm["serving"]["slo"]["max_valid_qps"]
    else:
        assert "CPU: " in row["note"] and pd.isna(row["cpu_samples_per_s"]), row["note"]


def test_a_new_sweep_cell_replans_only_it_its_confirm_job_and_the_aggregates(swept):
    workdir, _ = swept
    changed = copy.deepcopy(CONFIG)
    changed["tasks"]["serve_image"]["replicas"] = [1, 2, 4]
    write_config(workdir, changed)
    try:
        jobs, cells = planned_jobs(workdir), planned_cells(workdir)
    finally:
        write_config(workdir, CONFIG)
    assert jobs["cell"] == 1 and jobs["confirm_serve"] == 1 and jobs["tables"] == 1, jobs
    assert len(cells) == 1 and "/replicas~4/" in next(iter(cells))


def test_each_confirm_job_depends_on_exactly_its_models_sweep_records(tmp_path):
    """A dry run of two models: one confirm job per model (one device here), each over that
    model's two sweep records only."""
    config = copy.deepcopy(CONFIG)
    config["tasks"]["serve_image"]["models"] = ["mobilenetv2", "resnet50"]
    config["tasks"]["serve_image"]["serve"]["slo"]["p99_bounds_ms"]["resnet50"] = 500
    write_config(tmp_path, config)
    assert planned_jobs(tmp_path)["confirm_serve"] == 2
    out = snakemake(tmp_path, "--dry-run", "--cores", "1").stdout
    jobs = re.findall(r"^rule confirm_serve:\n\s+input: (.*)\n\s+output: (\S+)$", out, flags=re.M)
    assert len(jobs) == 2
    for inputs, output in jobs:
        model = re.search(r"model~([^/]+)/device~cpu\.json$", output)[1]
        sweep = [p for p in inputs.split(", ") if "/mode~serve.json" in p]
        assert len(sweep) == 2 and all(f"/model~{model}/" in p for p in sweep), inputs
        assert {re.search(r"replicas~(\d)", p)[1] for p in sweep} == {"1", "2"}

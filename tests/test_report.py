"""The write-up on a real tiny run: new cells.csv columns, the self-contained page, a price change
that reruns only the aggregates, and `snakemake --report`."""

from __future__ import annotations

import json
import os
import re
import time

import pandas as pd
import pytest
from workflow import planned_jobs, snakemake

pytestmark = pytest.mark.workflow

DEMANDED = ["cost_usd", "samples_per_usd", "gpu_util_mean", "cpu_util_mean"]
DEMANDED += ["achieved_tflops", "mfu", "cov"]


def test_cells_csv_carries_cost_utilization_flops_and_noise(finished_study):
    workdir, _ = finished_study
    cells = pd.read_csv(workdir / "results" / "tables" / "cells.csv")
    assert set(DEMANDED) <= set(cells.columns)
    ok = cells[cells.status == "ok"]
    cpu = ok[ok.device == "cpu"]
    assert (cpu.cost_usd > 0).all() and (cpu.samples_per_usd > 0).all()
    assert cpu.cpu_util_mean.between(0, 100).all() and cpu["cov"].notna().all()
    assert (cpu.achieved_tflops > 0).all()
    # CPUs have no datasheet peak: MFU stays empty rather than resting on an estimate
    assert cpu.mfu.isna().all()
    train = cpu[(cpu["mode"] == "train") & (cpu.task == "mnist_mlp")]
    # synthetic data: its accuracy means nothing, so no cost to a target rests on it (issue 36)
    assert train.cost_to_target_usd.isna().all() and train.quality_na.eq("synthetic data").all()
    assert (train.relative_time == 1).all()  # the CPU cell is the base configuration


def test_records_carry_utilization_timelines_and_profiles(finished_study):
    workdir, _ = finished_study
    records = [json.loads(p.read_text()) for p in (workdir / "results" / "cells").rglob("*.json")]
    ok = [r for r in records if r["status"] == "ok"]
    for record in ok:
        timeline = record["utilization"]
        assert timeline["interval_s"] == pytest.approx(0.1)
        assert len(timeline["t"]) == len(timeline["cpu_percent_per_core"])
        assert record["model"]["flops_per_sample_train"] > record["model"]["flops_per_sample_infer"]
    profiled = [r for r in ok if "profile" in r]
    assert {(r["axes"]["task"], r["axes"]["mode"]) for r in profiled} == {("mnist_mlp", "train")}
    assert profiled[0]["profile"]["top_self_cpu"][0]["self_cpu_ms"] > 0
    top = pd.read_csv(workdir / "results" / "tables" / "top_ops.csv")
    assert len(top) >= 5 and "cpu:1t op" in top.columns


def test_report_is_self_contained_and_lists_its_charts(finished_study):
    workdir, config = finished_study
    page = (workdir / "results" / "report" / "index.html").read_text()
    manifest = json.loads((workdir / "results" / "report" / "charts.json").read_text())
    charts = manifest["charts"]
    verdict = [c["chart"] for c in charts if not c["task"]]  # the answer's charts come first
    assert verdict == [c["chart"] for c in charts[: len(verdict)]]
    assert all(name.startswith("verdict_") for name in verdict)
    charts = [c for c in charts if c["task"]]  # then each workload's
    for task in config["tasks"]:
        drawn = {c["chart"] for c in charts if c["task"] == task}
        assert {"throughput_vs_batch", "cost_vs_batch", "utilization_timeline"} <= drawn
    assert page.count('class="chart"') == len(manifest["charts"])
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=[\"']?https?:", page)
    for section in ('id="verdict"', "Setup", "Findings", "Cost", "Top operators", "SYNTHETIC"):
        assert section in page
    for task in config["tasks"]:
        assert f'<details id="task-{task}"><summary><h2>Workload {task}' in page
    assert "cheapest is" in page and "top operator" in page
    ok = sum(1 for line in (workdir / "results" / "tables" / "cells.csv").open() if ",ok," in line)
    assert re.search(rf"at least {config['min_repetition_s']} s each", page)
    assert re.search(rf"\d+ of {ok} ok cells noisy", page)
    for chart in charts:
        assert (workdir / "results" / "charts" / f"{chart['chart']}.png").exists()


def test_a_price_change_reruns_only_the_aggregates(finished_study):
    workdir, _ = finished_study
    prices = workdir / "prices.yaml"
    original, stat = prices.read_text(), prices.stat()
    try:
        prices.write_text(original.replace("per_vcpu_hour: 0.0425", "per_vcpu_hour: 0.05"))
        later = time.time() + 60  # newer than every output, however long the run took
        os.utime(prices, (later, later))
        jobs = planned_jobs(workdir)
    finally:
        prices.write_text(original)
        os.utime(prices, (stat.st_atime, stat.st_mtime))
    assert jobs == {"tables": 1, "charts": 1, "report": 1, "all": 1}


def test_snakemake_report_builds(finished_study, tmp_path):
    workdir, _ = finished_study
    out = tmp_path / "report.html"
    snakemake(workdir, "--report", str(out))
    assert out.stat().st_size > 10_000

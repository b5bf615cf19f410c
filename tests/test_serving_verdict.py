"""best.csv's serve rows judged at the p99 bound, the serving_slo tables and the p99-vs-rate
chart, over records in the format a serve cell writes (serving.slo, serving.inprocess_ratio)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from devicebench.aggregate import analysis
from devicebench.aggregate.best import COLUMNS, best_table
from devicebench.aggregate.collect import collect_records
from devicebench.aggregate.serving_best import PREDATES_NOTE
from devicebench.aggregate.serving_slo import slo_runs_table, slo_table, verdict_p99
from devicebench.aggregate.serving_slo_charts import p99_vs_rate

REPO = Path(__file__).resolve().parents[1]
PRICES = {"cpu": {"per_vcpu_hour": 0.05}, "cuda": [{"match": "H100", "per_hour": 4.0}]}
BOOT, CODE = "b-1", "0.1.0+abc1234"


def _run(phase: str, qps: float, p99: float, valid: bool) -> dict:
    return {
        "phase": phase, "target_qps": qps, "scheduled_qps": qps * 1.01, "duration_s": 60.0,
        "queries": int(qps * 60), "validity": "VALID" if valid else "INVALID", "valid": valid,
        "latency_met": valid, "early_stopping_met": valid, "p99_ms": p99, "p50_ms": p99 / 3,
        "http_errors": 0, "log_dir": f"slo/run-{phase}-{qps}",
    }  # fmt: skip


def _slo(status: str, rate: float | None, bound: float = 15.0) -> dict:
    """A serving.slo section as serving.slo.Search writes it."""
    probes = [_run("probe", 100.0, 9.0, True), _run("probe", 200.0, 40.0, False)]
    confirms = []
    if rate:
        confirms = [_run("confirm", rate, 12.0 + i, True) for i in range(3)]
    return {
        "status": status, "message": "bracket", "p99_bound_ms": bound,
        "max_valid_qps": rate and rate * 1.01, "run_qps": [rate * 1.01] * 3 if rate else None,
        "confirmed_at_qps": rate, "probe_qps": rate, "runs": len(confirms), "duration_s": 60.0,
        "queries": [int(rate * 60)] * 3 if rate else [], "early_stopping_met": bool(rate),
        "probes": probes, "confirms": confirms,
    }  # fmt: skip


def serve_record(tmp: Path, name: str, *, device: str, pool_rps: float, slo: dict | None,
                 model: str = "resnet50", **more) -> Path:  # fmt: skip
    axes = {
        "task": "serve_image", "model": model, "framework": "torch", "device": device,
        "threads": 16 if device == "cpu" else None, "precision": more.pop("precision", "bf16"),
        "batch_size": 32, "mode": "serve", "clients": 50, "server": "uvicorn",
        "replicas": more.pop("replicas", 1),
    }  # fmt: skip
    serving = {"pool": {"requests_per_s": pool_rps}, "batch_sizes": {"32": 10}}
    if slo is not None:
        serving |= {"slo": slo, "inprocess": {"samples_per_s": pool_rps / 0.6}}
        serving |= {"inprocess_ratio": 0.6, "inprocess_below_target": True}
    body = {
        "cell_id": name, "axes": axes, "status": "ok",
        "timings": {"latency_ms": {"p99": 300.0}},
        "throughput": {"samples_per_s": pool_rps, "requests_per_s": pool_rps},
        "serving": serving,
        "environment": {"gpu_name": "NVIDIA H100 80GB HBM3" if device == "cuda" else None,
                        "boot_id": BOOT},
        "provenance": {"code_version": CODE},
    }  # fmt: skip
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(body))
    return path


def best(paths: list[Path]) -> pd.DataFrame:
    return best_table(analysis.add_analysis(collect_records(paths), PRICES, "cpu"))


def test_the_serve_verdict_is_max_valid_qps_not_the_closed_loop_rate(tmp_path):
    paths = [
        # the closed-loop winner meets the bound at a lower rate than the other CPU server
        serve_record(tmp_path, "cpu_a", device="cpu", pool_rps=900.0, slo=_slo("ok", 150.0)),
        serve_record(
            tmp_path, "cpu_b", device="cpu", pool_rps=600.0, slo=_slo("ok", 300.0), replicas=4
        ),  # fmt: skip
        serve_record(tmp_path, "gpu", device="cuda", pool_rps=5000.0, slo=_slo("ok", 1200.0)),
    ]
    rows = best(paths)
    assert list(rows.columns) == COLUMNS
    fast = rows.set_index("pick").loc["fastest"]
    assert (fast.cpu_cell, fast.gpu_cell) == ("cpu_b", "gpu")
    assert fast.cpu_samples_per_s == pytest.approx(303.0)  # the median confirmed rate
    assert fast.speedup == pytest.approx(1212.0 / 303.0)
    cheap = rows.set_index("pick").loc["cheapest"]
    cpu_cost = 0.80 / 3600 / 303.0 * 1e6  # 16 vCPU x 0.05 $/h, a million requests at the rate
    gpu_cost = 4.0 / 3600 / 1212.0 * 1e6
    assert cheap.cpu_usd_per_million == pytest.approx(cpu_cost)
    assert cheap.cost_ratio == pytest.approx(cpu_cost / gpu_cost)
    assert cheap.cheaper == ("gpu" if cpu_cost > gpu_cost else "cpu")
    assert "p99 <= 15 ms" in cheap.note
    assert f"CPU ${cpu_cost / 1000:.4g} per 1,000 requests" in cheap.note


def test_the_serve_ratio_carries_its_range_over_the_confirming_runs(tmp_path):
    cpu_slo, gpu_slo = _slo("ok", 300.0), _slo("ok", 1200.0)
    cpu_slo["run_qps"] = [290.0, 303.0, 310.0]  # the median 303 is max_valid_qps
    gpu_slo["run_qps"] = [1180.0, 1212.0, 1250.0]
    paths = [
        serve_record(tmp_path, "cpu", device="cpu", pool_rps=600.0, slo=cpu_slo),
        serve_record(tmp_path, "gpu", device="cuda", pool_rps=5000.0, slo=gpu_slo),
    ]
    cheap = best(paths).set_index("pick").loc["cheapest"]
    assert cheap.cost_ratio_low == pytest.approx(cheap.cost_ratio * (1180 / 1212) * (303 / 310))
    assert cheap.cost_ratio_high == pytest.approx(cheap.cost_ratio * (1250 / 1212) * (303 / 290))
    assert "range over each side's confirming runs" in cheap.note
    # the CPU 1.25x cheaper, the whole range on its side, yet within lease-to-lease variance
    assert cheap.cost_ratio_high < 1 and cheap.confidence == "too close to call"


def test_a_device_with_no_rate_at_the_bound_says_so(tmp_path):
    paths = [
        serve_record(tmp_path, "cpu", device="cpu", pool_rps=300.0, slo=_slo("no_rate", None)),
        serve_record(tmp_path, "gpu", device="cuda", pool_rps=5000.0, slo=_slo("ok", 1200.0)),
    ]
    row = best(paths).set_index("pick").loc["cheapest"]
    assert "CPU: no rate meets p99 <= 15 ms" in row.note
    assert row.cheaper == "gpu" and math.isnan(row.speedup)
    assert pd.isna(row.cpu_cell)


def test_a_rate_not_confirmed_is_no_verdict_for_the_other_device(tmp_path):
    """The CPU's probes met the bound but its 60 s runs did not: that is not "cannot serve"."""
    unconfirmed = _slo("not_confirmed", None) | {"probe_qps": 222.6}
    paths = [
        serve_record(tmp_path, "cpu", device="cpu", pool_rps=300.0, slo=unconfirmed),
        serve_record(tmp_path, "gpu", device="cuda", pool_rps=5000.0, slo=_slo("ok", 1200.0)),
    ]
    row = best(paths).set_index("pick").loc["cheapest"]
    assert "CPU: no confirmed rate at p99 <= 15 ms (not_confirmed 1)" in row.note
    assert "no verdict until the CPU's rate at the bound confirms" in row.note
    assert "only the GPU" not in row.note
    assert pd.isna(row.cheaper) and row.gpu_samples_per_s == pytest.approx(1212.0)


def test_records_from_before_the_search_give_no_verdict(tmp_path):
    paths = [
        serve_record(tmp_path, "cpu", device="cpu", pool_rps=300.0, slo=None),
        serve_record(tmp_path, "gpu", device="cuda", pool_rps=5000.0, slo=None),
    ]
    rows = best(paths)
    assert set(rows["pick"]) == {"fastest", "cheapest"}
    assert (rows["note"] == PREDATES_NOTE).all()
    assert rows[["cpu_cell", "gpu_cell", "speedup", "cheaper"]].isna().all().all()
    table = slo_table(paths, PRICES)
    assert set(table["slo_status"]) == {"predates_search"}
    assert table["max_valid_qps"].isna().all()
    assert slo_runs_table(paths).empty
    assert p99_vs_rate(slo_runs_table(paths)).to_dict()  # an empty chart that says why


def test_the_published_h100_serve_rows_say_they_predate_the_search():
    records = sorted((REPO / "results/published/h100/cells").glob("task~serve_*/**/*.json"))
    assert records, "the published H100 serve records are missing"
    rows = best(records)
    serve = rows[rows["task"].astype(str).str.startswith("serve_")]
    assert not serve.empty and (serve["note"] == PREDATES_NOTE).all()
    assert serve["cheaper"].isna().all()


def test_the_slo_table_prices_the_rate_at_the_bound_and_flags_the_yardstick(tmp_path):
    paths = [
        serve_record(tmp_path, "cpu", device="cpu", pool_rps=300.0, slo=_slo("ok", 200.0)),
        serve_record(tmp_path, "gpu", device="cuda", pool_rps=5000.0, slo=_slo("ok", 1000.0)),
    ]
    table = slo_table(paths, PRICES).set_index("cell_id")
    assert table.loc["gpu", "max_valid_qps"] == pytest.approx(1010.0)
    assert table.loc["gpu", "cost_per_1k_requests_at_bound_usd"] == pytest.approx(
        4.0 / 3600 / 1010.0 * 1000
    )
    assert table.loc["cpu", "run_qps"] == "202 202 202"
    assert table.loc["cpu", "runs"] == 3 and table.loc["cpu", "queries_min"] == 12000
    assert table.loc["cpu", "inprocess_ratio"] == pytest.approx(0.6)
    assert table.loc["cpu", "inprocess_below_target"]
    runs = slo_runs_table(paths)
    assert len(runs) == 2 * (2 + 3)  # two probes and three confirming runs each
    points = verdict_p99(runs).set_index("cell_id")
    assert points.loc["cpu", "verdict_p99_ms"] == pytest.approx(13.0)  # median of 12, 13, 14
    spec = p99_vs_rate(runs).to_dict()
    assert [panel["title"] for panel in spec["vconcat"]] == ["resnet50"]  # a panel a model


def test_a_search_without_a_confirmed_rate_draws_no_verdict_layer(tmp_path):
    # an empty verdict layer has an infinite extent that Vega warns of in the browser (seen in
    # the published h200_serving write-up)
    paths = [
        serve_record(tmp_path, "cpu", device="cpu", pool_rps=300.0, slo=_slo("over_budget", None)),
        serve_record(tmp_path, "gpu", device="cuda", pool_rps=900.0, slo=_slo("no_rate", None)),
    ]
    spec = p99_vs_rate(slo_runs_table(paths)).to_dict()
    assert not _diamonds(spec["vconcat"][0])
    assert "no verdict" in " ".join(spec["title"]["subtitle"])
    # a model confirmed beside one that is not (ResNet-152's sweeps beside MobileNetV2's
    # confirms, 2026-11-30): only the confirmed model's panel has the verdict layer
    confirmed = serve_record(tmp_path, "ok", device="cpu", pool_rps=300.0, slo=_slo("ok", 200.0),
                             model="mobilenetv2")  # fmt: skip
    spec = p99_vs_rate(slo_runs_table([*paths, confirmed])).to_dict()
    panels = {panel["title"]: panel for panel in spec["vconcat"]}
    assert _diamonds(panels["mobilenetv2"]) and not _diamonds(panels["resnet50"])


def _diamonds(panel: dict) -> bool:
    """Whether a chart panel draws the verdict's diamond."""
    marks = [layer["mark"] for layer in panel["layer"]]
    return any(isinstance(m, dict) and m.get("shape") == "diamond" for m in marks)


def test_the_write_up_answers_serving_at_a_bound_from_the_rows_best_csv_holds(tmp_path):
    from devicebench.report.answer import answer

    paths = [
        serve_record(tmp_path, "cpu", device="cpu", pool_rps=600.0, slo=_slo("ok", 100.0, 50.0)),
        serve_record(tmp_path, "gpu", device="cuda", pool_rps=5000.0, slo=_slo("ok", 1200.0, 50.0)),
    ]
    cells = analysis.add_analysis(collect_records(paths), PRICES, "cpu")
    rows = best_table(cells)
    assert rows["p99_bound_ms"].eq(50.0).all()  # best.csv's column holds the bound
    assert rows["finding"].str.contains("CPU priced as 16 vCPUs").all()  # as the README says
    serving = next(a for a in answer(rows.assign(note=""), cells) if a.key == "serving_bound")
    assert serving.measured and serving.verdict == "GPU cheaper"  # read from it, not the note

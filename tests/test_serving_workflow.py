"""Tiny serve cells (an image one, a text one) through the real workflow: server, pool, LoadGen,
into the tables, charts and write-up, with LoadGen's logs kept and no server left behind."""

from __future__ import annotations

import pandas as pd
import pytest
from serving_helpers import servers_under
from workflow import snakemake, write_config

pytestmark = pytest.mark.workflow

CONFIG = {
    "study": "serve-tiny",
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
    "datasets": {"jpeg_images": {"source": "synthetic", "train_samples": 4, "test_samples": 32}},
    "tasks": {
        "serve_image": {
            "models": ["mobilenetv2", "nasnetlarge"],
            "batch_sizes": [4],  # the task's own: the default config's serve_image batch is 8
            "clients": [4],
            "serve": {
                "image_size": 32,
                "requests": 40,
                "min_duration_s": 0,  # a fixed count, not the quick default's steady window
                "min_requests": 0,
                "warmup_requests": 4,
                "stability_window_s": 0.05,
                "loadgen_scenarios": ["Offline", "Server"],
                "loadgen_min_duration_s": 0.2,
                "loadgen_min_queries": 64,
                "server_search_steps": 1,
            },
        }
    },
    "exclude": [],
}


def test_a_serve_cell_runs_into_the_serving_table_charts_and_write_up(tmp_path):
    write_config(tmp_path, CONFIG)
    snakemake(tmp_path, "--cores", "2")
    serving = pd.read_csv(tmp_path / "results/tables/serving.csv")
    by_model = serving.set_index("model")
    ok = by_model.loc["mobilenetv2"]
    assert ok["status"] == "ok", ok["message"]
    assert ok["requests"] == 40 and ok["errors"] == 0 and ok["requests_per_s"] > 0
    assert 0 < ok["p50_ms"] <= ok["p90_ms"] <= ok["p99_ms"] <= ok["max_ms"]
    assert ok["cost_per_1k_requests_usd"] > 0 and ok["requests_per_usd"] > 0
    assert 1 <= ok["mean_batch"] <= ok["largest_batch"] <= 4
    assert ok["offline_samples_per_s"] > 0
    assert by_model.loc["nasnetlarge", "status"] == "skipped"
    cell = ok["cell_id"]
    logs = tmp_path / "results/logs/cells" / cell / "loadgen"
    assert (logs / "Offline/mlperf_log_summary.txt").exists()
    assert (logs / "Server/mlperf_log_detail.txt").exists()
    for chart in ("serve_throughput_vs_clients", "serve_latency_percentiles"):
        assert (tmp_path / f"results/charts/{chart}.png").stat().st_size > 0
    page = (tmp_path / "results/report/index.html").read_text()
    assert "Serving: throughput" in page and "mobilenetv2 on cpu:1t: at most" in page
    assert not servers_under(tmp_path)  # the servers of this test's cells, nothing else


TEXT_CONFIG = CONFIG | {
    "study": "serve-text-tiny",
    "datasets": {"imdb": {"source": "synthetic", "train_samples": 64, "test_samples": 32}},
    "tasks": {
        "serve_text": {
            "models": ["bert-tiny"],
            "frameworks": ["torch", "keras-torch"],
            "seq_lens": [32],
            "clients": [4],
            "serve": {
                "requests": 40,
                "warmup_requests": 4,
                "stability_window_s": 0.05,
                "loadgen_scenarios": ["Offline"],
                "loadgen_min_duration_s": 0.2,
                "loadgen_min_queries": 32,
            },
        }
    },
}


def test_a_serve_text_cell_runs_into_the_serving_table_and_write_up(tmp_path):
    write_config(tmp_path, TEXT_CONFIG)
    snakemake(tmp_path, "--cores", "2")
    serving = pd.read_csv(tmp_path / "results/tables/serving.csv").set_index("framework")
    ok = serving.loc["torch"]
    assert ok["status"] == "ok", ok["message"]
    assert ok["task"] == "serve_text" and ok["model"] == "bert-tiny" and ok["seq_len"] == 32
    assert ok["requests"] == 40 and ok["errors"] == 0 and ok["samples_per_s"] > 0
    assert 0 < ok["p50_ms"] <= ok["p90_ms"] <= ok["p99_ms"] <= ok["max_ms"]
    assert 1 <= ok["mean_batch"] <= ok["largest_batch"] <= 4
    assert ok["offline_samples_per_s"] > 0 and ok["cost_per_1k_requests_usd"] > 0
    assert serving.loc["keras-torch", "status"] == "skipped"
    logs = tmp_path / "results/logs/cells" / ok["cell_id"] / "loadgen"
    assert (logs / "Offline/mlperf_log_summary.txt").exists()
    page = (tmp_path / "results/report/index.html").read_text()
    assert "bert-tiny on cpu:1t: at most" in page
    assert not servers_under(tmp_path)  # the servers of this test's cells, nothing else

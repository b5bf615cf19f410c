"""The write-up's generated sentences follow its wording rules: engine names come from the
records, baselines are named for what is missing, comparisons are only between cells that differ
in the axis they name, noisy serving is said to be noisy, and no 'nan' is ever printed."""

from __future__ import annotations

import re

import pandas as pd

from devicebench.report import findings

SERVE = {
    "task": "serve_image",
    "model": "resnet50",
    "framework": "torch",
    "device_label": "cuda",
    "precision": "fp32",
    "batch_size": 32,
    "server": "uvicorn",
    "replicas": 1,
    "clients": 50,
    "status": "ok",
    "requests_per_s": 600.0,
    "p99_ms": 300.0,
    "errors": 0,
    "stability_cov": 0.05,
    "replica_scaling_efficiency": float("nan"),
    "requests_per_usd": 500_000.0,
    "cost_per_1k_requests_usd": 0.002,
}


def serve_table(*changes: dict) -> pd.DataFrame:
    return pd.DataFrame([dict(SERVE, **c) for c in changes])


def test_replica_scaling_names_the_server_the_records_name():
    table = serve_table({}, {"replicas": 8, "replica_scaling_efficiency": 0.15})
    said = " ".join(findings.serving(table, "serve_image"))
    assert "uvicorn server: replica scaling efficiency 0.15 at 8 replicas" in said
    assert "ray-serve" not in said
    ray = serve_table({"server": "ray-serve", "replicas": 4, "replica_scaling_efficiency": 0.9})
    assert "ray-serve server: replica scaling" in " ".join(findings.serving(ray, "serve_image"))


def test_clients_are_compared_only_between_cells_that_differ_in_clients_alone():
    table = serve_table(
        {"framework": "keras-torch", "p99_ms": 604.0},
        {"replicas": 8, "clients": 384, "p99_ms": 5011.0},
    )
    said = " ".join(findings.serving(table, "serve_image"))
    assert "clients p99 goes" not in said  # keras-torch 1 replica vs torch 8 replicas
    table = serve_table({"replicas": 8, "p99_ms": 170.0}, {"replicas": 8, "clients": 384})
    said = findings.serving(table, "serve_image")
    line = next(s for s in said if "clients p99 goes" in s)
    assert "torch, fp32, batch 32, uvicorn server, 8 replica(s)" in line
    assert "from 50 to 384 clients p99 goes 170 -> 300 ms" in line


def test_noisy_serve_cells_are_named_with_their_stability_cov():
    table = serve_table({}, {"clients": 384, "stability_cov": 1.96})
    said = findings.serving(table, "serve_image", noise_cov=0.1)
    assert said[-1].startswith("1 of 2 serve cells are noisy, throughput stability CoV above 0.1")
    assert said[-1].endswith("384 clients): 1.96.")
    steady = findings.serving(serve_table({}), "serve_image", noise_cov=0.1)
    assert steady[-1] == (
        "Serving throughput steady in all 1 serve cells that measured it (stability CoV at "
        "most 0.1)."
    )
    cells = pd.DataFrame(
        [{"task": "serve_image", "status": "ok", "mode": "serve", "noisy": None, "cov": None}]
    )
    quality = pd.DataFrame(columns=["task"])
    said = findings.noise_and_agreement(cells, quality, "serve_image")
    assert not any("No noisy cell" in s for s in said)  # serve cells have no repeated timings


def speedup_rows(gpu_status: str, base_status: str) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "task": "t",
                "model": "m",
                "framework": "torch",
                "precision": "bf16",
                "device_label": "cuda",
                "batch_size": 64,
                "mode": "infer",
                "status": gpu_status,
                "speedup": float("nan"),
                "base_label": "cpu:16t",
                "base_status": base_status,
            }
        ]
    )


def test_a_missing_cpu_baseline_is_called_that():
    said = findings.gpu_crossover(speedup_rows("ok", "skipped"), "t")
    assert said == [
        "cuda m torch bf16 infer: no CPU baseline (cpu:16t) ran ok with the same configuration; "
        "base status: skipped."
    ]
    said = findings.gpu_crossover(speedup_rows("oom", "ok"), "t")
    assert said == ["cuda m torch bf16 infer: no GPU timing to compare (status: oom)."]


def test_a_cell_without_a_cost_per_repetition_prints_no_nan():
    cells = pd.DataFrame(
        [
            {
                "task": "serve_text",
                "model": "bert-base",
                "framework": "torch",
                "device_label": "cuda",
                "precision": "fp32",
                "batch_size": 32,
                "mode": "serve",
                "status": "ok",
                "samples_per_s": 812.0,
                "samples_per_usd": 730_753.0,
                "cost_usd": float("nan"),  # a serve cell has no timed repetitions
                "target_accuracy": float("nan"),
                "cost_to_target_usd": float("nan"),
            }
        ]
    )
    said = findings.cheapest(cells, "serve_text")
    assert said and not re.search(r"\bnan\b", " ".join(said), re.I)
    assert "at US$1.37 per million samples;" in said[0]  # 1e6 / 730,753, never per repetition


def test_a_loadgen_server_search_is_reported_valid_or_how_low_it_went():
    valid = serve_table({"server_highest_valid_qps": 406.5, "server_lowest_qps_tried": 406.5})
    said = " ".join(findings.serving(valid, "serve_image"))
    assert "LoadGen Server VALID up to 406.5 QPS" in said
    invalid = serve_table({"server_highest_valid_qps": None, "server_lowest_qps_tried": 7.08})
    said = " ".join(findings.serving(invalid, "serve_image"))
    assert "LoadGen Server INVALID at every QPS tried, down to 7.08" in said and "nan" not in said
    stopped = "not tried at 3.54 QPS: 459 queries would take 130 s, over the cap"
    capped = serve_table(
        {"server_highest_valid_qps": None, "server_lowest_qps_tried": 7.08,
         "server_search_stopped": stopped}
    )  # fmt: skip
    said = " ".join(findings.serving(capped, "serve_image"))
    assert f"down to 7.08 (lower {stopped})." in said
    unconfirmed = serve_table(
        {"server_highest_valid_qps": None, "server_lowest_qps_tried": 82.66,
         "server_p99_met_up_to_qps": 165.3}
    )  # fmt: skip
    said = " ".join(findings.serving(unconfirmed, "serve_image"))
    assert (
        "down to 82.66, though the measured p99 was under the bound up to 165.3 QPS: LoadGen's "
        "early-stopping estimate could not confirm it from that run's queries."
    ) in said

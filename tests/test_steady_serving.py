"""The steady serving window and the client_bound flag, against the real scoring server."""

from __future__ import annotations

import json

import pytest

from devicebench.data import prepare_dataset
from devicebench.serving.steady import client_bound, client_capacity, run_steady
from devicebench.serving.trivial import trivial_server

STEADY = {"min_duration_s": 1.5, "min_requests": 30, "ramp_s": 0.3, "capacity_s": 1.0}


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> dict:
    """One serve cell of MobileNetV2 at 32 px on 2 CPU threads with a short steady window."""
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    tmp = tmp_path_factory.mktemp("steady")
    manifest = prepare_dataset(
        "jpeg_images", "synthetic", tmp / "d", train_samples=4, test_samples=16
    )
    values = dict(task="serve_image", model="mobilenetv2", framework="torch", device="cpu")
    values |= dict(threads=2, precision="fp32", batch_size=4, mode="serve")
    serve = {"image_size": 32, "warmup_requests": 8, "loadgen_scenarios": [], **STEADY}
    serve |= {"client_processes": 1, "stability_window_s": 0.1}
    settings = {"dataset": "jpeg_images", "seed": 1, "timeout_s": 300, "serve": json.dumps(serve)}
    cell = make_cell(values, {"clients": 4}, settings)
    return run_cell(cell, data=manifest, out=tmp / "cell.json", extra={"log_dir": str(tmp / "l")})


def test_serve_cell_measures_a_steady_window(served):
    assert served["status"] == "ok", served.get("message")
    window = served["serving"]["steady_window"]
    assert window["meets_minimum"] is True
    assert window["window_s"] >= STEADY["min_duration_s"]
    assert window["window_requests"] >= STEADY["min_requests"]
    assert window["left_out"] > 0  # the ramp and the drain are not in the percentiles
    pool = served["serving"]["pool"]
    assert pool["requests"] == window["window_requests"] < window["total_requests"]
    assert pool["errors"] == 0 and pool["requests_per_s"] > 0
    assert pool["latency_ms"]["p50"] <= pool["latency_ms"]["p99"] <= pool["latency_ms"]["max"]


def test_serve_cell_records_client_capacity_and_bound(served):
    serving = served["serving"]
    capacity = serving["pool"]["client_capacity"]
    assert capacity["requests"] > 0 and capacity["errors"] == 0
    rate = serving["pool"]["requests_per_s"]
    assert serving["client_bound"] is (rate > 0.5 * capacity["requests_per_s"])
    # a CNN on 2 threads answers far slower than a route that does nothing
    assert serving["client_bound"] is False


def test_serve_cell_energy_is_null_with_a_reason_on_this_cpu(served):
    energy = served["energy"]
    assert energy["samples"] == served["serving"]["pool"]["ok"]
    if energy["joules_per_sample"] is None:
        assert energy["reason"] and energy["cpu_reason"]
    else:
        assert energy["joules_per_sample"] > 0 and energy["samples_per_kwh"] > 0


def test_a_serve_cells_worker_loads_no_framework_and_keeps_the_servers_cuda_facts(served):
    """The model lives in the server; the worker only sends requests, so it skips torch and
    Dynamo's import, and the record's CUDA facts are the server's torch's."""
    marks = served["timings"]["marks"]
    assert {"worker_imported", "data_loaded", "server_up"} <= set(marks)
    assert "torch_imported" not in marks and "determinism_set" not in marks
    import torch  # noqa: F401 - here, as in the server: the build's CUDA facts

    from devicebench.measure.environment import torch_cuda_build

    environment = served["environment"]
    assert {k: environment[k] for k in ("cuda", "cudnn")} == torch_cuda_build()
    assert environment["cpu_model"] and environment["boot_id"]


def test_a_server_as_fast_as_the_trivial_route_is_client_bound():
    """The trivial route itself as the server: its rate is the pool's capacity, so bound."""
    payloads = [b"x" * 500] * 4
    options = dict(clients=4, processes=1, content_type="image/jpeg")
    # 2 s windows, not 0.8 s: on a loaded 2-core host a short window's rate swings past the
    # capacity's tolerance (seen once in a full run beside the quick study)
    with trivial_server(1) as url:
        steady = run_steady(url, payloads, ramp_s=0.2, min_duration_s=2.0, min_requests=50,
                            **options)  # fmt: skip
    capacity = client_capacity(payloads, seconds=2.0, host="127.0.0.1", **options)
    assert steady["steady"]["meets_minimum"] and steady["errors"] == 0
    assert client_bound(steady["requests_per_s"], capacity["requests_per_s"]) is True


@pytest.mark.parametrize(
    ("key", "value"), [("min_duration_s", -1), ("min_requests", 1.5), ("capacity_s", 0)]
)
def test_bad_steady_settings_name_their_key(key, value):
    from devicebench.plan.config import ConfigError, check_config

    serve = {"image_size": 32, key: value}
    study = {"tasks": {"serve_image": {"serve": serve}}, "frameworks": ["torch"]}
    study |= {"devices": {"cpu": {"threads": [1]}}, "precisions": ["fp32"], "modes": ["serve"]}
    with pytest.raises(ConfigError, match=f"tasks.serve_image.serve.{key}"):
        check_config(study | {"batch_sizes": [4]})

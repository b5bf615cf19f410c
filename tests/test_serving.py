"""The scoring server for real: bad input answered 4xx while it keeps serving, the port retry,
the client pool and LoadGen against it, and no server process outliving its test or its cell."""

from __future__ import annotations

import json
import os
import signal
import socket
import time

import httpx
import psutil
import pytest
from serving_helpers import server_in_a_parent, servers_under, tree_of

from devicebench.data import load_dataset, prepare_dataset
from devicebench.serving import loadgen
from devicebench.serving.clients import run_pool
from devicebench.serving.process import ServerProcess

SERVER = {"framework": "torch", "model": "mobilenetv2", "image_size": 32, "threads": 1}
JPEG = {"content-type": "image/jpeg"}


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jpeg")
    manifest = prepare_dataset("jpeg_images", "synthetic", folder, train_samples=4, test_samples=64)
    return list(load_dataset(manifest).x_test)


@pytest.fixture(scope="module")
def server():
    with ServerProcess(**SERVER, max_batch=4, max_body_bytes=64_000) as running:
        yield running
    assert not psutil.pid_exists(running.pid) or running.process.poll() is not None
    assert not tree_of(running.log_path), "the server's processes outlived it"


def score(server, body: bytes, headers=JPEG) -> httpx.Response:
    return httpx.post(f"{server.url}/predict", content=body, headers=headers, timeout=30)


def test_a_jpeg_is_scored_with_top_class_and_score(server, images):
    answer = score(server, images[0])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert 0 <= body["class"] < 1000 and 0.0 < body["score"] <= 1.0


@pytest.mark.parametrize(
    ("case", "status", "words"),
    [
        ("not an image", 400, "not an image"),
        ("empty body", 400, "empty body"),
        ("wrong content type", 415, "content type"),
        ("over the size limit", 413, "limit"),
        ("truncated jpeg", 400, "truncated"),
        ("png, not jpeg", 400, "PNG"),
    ],
)
def test_bad_input_gets_a_4xx_with_a_message_and_the_server_serves_on(
    server, images, case, status, words
):
    import io

    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (8, 8)).save(png, format="PNG")
    body, headers = {
        "not an image": (b"hello, not a picture", JPEG),
        "empty body": (b"", JPEG),
        "wrong content type": (images[0], {"content-type": "text/plain"}),
        "over the size limit": (b"\xff" * 100_000, JPEG),
        "truncated jpeg": (images[0][: len(images[0]) // 2], JPEG),
        "png, not jpeg": (png.getvalue(), JPEG),
    }[case]
    answer = score(server, body, headers)
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"]
    assert score(server, images[1]).status_code == 200


def test_decoder_processes_score_and_reject_as_threads_do_and_leave_with_the_server(images):
    with ServerProcess(**SERVER, max_batch=4, decode_workers=1) as running:
        assert running.health["decode_workers"] == 1
        assert running.health["gc_frozen_objects"] > 10_000  # torch's and the model's objects
        decoders = psutil.Process(running.pid).children(recursive=True)
        assert decoders, "the server started no decoder process"
        good = score(running, images[0])
        assert good.status_code == 200 and 0 <= good.json()["class"] < 1000
        bad = score(running, b"hello, not a picture")
        assert bad.status_code == 400 and "not an image" in bad.json()["detail"]
        assert score(running, images[1]).status_code == 200
    gone, alive = psutil.wait_procs(decoders, timeout=10)
    assert not alive, f"decoder processes outlived their server: {alive}"


def test_a_killed_server_takes_its_decoder_processes_along():
    with ServerProcess(**SERVER, decode_workers=1) as running:
        decoders = psutil.Process(running.pid).children(recursive=True)
        os.kill(running.pid, signal.SIGKILL)
        gone, alive = psutil.wait_procs(decoders, timeout=10)
    assert decoders and not alive, f"decoders outlived a killed server: {alive}"


def test_the_pool_scores_every_request_and_batches_form(server, images):
    result = run_pool(f"{server.url}/predict", images, clients=8, requests=48, window_s=0.05)
    assert result["ok"] == 48 and result["errors"] == 0
    latency = result["latency_ms"]
    assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    sizes = {int(k): v for k, v in server.stats()["batch_sizes"].items()}
    assert max(sizes) <= 4 and sum(k * v for k, v in sizes.items()) >= 48


def test_the_pool_splits_its_clients_over_processes_and_merges_their_timings(server, images):
    before = server.stats()["counts"].get("ok", 0)
    result = run_pool(f"{server.url}/predict", images, clients=5, requests=31, processes=2)
    assert result["processes"] == 2 and result["requests"] == 31 and result["ok"] == 31
    assert server.stats()["counts"]["ok"] - before == 31  # every request reached the server once
    latency = result["latency_ms"]
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
    assert result["duration_s"] * 1000 >= latency["max"]  # one timeline over both processes
    assert result["requests_per_s"] == pytest.approx(31 / result["duration_s"])


def test_client_processes_auto_is_one_per_64_clients_within_a_quarter_of_the_cores():
    import math

    from devicebench.serving.clients import client_processes

    assert client_processes("auto", 20) == client_processes("auto", 64) == 1
    assert client_processes(3, 8) == 3 and client_processes("2", 8) == 2
    for clients in (65, 384, 10_000):
        processes = client_processes("auto", clients)
        assert 1 <= processes <= max(1, os.cpu_count() // 4)
        assert processes <= math.ceil(clients / 64)


def test_the_pool_counts_errors_instead_of_hanging(images):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once closed
    result = run_pool(f"http://127.0.0.1:{port}/predict", images, clients=4, requests=12)
    assert result["errors"] == 12 and result["error_rate"] == 1.0 and result["ok"] == 0


def test_loadgen_offline_and_singlestream_keep_their_logs(server, images, tmp_path):
    for scenario in ("Offline", "SingleStream"):
        result = loadgen.run_scenario(
            f"{server.url}/predict",
            images,
            scenario,
            tmp_path / scenario,
            min_duration_s=0.2,
            min_queries=64,
            target_qps=50,
        )
        assert result["validity"] in ("VALID", "INVALID") and result["http_errors"] == 0
        assert result["result"] > 0 and result["latency_ms"]["p90"] > 0
        assert (tmp_path / scenario / "mlperf_log_summary.txt").exists()
        assert (tmp_path / scenario / "mlperf_log_detail.txt").exists()


def test_a_server_run_has_enough_queries_for_loadgen_early_stopping(server, images, tmp_path):
    """Asked for 64 queries, a Server run issues at least the 459 LoadGen's p99 estimate needs,
    so an INVALID verdict means the latency bound, never a run too short to tell."""
    result = loadgen.run_scenario(
        f"{server.url}/predict",
        images,
        "Server",
        tmp_path,
        min_duration_s=0.2,
        min_queries=64,
        target_qps=300,
        target_latency_ms=10_000,
    )
    assert loadgen.SERVER_EARLY_STOPPING_QUERIES == 459
    assert result["queries"] >= 459 and result["http_errors"] == 0
    assert result["early_stopping_met"] is True and result["latency_met"] is True
    assert result["valid"]


def test_the_server_search_makes_no_run_longer_than_its_cap(server, images, tmp_path):
    """A bound no QPS meets halves the QPS each run, and 459 queries at half the QPS take twice
    as long: the cap stops the search before a run that would last past it, and says so."""
    result = loadgen.search_server_qps(
        f"{server.url}/predict",
        images,
        tmp_path,
        start_qps=460,
        steps=3,
        max_run_s=1.5,
        min_duration_s=0.2,
        min_queries=64,
        target_latency_ms=0.001,
    )
    assert [run["target_qps"] for run in result["runs"]] == [460]
    assert result["highest_valid_qps"] is None and not result["runs"][0]["valid"]
    assert result["stopped"] == (
        "not tried at 230 QPS: 459 queries would take 2 s, over loadgen_server_max_run_s 1.5"
    )
    assert not (tmp_path / "qps-1").exists()


def test_a_port_in_use_is_retried_on_another(images):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with ServerProcess(**SERVER, port=taken) as running:
            assert running.health["port"] != taken
            assert f"port {taken} in use" in running.health["port_note"]
            assert score(running, images[0]).status_code == 200
    assert running.process.returncode is not None


def test_a_killed_parent_takes_its_server_along(tmp_path):
    """The worker that started a server dies by SIGKILL: the server must not live on."""
    parent, pid = server_in_a_parent(tmp_path, "ServerProcess", SERVER, timeout_s=120)
    child = psutil.Process(pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    child.wait(timeout=10)  # raises psutil.TimeoutExpired if it outlives its parent
    assert not child.is_running()


def test_a_serve_cell_over_its_time_limit_leaves_no_server(tmp_path, images):
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    manifest = prepare_dataset(
        "jpeg_images", "synthetic", tmp_path / "d", train_samples=4, test_samples=16
    )
    values = {
        "task": "serve_image",
        "model": "mobilenetv2",
        "framework": "torch",
        "device": "cpu",
        "threads": 1,
        "precision": "fp32",
        "batch_size": 4,
        "mode": "serve",
    }
    serve = {"image_size": 32, "requests": 100_000, "loadgen_scenarios": []}
    settings = {"dataset": "jpeg_images", "epochs": 1, "steps_per_epoch": None}
    settings |= {"learning_rate": 1.0, "repetitions": 1, "warmup_steps": 1, "seed": 1}
    settings |= {"timeout_s": 20, "noise_cov": 0.1, "min_repetition_s": 0.0}
    settings["serve"] = json.dumps(serve)
    cell = make_cell(values, {"clients": 4, "server": "uvicorn"}, settings)
    record = run_cell(
        cell, data=manifest, out=tmp_path / "cell.json", extra={"log_dir": str(tmp_path)}
    )
    assert record["status"] == "timeout", record["message"]
    assert (tmp_path / "server.log").exists()  # the server process was started (opened first)
    time.sleep(0.5)
    assert not servers_under(tmp_path)  # only the processes of the server this test started


def test_a_model_the_library_lacks_is_skipped_with_the_reason(tmp_path):
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    manifest = prepare_dataset(
        "jpeg_images", "synthetic", tmp_path / "d", train_samples=4, test_samples=4
    )
    values = dict(task="serve_image", model="nasnetlarge", framework="torch", device="cpu")
    values |= dict(threads=1, precision="fp32", batch_size=4, mode="serve")
    settings = {"dataset": "jpeg_images", "seed": 1, "timeout_s": 60}
    record = run_cell(make_cell(values, {}, settings), data=manifest, out=tmp_path / "c.json")
    assert record["status"] == "skipped" and "nasnetlarge" in record["message"]

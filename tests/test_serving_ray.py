"""The Ray Serve scoring server for real (a local Ray, real HTTP): it scores and rejects as the
uvicorn server does, batches with @serve.batch, restarts a killed replica while the pool counts
errors, and leaves no Ray process behind, after a stop or when its parent is killed."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import httpx
import psutil
import pytest
from serving_helpers import gone_within, replica_cells, server_in_a_parent, tree_of

from devicebench.data import load_dataset, prepare_dataset
from devicebench.serving.clients import run_pool
from devicebench.serving.ray_process import RayServeProcess

SERVER = {"framework": "torch", "model": "mobilenetv2", "image_size": 32, "threads": 1}
JPEG = {"content-type": "image/jpeg"}


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jpeg")
    manifest = prepare_dataset("jpeg_images", "synthetic", folder, train_samples=4, test_samples=32)
    return list(load_dataset(manifest).x_test)


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    log = tmp_path_factory.mktemp("ray") / "server.log"
    server = RayServeProcess(**SERVER, replicas=1, max_batch=4, max_body_bytes=64_000, log_path=log)
    with server:
        assert tree_of(log), "the launcher's marker is missing from the server's processes"
        yield server
    left = gone_within(log, 30)
    assert not left, f"Ray processes outlived their server's stop: {[p.cmdline() for p in left]}"


def score(server, body: bytes, headers=JPEG) -> httpx.Response:
    return httpx.post(f"{server.url}/predict", content=body, headers=headers, timeout=60)


def test_ray_serve_scores_a_jpeg_with_top_class_and_score(running, images):
    assert running.health["server"] == "ray-serve" and running.health["replicas"] == 1
    answer = score(running, images[0])
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
    ],
)
def test_bad_input_gets_the_uvicorn_servers_4xx_and_ray_serve_serves_on(
    running, images, case, status, words
):
    body, headers = {
        "not an image": (b"hello, not a picture", JPEG),
        "empty body": (b"", JPEG),
        "wrong content type": (images[0], {"content-type": "text/plain"}),
        "over the size limit": (b"\xff" * 100_000, JPEG),
        "truncated jpeg": (images[0][: len(images[0]) // 2], JPEG),
    }[case]
    answer = score(running, body, headers)
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"]
    assert score(running, images[1]).status_code == 200


def test_the_pool_is_scored_and_serve_batch_forms_batches(running, images):
    result = run_pool(f"{running.url}/predict", images, clients=8, requests=48)
    assert result["ok"] == 48 and result["errors"] == 0, result["error_reasons"]
    stats = running.stats()
    sizes = {int(k): v for k, v in stats["batch_sizes"].items()}
    assert max(sizes) <= 4 and sum(k * v for k, v in sizes.items()) >= 48
    assert stats["counts"]["rejected_400"] >= 1  # the bad-input tests, summed over replicas
    assert len(stats["replicas"]) == 1 and stats["peak_rss_mb"] > 0


def test_a_replica_killed_mid_load_is_restarted_and_the_pool_counts_errors(running, images):
    """Runs after the other tests of the module server: it kills that server's replica."""
    [replica] = running.stats()["replicas"].values()
    outcome = {}
    pool = threading.Thread(
        target=lambda: outcome.update(
            run_pool(f"{running.url}/predict", images, clients=8, requests=400, timeout_s=30)
        )
    )
    pool.start()
    time.sleep(2.0)  # the pool is under way
    os.kill(replica["pid"], signal.SIGKILL)
    pool.join(timeout=300)
    assert not pool.is_alive(), "the client pool hung on a killed replica"
    assert outcome["requests"] == 400
    assert outcome["errors"] >= 1, "a replica died under load and no request failed?"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # Serve starts a new replica
        if score(running, images[0]).status_code == 200:
            break
        time.sleep(1)
    else:
        pytest.fail(f"no replica answered after the kill; log:\n{running.log_tail()}")
    pids = {r["pid"] for r in running.stats()["replicas"].values()}
    assert pids - {replica["pid"]}, "the answer came from no new replica"
    assert not psutil.pid_exists(replica["pid"]) or psutil.Process(replica["pid"]).status() == (
        psutil.STATUS_ZOMBIE
    )


def test_a_killed_parent_leaves_no_ray_process(tmp_path):
    """The worker that started the server dies by SIGKILL: the server and all of Ray go too."""
    log = tmp_path / "server.log"
    parent, _ = server_in_a_parent(tmp_path, "RayServeProcess", SERVER)
    names = " ".join(" ".join(p.cmdline()) for p in tree_of(log))
    assert "raylet" in names and "ray::ServeReplica" in names, names  # Ray is there to leave
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    left = gone_within(log, 60)
    assert not left, f"processes outlived a killed parent: {[p.cmdline() for p in left]}"


def test_ray_serve_cells_of_1_and_2_replicas_and_their_scaling_efficiency(tmp_path):
    from devicebench.aggregate.serving_charts import replica_scaling
    from devicebench.report.findings import serving as serving_findings

    records, table = replica_cells(tmp_path, "ray-serve")
    assert len(records[1]["serving"]["replica_peaks_mb"]) == 1
    one, two = (table.set_index("replicas").loc[n, "requests_per_s"] for n in (1, 2))
    chart = replica_scaling(table).to_dict()  # the write-up's chart plots both cells
    plotted = sorted((row["replicas"], row["requests_per_s"]) for row in chart["data"]["values"])
    assert plotted == [(1, pytest.approx(one)), (2, pytest.approx(two))]
    lines = serving_findings(table, "serve_image")
    [finding] = [line for line in lines if "replica scaling" in line]
    assert f"{two / (2 * one):.2f} at 2 replicas" in finding, finding


def test_a_ray_serve_cell_over_its_time_limit_leaves_no_ray_process(tmp_path):
    """The runner kills the worker's process group at the limit; Ray's workers (in groups of
    their own) and agents must go as well."""
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    manifest = prepare_dataset(
        "jpeg_images", "synthetic", tmp_path / "d", train_samples=4, test_samples=16
    )
    values = dict(task="serve_image", model="mobilenetv2", framework="torch", device="cpu")
    values |= dict(threads=1, precision="fp32", batch_size=4, mode="serve")
    serve = {"image_size": 32, "requests": 1_000_000, "loadgen_scenarios": []}
    settings = {"dataset": "jpeg_images", "seed": 1, "timeout_s": 100, "serve": json.dumps(serve)}
    axes = {"clients": 4, "server": "ray-serve", "replicas": 1}
    log = tmp_path / "server.log"
    record = run_cell(
        make_cell(values, axes, settings), data=manifest, out=tmp_path / "c.json",
        extra={"log_dir": str(tmp_path)},
    )  # fmt: skip
    assert record["status"] == "timeout", record["message"]
    if "Application 'devicebench' is ready" not in log.read_text(errors="replace"):
        pytest.skip("Ray Serve did not come up within the 100 s limit on this machine")
    left = gone_within(log, 60)
    assert not left, f"Ray processes outlived a timed-out cell: {[p.cmdline() for p in left]}"

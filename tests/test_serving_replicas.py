"""The uvicorn engine's replicas for real (N server processes on one port, supervisor.py) and the
batch buckets (scoring.py): every replica answers, their counts add up in one table, a killed
replica is started again while the others serve, no replica outlives its supervisor, and padded
batches score exactly as the samples alone."""

from __future__ import annotations

import os
import signal
import time

import httpx
import numpy as np
import pytest
from serving_helpers import gone_within, replica_cells, server_in_a_parent, tree_of

from devicebench.data import load_dataset, prepare_dataset
from devicebench.serving.clients import run_pool
from devicebench.serving.process import ServerProcess
from devicebench.serving.scoring import batch_buckets, make_scorer

SERVER = {"framework": "torch", "model": "mobilenetv2", "image_size": 32, "threads": 2}


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jpeg")
    manifest = prepare_dataset("jpeg_images", "synthetic", folder, train_samples=4, test_samples=32)
    return list(load_dataset(manifest).x_test)


def answering_pids(url: str, tries: int = 60) -> set[int]:
    """The replicas that answer /health over fresh connections (each may go to any replica)."""
    pids = set()
    for _ in range(tries):
        with httpx.Client() as client:  # a new connection each time
            pids.add(client.get(f"{url}/health", timeout=10).json()["pid"])
        if len(pids) > 1:
            break
    return pids


def test_replicas_share_the_port_count_into_one_table_and_a_killed_one_comes_back(tmp_path, images):
    log = tmp_path / "server.log"
    options = dict(max_batch=4, batch_buckets="2,4", replicas=2, log_path=log)
    with ServerProcess(**SERVER, **options) as server:
        assert server.health["replicas"] == 2 and server.health["batch_buckets"] == [2, 4]
        pids = answering_pids(server.url)
        assert len(pids) == 2, f"only {pids} answered"
        pool = run_pool(f"{server.url}/predict", images, clients=4, requests=48)
        assert pool["ok"] == 48 and pool["errors"] == 0
        stats = server.stats()
        replicas = stats["replicas"]
        assert {r["pid"] for r in replicas.values()} == pids
        assert stats["counts"]["ok"] == sum(r["counts"].get("ok", 0) for r in replicas.values())
        formed = sum(int(size) * n for size, n in stats["batch_sizes"].items())
        assert formed == 48 and stats["counts"]["ok"] == 48
        assert stats["peak_rss_mb"] == pytest.approx(
            sum(r["peak_rss_mb"] for r in replicas.values())
        )

        victim = replicas["0"]["pid"]
        os.kill(victim, signal.SIGKILL)
        during = run_pool(f"{server.url}/predict", images, clients=4, requests=48, timeout_s=30)
        assert during["ok"] + during["errors"] == 48  # counted, not hung
        deadline = time.monotonic() + 120
        while (again := server.stats()["replicas"]["0"])["starts"] < 2:
            assert time.monotonic() < deadline, "the killed replica was not started again"
            time.sleep(0.5)
        assert again["pid"] != victim
        assert "replica 0 exited -9; starting it again" in log.read_text()
        after = run_pool(f"{server.url}/predict", images, clients=4, requests=16)
        assert after["ok"] == 16
    left = gone_within(log, 30)
    assert not left, f"replicas outlived the server: {[p.cmdline() for p in left]}"


def test_a_killed_supervisor_takes_its_replicas_along(tmp_path):
    log = tmp_path / "server.log"
    parent, supervisor = server_in_a_parent(tmp_path, "ServerProcess", SERVER | {"replicas": 2})
    assert len(tree_of(log)) >= 3  # the supervisor and its two replicas
    os.kill(supervisor, signal.SIGKILL)  # the supervisor, not the cell
    left = gone_within(log, 30)
    parent.kill()
    parent.wait()
    assert not left, f"replicas outlived their supervisor: {[p.cmdline() for p in left]}"


def test_uvicorn_cells_of_1_and_2_replicas_and_their_scaling_efficiency(tmp_path):
    records, _ = replica_cells(tmp_path, "uvicorn")
    assert records[1]["serving"]["replica_peaks_mb"] is None  # one process: no replicas
    assert all(r["serving"]["batch_buckets"] == [] for r in records.values())  # CPU: none


def test_padded_batches_score_as_the_samples_alone(images):
    scorer = make_scorer(
        "serve_image", "torch", "mobilenetv2", "cpu", "fp32", max_batch=4, image_size=32,
        buckets="2,4",
    )  # fmt: skip
    shapes = []
    predict = scorer.predict
    scorer.predict = lambda batch: shapes.append(len(batch)) or predict(batch)
    samples = [scorer.decode(body) for body in images[:3]]
    classes, scores = scorer.score(samples)
    assert shapes == [4] and len(classes) == len(scores) == 3  # padded to 4, cut back to 3
    for sample, label, score in zip(samples, classes, scores, strict=True):
        [alone_label], [alone_score] = scorer.predict(np.stack([sample]))
        assert label == alone_label and score == pytest.approx(alone_score, rel=1e-4)
    shapes.clear()
    scorer.warm_up(max_batch=4)
    assert shapes == [2, 4]  # every bucket is scored once before serving


@pytest.mark.parametrize(
    ("spec", "device", "expected"),
    [
        ("auto", "cuda", (1, 2, 4, 8, 16, 32)),
        ("auto", "cuda:1", (1, 2, 4, 8, 16, 32)),
        ("auto", "cpu", ()),
        ("none", "cuda", ()),
        ("4,16", "cpu", (4, 16, 32)),
        ("32", "cuda", (32,)),
    ],
)
def test_batch_buckets_of_a_spec(spec, device, expected):
    assert batch_buckets(spec, device, 32) == expected


@pytest.mark.parametrize(
    ("spec", "words"), [("4,x", "sizes like"), ("0,8", "1..32"), ("64", "1..32")]
)
def test_a_bad_batch_bucket_spec_is_an_error_naming_it(spec, words):
    with pytest.raises(ValueError, match=words):
        batch_buckets(spec, "cuda", 32)


def test_replicas_that_cannot_start_end_the_server_with_their_reason(tmp_path):
    from devicebench.serving.process import ServerFailed

    log = tmp_path / "server.log"
    options = SERVER | {"model": "nasnetlarge", "replicas": 2, "log_path": log}
    with pytest.raises(ServerFailed, match="transformers has no nasnetlarge"):
        ServerProcess(**options).start()
    assert "replicas exited before serving" in log.read_text()
    assert not gone_within(log, 30)

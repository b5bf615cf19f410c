"""serve_text for real: a tiny BERT behind the scoring server scoring IMDb review text, bad text
answered 4xx while it keeps serving, the pool and LoadGen sending text, a serve_text cell into
the serving table, and no server process outliving its test."""

from __future__ import annotations

import json
import time

import httpx
import pandas as pd
import psutil
import pytest
from conftest import REPO
from serving_helpers import servers_under, tree_of

from devicebench.data import prepare_dataset
from devicebench.serving import loadgen
from devicebench.serving.clients import run_pool
from devicebench.serving.process import ServerProcess
from devicebench.workloads import serve_text, text_classify
from devicebench.workloads.serve_text import BadText, decode_text, pad_longest

TEXT = {"content-type": "text/plain; charset=utf-8"}
SEQ_LEN = 32
SERVER = {"task": "serve_text", "framework": "torch", "model": "bert-tiny", "threads": 1}
SERVER |= {"seq_len": SEQ_LEN}


@pytest.fixture(scope="module")
def imdb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("imdb")
    manifest = prepare_dataset("imdb", "synthetic", folder, train_samples=64, test_samples=48)
    text_classify.prepare_data(manifest.parent)  # as scripts/prepare_data.py does
    return manifest


@pytest.fixture(scope="module")
def reviews(imdb):
    return serve_text.load_data({"data": str(imdb)})


@pytest.fixture(scope="module")
def server(reviews):
    with ServerProcess(
        **SERVER, tokenizer=reviews.tokenizer, max_batch=4, max_body_bytes=20_000
    ) as running:
        yield running
    assert running.process.returncode is not None
    assert not tree_of(running.log_path), "the server's processes outlived it"


def score(server, body: bytes, headers=TEXT) -> httpx.Response:
    return httpx.post(f"{server.url}/predict", content=body, headers=headers, timeout=30)


def test_the_test_split_reviews_are_the_request_bodies(reviews):
    assert len(reviews.x_test) == 48 and len(reviews.y_test) == 48
    assert all(isinstance(b, bytes) and b.decode("utf-8").strip() for b in reviews.x_test)
    assert reviews.tokenizer == text_classify.tokenizer_path(reviews.tokenizer.parent)


def test_a_review_is_tokenized_cut_to_seq_len_and_a_batch_padded_to_its_longest(reviews):
    path = str(reviews.tokenizer)
    long = decode_text(b" ".join([reviews.x_test[0]] * 20), path, SEQ_LEN)
    short = decode_text(b"a fine film", path, SEQ_LEN)
    assert len(long) == SEQ_LEN and long[0] == 2 and long[-1] == 3  # [CLS] ... [SEP]
    assert 3 < len(short) < SEQ_LEN and short[0] == 2 and short[-1] == 3
    batch = pad_longest([short, long[:10]])
    assert batch["input_ids"].shape == (2, 10)
    assert batch["attention_mask"].sum(axis=1).tolist() == [len(short), 10]
    assert (batch["input_ids"][0, len(short) :] == 0).all()
    with pytest.raises(BadText, match="UTF-8"):
        decode_text(b"\xff\xfe bad", path, SEQ_LEN)


def test_a_review_is_scored_with_top_class_and_score(server, reviews):
    assert server.health["task"] == "serve_text" and server.health["seq_len"] == SEQ_LEN
    answer = score(server, reviews.x_test[0])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["class"] in (0, 1) and 0.5 <= body["score"] <= 1.0
    plain = score(server, reviews.x_test[1], {"content-type": "text/plain"})  # no charset: UTF-8
    assert plain.status_code == 200, plain.text


@pytest.mark.parametrize(
    ("case", "status", "words"),
    [
        ("empty body", 400, "empty body"),
        ("only white space", 400, "no text"),
        ("wrong content type", 415, "content type"),
        ("not utf-8 charset", 415, "charset"),
        ("over the size limit", 413, "limit"),
        ("invalid utf-8", 400, "not valid UTF-8"),
    ],
)
def test_bad_text_gets_a_4xx_with_a_message_and_the_server_serves_on(
    server, reviews, case, status, words
):
    body, headers = {
        "empty body": (b"", TEXT),
        "only white space": (b" \n\t ", TEXT),
        "wrong content type": (reviews.x_test[0], {"content-type": "image/jpeg"}),
        "not utf-8 charset": (reviews.x_test[0], {"content-type": "text/plain; charset=latin-1"}),
        "over the size limit": (b"word " * 5_000, TEXT),
        "invalid utf-8": (b"a fine film \xc3\x28 indeed", TEXT),
    }[case]
    answer = score(server, body, headers)
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"]
    follow = score(server, reviews.x_test[2])
    assert follow.status_code == 200 and follow.json()["class"] in (0, 1)


def test_the_pool_sends_reviews_and_batches_form(server, reviews):
    url = f"{server.url}/predict"
    result = run_pool(url, reviews.x_test, clients=8, requests=40, window_s=0.05,
                      content_type=TEXT["content-type"])  # fmt: skip
    assert result["ok"] == 40 and result["errors"] == 0 and result["samples_per_s"] > 0
    latency = result["latency_ms"]
    assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    sizes = {int(k): v for k, v in server.stats()["batch_sizes"].items()}
    assert max(sizes) <= 4 and sum(k * v for k, v in sizes.items()) >= 40


def test_loadgen_offline_sends_reviews_and_keeps_its_logs(server, reviews, tmp_path):
    result = loadgen.run_scenario(
        f"{server.url}/predict",
        reviews.x_test,
        "Offline",
        tmp_path,
        min_duration_s=0.2,
        min_queries=48,
        target_qps=50,
        content_type=TEXT["content-type"],
    )
    assert result["validity"] in ("VALID", "INVALID") and result["http_errors"] == 0
    assert result["result"] > 0 and result["latency_ms"]["p90"] > 0
    assert (tmp_path / "mlperf_log_summary.txt").exists()


def _cell(model: str, framework: str = "torch", timeout_s: float = 300):
    from devicebench.plan.grid import make_cell

    values = dict(task="serve_text", model=model, framework=framework, device="cpu", threads=1)
    values |= dict(precision="fp32", batch_size=4, mode="serve")
    serve = {"requests": 40, "warmup_requests": 4, "stability_window_s": 0.05}
    serve |= {"loadgen_scenarios": ["Offline"], "loadgen_min_duration_s": 0.2}
    serve |= {"loadgen_min_queries": 48}
    settings = {"dataset": "imdb", "epochs": 1, "steps_per_epoch": None, "learning_rate": 1.0}
    settings |= {"repetitions": 1, "warmup_steps": 1, "seed": 1, "timeout_s": timeout_s}
    settings |= {"noise_cov": 0.1, "min_repetition_s": 0.0, "serve": json.dumps(serve)}
    extra = {"clients": 4, "server": "uvicorn", "replicas": 1, "seq_len": SEQ_LEN}
    return make_cell(values, extra, settings)


def test_a_serve_text_cell_ends_ok_and_goes_into_the_serving_table(imdb, tmp_path):
    from devicebench.aggregate.analysis import load_prices
    from devicebench.aggregate.serving import serving_table
    from devicebench.run.runner import run_cell

    out = tmp_path / "cell.json"
    record = run_cell(_cell("bert-tiny"), data=imdb, out=out, extra={"log_dir": str(tmp_path)})
    assert record["status"] == "ok", record["message"]
    serving = record["serving"]
    assert serving["seq_len"] == SEQ_LEN and serving["padding"] == "longest in batch"
    assert serving["pool"]["ok"] == 40 and serving["loadgen"]["Offline"]["result"] > 0
    assert (tmp_path / "loadgen/Offline/mlperf_log_detail.txt").exists()
    skipped = run_cell(_cell("bert-tiny", "keras-torch"), data=imdb, out=tmp_path / "k.json")
    assert skipped["status"] == "skipped" and "no Keras port" in skipped["message"]
    table = serving_table([out, tmp_path / "k.json"], load_prices(REPO / "config/prices.yaml"))
    row = table.set_index("framework").loc["torch"]
    assert row["task"] == "serve_text" and row["seq_len"] == SEQ_LEN and row["errors"] == 0
    assert row["requests"] == 40 and row["samples_per_s"] == row["requests_per_s"] > 0
    assert 0 < row["p50_ms"] <= row["p90_ms"] <= row["p99_ms"] <= row["max_ms"]
    assert 1 <= row["mean_batch"] <= row["largest_batch"] <= 4
    assert row["offline_samples_per_s"] > 0 and row["cost_per_1k_requests_usd"] > 0
    assert pd.isna(row["images_per_s"])  # texts, not images
    assert table.set_index("framework").loc["keras-torch", "status"] == "skipped"
    time.sleep(0.5)
    assert not servers_under(tmp_path)


def test_tokenizer_processes_score_and_reject_as_threads_do(reviews):
    with ServerProcess(**SERVER, tokenizer=reviews.tokenizer, decode_workers=1) as running:
        assert running.health["decode_workers"] == 1
        assert psutil.Process(running.pid).children(recursive=True)
        assert score(running, reviews.x_test[0]).status_code == 200
        bad = score(running, b"\xff\xfe\xfd")
        assert bad.status_code == 400 and "not valid UTF-8" in bad.json()["detail"]
        assert score(running, reviews.x_test[1]).status_code == 200


def test_ray_serve_scores_text_rejects_bad_text_and_leaves_nothing(reviews, tmp_path):
    from test_serving_ray import gone_within

    from devicebench.serving.ray_process import RayServeProcess

    log = tmp_path / "server.log"
    server = RayServeProcess(
        **SERVER, tokenizer=reviews.tokenizer, replicas=1, max_batch=4, log_path=log
    )
    with server:
        assert server.health["server"] == "ray-serve" and server.health["seq_len"] == SEQ_LEN
        good = score(server, reviews.x_test[0])
        assert good.status_code == 200 and good.json()["class"] in (0, 1), good.text
        bad = score(server, b"a fine film \xc3\x28 indeed")
        assert bad.status_code == 400 and "not valid UTF-8" in bad.json()["detail"]
        wrong = score(server, reviews.x_test[0], {"content-type": "image/jpeg"})
        assert wrong.status_code == 415
        result = run_pool(f"{server.url}/predict", reviews.x_test, clients=4, requests=16,
                          content_type=TEXT["content-type"])  # fmt: skip
        assert result["ok"] == 16 and result["errors"] == 0
        sizes = {int(k): v for k, v in server.stats()["batch_sizes"].items()}
        assert max(sizes) <= 4 and sum(k * v for k, v in sizes.items()) >= 17
    left = gone_within(log, 30)
    assert not left, f"Ray processes outlived their server: {[p.cmdline() for p in left]}"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"seq_lens": [128, 1024]}, "tasks.serve_text.seq_lens[1]: 1024"),
        ({"models": ["resnet50"]}, "unknown model 'resnet50' for task serve_text"),
        ({"compiles": ["eager"]}, "has no compile axis"),
        ({"weights": "pretrained"}, "task serve_text has no pretrained weights"),
    ],
)
def test_bad_serve_text_settings_fail_at_config_check(tiny_config, settings, message):
    from devicebench.plan.config import ConfigError, check_config

    config = tiny_config | {"tasks": {"serve_text": settings}}
    with pytest.raises(ConfigError) as error:
        check_config(config)
    assert message in str(error.value)

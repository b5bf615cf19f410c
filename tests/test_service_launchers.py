"""The launchers a scenario asks for start the real thing and always stop it: a scoring server
(uvicorn, MobileNetV2 at 32 px on one thread), the generate server (a tiny Llama of random
weights) and a local Spark session, each through run.launchers.for_cell by its need."""

from __future__ import annotations

import httpx
import psutil
import pytest
from hostile_inputs import valid_jpeg
from serving_helpers import tree_of

from devicebench.run import launchers
from devicebench.run.launchers.base import (
    GenerateServerLauncher,
    ScoringServerLauncher,
    SparkLauncher,
)
from devicebench.spark.session import java_missing

needs_java = pytest.mark.skipif(bool(java_missing()), reason=str(java_missing()))


def stopped(server) -> bool:
    """The server's process is reaped and nothing it started is left."""
    gone = not psutil.pid_exists(server.pid) or server.process.poll() is not None
    return gone and not tree_of(server.log_path)


def test_the_scoring_server_launcher_starts_a_server_that_scores_and_stops_it(tmp_path):
    from devicebench.serving.cell import serve_settings

    settings = {"task": "serve_image", "framework": "torch", "model": "mobilenetv2"}
    settings |= {"device": "cpu", "precision": "fp32", "threads_resolved": 1, "batch_size": 2}
    serve = serve_settings({"serve": {"image_size": 32}})
    launcher = launchers.for_cell(settings, ScoringServerLauncher)
    server = launcher.server(settings, serve, tmp_path)
    with server:
        assert server.health["parameters"] > 0 and server.log_path.parent == tmp_path
        answer = httpx.post(
            f"{server.url}/predict",
            content=valid_jpeg(32),
            headers={"content-type": "image/jpeg"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
    assert stopped(server)


def test_the_generate_server_launcher_streams_tokens_and_stops_it(tmp_path):
    from devicebench.generation.serving import GoodputSettings, server_arguments

    settings = {"model": "llama-tiny", "generator": "torch_eager", "device": "cpu"}
    settings |= {"precision": "fp32", "seed": 0, "threads_resolved": 1}
    settings |= {"prompt_len": 8, "output_len": 3}
    arguments = server_arguments(settings, GoodputSettings())
    launcher = launchers.for_cell(settings, GenerateServerLauncher)
    server = launcher.server(settings, arguments, tmp_path)
    with server:
        body = {"prompt": [1, 2, 3], "max_tokens": 3}
        with httpx.stream("POST", f"{server.url}/generate", json=body, timeout=60) as answer:
            assert answer.status_code == 200
            tokens = [line for line in answer.iter_lines() if '"token"' in line]
        assert len(tokens) == 3
    assert server.log_path == tmp_path / "server.log"
    assert stopped(server)


@needs_java
def test_the_spark_launcher_starts_a_local_session_and_stops_it():
    from pyspark import SparkContext

    settings = {"task": "mnist_mlp", "threads_resolved": 1, "batch_size": 4}
    launcher = launchers.for_cell(settings, SparkLauncher)
    assert launcher.master(settings) == "local[1,4]"
    with launcher.session(settings) as spark:
        assert spark.sparkContext.master == "local[1,4]"
        assert spark.range(10).count() == 10
        conf = spark.sparkContext.getConf()
        assert conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "4"
    assert SparkContext._active_spark_context is None  # stopped on leaving


@needs_java
def test_the_spark_session_is_stopped_when_the_scoring_fails():
    from pyspark import SparkContext

    settings = {"task": "mnist_mlp", "threads_resolved": 1, "batch_size": 4}
    launcher = launchers.for_cell(settings, SparkLauncher)
    with pytest.raises(ZeroDivisionError), launcher.session(settings):
        raise ZeroDivisionError
    assert SparkContext._active_spark_context is None

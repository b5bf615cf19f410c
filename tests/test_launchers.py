"""Launchers are chosen in one place: the runner asks run.launchers.for_cell for a cell's worker,
a scenario asks it for the server or Spark session it declares it needs, and nothing else picks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

from devicebench import scenarios
from devicebench.run import launchers
from devicebench.run.launchers.base import (
    GenerateServerLauncher,
    ScoringServerLauncher,
    SparkLauncher,
    WorkerLauncher,
)

CELL = {"framework": "torch", "mode": "train", "device": "cpu", "threads": 4}


def test_a_cell_without_ranks_gets_the_one_worker_process():
    launcher = launchers.for_cell(CELL)
    assert launcher.default and launcher.skip_reason(CELL) is None
    assert launcher.settings(CELL, 4) == {}
    command, env = launcher.command(Path("s.json"), Path("r.json"), CELL, {"A": "1"})
    assert command[1:] == ["-m", "devicebench.run.worker", "s.json", "r.json"]
    assert env == {"A": "1"}
    assert launchers.for_cell(CELL | {"gpus": 1}) is launcher


def test_a_data_parallel_cell_gets_torchrun_with_its_threads_shared():
    cell = CELL | {"gpus": 2}
    launcher = launchers.for_cell(cell)
    assert not launcher.default
    assert launcher.settings(cell, 4) == {"threads_per_rank": 2}
    command, env = launcher.command(Path("s.json"), Path("r.json"), cell, {})
    assert "torch.distributed.run" in command and "--nproc-per-node=2" in command
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert launcher.skip_reason(cell) is None  # two CPU ranks (gloo) run anywhere
    assert "train cells only" in launcher.skip_reason(cell | {"mode": "infer"})


NEEDS = (WorkerLauncher, ScoringServerLauncher, GenerateServerLauncher, SparkLauncher)


def test_every_launcher_is_found_and_each_need_has_at_most_one_default():
    found = launchers.found()
    assert {"inprocess", "torchrun", "server", "ray_serve", "generate_server", "spark"} <= set(
        found
    )
    for launcher in found.values():  # each starts exactly one need
        assert sum(isinstance(launcher, need) for need in NEEDS) == 1, launcher
    for need in NEEDS:
        assert sum(one.default for one in launchers.of_need(need).values()) <= 1, need
    assert launchers.for_cell(CELL).default  # a cell's worker always has a launcher


def test_the_server_axis_picks_the_scoring_server_and_an_unknown_one_is_named():
    cell = CELL | {"mode": "serve"}
    assert launchers.for_cell(cell, ScoringServerLauncher) is launchers.found()["server"]
    ray = launchers.for_cell(cell | {"server": "ray-serve"}, ScoringServerLauncher)
    assert ray is launchers.found()["ray_serve"]
    with pytest.raises(ValueError, match="unknown server 'nginx'; known: ray-serve, uvicorn"):
        launchers.for_cell(cell | {"server": "nginx"}, ScoringServerLauncher)


def test_every_scenario_asks_for_launchers_of_needs_that_have_one():
    """A scenario names what it needs (Scenario.launches), never a launcher; each need it names
    is started by a launcher on disk, and it may ask only for what it declared."""
    asked = {}
    for name in scenarios.names():
        scenario = scenarios.get(name)
        asked[name] = set(scenario.launches)
        for need in scenario.launches:
            assert need in NEEDS and launchers.of_need(need), (name, need)
    assert asked["serve"] == {ScoringServerLauncher}
    assert asked["spark_infer"] == {SparkLauncher}
    assert asked["generate"] == {GenerateServerLauncher}
    assert asked["train"] == asked["infer"] == asked["converge"] == set()
    with pytest.raises(ValueError, match="does not launch a SparkLauncher"):
        scenarios.get("serve").launcher(CELL, SparkLauncher)


def test_the_scoring_servers_get_the_cells_options_without_starting():
    from devicebench.serving.cell import serve_settings

    settings = {"task": "serve_image", "framework": "torch", "model": "mobilenetv2"}
    settings |= {"device": "cpu", "precision": "fp32", "threads_resolved": 16, "batch_size": 4}
    settings |= {"replicas": 2, "engine": "onnxruntime"}
    serve = serve_settings({"serve": {"decode_workers": "auto", "ray_address": "head:6379"}})
    uvicorn = launchers.for_cell(settings, ScoringServerLauncher).server(settings, serve, Path("l"))
    assert uvicorn.process is None and uvicorn.log_path == Path("l/server.log")
    command = uvicorn.command
    assert command[command.index("--engine") + 1] == "onnxruntime"
    assert command[command.index("--decode-workers") + 1] == "2"  # 16 threads / 2 replicas / 4
    assert command[command.index("--replicas") + 1] == "2"
    ray_cell = settings | {"server": "ray-serve"}
    ray = launchers.for_cell(ray_cell, ScoringServerLauncher).server(ray_cell, serve, Path("l"))
    assert ray.process is None and "devicebench.serving.ray_app" in ray.command
    assert ray.command[ray.command.index("--ray-address") + 1] == "head:6379"
    assert "--decode-workers" not in ray.command


def test_the_runner_decides_no_world_size_itself():
    source = (REPO / "src" / "devicebench" / "run" / "runner.py").read_text()
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    assert "launch" not in names  # devicebench.distributed.launch: the torchrun launcher's
    assert "launchers" in names

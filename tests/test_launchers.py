"""Launchers are chosen in one place: the runner asks run.launchers.for_cell and nothing else."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

from devicebench.run import launchers

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


def test_every_launcher_is_found_and_exactly_one_is_the_default():
    found = launchers.found()
    assert {"inprocess", "torchrun"} <= set(found)
    assert sum(one.default for one in found.values()) == 1


def test_the_runner_decides_no_world_size_itself():
    source = (REPO / "src" / "devicebench" / "run" / "runner.py").read_text()
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    assert "launch" not in names  # devicebench.distributed.launch: the torchrun launcher's
    assert "launchers" in names

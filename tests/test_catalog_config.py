"""The catalog's configs: the full study plans every cell, and the lstm_kernel axis."""

from __future__ import annotations

import warnings

import pytest
from conftest import REPO
from workflow import planned_jobs

from devicebench.frameworks import FRAMEWORKS
from devicebench.plan.config import ConfigError, check_config, load_config
from devicebench.plan.grid import expand_grid
from devicebench.workloads import NAMES


def _study_cells():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # thread counts above this host's cores
        return expand_grid(load_config(REPO / "config" / "study.yaml"))


@pytest.mark.workflow
def test_full_study_dry_run_lists_every_cell(tmp_path):
    (tmp_path / "config.yaml").write_text((REPO / "config" / "study.yaml").read_text())
    jobs = planned_jobs(tmp_path)
    assert jobs["cell"] == len(_study_cells())
    assert jobs["prepare_data"] == len({cell.run_settings()["dataset"] for cell in _study_cells()})


def test_full_study_covers_the_catalog():
    cells = [cell.values for cell in _study_cells()]
    assert {c["task"] for c in cells} == set(NAMES)
    assert {c["framework"] for c in cells} == set(FRAMEWORKS)
    assert {c["threads"] for c in cells if c["device"] == "cpu"} == {1, 2, 4, 8, 16, "all"}
    kernels = {c["lstm_kernel"] for c in cells if c["task"] == "imdb_bilstm"}
    assert kernels == {"cudnn", "generic"}
    assert all("lstm_kernel" not in c for c in cells if c["task"].startswith("mnist"))
    assert any(c["device"] == "cuda" and c["framework"] == "keras-torch" for c in cells)


def test_lstm_kernel_axis_is_in_the_cell_path(tiny_config):
    tiny_config["tasks"] = {"imdb_bilstm": {"lstm_kernels": ["cudnn", "generic"]}}
    cells = expand_grid(check_config(tiny_config))
    ids = {cell.cell_id for cell in cells}
    assert len(cells) == 2 * 2 * 2  # kernels x modes x devices (cpu, cuda auto)
    assert any("/lstm_kernel~generic/mode~train" in i for i in ids)


def test_lstm_kernels_on_a_task_without_lstm_is_refused(tiny_config):
    tiny_config["tasks"]["mnist_mlp"]["lstm_kernels"] = ["generic"]
    with pytest.raises(ConfigError, match="tasks.mnist_mlp.lstm_kernels.*imdb_bilstm"):
        check_config(tiny_config)

"""The `batch_wait` axis: a serve task sweeps its dynamic-batching windows (`batch_waits`, ms).
The window equal to serve.batch_wait_ms is the plain cell (its id unchanged), each other a cell
named `batch_wait~<ms>`; the cell's server batches in it, and the tables tell the windows apart."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from test_serving_verdict import _slo, serve_record

from devicebench.aggregate.serving import serving_table
from devicebench.aggregate.serving_slo import slo_runs_table, slo_table
from devicebench.plan.config import ConfigError, check_config, combine_configs
from devicebench.plan.config_files import read_yaml
from devicebench.plan.grid import expand_grid
from devicebench.report.findings import _serve_cell
from devicebench.serving.cell import serve_settings
from devicebench.workloads.base import BATCH_WAIT_MS


def _cells(serve_image: dict, extra: dict | None = None, **tasks: dict) -> list:
    config = {
        "devices": {"cpu": {"threads": [1]}, "cuda": False},
        "frameworks": ["torch"],
        "precisions": ["fp32"],
        "modes": ["serve", "infer"],
        "tasks": {"serve_image": {"models": ["mobilenetv2"], **serve_image}, **tasks},
        **(extra or {}),
    }
    study = check_config(combine_configs(read_yaml(REPO / "config" / "config.yaml"), [config]))
    return [c for c in expand_grid(study) if c.values["task"] == "serve_image"]


def test_the_default_window_is_the_plain_cell_and_the_others_are_named():
    plain = {c.cell_id for c in _cells({})}
    swept = _cells({"batch_waits": [BATCH_WAIT_MS, 0, 2.5]})
    assert len(swept) == 3 * len(plain)
    by_wait = {c.values.get("batch_wait"): c for c in swept}
    assert set(by_wait) == {None, 0, 2.5}
    assert {c.cell_id for c in swept if "batch_wait" not in c.values} == plain  # ids kept
    assert "/batch_wait~0/" in by_wait[0].cell_id and "/batch_wait~2.5/" in by_wait[2.5].cell_id
    windows = {w: serve_settings(c.run_settings())["batch_wait_ms"] for w, c in by_wait.items()}
    assert windows == {None: BATCH_WAIT_MS, 0: 0.0, 2.5: 2.5}


def test_the_plain_window_is_the_tasks_own_serve_setting():
    cells = _cells({"batch_waits": [0, 10], "serve": {"batch_wait_ms": 10}})
    assert sorted(str(c.values.get("batch_wait")) for c in cells) == ["0", "None"]
    plain = next(c for c in cells if "batch_wait" not in c.values)
    assert serve_settings(plain.run_settings())["batch_wait_ms"] == 10
    # a sweep without the task's window has no plain cell: every cell names its window
    named = _cells({"batch_waits": [0, 2]})
    assert sorted(c.values["batch_wait"] for c in named) == [0, 2]


@pytest.mark.parametrize(
    ("settings", "tasks", "says"),
    [
        ({"batch_waits": [0, 0.0]}, {}, "lists a window twice"),
        ({"batch_waits": [-1]}, {}, "batch_waits"),
        ({"batch_waits": []}, {}, "batch_waits"),
        ({}, {"mnist_mlp": {"batch_waits": [0]}}, "mnist_mlp serves no requests"),
    ],
)
def test_a_bad_sweep_is_a_config_error_before_any_cell(settings, tasks, says):
    with pytest.raises(ConfigError, match=says):
        _cells(settings, **tasks)


def _record(tmp_path, name: str, wait: float, *, named: bool, rps: float, slo=None):
    path = serve_record(tmp_path, name, device="cpu", pool_rps=rps, slo=slo)
    body = json.loads(path.read_text())
    if named:
        body["axes"]["batch_wait"] = wait
    body["serving"]["batch_wait_ms"] = wait
    path.write_text(json.dumps(body))
    return path


def test_the_tables_tell_the_windows_apart(tmp_path):
    paths = [
        _record(tmp_path, "plain", 5.0, named=False, rps=100.0),
        _record(tmp_path, "no_wait", 0.0, named=True, rps=80.0),
    ]
    table = serving_table(paths, {"cpu": {"per_vcpu_hour": 0.05}})
    assert table.set_index("cell_id")["batch_wait_ms"].to_dict() == {"plain": 5.0, "no_wait": 0.0}
    slo = slo_table(paths, {"cpu": {"per_vcpu_hour": 0.05}})
    assert sorted(slo["batch_wait_ms"]) == [0.0, 5.0]
    row = table.set_index("cell_id").loc["no_wait"]
    assert _serve_cell(row).endswith("1 replica(s), 0 ms batch window")
    assert "batch window" not in _serve_cell(table.set_index("cell_id").loc["plain"])


def test_a_searched_window_names_itself_in_the_run_series(tmp_path):
    path = _record(tmp_path, "no_wait", 0.0, named=True, rps=80.0, slo=_slo("ok", 50.0))
    runs = slo_runs_table([path])
    assert not runs.empty and runs["series"].str.endswith("wait 0 ms").all()


def test_selectors_name_the_plain_window_too():
    from devicebench.plan.blocks import assign_blocks

    cells = _cells({"batch_waits": [5, 0]})
    blocks = {
        "plain": {"cells": [{"task": "serve_image", "batch_wait": 5}]},
        "no-wait": {"cells": [{"task": "serve_image", "batch_wait": 0}]},
    }
    members = assign_blocks(blocks, cells)
    assert {c.values.get("batch_wait") for c in members["plain"]} == {None}
    assert {c.values.get("batch_wait") for c in members["no-wait"]} == {0}
    assert len(members["plain"]) == len(members["no-wait"]) == len(cells) // 2


def test_an_exclusion_of_the_plain_window_keeps_the_named_cells():
    cells = _cells({"batch_waits": [5, 0]}, extra={"exclude": [{"batch_wait": 5}]})
    assert cells and all(c.values["batch_wait"] == 0 for c in cells)

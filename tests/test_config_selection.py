"""A user's --configfile selects what it lists; the default config fills the settings it omits."""

from __future__ import annotations

import yaml
from conftest import REPO
from workflow import planned_cells, write_config

from devicebench.plan.config import check_config, combine_configs
from devicebench.plan.grid import expand_grid

DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
USER = {
    "tasks": {"mnist_mlp": {"epochs": 2}, "imdb_bilstm": {}},
    "frameworks": ["torch"],
    "devices": {"cpu": {"threads": [1]}},
}


def test_only_what_the_user_lists_runs_and_the_default_fills_the_rest():
    study = combine_configs(DEFAULT, [USER])
    assert list(study["tasks"]) == ["mnist_mlp", "imdb_bilstm"]
    assert study["devices"] == {"cpu": {"threads": [1]}}  # the default's `cuda: auto` is gone
    assert study["frameworks"] == ["torch"]
    # settings the user left out come from the default, per task too
    assert study["tasks"]["mnist_mlp"] == DEFAULT["tasks"]["mnist_mlp"] | {"epochs": 2}
    assert study["tasks"]["imdb_bilstm"] == DEFAULT["tasks"]["imdb_bilstm"]
    assert study["datasets"] == DEFAULT["datasets"]
    assert study["min_repetition_s"] == DEFAULT["min_repetition_s"]


def test_an_empty_mapping_clears_the_defaults():
    default = {"target_accuracy": {"mnist_mlp": 0.9}, "prices": {"cpu": 1.0}}
    study = combine_configs(default, [{"target_accuracy": {}, "prices": {"cuda": 2.0}}])
    assert study["target_accuracy"] == {}
    assert study["prices"] == {"cpu": 1.0, "cuda": 2.0}


def test_later_files_and_command_line_values_win():
    second = {"tasks": {"mnist_cnn": {"epochs": 3}}, "repetitions": 5}
    study = combine_configs(DEFAULT, [USER, second], {"seed": 9})
    assert list(study["tasks"]) == ["mnist_cnn"]
    assert study["tasks"]["mnist_cnn"]["steps_per_epoch"] == 2  # the default's, for mnist_cnn
    assert study["frameworks"] == ["torch"] and study["repetitions"] == 5 and study["seed"] == 9


def test_snakemake_plans_only_the_users_cells(tmp_path):
    write_config(tmp_path, USER)
    expected = {
        f"results/cells/{cell.cell_id}.json"
        for cell in expand_grid(check_config(combine_configs(DEFAULT, [USER])))
    }
    assert planned_cells(tmp_path) == expected
    tasks = {path.split("/")[2] for path in expected}
    assert tasks == {"task~mnist_mlp", "task~imdb_bilstm"}
    assert all("device~cpu/threads~1" in path and "framework~torch" in path for path in expected)
    assert any("task~imdb_bilstm" in p and "batch~32" in p for p in expected)  # default's size

"""Grid expansion: the full cross product, exclusions, and ids that encode every axis."""

from __future__ import annotations

import shlex

import pytest

from devicebench.plan.cellspec import CellSpec
from devicebench.plan.config import ConfigError, check_config
from devicebench.plan.grid import AXES, expand_grid


def test_cross_product_size_and_unique_ids(tiny_config):
    tiny_config["batch_sizes"] = [16, 32, 64]
    tiny_config["devices"]["cpu"]["threads"] = [1, 2]
    cells = expand_grid(check_config(tiny_config))
    # 2 tasks x 1 model x 1 framework x (2 cpu + 1 cuda) x 1 precision x 3 batches x 2 modes
    assert len(cells) == 2 * 3 * 3 * 2
    assert len({cell.cell_id for cell in cells}) == len(cells)


def test_id_encodes_every_axis(tiny_config):
    cell = expand_grid(check_config(tiny_config))[0]
    assert cell.cell_id == (
        "task~mnist_mlp/model~mlp/framework~torch/device~cpu/threads~1/"
        "precision~fp32/batch~32/mode~train"
    )
    assert [key for key, _ in cell.axes] == list(AXES)


def test_task_batch_sizes_override_the_global_list(tiny_config):
    tiny_config["tasks"]["mnist_cnn"]["batch_sizes"] = [8, 16]
    cells = expand_grid(check_config(tiny_config))
    cnn = {c.values["batch_size"] for c in cells if c.values["task"] == "mnist_cnn"}
    mlp = {c.values["batch_size"] for c in cells if c.values["task"] == "mnist_mlp"}
    assert cnn == {8, 16} and mlp == {32}


def test_exclusions_remove_matching_cells_only(tiny_config):
    tiny_config["exclude"] = [{"task": "mnist_cnn", "mode": "infer"}, {"device": "cuda"}]
    cells = expand_grid(check_config(tiny_config))
    assert {c.values["device"] for c in cells} == {"cpu"}
    assert not [c for c in cells if c.values["task"] == "mnist_cnn" and c.values["mode"] == "infer"]
    assert len(cells) == 3


def test_engine_inprocess_excludes_the_cells_without_an_engine(tiny_config):
    # an in-process cell has no engine axis in its id; `engine: inprocess` still names it
    tiny_config["modes"] = ["infer"]
    tiny_config["tasks"]["mnist_mlp"]["engines"] = ["inprocess", "onnxruntime"]
    tiny_config["exclude"] = [{"task": "mnist_mlp", "device": "cpu", "engine": "inprocess"}]
    cells = expand_grid(check_config(tiny_config))
    mlp_cpu = [c for c in cells if c.values["task"] == "mnist_mlp" and c.values["device"] == "cpu"]
    assert mlp_cpu and {c.values.get("engine") for c in mlp_cpu} == {"onnxruntime"}
    mlp_gpu = [c for c in cells if c.values["task"] == "mnist_mlp" and c.values["device"] == "cuda"]
    assert None in {c.values.get("engine") for c in mlp_gpu}  # the GPU keeps its torch cell


def test_an_exclusion_that_matches_nothing_is_an_error(tiny_config):
    tiny_config["exclude"] = [{"task": "mnist_mlp", "batch_size": 4096}]
    with pytest.raises(ConfigError, match=r"exclude\[0\].*matches no cell"):
        expand_grid(check_config(tiny_config))


def test_cuda_false_drops_gpu_cells(tiny_config):
    tiny_config["devices"]["cuda"] = False
    assert {c.values["device"] for c in expand_grid(check_config(tiny_config))} == {"cpu"}


def test_cli_args_carry_only_this_cells_values(tiny_config):
    tiny_config["tasks"]["mnist_cnn"]["epochs"] = 5
    cells = expand_grid(check_config(tiny_config))
    mlp = next(c for c in cells if c.values["task"] == "mnist_mlp")
    cnn = next(c for c in cells if c.values["task"] == "mnist_cnn")
    mlp_args, cnn_args = shlex.split(mlp.cli_args()), shlex.split(cnn.cli_args())
    assert mlp_args[0] == cnn_args[0] == "--spec-json"
    mlp_spec, cnn_spec = CellSpec.from_json(mlp_args[1]), CellSpec.from_json(cnn_args[1])
    assert mlp_spec == mlp and cnn_spec == cnn  # the spec itself, nothing of another cell
    assert mlp_spec.settings["epochs"] == 1 and cnn_spec.settings["epochs"] == 5
    assert mlp_spec.values["task"] == "mnist_mlp"
    assert mlp.config_hash() != cnn.config_hash()

"""Data-parallel cells for real: torchrun with two gloo ranks on the CPU, skips, the grid axis."""

from __future__ import annotations

import copy

import pytest
from conftest import TINY_CONFIG

from devicebench.data import prepare_dataset
from devicebench.distributed.launch import visible_gpus
from devicebench.plan.config import check_config
from devicebench.plan.grid import expand_grid, make_cell
from devicebench.run.runner import run_cell

# fastText has no dropout, so two ranks and one process draw no different random numbers:
# the same initial weights and the same shuffled order give the same global batches.
RUN = {
    "dataset": "imdb",
    "epochs": 1,
    "steps_per_epoch": 8,
    "learning_rate": 0.05,
    "repetitions": 3,
    "warmup_steps": 1,
    "seed": 7,
    "timeout_s": 300,
    "noise_cov": 0.1,
}


def cell(batch: int, gpus: int | None, *, device: str = "cpu", framework: str = "torch"):
    values = {
        "task": "imdb_fasttext",
        "model": "fasttext",
        "framework": framework,
        "device": device,
        "threads": 2,
        "precision": "fp32",
        "batch_size": batch,
        "mode": "train",
    }
    return make_cell(values, {} if gpus is None else {"gpus": gpus}, RUN)


@pytest.fixture(scope="module")
def imdb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("imdb")
    prepare_dataset("imdb", "synthetic", folder, seed=7, train_samples=256, test_samples=128)
    return folder / "manifest.json"


def test_two_gloo_ranks_equal_one_process_at_the_global_batch(imdb, tmp_path):
    two = run_cell(cell(16, 2), data=imdb, out=tmp_path / "ddp.json")
    one = run_cell(cell(32, None), data=imdb, out=tmp_path / "global.json")
    small = run_cell(cell(16, None), data=imdb, out=tmp_path / "per_device.json")
    for record in (two, one, small):
        assert record["status"] == "ok", record["message"]
    assert two["axes"]["gpus"] == 2 and "gpus~2" in two["cell_id"]
    assert two["distributed"]["backend"] == "gloo" and two["distributed"]["world_size"] == 2
    assert two["distributed"]["global_batch_size"] == 32
    assert two["throughput"]["per_device_batch_size"] == 16
    assert two["throughput"]["samples_per_pass"] == one["throughput"]["samples_per_pass"]
    # all ranks' samples over the synchronised window, never rank 0's rate times two
    rate = two["throughput"]["samples_per_pass"] / two["timings"]["median_s"]
    assert two["throughput"]["samples_per_s"] == pytest.approx(rate)
    assert len(two["throughput"]["samples_per_s_by_rank"]) == 2
    # same weights after training: the held-out loss agrees to float rounding, the predictions
    # exactly; the per-device batch alone (one process, batch 16) trains to something else
    assert two["quality"]["loss"] == pytest.approx(one["quality"]["loss"], rel=1e-5)
    assert two["quality"]["accuracy"] == one["quality"]["accuracy"]
    assert two["quality"]["f1_macro"] == one["quality"]["f1_macro"]
    gap = abs(two["quality"]["loss"] - one["quality"]["loss"])
    assert abs(small["quality"]["loss"] - one["quality"]["loss"]) > 100 * max(gap, 1e-7)
    assert two["quality"]["loss"] < 0.68  # it learned (chance is ln 2 = 0.693)


def test_a_cell_asking_for_more_gpus_than_the_host_has_is_skipped(imdb, tmp_path):
    wanted = max(2, visible_gpus() + 1)  # a data-parallel cell, one GPU too many
    record = run_cell(cell(16, wanted, device="cuda"), data=imdb, out=tmp_path / "r.json")
    assert record["status"] == "skipped"
    assert f"asks for {wanted} GPUs" in record["message"]
    assert (tmp_path / "r.json").exists()


def test_a_keras_cell_on_two_gpus_is_skipped_with_the_reason(imdb, tmp_path):
    record = run_cell(cell(16, 2, framework="keras-torch"), data=imdb, out=tmp_path / "k.json")
    assert record["status"] == "skipped"
    assert "torch DDP only" in record["message"]


def test_the_gpus_axis_reaches_train_cells_only_and_only_when_set():
    config = copy.deepcopy(TINY_CONFIG)
    before = {c.cell_id: c.config_hash() for c in expand_grid(check_config(config))}
    config["gpus"] = [1, 2]
    after = [c.cell_id for c in expand_grid(check_config(config))]
    train = [c for c in after if c.endswith("mode~train")]
    assert train and all("/gpus~" in c for c in train)
    assert {c.rsplit("/gpus~", 1)[1] for c in train} == {"1/mode~train", "2/mode~train"}
    assert not [c for c in after if c.endswith("mode~infer") and "gpus~" in c]
    assert all("gpus~" not in c for c in before)  # configs without it keep their paths


def test_a_bad_gpus_value_is_refused_naming_the_key():
    config = copy.deepcopy(TINY_CONFIG) | {"gpus": [0]}
    with pytest.raises(ValueError, match="gpus"):
        check_config(config)

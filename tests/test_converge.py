"""Converge cells: train to a target on held-out data; time, cost and energy to the target."""

from __future__ import annotations

import json

import pytest

from devicebench.aggregate.analysis import add_analysis
from devicebench.aggregate.collect import collect_records
from devicebench.data import prepare_dataset
from devicebench.plan.config import ConfigError, check_config
from devicebench.plan.grid import expand_grid

PRICES = {"cpu": {"per_vcpu_hour": 0.05}}


def _cell(tmp_path, converge: dict, name: str) -> dict:
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    manifest = prepare_dataset(
        "mnist", "synthetic", tmp_path / "d", train_samples=512, test_samples=256, seed=3
    )
    values = dict(task="mnist_mlp", model="mlp", framework="torch", device="cpu", threads=1)
    values |= dict(precision="fp32", batch_size=64, mode="converge")
    settings = {"dataset": "mnist", "epochs": 1, "learning_rate": 0.001, "repetitions": 1,
                "warmup_steps": 1, "seed": 1, "timeout_s": 300, "noise_cov": 0.1,
                "min_repetition_s": 0.0, "converge": json.dumps(converge)}  # fmt: skip
    out = tmp_path / f"{name}.json"
    return run_cell(make_cell(values, {}, settings), data=manifest, out=out) | {"_path": out}


def test_converge_cell_reaches_its_target_and_records_time_cost_energy(tmp_path):
    record = _cell(tmp_path, {"target": 0.5, "max_time_s": 120, "max_epochs": 30}, "reach")
    assert record["status"] == "ok", record.get("message")
    converge = record["converge"]
    assert converge["converged"] is True and converge["not_reached"] is None
    history = converge["history"]
    assert history[-1]["accuracy"] >= 0.5 > max([0.0] + [h["accuracy"] for h in history[:-1]])
    assert converge["epochs"] == len(history) >= 1
    assert converge["time_to_target_s"] == history[-1]["elapsed_s"] > 0
    assert converge["samples_to_target"] == converge["epochs"] * 8 * 64
    assert record["quality"]["accuracy"] == history[-1]["accuracy"]
    energy = record["energy"]  # this machine has no RAPL and no GPU: null, with the reason
    assert energy["samples"] == converge["samples_to_target"]
    if energy["joules_per_sample"] is None:
        assert "powercap" in energy["cpu_reason"] and energy["reason"]
        assert converge["energy_to_target_j"] is None
    else:
        assert converge["energy_to_target_j"] == energy["total_j"] > 0
    row = add_analysis(collect_records([record["_path"]]), PRICES, "cpu").iloc[0]
    assert bool(row["converged"]) and row["time_to_target_s"] == converge["time_to_target_s"]
    assert row["cost_to_target_usd"] == pytest.approx(0.05 * converge["time_to_target_s"] / 3600)


def test_converge_cell_that_cannot_reach_its_target_stops_at_its_limit(tmp_path):
    record = _cell(tmp_path, {"target": 0.999, "max_epochs": 2, "max_time_s": 120}, "limit")
    assert record["status"] == "ok", record.get("message")
    converge = record["converge"]
    assert converge["converged"] is False and converge["epochs"] == 2
    assert converge["time_to_target_s"] is None and "2 epoch(s)" in converge["not_reached"]
    row = add_analysis(collect_records([record["_path"]]), PRICES, "cpu").iloc[0]
    assert not bool(row["converged"]) and row.isna()["cost_to_target_usd"]


def test_a_target_no_model_can_reach_is_a_config_error():
    with pytest.raises(ConfigError, match="no model can reach it"):
        check_config(_study(converge={"target": 1.01}))


def _study(**task) -> dict:
    study = {"tasks": {"mnist_mlp": task}, "frameworks": ["torch"], "precisions": ["fp32"]}
    cpu = {"cpu": {"threads": [1]}}
    return study | {"devices": cpu, "modes": ["train", "converge"], "batch_sizes": [64]}


def test_converge_cells_only_where_a_target_is_given_and_other_cells_unchanged():
    plain = {c.cell_id: c for c in expand_grid(check_config(_study()))}
    assert [c.values["mode"] for c in plain.values()] == ["train"]
    goal = {"target": 0.85, "dataset": "fashion_mnist"}
    cells = {c.cell_id: c for c in expand_grid(check_config(_study(converge=goal)))}
    train = next(c for c in cells.values() if c.values["mode"] == "train")
    assert train.config_hash() == next(iter(plain.values())).config_hash()
    converge = next(c for c in cells.values() if c.values["mode"] == "converge")
    assert converge.run_settings()["dataset"] == "fashion_mnist"
    assert json.loads(converge.run_settings()["converge"]) == goal


@pytest.mark.parametrize(
    ("goal", "key"),
    [
        ({"metric": "accuracy"}, "tasks.mnist_mlp.converge"),
        ({"target": 0.9, "dataset": "cifar10"}, "tasks.mnist_mlp.converge.dataset"),
    ],
)
def test_bad_converge_section_names_its_key(goal, key):
    with pytest.raises(ConfigError, match=f"config key {key}"):
        check_config(_study(converge=goal))


def test_converge_runs_each_train_a_fresh_model_and_the_record_keeps_every_time(tmp_path):
    goal = {"target": 0.5, "max_time_s": 120, "max_epochs": 30, "runs": 2}
    record = _cell(tmp_path, goal, "runs")
    assert record["status"] == "ok", record.get("message")
    converge = record["converge"]
    times = converge["times_to_target_s"]
    assert converge["runs"] == converge["runs_reached"] == len(times) == 2
    assert converge["converged"] is True and all(t > 0 for t in times)
    assert converge["time_to_target_s"] == pytest.approx(sum(times) / 2)  # median of two
    assert [h[-1]["elapsed_s"] for h in converge["run_histories"]] == times
    row = collect_records([record["_path"]]).iloc[0]
    assert row["converge_runs"] == 2
    assert (row["time_to_target_min_s"], row["time_to_target_max_s"]) == (min(times), max(times))
    missed = _cell(tmp_path, goal | {"target": 0.999, "max_epochs": 1}, "missed")["converge"]
    assert missed["converged"] is False and missed["times_to_target_s"] == [None, None]
    assert "run 1 stopped" in missed["not_reached"] and "run 2 stopped" in missed["not_reached"]

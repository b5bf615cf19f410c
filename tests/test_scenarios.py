"""A new scenario is one module: one kept in tests/ runs a real tiny cell through runner and
worker; every scenario is found by the registry; a cell no scenario measures writes no record."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from devicebench import scenarios
from devicebench.data import prepare_dataset
from devicebench.plan.cellspec import SpecError
from devicebench.scenarios.base import Scenario

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def tests_scenarios(monkeypatch):
    """The registry with the tests' folder of scenarios (and its helpers importable)."""
    monkeypatch.setenv(scenarios.PATH_VARIABLE, str(TESTS))
    paths = [str(TESTS), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
    scenarios._found.cache_clear()
    scenarios.get.cache_clear()
    yield
    scenarios._found.cache_clear()
    scenarios.get.cache_clear()


def test_every_scenario_on_disk_is_found_and_named_as_its_module():
    package = Path(scenarios.__file__).parent
    on_disk = {p.stem for p in package.glob("*.py")} - {"__init__", "base"}
    assert set(scenarios.names()) == on_disk
    for name in scenarios.names():
        scenario = scenarios.get(name)
        assert isinstance(scenario, Scenario) and scenario.NAME == name


def test_each_mode_and_engine_has_one_scenario():
    assert scenarios.for_cell({"mode": "infer"}).NAME == "infer"
    assert scenarios.for_cell({"mode": "infer", "engine": "spark-streaming"}).NAME == "spark_infer"
    assert scenarios.for_cell({"mode": "infer", "engine": "openvino"}).NAME == "infer"
    with pytest.raises(ValueError, match="no scenario measures mode 'tinygen'"):
        scenarios.for_cell({"mode": "tinygen"})


def test_a_scenario_kept_outside_the_package_runs_a_real_cell(tests_scenarios, tmp_path):
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    assert "tinygen" in scenarios.names()
    folder = tmp_path / "nietzsche"
    prepare_dataset("nietzsche", "synthetic", folder, train_samples=64, test_samples=16, seed=3)
    values = {
        "task": "textgen_lstm",
        "model": "lstm",
        "framework": "torch",
        "device": "cpu",
        "threads": 1,
        "precision": "fp32",
        "batch_size": 2,
        "mode": "tinygen",
    }
    run = {"dataset": "nietzsche", "epochs": 1, "learning_rate": 0.01, "repetitions": 2}
    run |= {"warmup_steps": 1, "seed": 5, "timeout_s": 300, "noise_cov": 0.1}
    with pytest.raises(SpecError, match="run.new_tokens: must be at least 1"):
        make_cell(values, {"lstm_kernel": "generic"}, run | {"new_tokens": 0})
    spec = make_cell(values, {"lstm_kernel": "generic"}, run | {"new_tokens": 6})
    out = tmp_path / "cell.json"
    record = run_cell(spec, data=folder / "manifest.json", out=out)
    assert record["status"] == "ok", record.get("traceback", record["message"])
    assert out.exists() and record["cell_id"] == spec.cell_id
    generated = record["generation"]
    assert generated["new_tokens"] == 6 and [len(t) for t in generated["tokens"]] == [6, 6]
    first, gaps = record["timings"]["time_to_first_token_ms"], record["timings"]["inter_token_ms"]
    assert set(first) == set(gaps) == {"p50", "p90", "p99"}
    assert record["timings"]["timed_start"] <= record["timings"]["timed_end"]
    assert record["model"]["parameters"] > 0 and record["model"]["fit_loop"] == "tiny-gru"
    assert "marks" in record["timings"]  # the worker's fixed-cost marks, as for every scenario


def test_a_cell_no_scenario_measures_is_refused_before_any_work(tmp_path):
    out = tmp_path / "cell.json"
    command = [sys.executable, str(REPO / "scripts" / "run_cell.py"), "task=mnist_mlp"]
    done = subprocess.run(
        [*command, "mode=tinygen", "--out", str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "cell spec key axes.mode: no scenario measures 'tinygen'" in done.stderr
    assert not out.exists()


def test_what_a_modes_records_mean_is_said_by_its_scenarios():
    """The aggregate and the report ask scenarios.modes(...) what a mode's records mean; these
    are the sets they named by hand before (and the tables did not change)."""
    assert scenarios.modes(trains=True) == ("converge", "train")
    assert scenarios.modes(trains=True, to_target=False) == ("train",)
    assert scenarios.modes(to_target=True) == ("converge",)
    assert scenarios.modes(fixed_passes=True) == ("infer", "train")
    assert scenarios.modes(scores=True) == ("infer", "serve")
    assert scenarios.modes(scores=True, serves=False) == ("infer",)
    assert scenarios.modes(serves=True) == ("serve",)
    assert scenarios.modes(generates=True) == ("generate",)
    with pytest.raises(ValueError, match=r"unknown scenario trait\(s\) \['trainz'\]"):
        scenarios.modes(trainz=True)


def test_scenarios_of_one_mode_that_disagree_on_a_trait_are_refused(monkeypatch):
    spark = scenarios.get("spark_infer")
    monkeypatch.setattr(type(spark), "scores", False)
    with pytest.raises(ValueError, match=r"mode\(s\) \['infer'\] disagree"):
        scenarios.modes(scores=True)

"""CellSpec: the one description of a cell; JSON round trips, and bad specs name their key."""

from __future__ import annotations

import json

import pytest

from devicebench.plan.cellspec import CellSpec, SpecError
from devicebench.plan.grid import make_cell

VALUES = {
    "task": "mnist_mlp",
    "model": "mlp",
    "framework": "torch",
    "device": "cpu",
    "threads": 1,
    "precision": "fp32",
    "batch_size": 32,
    "mode": "infer",
}
RUN = {"dataset": "mnist", "epochs": 1, "steps_per_epoch": None, "learning_rate": 0.001}


def test_a_spec_survives_json_with_its_engine_options() -> None:
    spec = make_cell(VALUES, {"engine": "openvino"}, RUN, {"hint": "THROUGHPUT"})
    assert type(spec.engine_options).__name__ == "OpenVINOOptions"
    assert spec.engine_options.hint == "THROUGHPUT" and spec.engine_options.requests is None
    again = CellSpec.from_json(spec.to_json())
    assert again == spec
    assert again.cell_id == spec.cell_id and again.config_hash() == spec.config_hash()
    owned = type(spec.engine_options).of(again.run_settings())  # as the engine reads it
    assert owned == spec.engine_options and owned.hint == "THROUGHPUT"
    assert not [key for key in again.run_settings() if key.startswith("engine_h")]  # no flat keys
    assert json.loads(spec.to_json())["engine_options"] == {"openvino": {"hint": "THROUGHPUT"}}


def test_a_setting_left_out_stays_out() -> None:
    spec = make_cell(VALUES, {}, RUN)
    assert "memory_limit_mb" not in spec.run_settings()
    assert spec.run_settings()["steps_per_epoch"] is None  # given as None: kept as None


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"run": {"epochs": 0}}, "run.epochs: must be at least 1"),
        ({"run": {"epochs": "two"}}, "run.epochs: 'two' is not int"),
        ({"run": {"engine_hint": "LATENCY"}}, "run.engine_hint: no such run setting"),
        ({"axes": {"engine": "bogus"}}, "axes.engine: unknown engine 'bogus'"),
        ({"axes": {"mode": "bogus"}}, "axes.mode: no scenario measures 'bogus'"),
        ({"axes": {"batch_size": "8"}}, "axes.batch_size: '8' is not int"),
        ({"engine_options": {"openvino": {}}}, "engine_options: engine inprocess owns no"),
        ({"extra": 1}, "cell spec key extra: no such key"),
        ({"run": {"timeout_s": float("nan")}}, "run.timeout_s: must be a finite number"),
        ({"run": {"learning_rate": float("inf")}}, "run.learning_rate: must be a finite"),
        ({"run": {"noise_cov": float("-inf")}}, "run.noise_cov: must be a finite number"),
    ],
)
def test_a_bad_spec_names_its_key(change: dict, named: str) -> None:
    data = json.loads(make_cell(VALUES, {}, RUN).to_json())
    axes = dict(data["axes"]) | change.pop("axes", {})
    data["axes"] = [[k, v] for k, v in axes.items()]
    data["run"] |= change.pop("run", {})
    data |= change
    with pytest.raises(SpecError, match=named):
        CellSpec.from_json(json.dumps(data))


def test_an_option_the_engine_does_not_own_is_named() -> None:
    with pytest.raises(SpecError, match="engine openvino has no option 'turbo'"):
        make_cell(VALUES, {"engine": "openvino"}, RUN, {"turbo": 1})
    with pytest.raises(SpecError, match="requests: a whole number"):
        make_cell(VALUES, {"engine": "openvino"}, RUN, {"requests": 0})
    with pytest.raises(SpecError, match="stream_interval_s: must be a finite number"):
        make_cell(VALUES, {"engine": "spark"}, RUN, {"stream_interval_s": float("nan")})


def test_missing_axes_and_non_json_are_named() -> None:
    with pytest.raises(SpecError, match="axes: missing model"):
        CellSpec.from_json(json.dumps({"axes": [["task", "mnist_mlp"]]}))
    with pytest.raises(SpecError, match="not JSON"):
        CellSpec.from_json("{axes")

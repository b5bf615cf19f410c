"""Speed-only cells (task key `quality: false`): no untimed training, scoring or fp32 reference;
the record's quality says n/a and why, and the aggregate reads it so."""

from __future__ import annotations

import pandas as pd
import pytest

from devicebench.aggregate.quality_gate import mark_quality
from devicebench.data import prepare_dataset
from devicebench.plan.config import check_config
from devicebench.plan.grid import expand_grid, make_cell
from devicebench.run.runner import run_cell
from devicebench.run.window import SPEED_ONLY

VALUES = {
    "task": "mnist_mlp",
    "model": "mlp",
    "framework": "torch",
    "device": "cpu",
    "threads": 1,
    "precision": "bf16",  # a reduced format: its cell would also run the fp32 reference
    "batch_size": 16,
    "mode": "infer",
}
RUN = {
    "dataset": "mnist",
    "epochs": 1,
    "steps_per_epoch": 2,
    "repetitions": 2,
    "learning_rate": 0.01,
    "warmup_steps": 1,
    "seed": 7,
    "timeout_s": 300,
    "noise_cov": 0.1,
}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mnist")
    prepare_dataset("mnist", "synthetic", folder, seed=7, train_samples=64, test_samples=32)
    return folder / "manifest.json"


def _run(manifest, tmp_path, **more) -> dict:
    record = run_cell(make_cell(VALUES, {}, RUN | more), data=manifest, out=tmp_path / "r.json")
    assert record["status"] == "ok", record["message"]
    return record


def test_a_speed_only_cell_skips_training_scoring_and_the_reference(manifest, tmp_path):
    full = _run(manifest, tmp_path)
    fast = _run(manifest, tmp_path, quality=False)
    assert {"trained_untimed", "evaluated", "reference_done"} <= set(full["timings"]["marks"])
    assert not {"trained_untimed", "evaluated", "reference_done"} & set(fast["timings"]["marks"])
    assert fast["quality"] == {"not_measured": SPEED_ONLY}
    assert "accuracy" in full["quality"] and "agreement_fp32" in full["quality"]
    # the timed window itself is the same measurement: same passes, same samples per pass
    assert fast["throughput"]["samples_per_pass"] == full["throughput"]["samples_per_pass"]
    assert len(fast["timings"]["repetitions_s"]) == len(full["timings"]["repetitions_s"]) == 2
    assert fast["engine"]["format_ran"] == full["engine"]["format_ran"]


def test_the_task_key_reaches_infer_cells_only_and_others_keep_their_hashes(tiny_config):
    before = {c.cell_id: c.config_hash() for c in expand_grid(check_config(tiny_config))}
    task = next(iter(tiny_config["tasks"]))
    tiny_config["tasks"][task]["quality"] = False
    cells = expand_grid(check_config(tiny_config))
    assert {c.cell_id for c in cells} == set(before)  # a setting, not an axis
    for cell in cells:
        speed_only = cell.values["task"] == task and cell.values["mode"] == "infer"
        assert (cell.settings.get("quality") is False) == speed_only
        assert (cell.config_hash() == before[cell.cell_id]) != speed_only


def test_a_bad_quality_value_is_a_config_error(tiny_config):
    task = next(iter(tiny_config["tasks"]))
    tiny_config["tasks"][task]["quality"] = "no"
    with pytest.raises(ValueError, match="quality"):
        check_config(tiny_config)


def test_the_aggregate_marks_a_speed_only_cell_na_with_its_reason():
    cells = pd.DataFrame(
        [
            {"mode": "infer", "accuracy": 0.1, "quality_not_measured": SPEED_ONLY},
            {"mode": "infer", "accuracy": 0.9, "quality_not_measured": None},
        ]
    )
    marked = mark_quality(cells)
    assert marked["quality_na"].tolist()[0] == SPEED_ONLY
    assert pd.isna(marked["quality_na"].tolist()[1])

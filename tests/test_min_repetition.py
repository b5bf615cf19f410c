"""The minimum timed window: each repetition repeats its pass until it has run min_repetition_s.

Real cells (torch MLP on the CPU, synthetic MNIST) through the cell runner, as Snakemake runs them.
"""

from __future__ import annotations

import pytest

from devicebench.data import prepare_dataset
from devicebench.plan.grid import make_cell
from devicebench.run.runner import run_cell


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mnist")
    prepare_dataset("mnist", "synthetic", folder, train_samples=256, test_samples=128, seed=3)
    return folder / "manifest.json"


def measure(manifest, tmp_path, mode: str, minimum: float) -> dict:
    values = {
        "task": "mnist_mlp",
        "model": "mlp",
        "framework": "torch",
        "device": "cpu",
        "threads": 1,
        "precision": "fp32",
        "batch_size": 32,
        "mode": mode,
    }
    settings = {
        "dataset": "mnist",
        "epochs": 1,
        "steps_per_epoch": 2,
        "learning_rate": 0.001,
        "repetitions": 3,
        "warmup_steps": 1,
        "seed": 5,
        "timeout_s": 300,
        "noise_cov": 0.1,
        "min_repetition_s": minimum,
    }
    cell = make_cell(values, {}, settings)
    record = run_cell(cell, data=manifest, out=tmp_path / f"{mode}-{minimum}.json")
    assert record["status"] == "ok", record["message"]
    return record


@pytest.mark.parametrize("mode", ["train", "infer"])
def test_a_longer_minimum_repeats_the_pass_more_often(manifest, tmp_path, mode):
    once = measure(manifest, tmp_path, mode, 0.0)
    longer = measure(manifest, tmp_path, mode, 0.3)
    assert once["timings"]["passes"] == [1, 1, 1]
    passes = longer["timings"]["passes"]
    assert len(passes) == 3 and all(count >= 1 for count in passes)
    assert sum(passes) > 3, f"a pass of a few steps should repeat to fill 0.3 s: {passes}"
    timings = longer["timings"]
    assert all(window >= 0.3 for window in timings["window_s"])
    # the summary is per pass: each repetition's window divided by its passes
    for per_pass, window, count in zip(
        timings["repetitions_s"], timings["window_s"], passes, strict=True
    ):
        assert per_pass == pytest.approx(window / count)
    samples = longer["throughput"]["samples_per_pass"]
    assert longer["throughput"]["samples_per_s"] == pytest.approx(samples / timings["median_s"])
    assert timings["min_repetition_s"] == 0.3


def test_quality_does_not_depend_on_how_many_passes_ran(manifest, tmp_path):
    """A train cell scores a model trained exactly `epochs` epochs, however long it was timed."""
    once = measure(manifest, tmp_path, "train", 0.0)
    longer = measure(manifest, tmp_path, "train", 0.3)
    assert sum(longer["timings"]["passes"]) > 3
    assert longer["quality"]["accuracy"] == once["quality"]["accuracy"]
    assert longer["quality"]["loss"] == once["quality"]["loss"]

"""A results folder that cannot take a record stops the cell before it measures anything, with
an error naming the folder (run_cell.py by hand, as the workflow runs it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

from devicebench.data import prepare_dataset
from devicebench.output_space import OutputUnusable, check_output

SCRIPT = str(REPO / "scripts" / "run_cell.py")
QUICK = ["mode=infer", "epochs=1", "steps_per_epoch=1", "batch_size=32"]
QUICK += ["repetitions=1", "min_repetition_s=0", "threads=1"]


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mnist")
    prepare_dataset("mnist", "synthetic", folder, train_samples=256, test_samples=64, seed=3)
    return folder / "manifest.json"


def run_cell(out, manifest, **env) -> subprocess.CompletedProcess:
    command = [sys.executable, SCRIPT, "task=mnist_mlp", *QUICK]
    command += ["--data", str(manifest), "--out", str(out)]
    environment = os.environ | {k: str(v) for k, v in env.items()}
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=environment)


def test_a_results_folder_that_cannot_be_made_stops_the_cell_naming_it(tmp_path, manifest):
    blocker = tmp_path / "results"
    blocker.write_text("a file where the results folder should be")
    out = blocker / "cells" / "cell.json"
    done = run_cell(out, manifest)
    assert done.returncode == 2, done.stderr
    assert f"results folder {out.parent} cannot be created" in done.stderr
    assert "Traceback" not in done.stderr and "[devicebench] cell" not in done.stdout


def test_too_little_free_space_stops_the_cell_naming_the_folder(tmp_path, manifest):
    out = tmp_path / "results" / "cell.json"
    done = run_cell(out, manifest, DEVICEBENCH_MIN_FREE_MB=10**12)
    assert done.returncode == 2, done.stderr
    assert f"results folder {out.parent} has" in done.stderr and "MB free" in done.stderr
    assert "[devicebench] cell" not in done.stdout and not out.exists()
    assert list(out.parent.iterdir()) == []  # the probe file is gone too


def test_a_usable_folder_passes_and_keeps_nothing(tmp_path):
    check_output(tmp_path / "a" / "cell.json", tmp_path / "logs")
    assert list((tmp_path / "a").iterdir()) == [] and (tmp_path / "logs").is_dir()
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputUnusable, match=f"results folder {tmp_path / 'file'} cannot"):
        check_output(tmp_path / "file" / "cell.json")

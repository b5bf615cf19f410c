"""run_cell.py by hand: bad counts fail, too many threads warn, a failure shows its message."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest
from conftest import REPO

from devicebench.data import prepare_dataset
from devicebench.measure.devices import host_cores

SCRIPT = str(REPO / "scripts" / "run_cell.py")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mnist")
    prepare_dataset("mnist", "synthetic", folder, train_samples=256, test_samples=64, seed=3)
    return folder / "manifest.json"


def run(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, SCRIPT, "task=mnist_mlp", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("key", ["epochs", "steps_per_epoch", "test_samples"])
@pytest.mark.parametrize("value", ["0", "-2"])
def test_zero_or_negative_counts_are_errors(tmp_path, key, value):
    out = tmp_path / "cell.json"
    done = run(f"{key}={value}", "--out", str(out))
    assert done.returncode == 2
    assert f"cell spec key run.{key}: must be at least 1 (got {value})" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("key", ["timeout_s", "noise_cov", "min_repetition_s", "learning_rate"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", ".nan"])
def test_nan_and_infinity_are_errors(tmp_path, key, value):
    out = tmp_path / "cell.json"
    done = run(f"{key}={value}", "--out", str(out))
    assert done.returncode == 2
    shown = str(float(value.lstrip(".")))
    assert f"cell spec key run.{key}: must be a finite number (got {shown})" in done.stderr
    assert not out.exists()


def test_nan_in_a_spec_file_is_named_before_any_work(tmp_path):
    from devicebench.plan.cellspec import CellSpec

    spec = json.loads(CellSpec.from_json(_spec_json(tmp_path)).to_json())
    spec["run"]["noise_cov"] = float("nan")
    given = tmp_path / "spec.json"
    given.write_text(json.dumps(spec))  # json writes NaN, as a hand-edited file may hold it
    out = tmp_path / "cell.json"
    done = subprocess.run(
        [sys.executable, SCRIPT, "--spec", str(given), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "cell spec key run.noise_cov: must be a finite number (got nan)" in done.stderr
    assert not out.exists()


def _spec_json(tmp_path) -> str:
    """A hand-run mnist_mlp cell's spec, as run_cell.py builds it from terms."""
    sys.path.insert(0, str(REPO / "scripts"))
    import run_cell

    return run_cell.spec_by_hand(["task=mnist_mlp", "mode=infer"]).to_json()


def test_more_threads_than_cores_warns(tmp_path, manifest):
    threads = host_cores() + 1
    out = tmp_path / "cell.json"
    done = run(
        *(f"threads={threads}", "mode=infer", "epochs=1", "steps_per_epoch=1"),
        *("batch_size=32", "repetitions=1", "min_repetition_s=0"),
        *("--data", str(manifest), "--out", str(out)),
    )
    assert done.returncode == 0, done.stderr
    assert f"threads {threads} is more than the {host_cores()} cores" in done.stderr
    assert json.loads(out.read_text())["axes"]["threads"] == threads


def test_test_samples_scores_the_first_n_held_out_samples_and_says_so(tmp_path, manifest):
    out = tmp_path / "cell.json"
    done = run(
        *("threads=1", "mode=infer", "epochs=1", "steps_per_epoch=1"),
        *("batch_size=16", "repetitions=1", "min_repetition_s=0"),
        *("test_samples=32", "--data", str(manifest), "--out", str(out)),
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["status"] == "ok"
    assert record["data"]["test_samples"] == 32  # the manifest holds 64
    assert record["provenance"]["settings"]["test_samples"] == 32


def test_a_batch_larger_than_the_data_prints_the_message_only_at_a_terminal(tmp_path, manifest):
    """At a terminal: the message, no traceback; the record keeps the traceback for the log."""
    out = tmp_path / "cell.json"
    command = [
        sys.executable,
        SCRIPT,
        *("task=mnist_mlp", "threads=1", "batch_size=4096"),
        *("--data", str(manifest), "--out", str(out)),
    ]
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the process has exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert process.wait(timeout=300) == 0
    os.close(leader)
    shown = b"".join(chunks).decode(errors="replace")
    assert "batch_size 4096 is larger than the 256 training samples" in shown
    assert "Traceback" not in shown
    record = json.loads(out.read_text())
    assert record["status"] == "error"
    assert "Traceback" in record["traceback"]

    # without a terminal (a Snakemake job's log), the traceback is printed for the log
    logged = run(
        *("threads=1", "batch_size=4096", "--data", str(manifest)),
        *("--out", str(tmp_path / "again.json")),
    )
    assert "Traceback" in logged.stderr

"""Nothing lost, nothing executed: broken inputs stop the real workflow before any record is
removed, config values never reach a shell unquoted, a killed worker leaves no record, and a
timed cell waits for another one on the host. Tiny grids (one cell), real Snakemake."""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import TINY_CONFIG
from workflow import REPO, planned_jobs, snakemake, write_config

from devicebench.data import prepare_dataset
from devicebench.plan.config import check_config
from devicebench.plan.grid import expand_grid

pytestmark = pytest.mark.workflow
MANIFEST = Path("results/data/mnist/synthetic/manifest.json")


def one_cell_config() -> dict:
    config = copy.deepcopy(TINY_CONFIG)
    config["devices"] = {"cpu": {"threads": [1]}, "cuda": False}
    config["modes"] = ["infer"]
    config["tasks"] = {"mnist_mlp": TINY_CONFIG["tasks"]["mnist_mlp"]}
    return config


def test_a_corrupt_manifest_stops_the_run_and_keeps_every_record(tmp_path):
    config = one_cell_config()
    write_config(tmp_path, config)
    (cell,) = expand_grid(check_config(config))
    record = tmp_path / "results" / "cells" / f"{cell.cell_id}.json"
    snakemake(tmp_path, "--cores", "1", str(record.relative_to(tmp_path)))
    measured = record.read_text()
    manifest = tmp_path / MANIFEST
    manifest.write_bytes(manifest.read_bytes() + b"\n}")  # one edit that breaks it

    done = snakemake(tmp_path, "--cores", "1", str(record.relative_to(tmp_path)), check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"dataset manifest {MANIFEST} cannot be read" in said, said
    assert record.read_text() == measured, "a record was removed or replaced"
    (command,) = re.findall(r"Prepare the data set again with: (.+)", said)
    assert "--train-samples 256 --test-samples 128" in command and "--seed 7" in command

    words = shlex.split(command)
    subprocess.run([sys.executable, *words[1:]], cwd=tmp_path, check=True, capture_output=True)
    snakemake(tmp_path, "--cores", "1", str(record.relative_to(tmp_path)))
    assert json.loads(record.read_text())["status"] == "ok"
    kept = record.with_name(record.name + "~kept")
    assert json.loads(kept.read_text()) == json.loads(record.read_text())


def test_config_values_never_reach_the_shell_unquoted(tmp_path):
    """A data path holding spaces, quotes and $(...) is one argument: nothing runs, and the
    preparation fails naming the path."""
    config = one_cell_config()
    canary = tmp_path / "INJECTED"
    folder = tmp_path / f"my data 'x' \"y\" $(touch {canary}) `touch {canary}`"
    config["datasets"]["mnist"] = {"source": "path", "path": str(folder)}
    config["datasets"]["mnist"]["sha256"] = {f"a;touch {canary}": "0" * 64}
    write_config(tmp_path, config)
    target = "results/data/mnist/path/manifest.json"
    done = snakemake(tmp_path, "--cores", "1", target, check=False)
    assert done.returncode != 0
    assert not canary.exists(), "a config value was run by the shell"
    log = (tmp_path / "results/logs/data/mnist-path.log").read_text()
    assert str(folder) in log, log


def _run_cell(tmp_path: Path, lock: Path, out: Path, epochs: int) -> subprocess.Popen:
    """run_cell.py on a small data set, its output in tmp_path/runner.log."""
    manifest = prepare_dataset(
        "mnist", "synthetic", tmp_path / "data", train_samples=256, test_samples=64, seed=7
    )
    command = [sys.executable, str(REPO / "scripts" / "run_cell.py"), "task=mnist_mlp"]
    command += ["threads=1", "mode=train", f"epochs={epochs}", "batch_size=32"]
    command += ["steps_per_epoch=2", "min_repetition_s=0.02", "--out", str(out)]
    command += ["--log-dir", str(tmp_path), "--data", str(manifest)]
    env = dict(os.environ, DEVICEBENCH_LOCK=str(lock), PYTHONPATH=str(REPO / "src"))
    log = open(tmp_path / "runner.log", "wb")  # noqa: SIM115 - the child holds it
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)


def _said(tmp_path: Path) -> str:
    return (tmp_path / "runner.log").read_text()


def _wait_until(check, runner: subprocess.Popen, timeout: float = 300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and runner.poll() is None:
        if found := check():
            return found
        time.sleep(0.05)
    return check()


def _worker(runner: subprocess.Popen) -> psutil.Process | None:
    for child in psutil.Process(runner.pid).children(recursive=True):
        try:
            if "devicebench.run.worker" in child.cmdline():
                return child
        except psutil.Error:
            continue
    return None


def test_a_worker_killed_from_outside_leaves_no_record(tmp_path):
    out = tmp_path / "cell.json"
    runner = _run_cell(tmp_path, tmp_path / "timed.lock", out, epochs=10_000)
    try:
        worker = _wait_until(lambda: _worker(runner), runner)
        assert worker is not None, _said(tmp_path)
        os.kill(worker.pid, signal.SIGKILL)
        assert runner.wait(timeout=120) == 4, _said(tmp_path)
    finally:
        if runner.poll() is None:
            runner.kill()
    said = _said(tmp_path)
    assert "killed by SIGKILL from outside" in said and "next run measures" in said
    assert not out.exists()
    note = json.loads((tmp_path / "killed.json").read_text())
    assert note["status"] == "killed" and "SIGKILL" in note["message"]


def test_a_timed_cell_waits_while_another_holds_the_host(tmp_path):
    lock, release = tmp_path / "timed.lock", tmp_path / "release"
    hold = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "while not os.path.exists(sys.argv[2]): time.sleep(0.05)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(lock), str(release)], stdout=subprocess.PIPE, text=True
    )
    out = tmp_path / "cell.json"
    runner = None
    try:
        assert holder.stdout.readline().strip() == "held"
        runner = _run_cell(tmp_path, lock, out, epochs=1)
        assert _wait_until(lambda: "waiting for" in _said(tmp_path), runner), _said(tmp_path)
        assert _worker(runner) is None, "the cell started timing while another held the host"
        release.touch()
        assert runner.wait(timeout=300) == 0, _said(tmp_path)
    finally:
        release.touch()
        holder.wait(timeout=60)
        if runner is not None and runner.poll() is None:
            runner.kill()
    slot = json.loads(out.read_text())["provenance"]["bench_lock"]
    assert slot["path"] == str(lock) and slot["waited_s"] > 0


def test_a_config_with_other_data_sizes_prepares_the_data_again(tmp_path):
    """Not a broken input: the rule's params changed, so Snakemake prepares the data set again
    (and then its cells), and planning lets it."""
    config = one_cell_config()
    write_config(tmp_path, config)
    snakemake(tmp_path, "--cores", "1", str(MANIFEST))
    config["datasets"]["mnist"]["train_samples"] = 512
    write_config(tmp_path, config)
    assert planned_jobs(tmp_path).get("prepare_data") == 1

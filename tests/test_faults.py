"""Faults: out of memory, time limits, killed cells, interrupted workflows and corrupt data.

Each runs the real workflow on a tiny grid (tables only; charts are not needed to see a row).
"""

from __future__ import annotations

import copy
import itertools
import json
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import psutil
import pytest
from conftest import TINY_CONFIG
from workflow import REPO, snakemake, snakemake_command, write_config

from devicebench.plan.config import check_config
from devicebench.plan.grid import expand_grid

pytestmark = pytest.mark.workflow
TABLE = "results/tables/cells.csv"


def small_config(**changes) -> dict:
    """The tiny config on the CPU only, with `changes` applied at the top level."""
    config = copy.deepcopy(TINY_CONFIG)
    config["devices"] = {"cpu": {"threads": [1]}, "cuda": False}
    config.update(changes)
    return config


def cells_table(workdir: Path) -> pd.DataFrame:
    return pd.read_csv(workdir / TABLE)


def records(workdir: Path) -> dict[str, dict]:
    folder = workdir / "results" / "cells"
    return {
        str(p.relative_to(folder).with_suffix("")): json.loads(p.read_text())
        for p in folder.rglob("*.json")
    }


def marked_processes(mark: str) -> list[psutil.Process]:
    """Live processes that inherited DEVICEBENCH_TEST_MARK=mark (our snakemake's descendants)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("DEVICEBENCH_TEST_MARK") == mark:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


def start_snakemake(workdir: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """Start snakemake in the background; its descendants carry a unique environment mark."""
    command, env = snakemake_command(workdir, *args)
    mark = uuid.uuid4().hex
    env["DEVICEBENCH_TEST_MARK"] = mark
    log = open(workdir / f"snakemake-{mark}.log", "w")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    return process, mark


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


# -- a grid with an out-of-memory cell: also the run for overlap and determinism checks --------


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    """Four ok MLP cells and one CNN cell whose huge batch exceeds its memory cap (--cores 2)."""
    workdir = tmp_path_factory.mktemp("faulty")
    config = small_config(
        batch_sizes=[32, 64],
        datasets={"mnist": {"source": "synthetic", "train_samples": 2048, "test_samples": 256}},
        tasks={
            "mnist_mlp": {"models": ["mlp"], "epochs": 1, "steps_per_epoch": 4},
            "mnist_cnn": {
                "models": ["cnn"],
                "batch_sizes": [2048],
                "memory_limit_mb": 100,
                "precisions": ["fp32"],
            },
        },
        exclude=[{"task": "mnist_cnn", "mode": "infer"}],
    )
    write_config(workdir, config)
    snakemake(workdir, "--cores", "2", TABLE)
    return workdir, config


def test_out_of_memory_is_recorded_as_oom_and_the_grid_completes(faulty_run):
    workdir, _ = faulty_run
    cells = cells_table(workdir)
    assert len(cells) == 5
    oom = cells[cells.task == "mnist_cnn"]
    assert list(oom.status) == ["oom"] and "memory_limit_mb=100" in oom.message.iloc[0]
    assert (cells[cells.task == "mnist_mlp"].status == "ok").all()
    assert "oom" in (workdir / "results" / "tables" / "timing.md").read_text()


def test_the_environment_table_sums_up_the_hosts(faulty_run):
    workdir, _ = faulty_run
    environment = pd.read_csv(workdir / "results" / "tables" / "environment.csv")
    assert len(environment) == 1 and environment.cells.iloc[0] == 5
    row = environment.iloc[0]
    assert row.cpu_model and "torch" in row.libraries and row.python.startswith("3.")
    assert (workdir / "results" / "tables" / "environment.md").read_text().startswith("| hostname")


def test_timed_sections_never_overlap(faulty_run):
    workdir, _ = faulty_run
    spans = sorted(
        (r["timings"]["timed_start"], r["timings"]["timed_end"])
        for r in records(workdir).values()
        if r["status"] == "ok"
    )
    assert len(spans) == 4
    for (start_a, end_a), (start_b, end_b) in itertools.pairwise(spans):
        assert start_a < end_a <= start_b < end_b, spans


def test_the_same_cpu_cell_twice_scores_the_same(faulty_run, tmp_path):
    workdir, config = faulty_run
    cell = next(
        c
        for c in expand_grid(check_config(config))
        if c.values["task"] == "mnist_mlp" and c.values["mode"] == "train"
    )
    first = records(workdir)[cell.cell_id]
    again = tmp_path / "again.json"
    manifest = workdir / "results" / "data" / "mnist" / "synthetic" / "manifest.json"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "run_cell.py"), *shlex.split(cell.cli_args())]
        + ["--data", str(manifest), "--out", str(again)],
        check=True,
        capture_output=True,
    )
    second = json.loads(again.read_text())
    assert first["status"] == second["status"] == "ok"
    assert first["provenance"]["deterministic"] is second["provenance"]["deterministic"] is True
    for key in ("accuracy", "f1_macro", "f1_micro", "loss"):
        assert first["quality"][key] == second["quality"][key], key


# -- time limit -------------------------------------------------------------------------------


def test_a_cell_over_its_time_limit_is_killed_and_the_grid_goes_on(tmp_path):
    config = small_config(timeout_s=1)
    config["tasks"] = {"mnist_mlp": TINY_CONFIG["tasks"]["mnist_mlp"]}
    write_config(tmp_path, config)
    process, mark = start_snakemake(tmp_path, "--cores", "1", TABLE)
    assert process.wait(timeout=300) == 0
    cells = cells_table(tmp_path)
    assert list(cells.status) == ["timeout", "timeout"]
    assert cells.message.str.contains("1 s time limit").all()
    assert not marked_processes(mark), "a worker outlived its time limit"


# -- a cell killed by SIGKILL -----------------------------------------------------------------


def test_a_killed_cell_leaves_no_record_and_the_next_run_redoes_it(tmp_path):
    config = small_config(modes=["train"])
    config["tasks"] = {"mnist_mlp": {"models": ["mlp"], "epochs": 2}}
    write_config(tmp_path, config)
    (cell,) = expand_grid(check_config(config))
    out = tmp_path / "results" / "cells" / f"{cell.cell_id}.json"
    process, mark = start_snakemake(tmp_path, "--cores", "1", TABLE)

    def runner_and_worker():
        for proc in marked_processes(mark):
            try:
                if "devicebench.run.worker" in proc.cmdline():
                    runner = proc.parent()
                    if runner and "run_cell.py" in " ".join(runner.cmdline()[:2]):
                        return runner, proc
            except psutil.Error:
                continue
        return None

    runner, worker = wait_for(runner_and_worker, 120, "the cell's worker to start")
    time.sleep(1.0)  # mid-run: the worker is importing, loading or training
    runner.send_signal(signal.SIGKILL)
    process.wait(timeout=120)
    assert process.returncode != 0
    psutil.wait_procs([worker], timeout=10)
    assert not worker.is_running(), "the worker outlived its killed runner"
    assert not out.exists()
    assert not list(out.parent.glob(f".{out.name}.*")), "a temporary record was left behind"

    snakemake(tmp_path, "--cores", "1", TABLE)
    assert json.loads(out.read_text())["status"] == "ok"


# -- the whole workflow interrupted -----------------------------------------------------------


def test_an_interrupted_workflow_resumes_without_redoing_finished_cells(tmp_path):
    config = small_config()
    config["tasks"] = {"mnist_mlp": TINY_CONFIG["tasks"]["mnist_mlp"]}  # train and infer
    write_config(tmp_path, config)
    grid = {cell.cell_id for cell in expand_grid(check_config(config))}
    process, mark = start_snakemake(tmp_path, "--cores", "1", TABLE)
    log = tmp_path / f"snakemake-{mark}.log"
    # Interrupt once Snakemake itself counts a cell as finished (a record that exists but
    # whose job Snakemake has not yet closed is, rightly, redone as incomplete).
    wait_for(lambda: "(Rule: cell)" in log.read_text(), 180, "the first finished cell")
    finished = records(tmp_path)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    assert finished and len(finished) < len(grid), "interrupt came too late to test anything"

    snakemake(tmp_path, "--cores", "1", TABLE)
    final = records(tmp_path)
    for cell_id, record in finished.items():
        assert final[cell_id]["timings"] == record["timings"], f"{cell_id} was run again"
    cells = cells_table(tmp_path)
    assert set(cells.cell_id) == grid and (cells.status == "ok").all()


# -- a corrupt data file ----------------------------------------------------------------------


def test_a_corrupt_data_file_stops_the_run_before_any_cell(tmp_path):
    """Found at planning (data_check.py): no cell runs on it and no record is touched."""
    config = small_config(modes=["train"])
    config["tasks"] = {"mnist_mlp": TINY_CONFIG["tasks"]["mnist_mlp"]}
    write_config(tmp_path, config)
    manifest = tmp_path / "results" / "data" / "mnist" / "synthetic" / "manifest.json"
    snakemake(tmp_path, "--cores", "1", str(manifest.relative_to(tmp_path)))
    entry = json.loads(manifest.read_text())["files"][0]
    name = entry["name"]
    corrupt = manifest.parent / name
    corrupt.write_bytes(corrupt.read_bytes()[:100])  # truncated

    done = snakemake(tmp_path, "--cores", "1", TABLE, check=False)
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert name in said and "Prepare the data set again with: python" in said, said
    assert not records(tmp_path), "a cell ran on corrupt data"


# -- snakemake itself killed by SIGKILL -------------------------------------------------------


def test_a_cell_whose_snakemake_is_killed_stops(tmp_path):
    """kill -9 of snakemake leaves its job's shell; the cell must notice and stop, not time on."""
    config = small_config(modes=["train"], min_repetition_s=60.0, timeout_s=600)
    config["tasks"] = {"mnist_mlp": {"models": ["mlp"], "epochs": 1, "steps_per_epoch": 2}}
    write_config(tmp_path, config)
    (cell,) = expand_grid(check_config(config))
    out = tmp_path / "results" / "cells" / f"{cell.cell_id}.json"
    process, mark = start_snakemake(tmp_path, "--cores", "1", TABLE)
    log = tmp_path / "results" / "logs" / "cells" / f"{cell.cell_id}.log"
    wait_for(lambda: log.exists() and "warm-up done" in log.read_text(), 180, "timing to start")
    cell_processes = [p for p in marked_processes(mark) if p.pid != process.pid]
    assert any("devicebench.run.worker" in " ".join(p.cmdline()) for p in cell_processes)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    gone, alive = psutil.wait_procs(cell_processes, timeout=60)
    assert not alive, f"still running after snakemake was killed: {[p.cmdline() for p in alive]}"
    assert "stopped: process" in log.read_text()
    assert not out.exists()

    # the README's recovery: unlock, then rerun
    locked = snakemake(tmp_path, "--cores", "1", TABLE, check=False)
    assert "--unlock" in locked.stdout + locked.stderr
    snakemake(tmp_path, "--unlock")
    snakemake(tmp_path, "--cores", "1", TABLE, "--config", "min_repetition_s=0")
    assert json.loads(out.read_text())["status"] == "ok"

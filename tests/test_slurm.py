"""The workflow on a real SLURM cluster: every cell is its own job, and the results match a
local run's. Installs and starts a single-node cluster when the machine allows it (root, apt);
skips with the reason otherwise.
"""

from __future__ import annotations

import copy
import json
import subprocess

import pandas as pd
import pytest
import slurm_cluster
from conftest import TINY_CONFIG
from workflow import REPO, snakemake, snakemake_command, write_config

pytestmark = pytest.mark.workflow

# Two cells, which the two CPUs of this one-node cluster run at once: the MLP trains and infers.
# No GPU on this cluster. Tables only: charts add nothing to what is checked here.
CONFIG = copy.deepcopy(TINY_CONFIG) | {
    "devices": {"cpu": {"threads": [1]}, "cuda": False},
    "tasks": {"mnist_mlp": TINY_CONFIG["tasks"]["mnist_mlp"]},
    "slurm": {"mem_mb": 1000, "runtime_min": 10},  # small, so both CPUs run cells at once
}
TABLE = "results/tables/cells.csv"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    try:
        running = slurm_cluster.start(tmp_path_factory.mktemp("slurm"))
    except slurm_cluster.Unavailable as why:
        pytest.skip(f"cannot run SLURM on this machine: {why}")
    yield running
    running.stop()


def ok_cells(workdir) -> set[str]:
    cells = pd.read_csv(workdir / "results" / "tables" / "cells.csv")
    return set(cells.loc[cells.status == "ok", "cell_id"])


def test_every_cell_is_its_own_slurm_job_and_matches_a_local_run(cluster, tmp_path):
    on_slurm, local = tmp_path / "slurm", tmp_path / "local"
    for workdir in (on_slurm, local):
        write_config(workdir, CONFIG)
    # The local run goes on meanwhile: the SLURM run mostly waits on job status polls.
    command, env = snakemake_command(local, "--cores", "1", TABLE)
    log = open(tmp_path / "local.log", "w+")  # noqa: SIM115 - read back below
    local_run = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    done = snakemake(
        on_slurm,
        "--profile",
        str(REPO / "profiles" / "slurm"),
        "--slurm-status-command",
        "squeue",  # no accounting database here, so no sacct
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--slurm-logdir",
        str(on_slurm / "slurm_logs"),
        "--slurm-keep-successful-logs",
        TABLE,
    )
    assert "submitted with SLURM jobid" in done.stdout + done.stderr
    records = [json.loads(p.read_text()) for p in (on_slurm / "results" / "cells").rglob("*.json")]
    assert len(records) == 2
    job_ids = [r["environment"]["slurm_job_id"] for r in records]
    assert all(job_ids) and len(set(job_ids)) == len(records), job_ids
    assert all(r["environment"]["slurm_partition"] == "debug" for r in records)
    environment = pd.read_csv(on_slurm / "results" / "tables" / "environment.csv")
    assert environment["slurm_jobs"].sum() == 2

    assert local_run.wait(timeout=600) == 0, (tmp_path / "local.log").read_text()
    log.close()
    assert ok_cells(on_slurm) == ok_cells(local) and len(ok_cells(local)) == 2

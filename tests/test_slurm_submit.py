"""The sbatch arguments of GPU and CPU cells, as the SLURM executor plugin renders them.

The resources are the ones Snakemake plans for this workflow's `cell` rule (read from a dry
run); the sbatch call is built by the plugin's own functions, so a change on either side shows.
"""

from __future__ import annotations

import copy
import re

import pytest
from conftest import TINY_CONFIG
from workflow import snakemake, write_config

plugin = pytest.importorskip("snakemake_executor_plugin_slurm")
from snakemake_executor_plugin_slurm.submit_string import get_submit_command  # noqa: E402
from snakemake_executor_plugin_slurm.utils import set_gres_string  # noqa: E402
from snakemake_executor_plugin_slurm.validation import validate_slurm_extra  # noqa: E402

pytestmark = pytest.mark.workflow


class Resources(dict):
    """Job resources the way the plugin reads them: .get() and attribute access."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class PlannedJob:
    """A cell job as Snakemake planned it: its threads and resources."""

    def __init__(self, output: str, threads: int, resources: Resources) -> None:
        self.output, self.threads, self.resources = output, threads, resources
        self.name = "cell"

    def is_group(self) -> bool:
        return False


def _value(text: str):
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def planned_cell_jobs(workdir) -> list[PlannedJob]:
    """Every cell job of a dry run, with the threads and resources Snakemake resolved."""
    out = snakemake(workdir, "--dry-run", "--cores", "8").stdout
    jobs = []
    for block in out.split("rule cell:")[1:]:
        output = re.search(r"^\s+output: (.+)$", block, re.M).group(1)
        threads = int(re.search(r"^\s+threads: (\d+)$", block, re.M).group(1))
        line = re.search(r"^\s+resources: (.+)$", block, re.M).group(1)
        pairs = (item.split("=", 1) for item in line.split(", "))
        jobs.append(PlannedJob(output, threads, Resources({k: _value(v) for k, v in pairs})))
    return jobs


def sbatch_call(job: PlannedJob) -> str:
    """The plugin's sbatch command line for a job (account/partition as the executor adds them)."""
    validate_slurm_extra(job)
    partition, account = job.resources.get("slurm_partition"), job.resources.get("slurm_account")
    params = {
        "run_uuid": "uuid",
        "slurm_logfile": "log/%j.log",
        "comment_str": "rule_cell",
        "account": f" -A {account}" if account else "",
        "partition": f" -p {partition}" if partition else "",
        "workdir": "/work",
    }
    return get_submit_command(job, params) + set_gres_string(job)


def cluster_config(**slurm) -> dict:
    config = copy.deepcopy(TINY_CONFIG)
    config["devices"] = {"cpu": {"threads": [2]}, "cuda": True, "accelerator_threads": 4}
    config["check_devices"] = False  # GPU nodes are elsewhere; this host may have none
    config["modes"] = ["train"]
    config["tasks"] = {"mnist_mlp": {"models": ["mlp"], "epochs": 1}}
    config["timeout_s"] = 1200
    config["slurm"] = slurm
    return config


def _by_device(jobs: list[PlannedJob]) -> dict[str, str]:
    calls = {}
    for job in jobs:
        device = re.search(r"device~(\w+)", job.output).group(1)
        calls[device] = sbatch_call(job)
    return calls


def test_gpu_and_cpu_cells_render_their_requests(tmp_path):
    slurm = {
        "partition": "cpu",
        "gpu_partition": "gpu",
        "account": "lab",
        "gpu_model": "h100",
        "mem_mb": 24000,
        "runtime_min": 45,
        "exclusive": True,
    }
    write_config(tmp_path, cluster_config(**slurm))
    calls = _by_device(planned_cell_jobs(tmp_path))
    gpu, cpu = calls["cuda"].split(), calls["cpu"].split()
    assert "--gpus=h100:1" in gpu and "--cpus-per-task=4" in gpu
    assert gpu[gpu.index("--mem") + 1] == "24000" and gpu[gpu.index("-t") + 1] == "45"
    assert gpu[gpu.index("-p") + 1] == "gpu" and gpu[gpu.index("-A") + 1] == "lab"
    assert "--exclusive" in gpu and "--exclusive" in cpu
    assert not [arg for arg in cpu if arg.startswith(("--gpus", "--gres"))]
    assert "--cpus-per-task=2" in cpu and "--ntasks=1" in cpu
    assert cpu[cpu.index("--mem") + 1] == "24000" and cpu[cpu.index("-p") + 1] == "cpu"


def test_defaults_any_gpu_runtime_from_the_timeout_no_partition(tmp_path):
    write_config(tmp_path, cluster_config())
    calls = _by_device(planned_cell_jobs(tmp_path))
    gpu, cpu = calls["cuda"].split(), calls["cpu"].split()
    assert "--gpus=1" in gpu and "--exclusive" not in gpu
    assert gpu[gpu.index("-t") + 1] == str(1200 // 60 + 10)
    assert gpu[gpu.index("--mem") + 1] == "16000"
    assert "-p" not in cpu and "-A" not in cpu  # left to the profile or the command line


def test_a_two_gpu_cell_asks_for_two_gpus(tmp_path):
    config = cluster_config(gpu_model="h200")
    config["gpus"] = [1, 2]
    write_config(tmp_path, config)
    jobs = planned_cell_jobs(tmp_path)
    by_path = {
        (
            re.search(r"device~(\w+)", job.output).group(1),
            re.search(r"gpus~(\d+)", job.output)[1],
        ): sbatch_call(job).split()
        for job in jobs
    }
    assert "--gpus=h200:2" in by_path[("cuda", "2")]
    assert "--gpus=h200:1" in by_path[("cuda", "1")]
    cpu_two_ranks = by_path[("cpu", "2")]  # two gloo processes share the cell's CPUs
    assert not [arg for arg in cpu_two_ranks if arg.startswith(("--gpus", "--gres"))]
    assert "--cpus-per-task=2" in cpu_two_ranks

"""Config check, grid expansion and the lookups the rules share."""

import json
import math
import os
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

import snakemake

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
SCRIPTS = Path(workflow.basedir) / "scripts"


SRC = Path(workflow.basedir) / "src" / "devicebench"

from devicebench.plan.blocks import assign_blocks
from devicebench.plan.confirm import assign_confirms, confirm_groups, confirm_spec
from devicebench.plan.config import ConfigError, check_config, combine_configs
from devicebench.plan.config_files import read_yaml, typed_overrides
from devicebench.plan.data_check import (
    InputUnusable,
    check_prepared,
    expected_settings,
    prepare_command,
)
from devicebench.measure.devices import host_cores
from devicebench.plan.grid import expand_grid
from devicebench.workloads import specs

DEFAULT_CONFIG = Path(workflow.basedir) / "config" / "config.yaml"


def user_config(default, configfiles, overrides):
    """The config a run means: a --configfile selects what it lists (tasks, frameworks,
    devices, ...), the default fills unspecified settings, --config values go on top, typed
    (config_files.py). Snakemake alone would merge the default's tasks into the user's. Files are
    read again here, so that a key given twice is an error naming its lines."""
    users = [read_yaml(path) for path in configfiles]
    return combine_configs(read_yaml(default), users, typed_overrides(dict(overrides)))


try:
    # With --configfile, the repository's default fills in; without, the Snakefile's configfile
    # as Snakemake found it (config/config.yaml of the working directory).
    configfiles = workflow.config_settings.configfiles
    combined = user_config(
        DEFAULT_CONFIG if configfiles else Path(workflow.configfiles[0]),
        configfiles,
        workflow.config_settings.config,
    )
    config.clear()
    config.update(combined)
    STUDY = check_config(config)
    GRID = {cell.cell_id: cell for cell in expand_grid(STUDY)}
    assign_blocks(STUDY.get("blocks", {}), GRID.values())
    # serve tasks with slo.confirm: best: one confirm job per (task, model, device)
    CONFIRMS = confirm_groups(GRID.values(), STUDY["tasks"])
    assign_confirms(STUDY.get("blocks", {}), CONFIRMS.values())
except ConfigError as error:
    raise WorkflowError(f"invalid config: {error}") from None

TABLE_NAMES = [
    "cells",
    "timing",
    "speedup",
    "quality",
    "environment",
    "cost",
    "efficiency",
    "utilization",
    "profile_ops",
    "top_ops",
    "not_ok",
    "engines",
    "best",
    "serving",
    "serving_slo",
    "serving_slo_runs",
    "generation",
    "generation_best",
]
TABLES = expand("results/tables/{name}.{ext}", name=TABLE_NAMES, ext=["csv", "md"])
CHART_NAMES = [
    "time_vs_batch",
    "throughput_vs_batch",
    "speedup_vs_batch",
    "cost_vs_batch",
    "throughput_per_cell",
    "accuracy_per_cell",
    "mfu_per_cell",
    "energy_per_sample",
    "utilization_timeline",
    "top_ops",
    "serve_throughput_vs_clients",
    "serve_latency_percentiles",
    "serve_replica_scaling",
    "serve_p99_vs_rate",
    "generate_tokens_vs_batch",
]
CHARTS = expand("results/charts/{name}.{ext}", name=CHART_NAMES, ext=["html", "png"])
# Prices are an input of the aggregates only: editing them never reruns a cell.
PRICES = STUDY.get("prices", str(Path(workflow.basedir) / "config" / "prices.yaml"))
REPORT = ["results/report/index.html", "results/report/charts.json"]
CELL_RECORDS = expand("results/cells/{cell}.json", cell=GRID)
CONFIRM_RECORDS = expand("results/cells/{group}.json", group=CONFIRMS)
# The code the aggregates run, as inputs: editing it reruns tables or charts, never a cell.
TABLES_CODE = [
    str(SCRIPTS / "aggregate.py"),
    *sorted(str(p) for p in (SRC / "aggregate").glob("*.py") if "charts" not in p.name),
]
CHARTS_CODE = [
    str(SCRIPTS / "charts.py"),
    *sorted(str(p) for p in (SRC / "aggregate").glob("*charts.py")),
]
REPORT_CODE = [
    str(SCRIPTS / "report.py"),
    *sorted(str(p) for p in (SRC / "report").glob("*.py")),
]
SLURM = {"mem_mb": 16000, "exclusive": False} | STUDY.get("slurm", {})


def dataset_settings(name):
    """A dataset's source and sizes from config (synthetic by default)."""
    return {"source": "synthetic"} | STUDY.get("datasets", {}).get(name, {})


def script_path(name):
    """A script's path relative to the working directory: stable params when the repo moves."""
    return os.path.relpath(SCRIPTS / name)


def cell_data(wildcards):
    """The manifest of the dataset a cell reads."""
    name = GRID[wildcards.cell].run_settings()["dataset"]
    return f"results/data/{name}/{dataset_settings(name)['source']}/manifest.json"


RUNNER = f"snakemake-{snakemake.__version__} configfiles={','.join(map(str, workflow.configfiles))}"


def cell_args(wildcards):
    """Only this cell's spec, as run_cell.py's --spec-json, and which workflow run launched it
    (the record's provenance says so: published numbers come from the workflow only)."""
    return GRID[wildcards.cell].cli_args() + f" --runner {shlex.quote(RUNNER)}"


def cell_env(wildcards):
    """The conda environment of a cell's framework (torch, keras-tensorflow, keras-torch)."""
    return f"../envs/{GRID[wildcards.cell].values['framework']}.yaml"


def all_cores():
    """What thread count 'all' means: --cores locally; on a cluster, slurm.cpus_for_all."""
    try:
        return workflow.cores
    except WorkflowError:  # a cluster executor runs without --cores
        return SLURM.get("cpus_for_all", host_cores())


def cell_threads(wildcards):
    """Cores a cell occupies: its thread count ('all' means every core)."""
    threads = GRID[wildcards.cell].values["threads"]
    return all_cores() if threads == "all" else threads


def cell_bench(wildcards):
    """The local `bench` slot (profiles/default limits it to 1), taken by timed cells and data
    preparation alike, so nothing heavy runs beside a timed cell; none on a cluster, where each
    cell has its own allocation and slurm.exclusive is the timing hygiene."""
    return 0 if workflow.non_local_exec else 1


def cell_gpus(wildcards):
    """GPUs a cell asks the scheduler for: its `gpus` axis (1 if unset) on CUDA, else none."""
    values = GRID[wildcards.cell].values
    return int(values.get("gpus", 1)) if values["device"] == "cuda" else 0


def cell_gpu_model(wildcards):
    """The configured GPU type for a CUDA cell ('' means any GPU, and nothing for a CPU cell)."""
    return SLURM.get("gpu_model", "") if cell_gpus(wildcards) else ""


def cell_partition(wildcards):
    """slurm.gpu_partition for CUDA cells, slurm.partition for the rest."""
    if cell_gpus(wildcards):
        return SLURM["gpu_partition"]
    return SLURM["partition"]


def cell_cluster_resources():
    """What each cell job asks SLURM for beyond its GPUs and CPUs (constants, cheap to plan).

    Partition and account are set only when the config names them, so that a profile's or the
    command line's default-resources (slurm_partition=..., slurm_account=...) apply otherwise.
    """
    runtime = SLURM.get("runtime_min", math.ceil(STUDY["timeout_s"] / 60) + 10)
    resources = {"mem_mb": SLURM["mem_mb"], "runtime": runtime}
    if "gpu_partition" in SLURM:
        resources["slurm_partition"] = cell_partition
    elif "partition" in SLURM:
        resources["slurm_partition"] = SLURM["partition"]
    if "account" in SLURM:
        resources["slurm_account"] = SLURM["account"]
    if SLURM["exclusive"]:
        resources["slurm_extra"] = "--exclusive"
    return resources


def data_arg_list(name, source):
    """prepare_data.py flags for a dataset: sizes, seed and, for source 'path', its folder."""
    settings = dataset_settings(name)
    if settings["source"] != source:
        raise WorkflowError(
            f"dataset {name}: config says source {settings['source']!r}"
        )
    args = ["--seed", str(STUDY["seed"])]
    for key in ("train_samples", "test_samples", "path"):
        if key in settings:
            args += [f"--{key.replace('_', '-')}", str(settings[key])]
    for file_name, digest in settings.get("sha256", {}).items():
        args += ["--sha256", f"{file_name}={digest}"]
    return args


def data_args(name, source):
    """The flags as one shell word each: a path may hold spaces, quotes or `$(...)`."""
    return shlex.join(data_arg_list(name, source))


def check_data_sets():
    """Every prepared data set the grid reads is whole and the config's, before any job is
    scheduled: a broken one would make Snakemake remove its cells' records (data_check.py).
    """
    for name in sorted({cell.run_settings()["dataset"] for cell in GRID.values()}):
        source = dataset_settings(name)["source"]
        folder = f"results/data/{name}/{source}"
        args = data_arg_list(name, source)
        command = prepare_command(
            name, source, folder, args, script_path("prepare_data.py")
        )
        expected = expected_settings(name, dataset_settings(name), STUDY["seed"])
        try:
            check_prepared(Path(folder) / "manifest.json", expected, command)
        except InputUnusable as error:
            raise WorkflowError(str(error)) from None


check_data_sets()


def confirm_group(wildcards):
    """The confirm job of a confirm record (plan.confirm)."""
    return CONFIRMS[f"confirm/{wildcards.group}"]


def as_cell(wildcards):
    """A confirm job as its first sweep cell's wildcards: device, threads, environment and
    data are the same for all of them, so the cell helpers answer for the job."""
    return SimpleNamespace(cell=confirm_group(wildcards).members[0].cell_id)


def confirm_sweep(wildcards):
    """The sweep records a confirm job chooses from: its inputs, so that editing one sweep
    cell reruns that cell and this job."""
    return [
        f"results/cells/{cell.cell_id}.json"
        for cell in confirm_group(wildcards).members
    ]


def confirm_args(wildcards):
    """The job and its sweep cells' specs, in the order of confirm_sweep."""
    group = confirm_group(wildcards)
    specs = [cell.to_dict() for cell in group.members]
    job = {"id": group.group_id, "specs": specs, "confirm": dict(group.settings)}
    text = json.dumps(job, sort_keys=True)
    return shlex.join(["--group-json", text, "--runner", RUNNER])


def confirm_threads(wildcards):
    return cell_threads(as_cell(wildcards))


def confirm_data(wildcards):
    return cell_data(as_cell(wildcards))


def confirm_env(wildcards):
    return cell_env(as_cell(wildcards))


def confirm_bench(wildcards):
    return cell_bench(as_cell(wildcards))


def confirm_gpus(wildcards):
    return cell_gpus(as_cell(wildcards))


def confirm_gpu_model(wildcards):
    return cell_gpu_model(as_cell(wildcards))


def for_confirm(cell_function):
    """A cell's helper (of wildcards.cell) as a confirm job's."""

    def ask(wildcards):
        return cell_function(as_cell(wildcards))

    return ask


def confirm_cluster_resources():
    """A cell's cluster resources, its per-cell ones asked of the job's first sweep cell, and
    the runtime of the confirm cell's longer time limit (plan.confirm.confirm_spec)."""
    resources = dict(cell_cluster_resources())
    for key, value in resources.items():
        if callable(value):
            resources[key] = for_confirm(value)
    longest = max(
        (
            confirm_spec(group.members[0], 1.0, dict(group.settings)).settings[
                "timeout_s"
            ]
            for group in CONFIRMS.values()
        ),
        default=0,
    )
    if "runtime_min" not in SLURM:
        resources["runtime"] = max(resources["runtime"], math.ceil(longest / 60) + 10)
    return resources

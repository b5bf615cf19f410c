"""Config check, grid expansion and the lookups the rules share."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
SCRIPTS = Path(workflow.basedir) / "scripts"

from devicebench.config import ConfigError, check_config
from devicebench.devices import host_cores
from devicebench.grid import expand_grid
from devicebench.tasks import TASKS

try:
    STUDY = check_config(config)
    GRID = {cell.cell_id: cell for cell in expand_grid(STUDY)}
except ConfigError as error:
    raise WorkflowError(f"invalid config: {error}") from None

TABLE_NAMES = [
    "cells",
    "timing",
    "speedup",
    "quality",
    "cost",
    "efficiency",
    "utilization",
    "profile_ops",
    "top_ops",
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
    "utilization_timeline",
    "top_ops",
]
CHARTS = expand("results/charts/{name}.{ext}", name=CHART_NAMES, ext=["html", "png"])
# Prices are an input of the aggregates only: editing them never reruns a cell.
PRICES = STUDY.get("prices", str(Path(workflow.basedir) / "config" / "prices.yaml"))
REPORT = ["results/report/index.html", "results/report/charts.json"]
CELL_RECORDS = expand("results/cells/{cell}.json", cell=GRID)
DATASETS = {TASKS[task].dataset for task in STUDY["tasks"]}


def dataset_settings(name):
    """A dataset's source and sizes from config (synthetic by default)."""
    return {"source": "synthetic"} | STUDY.get("datasets", {}).get(name, {})


def cell_data(wildcards):
    """The manifest of the dataset a cell reads."""
    name = GRID[wildcards.cell].run_settings()["dataset"]
    return f"results/data/{name}/{dataset_settings(name)['source']}/manifest.json"


def cell_args(wildcards):
    """Only this cell's values, as run_cell.py flags."""
    return GRID[wildcards.cell].cli_args()


def cell_threads(wildcards):
    """Cores a cell occupies: its thread count ('all' means every core)."""
    threads = GRID[wildcards.cell].values["threads"]
    return workflow.cores if threads == "all" else threads


def data_args(name, source):
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
    return " ".join(args)

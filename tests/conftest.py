"""Shared fixtures: the repository root and a valid config to vary."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

# The fast tier (`python -m pytest -m fast`, under 3 minutes on 2 cores): unit tests that start no
# server, run no workflow and build no full-size model. A module joins by name here, so a new test
# module is in the full suite (CI, the README's command) first, in the fast tier when it earns it.
FAST_MODULES = frozenset(
    {
        "test_analysis",
        "test_answer",
        "test_architecture",
        "test_batch_wait",
        "test_best_table",
        "test_catalog_data",
        "test_cell_safety",
        "test_cellspec",
        "test_chart_rules",
        "test_config",
        "test_config_bounds",
        "test_config_selection",
        "test_conll",
        "test_conll_ner",
        "test_converge_runs",
        "test_decode",
        "test_serve_confirm",
        "test_engines_table",
        "test_equal_work",
        "test_fashion_mnist",
        "test_findings_wording",
        "test_flop_ratios",
        "test_format_reference",
        "test_gc_pause",
        "test_generation",
        "test_generator",
        "test_goodput",
        "test_grid",
        "test_jpeg_cost",
        "test_launchers",
        "test_malformed_records",
        "test_measurement",
        "test_ner_metrics",
        "test_pairing",
        "test_precision_math",
        "test_published_h100",
        "test_published_ratios",
        "test_readme_results",
        "test_report_page",
        "test_scaling",
        "test_scenarios",
        "test_serving_verdict",
        "test_transformer_workloads",
        "test_verdict",
        "test_verdict_agreement",
        "test_verdict_rules",
        "test_wheel_parts",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of a FAST_MODULES module `fast`."""
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in FAST_MODULES:
            item.add_marker(pytest.mark.fast)


TINY_CONFIG = {
    "study": "tiny",
    "seed": 7,
    "repetitions": 3,
    "min_repetition_s": 0.02,
    "warmup_steps": 1,
    "timeout_s": 300,
    "speedup_base": "cpu",
    "devices": {"cpu": {"threads": [1]}, "cuda": "auto"},
    "frameworks": ["torch"],
    "precisions": ["fp32"],
    "modes": ["train", "infer"],
    "batch_sizes": [32],
    "datasets": {"mnist": {"source": "synthetic", "train_samples": 256, "test_samples": 128}},
    "tasks": {
        "mnist_mlp": {"models": ["mlp"], "epochs": 1, "steps_per_epoch": 4},
        # fp32 in-process only: not the default config's CPU engines and formats of mnist_cnn
        "mnist_cnn": {
            "models": ["cnn"],
            "epochs": 1,
            "steps_per_epoch": 2,
            "precisions": ["fp32"],
            "engines": ["inprocess"],
        },
    },
    "exclude": [],
}


@pytest.fixture
def tiny_config() -> dict:
    """A small valid config; each test may change a copy."""
    return copy.deepcopy(TINY_CONFIG)


@pytest.fixture(scope="session")
def finished_study(tmp_path_factory) -> tuple[Path, dict]:
    """A tiny study run for real once per session (shared by the workflow and report tests):
    one CPU thread count, train and infer, one profiled cell, its own copy of the prices."""
    from workflow import snakemake
    from workflow import write_config as write_workflow_config

    workdir = tmp_path_factory.mktemp("study")
    config = copy.deepcopy(TINY_CONFIG)
    config["target_accuracy"] = {"mnist_mlp": 0.05}
    config["profile_cells"] = [{"task": "mnist_mlp", "mode": "train"}]
    config["prices"] = "prices.yaml"
    (workdir / "prices.yaml").write_text((REPO / "config" / "prices.yaml").read_text())
    write_workflow_config(workdir, config)
    snakemake(workdir, "--cores", "2")
    return workdir, config


def write_config(path: Path, config: dict) -> Path:
    """Write a config as YAML and return its path."""
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path

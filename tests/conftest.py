"""Shared fixtures: the repository root and a valid config to vary."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

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

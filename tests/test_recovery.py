"""The workflow's recovery steps as README gives them, and config mistakes named as they are:
a deleted record is planned again by a plain run, --config lists and mappings, a YAML syntax
error and a duplicate key name file and line, modes no task has are named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from workflow import planned_cells, planned_jobs, snakemake, write_config

from devicebench.plan.config import ConfigError
from devicebench.plan.config_files import read_yaml, typed_overrides

pytestmark = pytest.mark.workflow


def test_a_deleted_record_is_planned_again_by_a_plain_run(finished_study):
    workdir, _ = finished_study
    records = sorted((workdir / "results" / "cells").rglob("*.json"))
    victim = records[0]
    kept = victim.read_bytes()
    victim.unlink()
    try:
        jobs = planned_jobs(workdir)
        cells = planned_cells(workdir)
    finally:
        victim.write_bytes(kept)
    assert jobs == {"cell": 1, "tables": 1, "charts": 1, "report": 1, "all": 1}
    assert cells == {str(victim.relative_to(workdir))}


def test_config_lists_and_mappings_on_the_command_line(tmp_path, tiny_config):
    tiny_config["batch_sizes"] = [16]
    write_config(tmp_path, tiny_config)
    done = snakemake(
        tmp_path,
        *("--dry-run", "--cores", "1", "--config", "batch_sizes=[32]"),
        'spark={"max_failures": 2}',
    )
    cells = {line for line in done.stdout.splitlines() if "output: results/cells/" in line}
    assert cells and all("/batch~32/" in line for line in cells)


def test_typed_overrides_type_the_scalars_inside_lists_and_mappings():
    given = {"batch_sizes": ["32", "64"], "spark": {"max_failures": "2", "master": "local[2]"}}
    given |= {"study": "007", "flag": {"on": "true", "none": "null"}}
    assert typed_overrides(given) == {
        "batch_sizes": [32, 64],
        "spark": {"max_failures": 2, "master": "local[2]"},
        "study": "007",  # top level: Snakemake's own parsing, left as it is
        "flag": {"on": True, "none": None},
    }


def test_a_duplicate_key_stops_the_run_naming_file_and_lines(tmp_path, tiny_config):
    write_config(tmp_path, tiny_config)
    config = tmp_path / "config.yaml"
    config.write_text(config.read_text() + "seed: 8\n")
    done = snakemake(tmp_path, "--dry-run", "--cores", "1", check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0
    seed_line = config.read_text().splitlines().index("seed: 8") + 1
    assert f"config file {config}, line {seed_line}: key 'seed' is given twice" in out
    assert not (tmp_path / "results").exists()


def test_a_merge_key_may_be_overridden_but_a_plain_key_not_twice(tmp_path):
    """`<<: *anchor` then a key it brought is an override (study.yaml's converge cells), not a
    duplicate; the same key twice beside a merge still is."""
    merged = tmp_path / "merged.yaml"
    merged.write_text("a: &base {target: 0.88, epochs: 5}\nb: {<<: *base, target: 0.9}\n")
    assert read_yaml(merged)["b"] == {"target": 0.9, "epochs": 5}
    twice = tmp_path / "twice.yaml"
    twice.write_text("a: &base {target: 0.88}\nb: {<<: *base, epochs: 1, epochs: 2}\n")
    with pytest.raises(ConfigError, match=r"line 2: key 'epochs' is given twice"):
        read_yaml(twice)


def test_a_yaml_syntax_error_is_named_with_file_and_line_by_the_check(tmp_path):
    """Snakemake reads --configfile before the workflow runs and says only that the file is not
    valid YAML; README points to this check, which names the file and line."""
    bad = tmp_path / "study.yaml"
    bad.write_text("seed: 7\nbatch_sizes: [32, 64\nmodes: [train]\n")
    with pytest.raises(ConfigError, match=rf"config file {bad}, line \d+, column \d+: YAML"):
        read_yaml(bad)
    done = subprocess.run(
        [sys.executable, "-m", "devicebench.plan.config_files", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and f"config file {bad}, line 3" in done.stderr


def test_modes_no_task_has_are_named_as_the_cause(tmp_path, tiny_config):
    tiny_config["modes"] = ["serve"]
    write_config(tmp_path, tiny_config)
    done = snakemake(tmp_path, "--dry-run", "--cores", "1", check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "config key modes: ['serve'] is no mode of the tasks asked for" in out
    assert "mnist_mlp: train, infer" in out and "exclude" not in out


def test_the_default_config_reads_without_duplicates():
    assert read_yaml(Path(__file__).resolve().parents[1] / "config" / "config.yaml")

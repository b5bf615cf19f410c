"""Blocks: every cell of a study runs in exactly one block, and gpu_host.sh runs one block."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, write_config

from devicebench.plan.blocks import assign_blocks
from devicebench.plan.config import ConfigError, check_config, combine_configs
from devicebench.plan.config_files import read_yaml
from devicebench.plan.grid import expand_grid


def _study(config: dict) -> dict:
    return check_config(combine_configs(read_yaml(REPO / "config" / "config.yaml"), [config]))


def _two_blocks(config: dict) -> dict:
    config["devices"] = {"cpu": {"threads": [1]}}
    config["blocks"] = {
        "mlp": {"cells": [{"task": "mnist_mlp"}]},
        "cnn": {"cells": [{"task": "mnist_cnn"}]},
    }
    return config


def test_h100_blocks_hold_every_cell_once_and_pair_cpu_with_gpu():
    """Every block pairs CPU and GPU cells on one machine, but for a serve model cut in two:
    its `-gpu` block pairs the GPU with the CPU on OpenVINO, its `-cpu` block holds the CPU's
    torch cells (their precision ratio)."""
    study = _study(read_yaml(REPO / "config" / "h100.yaml"))
    cells = expand_grid(study)
    blocks = assign_blocks(study["blocks"], cells)
    assert sum(len(members) for members in blocks.values()) == len(cells)
    for name, members in blocks.items():
        devices = {cell.values["device"] for cell in members}
        if name.endswith("-cpu"):
            assert devices == {"cpu"} and all("engine" not in c.values for c in members)
            sibling = blocks[name.removesuffix("-cpu") + "-gpu"]
            engines = {c.values.get("engine") for c in sibling if c.values["device"] == "cpu"}
            assert engines == {"openvino"}, f"{name}'s sibling has CPU engines {engines}"
            continue
        if name.endswith("-gpu-serve"):  # a GPU serving search that fills a call by itself
            assert devices == {"cuda"}
            continue
        assert devices == {"cpu", "cuda"}, f"block {name} has {devices}: no pair on one machine"


def test_engine_inprocess_selects_the_cells_whose_id_names_no_engine():
    study = _study(read_yaml(REPO / "config" / "h100.yaml"))
    blocks = assign_blocks(study["blocks"], expand_grid(study))
    ids = [cell.cell_id for cell in blocks["serve-mobilenetv2-cpu"]]
    assert len(ids) == 2 and not any("engine~" in cell_id for cell_id in ids)
    assert {"precision~fp32", "precision~bf16"} == {p for i in ids for p in i.split("/")[5:6]}


def test_a_cell_in_two_blocks_is_a_config_error(tiny_config):
    config = _two_blocks(tiny_config)
    config["blocks"]["cnn"]["cells"].append({"mode": "infer"})
    study = _study(config)
    with pytest.raises(ConfigError, match=r"task~mnist_mlp.*is in blocks mlp, cnn"):
        assign_blocks(study["blocks"], expand_grid(study))


def test_a_cell_in_no_block_is_a_config_error(tiny_config):
    config = _two_blocks(tiny_config)
    del config["blocks"]["cnn"]
    study = _study(config)
    with pytest.raises(
        ConfigError, match=r"2 cells of the grid are in no block:\n  task~mnist_cnn"
    ):
        assign_blocks(study["blocks"], expand_grid(study))


def test_a_selector_that_selects_nothing_is_a_config_error(tiny_config):
    config = _two_blocks(tiny_config)
    config["blocks"]["cnn"]["cells"].append({"task": "mnist_cnn", "batch_size": 999})
    study = _study(config)
    with pytest.raises(ConfigError, match=r"blocks.cnn.cells\[1\].*selects no cell"):
        assign_blocks(study["blocks"], expand_grid(study))


def test_a_block_with_an_unknown_axis_is_refused_by_the_schema(tiny_config):
    config = _two_blocks(tiny_config)
    config["blocks"]["cnn"]["cells"] = [{"tsak": "mnist_cnn"}]
    with pytest.raises(ConfigError, match="tsak"):
        _study(config)


def test_the_workflow_refuses_a_bad_block_before_any_job(tmp_path, tiny_config):
    from workflow import snakemake
    from workflow import write_config as write_workflow_config

    config = _two_blocks(tiny_config)
    del config["blocks"]["cnn"]
    write_workflow_config(tmp_path, config)
    done = snakemake(tmp_path, "--dry-run", "--cores", "1", check=False)
    assert done.returncode != 0
    assert "invalid config: config key blocks: 2 cells of the grid are in no block" in (
        done.stdout + done.stderr
    )
    assert not (tmp_path / "results").exists()


def test_cpu_steps_and_threads_apply_to_the_cpu_cells_of_one_task(tiny_config):
    tiny_config["devices"] = {"cpu": {"threads": [2]}, "cuda": True}
    tiny_config["check_devices"] = False
    tiny_config["tasks"]["mnist_mlp"] |= {"cpu_steps_per_epoch": 1, "cpu_threads": [1, "all"]}
    cells = expand_grid(_study(tiny_config))
    mlp = [c for c in cells if c.values["task"] == "mnist_mlp"]
    cnn = [c for c in cells if c.values["task"] == "mnist_cnn"]
    steps = {(c.values["device"], dict(c.settings)["steps_per_epoch"]) for c in mlp}
    assert steps == {("cpu", 1), ("cuda", 4)}
    assert {c.values["threads"] for c in mlp if c.values["device"] == "cpu"} == {1, "all"}
    assert {c.values["threads"] for c in cnn if c.values["device"] == "cpu"} == {2}
    assert {dict(c.settings)["steps_per_epoch"] for c in cnn} == {2}


def test_test_samples_caps_one_tasks_train_and_infer_cells_on_both_devices(tiny_config):
    tiny_config["devices"] = {"cpu": {"threads": [2]}, "cuda": True}
    tiny_config["check_devices"] = False
    tiny_config["datasets"] = {"mnist": {"source": "synthetic", "test_samples": 256}}
    tiny_config["tasks"]["mnist_mlp"] |= {"test_samples": 64}
    cells = expand_grid(_study(tiny_config))
    mlp = {
        (c.values["device"], dict(c.settings).get("test_samples"))
        for c in cells
        if c.values["task"] == "mnist_mlp"
    }
    assert mlp == {("cpu", 64), ("cuda", 64)}
    cnn = [c for c in cells if c.values["task"] == "mnist_cnn"]
    assert cnn and all("test_samples" not in dict(c.settings) for c in cnn)  # hashes unchanged


def test_test_samples_above_the_data_sets_is_a_config_error(tiny_config):
    tiny_config["datasets"] = {"mnist": {"source": "synthetic", "test_samples": 256}}
    tiny_config["tasks"]["mnist_mlp"] |= {"test_samples": 512}
    with pytest.raises(
        ConfigError,
        match=r"tasks.mnist_mlp.test_samples: 512 is more than the 256 held-out samples "
        r"of datasets.mnist",
    ):
        _study(tiny_config)


def test_blocks_script_lists_a_block_and_its_missing_records(tmp_path, tiny_config):
    path = write_config(tmp_path / "study.yaml", _two_blocks(tiny_config))
    script = [sys.executable, str(REPO / "scripts" / "blocks.py"), str(path)]
    table = subprocess.run(script, capture_output=True, text=True, check=True).stdout
    assert "| mlp | 2 | 2 | 0 |" in table and "| cnn | 2 | 2 | 0 |" in table
    listed = subprocess.run(
        [*script, "--block", "cnn"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(listed) == 2 and all("task~mnist_cnn" in line for line in listed)
    have = tmp_path / "records" / Path(listed[0]).relative_to("results/cells")
    have.parent.mkdir(parents=True)
    have.write_text("{}")
    missing = subprocess.run(
        [*script, "--block", "cnn", "--missing", str(tmp_path / "records")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert missing == listed[1:]
    wrong = subprocess.run([*script, "--block", "rnn"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "no block 'rnn'; the blocks are mlp, cnn" in wrong.stderr
    both = subprocess.run(
        [*script, "--block", "cnn,mlp"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert both[:2] == listed and len(both) == 4 and "task~mnist_mlp" in both[2]
    infer = subprocess.run(
        [*script, "--pattern", "mode~infer"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(infer) == 2 and {"task~mnist_mlp", "task~mnist_cnn"} == {
        p.split("/")[2] for p in infer
    }


def test_gpu_host_runs_one_block_and_says_what_the_call_was(tmp_path, tiny_config):
    """The real script on a copy of the repository: one block's cells run, the other's do not;
    a second call with both blocks runs them one after the other, only what has no record."""
    repo = tmp_path / "repo"
    for part in ("src", "scripts", "rules", "config", "benchmarks", "profiles", "envs"):
        shutil.copytree(REPO / part, repo / part, ignore=shutil.ignore_patterns("results"))
    shutil.copy(REPO / "Snakefile", repo / "Snakefile")
    tiny_config["tasks"]["mnist_cnn"]["steps_per_epoch"] = 1
    write_config(repo / "study.yaml", _two_blocks(tiny_config))
    env = dict(os.environ, DEVICEBENCH_CODE_VERSION="testcommit")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    command = ["bash", "benchmarks/gpu_host.sh", "study.yaml", "300", "out", "cnn"]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[gpu_host] cnn: 2 cells to run" in done.stdout
    records = sorted((repo / "results" / "cells").rglob("*.json"))
    assert len(records) == 2 and all("task~mnist_cnn" in str(p) for p in records)
    for path in records:
        record = json.loads(path.read_text())
        assert record["status"] == "ok"
        assert record["provenance"]["code_version"].endswith("+testcommit")
    (call_file,) = (repo / "out").glob("call-*.json")
    call = json.loads(call_file.read_text())
    assert call["selection"] == "cnn" and call["snakemake_exit"] == 0
    assert call["cells_asked"] == call["records_written"] == 2
    assert call["cells_without_record"] == []
    assert call["code_version"].endswith("+testcommit")
    assert list((repo / "out").glob("records-*.tgz"))
    command[-1] = "cnn,mlp"
    again = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "[gpu_host] cnn: 0 cells to run" in again.stdout
    assert "[gpu_host] mlp: 2 cells to run" in again.stdout
    assert len(list((repo / "results" / "cells").rglob("*.json"))) == 4
    (call_file,) = set((repo / "out").glob("call-*.json")) - {call_file}
    call = json.loads(call_file.read_text())
    assert call["selection"] == "cnn,mlp" and call["cells_asked"] == call["records_written"] == 2
    # a block run again whole: its records are made anew, the other block's are kept
    before = {p: p.stat().st_mtime_ns for p in (repo / "results" / "cells").rglob("*.json")}
    command[-1] = "cnn"
    whole = subprocess.run(
        command, cwd=repo, env=env | {"DEVICEBENCH_WHOLE": "1"}, capture_output=True, text=True
    )
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert "[gpu_host] cnn: 2 cells to run" in whole.stdout
    after = {p: p.stat().st_mtime_ns for p in (repo / "results" / "cells").rglob("*.json")}
    assert after.keys() == before.keys()
    assert {"task~mnist_cnn" in str(p) for p in before if after[p] != before[p]} == {True}
    assert sum(after[p] != before[p] for p in before) == 2


@pytest.mark.parametrize("given", ["e7938f1", "0.1.0+e7938f1"])
def test_the_code_version_a_call_names_is_version_plus_commit_either_way(monkeypatch, given):
    """A commit or a whole version string: the records say 0.1.0+e7938f1, not 0.1.0+0.1.0+..."""
    from devicebench import __version__
    from devicebench.run.runner import code_version

    monkeypatch.setenv("DEVICEBENCH_CODE_VERSION", given.replace("0.1.0", __version__))
    assert code_version() == f"{__version__}+e7938f1"


def _record(folder: Path, cell, boot: str, version: str = "0.1.0+abc") -> None:
    path = folder / f"{cell.cell_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"environment": {"boot_id": boot}, "provenance": {"code_version": version}}
    path.write_text(json.dumps(record | {"provenance": record["provenance"] | {"created": "x"}}))


def test_a_block_is_in_only_whole_from_one_machine_and_one_code_version(tmp_path, tiny_config):
    from devicebench.plan.block_status import block_state

    study = _study(_two_blocks(tiny_config))
    blocks = assign_blocks(study["blocks"], expand_grid(study))
    mlp, cnn = blocks["mlp"], blocks["cnn"]
    assert block_state(mlp, tmp_path)["state"] == "waits: not run yet"
    _record(tmp_path, mlp[0], "boot-a")
    assert block_state(mlp, tmp_path)["state"] == "waits: 1 cells without a record"
    _record(tmp_path, mlp[1], "boot-b")
    assert block_state(mlp, tmp_path)["state"] == "waits: records from 2 machines"
    _record(tmp_path, mlp[1], "boot-a", "0.1.0+def")
    assert block_state(mlp, tmp_path)["state"] == "waits: records from 2 code versions"
    _record(tmp_path, mlp[1], "boot-a", "0.1.0+0.1.0+abc")  # one commit, prefix written twice
    assert block_state(mlp, tmp_path) | {"measured": ""} == {
        "cells": 2, "cpu": 2, "records": 2, "boot_ids": ["boot-a"],
        "code_versions": ["0.1.0+abc"], "measured": "", "state": "in",
    }  # fmt: skip
    assert block_state(cnn, tmp_path)["records"] == 0


def test_the_published_h100_readme_says_which_blocks_are_in():
    published = REPO / "results" / "published" / "h100"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "blocks.py"), str(REPO / "config" / "h100.yaml"),
         "--records", str(published / "cells"), "--readme", str(published / "README.md"),
         "--check"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = (published / "README.md").read_text().split("<!-- blocks:begin -->")[1]
    assert "| in |" in table.split("<!-- blocks:end -->")[0]

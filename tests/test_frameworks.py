"""Every task in every framework: same parameter count, learns above chance, threads applied."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from conftest import REPO

from devicebench.cell import _worker_env
from devicebench.data import prepare_dataset
from devicebench.frameworks import FRAMEWORKS
from devicebench.workloads import specs

SIZES = {"mnist": (1024, 256), "cifar10": (768, 128), "imdb": (512, 256), "nietzsche": (256, 128)}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("catalog-data")
    for name, (n_train, n_test) in SIZES.items():
        prepare_dataset(name, "synthetic", root / name, train_samples=n_train, test_samples=n_test)
    return root


@pytest.fixture(scope="module")
def probes(data_dir, tmp_path_factory):
    """One fresh process per framework, as cells run, each over all six tasks."""
    out_dir = tmp_path_factory.mktemp("probes")
    results = {}
    for framework in FRAMEWORKS:
        out = out_dir / f"{framework}.json"
        env = _worker_env(2, "cpu", framework)
        env["PYTHONPATH"] = f"{REPO / 'src'}:{REPO / 'tests'}"
        done = subprocess.run(
            [
                sys.executable,
                str(REPO / "tests" / "framework_probe.py"),
                framework,
                str(data_dir),
                str(out),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{framework} probe failed:\n{done.stdout}\n{done.stderr}"
        results[framework] = json.loads(out.read_text())
    return results


def test_parameter_counts_match_across_frameworks(probes):
    for task in probes[FRAMEWORKS[0]]:  # the classic six; workloads/ and serving test their own
        counts = {fw: probes[fw][task]["parameters"] for fw in FRAMEWORKS}
        assert len(set(counts.values())) == 1, f"{task}: {counts}"


def test_every_framework_learns_every_task_above_chance(probes):
    for framework, tasks in probes.items():
        for task, result in tasks.items():
            spec = specs()[task]
            classes = {"binary_text": 2, "next_char": 57}.get(spec.kind, spec.num_classes)
            chance = 1.0 / classes  # a uniform random guess
            sigma = (chance * (1 - chance) / result["test_samples"]) ** 0.5
            floor = chance + 3 * sigma
            # above chance in accuracy (3 sigma) or in likelihood (test loss well below a
            # uniform guess's log(classes)): a few steps may move the one before the other
            learned = result["accuracy"] > floor or result["loss"] < 0.9 * math.log(classes)
            assert learned, f"{framework} {task}: {result} (floor {floor:.2f})"


@pytest.mark.parametrize("framework", ["torch", "keras-tensorflow"])
def test_a_one_thread_cell_reports_one_thread(framework, data_dir, tmp_path):
    out = tmp_path / "cell.json"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "run_cell.py"),
            "task=mnist_mlp",
            f"framework={framework}",
            "threads=1",
            "batch_size=32",
            "epochs=1",
            "steps_per_epoch=2",
            "warmup_steps=1",
            "--data",
            str(data_dir / "mnist" / "manifest.json"),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    record = json.loads(out.read_text())
    assert record["status"] == "ok", record["message"]
    reported = record["environment"]["threads_reported"]
    if framework == "torch":
        assert reported == {"torch_num_threads": 1}
    else:
        assert reported == {"tf_intra_op_threads": 1, "tf_inter_op_threads": 1}
    assert record["axes"]["threads"] == 1
    assert record["provenance"]["settings"]["threads_resolved"] == 1

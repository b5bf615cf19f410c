"""A cell's fixed cost: its record's stage marks are in order, benchmarks/cell_overhead.py reads a
real record folder and Snakemake's log of the jobs that wrote it (and older records without
marks), and the cuts keep what they skip out of the cell (no torch in the runner's skip check,
no TensorFlow in keras-torch, atexit handlers kept by the fast exit)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TINY_CONFIG
from workflow import planned_cells, snakemake, write_config

from devicebench.aggregate import fixed_cost
from devicebench.snakemake_log import gaps, read_jobs

SCRIPT = REPO / "benchmarks" / "cell_overhead.py"
PUBLISHED = REPO / "results" / "published" / "h100"
SUPERSEDED = PUBLISHED / "superseded" / "2026-11-23-mixed-leases"
BEFORE = ["process_start", "runner_imported", "worker_spawn", "worker_imported", "torch_imported"]
BEFORE += ["determinism_set", "data_loaded", "backend_built", "model_built"]
AFTER = ["evaluated", "run_done", "flops_counted", "environment_captured", "worker_exited"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """Two tiny CPU cells (mnist_mlp train and infer) run by the workflow itself."""
    workdir = tmp_path_factory.mktemp("overhead")
    config = copy.deepcopy(TINY_CONFIG)
    config["devices"] = {"cpu": {"threads": [1]}}
    config["tasks"] = {"mnist_mlp": TINY_CONFIG["tasks"]["mnist_mlp"]}
    write_config(workdir, config)
    snakemake(workdir, "--cores", "2", *sorted(planned_cells(workdir)))
    return workdir


def records(workdir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((workdir / "results/cells").rglob("*.json"))]


def test_the_record_has_its_stage_marks_in_order(tiny_run):
    found = records(tiny_run)
    assert {r["axes"]["mode"] for r in found} == {"train", "infer"}
    for record in found:
        assert record["status"] == "ok", record["message"]
        timings = record["timings"]
        marks = timings["marks"]
        names = list(marks)
        assert list(marks.values()) == sorted(marks.values())  # stored in the order they happened
        assert names[: len(BEFORE)] == BEFORE
        assert names[-1] == "record_written"
        before = [marks[n] for n in [*BEFORE, "warmup_done"]] + [timings["timed_start"]]
        assert before == sorted(before)
        after = [timings["timed_end"], *(marks[n] for n in [*AFTER, "record_written"])]
        assert after == sorted(after)
        if record["axes"]["mode"] == "infer":
            assert marks["model_built"] <= marks["trained_untimed"] <= marks["warmup_done"]


def test_cell_overhead_reads_the_records_and_the_snakemake_log(tiny_run, tmp_path):
    logs = sorted((tiny_run / ".snakemake" / "log").glob("*.snakemake.log"))
    assert logs, "snakemake wrote no log"
    out = tmp_path / "overhead.json"
    command = [sys.executable, str(SCRIPT), str(tiny_run / "results/cells"), "--json", str(out)]
    for log in logs:
        command += ["--log", str(log)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "| mnist_mlp | cpu | train | 1 | 1 |" in done.stdout
    assert "| mnist_mlp | cpu | infer | 1 | 1 |" in done.stdout
    document = json.loads(out.read_text())
    assert [g["mode"] for g in document["groups"]] == ["infer", "train"]
    for group in document["groups"]:
        assert group["start_from"] == ["process_start"]
        assert list(group["phases"])[:3] == BEFORE[1:4]
        assert "timed_start" in group["phases"] and "warmup_done" in group["phases"]
        assert "record_written" in group["after_phases"]
        for figure in ("fixed_s", "window_s", "after_s", "job_s", "spawn_s"):
            assert group[figure] is not None, figure  # the job was found in the log
    assert len(document["gaps_s"]) == 1  # one record written before the other cell started


def test_published_records_without_marks_start_at_their_job_in_the_log():
    """The earlier published H100 records (kept as superseded) predate the stage marks."""
    logs = sorted((SUPERSEDED / "logs").glob("snakemake-*.log"))
    assert logs
    command = [sys.executable, str(SCRIPT), str(SUPERSEDED / "cells")]
    done = subprocess.run(
        command + [arg for log in logs for arg in ("--log", str(log))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "created (1 s)" in done.stdout  # the only stage an older record has
    assert "log (1 s)" in done.stdout.splitlines()[-1]  # start from: the job's start


def test_the_log_parser_finds_a_jobs_start_and_end():
    jobs = read_jobs(SUPERSEDED / "logs" / "snakemake-slice2.log")
    cell = "task~mnist_cnn/model~cnn/framework~torch/device~cuda/threads~all/precision~fp32/"
    (job,) = [j for j in jobs if j.cell_id == cell + "batch~128/mode~train"]
    assert (job.jobid, job.rule) == (46, "cell")
    assert job.end - job.start == 18  # [07:35:14] to [07:35:32] in the log
    assert gaps(jobs)[46] == 0  # the next cell started in the same second
    assert {j.rule for j in jobs} == {"cell", "prepare_data"}


def test_a_record_that_is_not_timed_has_no_fixed_cost():
    row = fixed_cost.record_cost({"cell_id": "x", "axes": {"task": "t"}, "status": "skipped"})
    assert (row["fixed_s"], row["window_s"], row["timed"]) == (None, None, False)


def test_the_runners_engine_skip_check_imports_no_torch():
    code = (
        "import sys; from devicebench import engines; "
        "s = dict(engine='onnxruntime', precision='fp32', mode='infer', framework='torch', "
        "device='cpu'); print(engines.skip_reason(s)); print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[1] == "False"


def test_keras_torch_is_seeded_as_keras_does_without_tensorflow():
    code = """
import random, sys
import keras, numpy as np, torch
from devicebench.frameworks.keras_seed import set_random_seed

def draws():
    return [random.random(), float(np.random.rand()), float(torch.rand(1)),
            float(keras.random.uniform((1,))[0])]

set_random_seed(keras, 11)
ours = draws()
print("tensorflow" in sys.modules)
keras.utils.set_random_seed(11)
print(ours == draws())
"""
    env = dict(os.environ, KERAS_BACKEND="torch", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_the_fast_exit_keeps_atexit_handlers_and_output(tmp_path):
    flag = tmp_path / "atexit-ran"
    code = (
        "import atexit; from devicebench.run.processes import exit_without_teardown; "
        f"atexit.register(lambda: open({str(flag)!r}, 'w').write('ran')); "
        "print('result written', end=''); exit_without_teardown(3)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (3, "result written")
    assert flag.read_text() == "ran"


def test_text_classify_tokenizes_once_and_loads_the_same_arrays(tmp_path):
    from devicebench.data import prepare_dataset
    from devicebench.workloads import get

    manifest = prepare_dataset("imdb", "synthetic", tmp_path, train_samples=32, test_samples=16)
    settings = {"data": str(manifest), "task": "text_classify", "model": "bert-tiny"}
    workload = get("text_classify")
    first = workload.load_data(settings | {"seq_len": 64}).splits
    (stored,) = tmp_path.glob("tokens-64-*.npz")
    again = workload.load_data(settings | {"seq_len": 64}).splits  # from the file
    assert first.keys() == again.keys() == {"train", "test"}
    for split in first:
        assert first[split].keys() == again[split].keys()
        for key, array in first[split].items():
            assert array.dtype == again[split][key].dtype
            assert (array == again[split][key]).all()
    shorter = workload.load_data(settings | {"seq_len": 32, "train_samples": 8}).splits
    assert shorter["train"]["input_ids"].shape == (8, 32)
    assert len(list(tmp_path.glob("tokens-*.npz"))) == 2 and stored.exists()


def test_a_records_two_flop_counts_build_the_network_once_and_count_the_same(monkeypatch, tmp_path):
    import torch

    from devicebench.measure import flops
    from devicebench.measure.flops import count_flops
    from devicebench.workloads import model_flops, text_classify

    built, original = [], text_classify.build_model

    def build(name, seed):
        built.append(name)
        return original(name, seed)

    monkeypatch.setenv("DEVICEBENCH_FLOPS_CACHE", str(tmp_path))  # no count cached by a study
    monkeypatch.setattr(flops, "_LAST_NET", None)
    monkeypatch.setattr(text_classify, "build_model", build)
    counts = model_flops("text_classify", "bert-tiny", {"seq_len": 32})
    assert built == ["bert-tiny"]
    inputs = {
        "input_ids": torch.full((1, 32), len(text_classify.SPECIALS), dtype=torch.long),
        "attention_mask": torch.ones(1, 32, dtype=torch.long),
    }
    for mode in ("train", "infer"):  # each on a network of its own, as before the reuse
        fresh = count_flops(original("bert-tiny", 0), inputs, mode)
        assert counts[f"flops_per_sample_{mode}"] == fresh


def test_a_bf16_cell_scores_its_test_set_once_for_quality_and_agreement(tmp_path, monkeypatch):
    from devicebench.data import prepare_dataset
    from devicebench.frameworks.torch_backend import TorchBackend
    from devicebench.plan.grid import make_cell
    from devicebench.run import worker

    manifest = prepare_dataset("mnist", "synthetic", tmp_path, train_samples=256, test_samples=64)
    values = dict(task="mnist_mlp", model="mlp", framework="torch", device="cpu", threads=1)
    values |= dict(precision="bf16", batch_size=32, mode="infer")
    run = {"dataset": "mnist", "epochs": 1, "steps_per_epoch": 2, "learning_rate": 0.001,
           "repetitions": 1, "warmup_steps": 1, "seed": 1, "timeout_s": 300, "noise_cov": 0.1,
           "min_repetition_s": 0.0, "sample_utilization": False}  # fmt: skip
    settings = make_cell(values, {}, run).run_settings()
    settings |= {"threads_resolved": 1, "data": str(manifest)}
    calls, evaluate = [], TorchBackend.evaluate

    def counted(self):
        calls.append(self)
        return evaluate(self)

    monkeypatch.setattr(TorchBackend, "evaluate", counted)
    result = worker.measure(settings)
    assert result["status"] == "ok"
    assert result["quality"]["agreement_fp32"] is not None  # the fp32 reference was scored
    assert len(calls) == 1  # the cell's own model: once, by the driver

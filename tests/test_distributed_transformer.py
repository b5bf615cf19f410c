"""Data-parallel transformer cells for real: two gloo ranks under torchrun against one process."""

from __future__ import annotations

import pytest

from devicebench.data import prepare_dataset
from devicebench.distributed.transformer import distribute
from devicebench.distributed.window import world_throughput
from devicebench.plan.grid import make_cell
from devicebench.run.runner import run_cell
from devicebench.workloads import conll_ner

# ViT has no dropout and layer norm only, so two ranks and one process draw no different random
# numbers: the same initial weights and the same shuffled order give the same global batches.
RUN = {
    "dataset": "cifar10",
    "epochs": 1,
    "steps_per_epoch": 4,
    "learning_rate": 1e-3,
    "repetitions": 2,
    "warmup_steps": 1,
    "seed": 7,
    "timeout_s": 300,
    "noise_cov": 0.1,
}


def cell(batch: int, gpus: int | None):
    values = {
        "task": "cifar10_finetune",
        "model": "vit-tiny",
        "framework": "torch",
        "device": "cpu",
        "threads": 2,
        "precision": "fp32",
        "batch_size": batch,
        "mode": "train",
    }
    extra = {"compile": "eager", "image_size": "native"} | ({"gpus": gpus} if gpus else {})
    return make_cell(values, extra, RUN)


@pytest.fixture(scope="module")
def cifar10(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cifar10")
    prepare_dataset("cifar10", "synthetic", folder, seed=7, train_samples=128, test_samples=64)
    return folder / "manifest.json"


def test_two_gloo_ranks_of_a_transformer_equal_one_process_at_the_global_batch(cifar10, tmp_path):
    two = run_cell(cell(8, 2), data=cifar10, out=tmp_path / "ddp.json")
    one = run_cell(cell(16, None), data=cifar10, out=tmp_path / "global.json")
    small = run_cell(cell(8, None), data=cifar10, out=tmp_path / "per_device.json")
    for record in (two, one, small):
        assert record["status"] == "ok", record["message"]
    assert "DistributedDataParallel over 2 ranks" in two["model"]["fit_loop"]
    assert two["model"]["precision_math"] == "fp32"  # the DDP path sets the math too
    assert two["model"]["precision_flags"]["cudnn_allow_tf32"] is False
    assert two["distributed"]["world_size"] == 2 and two["distributed"]["global_batch_size"] == 16
    # both ranks' samples over the synchronised window: the one process's samples per pass
    assert two["throughput"]["samples_per_pass"] == one["throughput"]["samples_per_pass"]
    rate = two["throughput"]["samples_per_pass"] / two["timings"]["median_s"]
    assert two["throughput"]["samples_per_s"] == pytest.approx(rate)
    assert len(two["throughput"]["samples_per_s_by_rank"]) == 2
    # the same weights after the same steps: the held-out loss agrees to float rounding; the
    # per-device batch alone (one process, batch 8) trains to something else
    assert two["quality"]["loss"] == pytest.approx(one["quality"]["loss"], rel=1e-4)
    gap = abs(two["quality"]["loss"] - one["quality"]["loss"])
    assert abs(small["quality"]["loss"] - one["quality"]["loss"]) > 20 * max(gap, 1e-7)


def test_world_throughput_counts_every_rank_over_the_longest_window():
    ranks = [
        {"window_s": [1.0, 2.0], "passes": [1, 2], "samples_per_pass": 100, "samples_per_s": 100.0},
        {"window_s": [1.25, 1.5], "passes": [1, 2], "samples_per_pass": 100, "samples_per_s": 80.0},
    ]
    counted = world_throughput(ranks, noise_cov=0.1)
    assert counted["timings"]["window_s"] == [1.25, 2.0]
    assert counted["timings"]["repetitions_s"] == [1.25, 1.0]  # per pass
    assert counted["samples_per_s"] == pytest.approx(200 / 1.125)  # not 2 x rank 0's 100
    ranks[1]["passes"] = [1, 3]
    with pytest.raises(RuntimeError, match="different passes"):
        world_throughput(ranks, noise_cov=0.1)


def test_a_loop_without_a_data_parallel_version_is_an_error_or_skipped():
    with pytest.raises(RuntimeError, match="not data-parallel"):
        distribute(object())
    settings = {"model": "bert_tokencls_tiny", "framework": "torch", "gpus": 2}
    assert "no data-parallel version" in conll_ner.skip_reason(settings)

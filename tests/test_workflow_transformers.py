"""The transformer workloads end to end through Snakemake: data (and tokenizer) preparation, one
tiny cell of each new task, Keras cells without a port recorded skipped, into the tables."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
from conftest import TINY_CONFIG
from workflow import REPO, planned_cells, snakemake, write_config

pytestmark = pytest.mark.workflow


def _config() -> dict:
    config = copy.deepcopy(TINY_CONFIG)
    config["frameworks"] = ["torch", "keras-torch"]
    config["modes"] = ["train"]
    config["datasets"] = {
        "imdb": {"source": "synthetic", "train_samples": 64, "test_samples": 16},
        "cifar10": {"source": "synthetic", "train_samples": 64, "test_samples": 16},
    }
    config["tasks"] = {
        "text_classify": {
            "models": ["bert-tiny"],
            "batch_sizes": [8],
            "epochs": 1,
            "steps_per_epoch": 2,
            "seq_lens": [32],
            "precisions": ["fp32"],  # not the quick config's CPU formats of text_classify
            "engines": ["inprocess"],
        },
        "cifar10_finetune": {
            "models": ["vit-tiny"],
            "batch_sizes": [8],
            "epochs": 1,
            "steps_per_epoch": 2,
        },
    }
    return config


def test_one_tiny_cell_of_each_transformer_task_reaches_the_tables(tmp_path):
    write_config(tmp_path, _config())
    snakemake(tmp_path, "--cores", "2", "results/tables/cells.csv")
    cells = pd.read_csv(tmp_path / "results" / "tables" / "cells.csv")
    cpu = cells[cells.device == "cpu"]
    ok = cpu[cpu.framework == "torch"]
    assert sorted(ok.task) == ["cifar10_finetune", "text_classify"]
    assert (ok.status == "ok").all(), ok[["task", "status", "message"]]
    assert (ok.samples_per_s > 0).all()
    assert ok.accuracy.isna().all() and set(ok.quality_na) == {"synthetic data"}  # no figure shown
    assert (ok.flops_per_sample > 0).all()  # counted at the cell's seq_len / image size
    skipped = cpu[cpu.framework == "keras-torch"]
    assert set(skipped.status) == {"skipped"} and len(skipped) == 2
    assert skipped.message.str.contains("no Keras port").all()  # bert-tiny, vit-tiny
    # the tokenizer was trained when the data was prepared, next to the manifest
    assert (tmp_path / "results" / "data" / "imdb" / "synthetic" / "wordpiece-30522.json").exists()
    records = [json.loads(p.read_text()) for p in (tmp_path / "results" / "cells").rglob("*.json")]
    text = next(r for r in records if r["axes"]["task"] == "text_classify" and r["status"] == "ok")
    assert text["axes"]["seq_len"] == 32 and text["axes"]["compile"] == "eager"
    assert text["model"]["parameters"] == 4_386_178  # bert_uncased_L-2_H-128_A-2 + 2-class head


def test_the_study_config_plans_every_transformer_model(tmp_path):
    (tmp_path / "config.yaml").write_text((REPO / "config" / "study.yaml").read_text())
    planned = planned_cells(tmp_path)
    for task, models in {
        "text_classify": ["bert-base", "roberta-base", "distilbert-base", "tinybert", "minilm"],
        "cifar10_finetune": [
            "convnext-tiny",
            "convnext-small",
            "convnextv2-nano",
            "convnextv2-tiny",
            "vit-base-patch16",
            "deit-tiny",
            "deit-small",
            "deit-base",
            "deit-base-distilled",
            "resnet-50",
        ],
        "serve_text": ["bert-base", "roberta-base", "distilbert-base", "tinybert", "minilm"],
    }.items():
        for model in models:
            wanted = f"task~{task}/model~{model}/framework~torch/device~cuda"
            assert any(wanted in path for path in planned), (task, model)
    # the Keras ports (keras.applications): keras-torch on the GPU, keras-tensorflow on the CPU
    for model in ("convnext-tiny", "convnext-small", "resnet-50"):
        for framework, device in (("keras-torch", "cuda"), ("keras-tensorflow", "cpu")):
            wanted = f"task~cifar10_finetune/model~{model}/framework~{framework}/device~{device}"
            assert any(wanted in path for path in planned), (model, framework)

"""One tiny conll_ner cell through the real workflow: data, tokenizer, cell, tables, findings."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from workflow import snakemake, write_config

pytestmark = pytest.mark.workflow

CONFIG = {
    "study": "tiny-ner",
    "seed": 7,
    "repetitions": 3,
    "min_repetition_s": 0.01,
    "warmup_steps": 1,
    "timeout_s": 300,
    "speedup_base": "cpu",
    "devices": {"cpu": {"threads": [1]}, "cuda": False},
    "frameworks": ["torch"],
    "precisions": ["fp32"],
    "modes": ["train"],
    "batch_sizes": [8],
    "datasets": {"conll2003": {"source": "synthetic", "train_samples": 32, "test_samples": 16}},
    "tasks": {
        "conll_ner": {
            "models": ["bilstm_cnn_bert_tiny"],
            "epochs": 1,
            "steps_per_epoch": 2,
            "embeddings": ["live"],
            "train_fractions": [1.0],
        }
    },
    "exclude": [],
}


def test_one_tiny_conll_ner_cell_reaches_the_tables(tmp_path):
    write_config(tmp_path, CONFIG)
    snakemake(tmp_path, "--cores", "1", "results/tables/quality.csv")
    records = list((tmp_path / "results" / "cells").rglob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["status"] == "ok", record.get("message")
    assert record["axes"]["embedding"] == "live"
    assert record["data"]["synthetic"] is True and record["data"]["dataset"] == "conll2003"
    for key in ("f1_micro", "f1_macro", "precision_micro", "recall_micro", "accuracy"):
        assert 0.0 <= record["quality"][key] <= 1.0, key
    assert record["model"]["flops_per_sample_train"] > 0
    assert (
        tmp_path / "results" / "data" / "conll2003" / "synthetic" / "wordpiece-cased.json"
    ).exists()

    tables = tmp_path / "results" / "tables"
    # synthetic data: the record keeps its scores, the tables show none and say why
    quality = pd.read_csv(tables / "quality.csv")
    row = quality[quality.task.eq("conll_ner")].iloc[0]
    assert math.isnan(row.f1_micro) and row.embedding == "live" and bool(row.synthetic)
    cells = pd.read_csv(tables / "cells.csv")
    assert cells.precision_micro.isna().all() and set(cells.quality_na) == {"synthetic data"}

    from devicebench.report.findings import entity_scores

    assert entity_scores(cells, "conll_ner") == []  # no F1 sentence about a synthetic task

"""scripts/report.py reads a study config the way the workflow does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _report_script():
    spec = importlib.util.spec_from_file_location("report_script", REPO / "scripts" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_study_config_is_completed_by_the_default_as_in_the_workflow():
    script = _report_script()
    study = script.study_settings(REPO / "config" / "h100.yaml")
    assert study["study"] == "h100" and study["repetitions"] == 3
    default = script.study_settings(REPO / "config" / "config.yaml")
    # settings h100.yaml leaves out (or leaves empty) come from the default, as in the rule
    assert study["target_accuracy"] == default["target_accuracy"] != {}
    assert study["noise_cov"] == default["noise_cov"]
    assert set(study["tasks"]) == {
        "mnist_mlp",
        "mnist_cnn",
        "cifar10_cnn",
        "imdb_fasttext",
        "imdb_bilstm",
        "textgen_lstm",
        "text_classify",
        "cifar10_finetune",
        "conll_ner",
        "serve_image",
        "serve_text",
        "textgen_llm",
    }
    assert script.study_settings(REPO / "config" / "missing.yaml") == {}

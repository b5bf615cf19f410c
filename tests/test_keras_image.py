"""cifar10_finetune's Keras ports (keras.applications): they train and infer on both Keras
backends, match the transformers models' parameter counts, one runs as a cell into its record,
and the models without a port are skipped saying why."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import REPO

from devicebench.cell import _worker_env
from devicebench.data import prepare_dataset
from devicebench.workloads import cifar10_finetune, conll_ner, text_classify
from devicebench.workloads.cifar10_finetune.keras_port import APPLICATIONS

BACKENDS = ("keras-torch", "keras-tensorflow")
POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    """One fresh process per Keras backend, as cells run (KERAS_BACKEND set before import)."""
    out_dir = tmp_path_factory.mktemp("keras-image")
    results = {}
    for framework in BACKENDS:
        out = out_dir / f"{framework}.json"
        env = _worker_env(2, "cpu", framework)
        env["PYTHONPATH"] = f"{REPO / 'src'}:{REPO / 'tests'}"
        done = subprocess.run(
            ["nice", sys.executable, str(REPO / "tests" / "keras_image_probe.py"), framework, out],
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert done.returncode == 0, f"{framework} probe failed:\n{done.stdout}\n{done.stderr}"
        results[framework] = json.loads(out.read_text())
    return results


def _transformers(model: str, num_labels: int) -> tuple[int, int]:
    """(trainable parameters, output channels of its convolutions) of the transformers twin."""
    with torch.device("meta"):
        net = cifar10_finetune.build_model(model, 0, num_labels=num_labels)
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    no_bias = sum(m.out_channels for m in convs if m.bias is None)
    return sum(p.numel() for p in net.parameters() if p.requires_grad), no_bias


@pytest.mark.parametrize("framework", BACKENDS)
def test_every_port_trains_and_infers_at_32_px(probes, framework):
    cases = probes[framework]["cases"]
    assert {case["model"] for case in cases} == set(APPLICATIONS)
    compiled = [case for case in cases if case["compile"] == "compiled"]
    assert len(compiled) == (framework == "keras-tensorflow")  # see keras_image_probe.COMPILED
    for case in cases:
        name = f"{framework} {case['model']} {case['precision']} {case['compile']}"
        assert case["weights_changed"], f"{name}: a training step left the weights as they were"
        assert case["restored_on_new_model"], f"{name}: new_model did not restore the weights"
        assert len(case["latencies"]) == 2 and all(t > 0 for t in case["latencies"]), name
        assert len(case["predicted"]) == 8 and set(case["predicted"]) <= set(range(10)), name
        assert np.isfinite(case["loss"]), name
        assert case["resized_to"] == [None, case["side"], case["side"], 3], name
        trainable, no_bias = _transformers(case["model"], 10)
        # the 10-class ports: the same count as the transformers model, up to conv biases
        assert case["parameters"] - no_bias == trainable, name
        info = case["info"]
        assert info["keras_backend"] == framework.removeprefix("keras-")
        assert info["dtype_policy"] == POLICIES[case["precision"]], name
        if case["compile"] == "compiled":
            assert set(info["compile_s"]) == {"train", "infer"}, name
        else:
            assert "compile_s" not in info, name


@pytest.mark.parametrize("model", sorted(APPLICATIONS))
def test_full_size_ports_have_the_transformers_parameter_counts(probes, model):
    """ConvNeXt: the same count. ResNet-50: Keras' convolutions carry biases that transformers'
    (bias=False, followed by batch norm) do not; all else is the same count."""
    trainable, no_bias = _transformers(model, 1000)
    counts = {fw: probes[fw]["full_size"][model] for fw in BACKENDS}
    assert counts["keras-torch"] == counts["keras-tensorflow"]
    keras_count, keras_biases = counts["keras-torch"]["trainable"], no_bias
    if model.startswith("convnext"):
        assert no_bias == 0 and keras_count == trainable
    else:
        assert counts["keras-torch"]["conv_biases"] == keras_biases > 0
        assert keras_count == trainable + keras_biases
        assert (keras_count - trainable) / trainable < 0.002  # 26,560 of 25.6 M


def test_models_without_a_keras_port_are_skipped_saying_where_it_is_missing():
    def reason(module, model, framework="keras-tensorflow"):
        return module.skip_reason({"framework": framework, "model": model})

    for model in APPLICATIONS:
        assert reason(cifar10_finetune, model) is None
        assert reason(cifar10_finetune, model, "torch") is None
    for model in ("vit-base-patch16", "vit-tiny", "deit-tiny", "deit-base-distilled"):
        words = reason(cifar10_finetune, model)
        assert "keras.applications has no" in words and "requires tensorflow-text" in words
    for model in ("convnextv2-nano", "convnextv2-tiny"):
        assert "nor keras-hub 0.32.0 has a ConvNeXt V2" in reason(cifar10_finetune, model)
    assert "no RoBERTa architecture" in reason(text_classify, "roberta-base")
    assert "no BERT architecture" in reason(text_classify, "minilm", "keras-torch")
    assert "no BERT architecture" in reason(conll_ner, "bilstm_cnn_bert")
    for module, model in ((text_classify, "bert-base"), (conll_ner, "bert_tokencls")):
        assert reason(module, model, "torch") is None
    pretrained = {"framework": "keras-torch", "model": "resnet-50", "weights": "pretrained"}
    assert "cannot load" in cifar10_finetune.skip_reason(pretrained)


@pytest.mark.parametrize("framework", BACKENDS)
def test_a_tiny_keras_cell_ends_ok_with_its_record(tmp_path, framework):
    """run_cell.py through the worker, timing and record path every cell takes; the thread
    count is applied before the backend runs an op (TensorFlow refuses it afterwards)."""
    folder = tmp_path / "cifar10"
    prepare_dataset("cifar10", "synthetic", folder, train_samples=16, test_samples=8, seed=3)
    out = tmp_path / "cell.json"
    command = [
        *("nice", sys.executable, str(REPO / "scripts" / "run_cell.py")),
        *("task=cifar10_finetune", "model=resnet-50", f"framework={framework}"),
        *("image_size=32", "compile=eager", "threads=1"),
        *("epochs=1", "steps_per_epoch=1", "batch_size=4", "warmup_steps=1"),
        *("repetitions=2", "min_repetition_s=0"),
        *("--data", str(folder / "manifest.json"), "--out", str(out)),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["status"] == "ok", record["message"]
    axes = record["axes"]
    assert axes["framework"] == framework and str(axes["image_size"]) == "32"
    threads = record["environment"]["threads_reported"]
    key = "torch_num_threads" if framework == "keras-torch" else "tf_intra_op_threads"
    assert threads[key] == 1, threads
    trainable, no_bias = _transformers("resnet-50", 10)
    assert record["model"]["parameters"] == trainable + no_bias
    assert record["model"]["architecture"] == "keras.applications.ResNet50"
    if framework == "keras-torch":  # torch is loaded: the transformers twin's, at 32 px
        assert record["model"]["flops_per_sample_train"] > 0
    assert record["throughput"]["samples_per_s"] > 0
    assert 0 <= record["quality"]["accuracy"] <= 1

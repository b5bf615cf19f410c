"""Run in a fresh process per Keras backend: cifar10_finetune's Keras ports, tiny and full size.

    python tests/keras_image_probe.py FRAMEWORK OUT.json

Used by tests/test_keras_image.py; KERAS_BACKEND and thread variables come from the cell runner's
worker environment, so keras picks its backend before it is imported. Each port is built at
32 px (its full architecture; the resize layer is then a no-op, so one case resizes 32 -> 48),
takes a training step and an inference pass; the full-size (224 px, 1000-class) models are only
counted. On TensorFlow one case runs compiled (jit_compile).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np

from devicebench.workloads import cifar10_finetune
from devicebench.workloads.cifar10_finetune.keras_port import (
    APPLICATIONS,
    KerasImageBackend,
    build_model,
)

# (model, precision, compile, image side): each port once, the precisions and a resize among them
CASES = [
    ("convnext-tiny", "fp32", "eager", 32),
    ("convnext-small", "bf16", "eager", 32),
    ("resnet-50", "fp16", "eager", 48),
]
# jit_compile on TensorFlow (XLA, about a minute here). On torch, Keras' jit_compile is
# torch.compile of the whole step: it runs, but compiling ResNet-50 takes minutes on 2 cores
# (dynamo hits its recompile limit on Keras' functional call), too slow for a test.
COMPILED = {"keras-tensorflow": [("resnet-50", "fp32", "compiled", 32)], "keras-torch": []}


def _dataset() -> types.SimpleNamespace:
    rng = np.random.default_rng(0)

    def images():
        return rng.integers(0, 256, size=(8, 3, 32, 32), dtype=np.uint8)

    labels = np.arange(8) % 10
    return types.SimpleNamespace(
        x_train=images(), y_train=labels, x_test=images(), y_test=labels, num_classes=10
    )


def _case(framework: str, model: str, precision: str, compile_: str, side: int) -> dict:
    settings = {
        "task": "cifar10_finetune",
        "model": model,
        "framework": framework,
        "device": "cpu",
        "precision": precision,
        "compile": compile_,
        "batch_size": 4,
        "learning_rate": 1e-3,
    }
    spec, mean, std = cifar10_finetune.SPEC, cifar10_finetune.MEAN, cifar10_finetune.STD
    backend = KerasImageBackend(spec, settings, _dataset(), side, mean, std)
    backend.new_model(3)
    before = [np.array(w) for w in backend.model.get_weights()]
    backend.train_steps(1)
    changed = any(
        not np.array_equal(a, np.array(b))
        for a, b in zip(before, backend.model.get_weights(), strict=True)
    )
    latencies = backend.infer_batches(2)
    predicted, loss = backend.evaluate()
    backend.new_model(3)  # a repetition: the same initial weights in the same model
    restored = all(
        np.array_equal(a, np.array(b))
        for a, b in zip(before, backend.model.get_weights(), strict=True)
    )
    backend.train_steps(1)
    return {
        "model": model,
        "precision": precision,
        "compile": compile_,
        "side": side,
        "weights_changed": changed,
        "restored_on_new_model": restored,
        "latencies": latencies,
        "predicted": predicted.tolist(),
        "loss": loss,
        "parameters": backend.parameter_count(),
        "info": backend.model_info,
        "resized_to": list(backend.model.layers[1].compute_output_shape((None, 32, 32, 3))),
    }


def _full_size(model: str) -> dict:
    import keras

    net = build_model(
        model, 0, 224, classes=1000, mean=cifar10_finetune.MEAN, std=cifar10_finetune.STD
    )
    conv_biases = sum(
        int(np.prod(layer.bias.shape))
        for layer in net.layers[-1]._flatten_layers()
        if isinstance(layer, keras.layers.Conv2D) and layer.use_bias
    )
    trainable = int(sum(np.prod(v.shape) for v in net.trainable_weights))
    return {"trainable": trainable, "conv_biases": conv_biases}


def main(framework: str, out: str) -> None:
    results = {"cases": [], "full_size": {}}
    for case in CASES + COMPILED[framework]:
        results["cases"].append(_case(framework, *case))
        print(framework, results["cases"][-1], flush=True)
    for model in APPLICATIONS:
        results["full_size"][model] = _full_size(model)
        print(framework, model, results["full_size"][model], flush=True)
    Path(out).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])

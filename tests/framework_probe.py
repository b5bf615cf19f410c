"""Run in a fresh process per framework: every task's parameter count and test accuracy.

    python tests/framework_probe.py FRAMEWORK DATA_DIR OUT.json

Used by tests/test_frameworks.py; KERAS_BACKEND and thread variables come from the cell runner's
worker environment, so keras picks its backend before it is imported. Parameter counts are taken
with the tasks as defined; the short training that follows uses larger learning rates than the
originals (tuned for many epochs of real data) and, for the BiLSTM, 20 instead of 100 time steps
(the parameter count does not depend on it), so that the whole probe takes seconds per task.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from pathlib import Path

from devicebench.data import load_dataset
from devicebench.workloads import get, specs

# task: (learning rate, optimizer steps of batch 32)
PROBE = {
    "mnist_mlp": (0.001, 32),
    "mnist_cnn": (1.0, 24),
    "cifar10_cnn": (0.0005, 48),
    "imdb_fasttext": (0.02, 32),
    "imdb_bilstm": (0.01, 12),
    "textgen_lstm": (0.01, 8),
}


TASKS = specs()


def make_backend(framework: str, task: str, lr: float, dataset, workload=None):
    workload = workload or get(task)
    spec = workload.spec
    settings = {
        "task": task,
        "model": spec.models[0],
        "framework": framework,
        "device": "cpu",
        "precision": "fp32",
        "batch_size": 32,
        "learning_rate": lr,
    }
    if framework == "torch":
        from devicebench.frameworks.torch_backend import TorchBackend

        return TorchBackend(workload, settings, dataset)
    from devicebench.frameworks.keras_backend import KerasBackend

    return KerasBackend(workload, settings, dataset)


def main(framework: str, data_dir: str, out: str) -> None:
    datasets = {}
    for spec in (TASKS[task] for task in PROBE):
        if spec.dataset not in datasets:
            datasets[spec.dataset] = load_dataset(Path(data_dir) / spec.dataset / "manifest.json")
    results = {}
    for task, (lr, _) in PROBE.items():
        backend = make_backend(framework, task, lr, datasets[TASKS[task].dataset])
        backend.new_model(1)
        results[task] = {"parameters": backend.parameter_count()}
    short = copy.copy(get("imdb_bilstm"))  # the BiLSTM over 20 words: a quicker probe
    short.spec = dataclasses.replace(short.spec, options=dict(short.spec.options, maxlen=20))
    for task, (lr, steps) in PROBE.items():
        dataset = datasets[TASKS[task].dataset]
        backend = make_backend(
            framework, task, lr, dataset, short if task == short.spec.name else None
        )
        backend.new_model(1)
        for _ in range(2):
            backend.train_steps(steps // 2)
        predicted, loss = backend.evaluate()
        results[task]["accuracy"] = float((predicted == dataset.y_test).mean())
        results[task]["loss"] = loss
        results[task]["test_samples"] = len(dataset.y_test)
        print(task, results[task], flush=True)
    Path(out).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])

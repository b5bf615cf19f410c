"""Run in a fresh process per framework: every task's parameter count and test accuracy.

    python tests/framework_probe.py FRAMEWORK DATA_DIR OUT.json

Used by tests/test_frameworks.py; KERAS_BACKEND and thread variables come from the cell runner's
worker environment, so keras picks its backend before it is imported.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from devicebench.data import load_dataset
from devicebench.tasks import TASKS

# Short, fast training on tiny synthetic sets: a larger learning rate than the originals', which
# are tuned for many epochs of real data.
PROBE = {
    "mnist_mlp": {"learning_rate": 0.001, "epochs": 2},
    "mnist_cnn": {"learning_rate": 1.0, "epochs": 2},
    "cifar10_cnn": {"learning_rate": 0.001, "epochs": 3},
    "imdb_fasttext": {"learning_rate": 0.01, "epochs": 4},
    "imdb_bilstm": {"learning_rate": 0.01, "epochs": 2},
    "textgen_lstm": {"learning_rate": 0.01, "epochs": 2},
}


def make_backend(framework: str, settings: dict, dataset):
    spec = TASKS[settings["task"]]
    if framework == "torch":
        from devicebench.frameworks.torch_backend import TorchBackend

        return TorchBackend(spec, settings, dataset)
    from devicebench.frameworks.keras_backend import KerasBackend

    return KerasBackend(spec, settings, dataset)


def main(framework: str, data_dir: str, out: str) -> None:
    results = {}
    for task, probe in PROBE.items():
        spec = TASKS[task]
        dataset = load_dataset(Path(data_dir) / spec.dataset / "manifest.json")
        settings = {
            "task": task,
            "model": spec.models[0],
            "framework": framework,
            "device": "cpu",
            "precision": "fp32",
            "batch_size": 32,
            "learning_rate": probe["learning_rate"],
        }
        backend = make_backend(framework, settings, dataset)
        backend.new_model(1)
        for _ in range(probe["epochs"]):
            backend.train_steps(backend.train_samples // 32)
        predicted, loss = backend.evaluate()
        accuracy = float((predicted == dataset.y_test).mean())
        results[task] = {"parameters": backend.parameter_count(), "accuracy": accuracy}
        print(task, results[task], flush=True)
    Path(out).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])

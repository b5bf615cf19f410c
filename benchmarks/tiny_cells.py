#!/usr/bin/env python3
"""Run 14 tiny CPU cells with a tree's own grid and runner (ARCHITECTURE check 2).

    python benchmarks/tiny_cells.py TREE OUT     # e.g. a `git archive` of the base commit
    python benchmarks/same_records.py BASE_OUT/cells NEW_OUT/cells

Classic mnist_mlp in torch and keras-torch (train, infer), ONNX Runtime and Spark infer cells, a
converge cell, textgen_lstm (train, infer, ONNX Runtime), text_classify bert-tiny (train, infer,
OpenVINO) and a serve_text cell of 16 requests; synthetic data, one thread, a few steps. Works
on trees before and after the plan/run/measure move.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

TREE, OUT = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
sys.path.insert(0, str(TREE / "src"))
warnings.simplefilter("ignore")

try:  # noqa: SIM105
    from devicebench.plan.config import check_config, combine_configs
    from devicebench.plan.grid import expand_grid
    from devicebench.run.runner import run_cell
except ImportError:  # a tree before the move
    from devicebench.plan.config import check_config, combine_configs
    from devicebench.plan.grid import expand_grid
    from devicebench.run.runner import run_cell
import yaml  # noqa: E402

from devicebench.data import prepare_dataset  # noqa: E402

TASKS = {
    "mnist_mlp": {
        "models": ["mlp"],
        "epochs": 1,
        "steps_per_epoch": 2,
        "converge": {"target": 0.05, "max_epochs": 2},
    },
    "textgen_lstm": {"epochs": 1, "steps_per_epoch": 2, "frameworks": ["torch"]},
    "text_classify": {
        "models": ["bert-tiny"],
        "epochs": 1,
        "steps_per_epoch": 2,
        "frameworks": ["torch"],
        "seq_lens": [16],
        "precisions": ["fp32"],
        "engines": ["inprocess", "openvino"],
    },
    "serve_text": {
        "models": ["tinybert"],
        "clients": [2],
        "frameworks": ["torch"],
        "seq_lens": [16],
        "serve": {"requests": 16, "warmup_requests": 2, "loadgen_scenarios": []},
    },
}
USER = {
    "seed": 7,
    "repetitions": 3,
    "min_repetition_s": 0.0,
    "warmup_steps": 1,
    "timeout_s": 300,
    "devices": {"cpu": {"threads": [1]}, "cuda": False},
    "frameworks": ["torch", "keras-torch"],
    "precisions": ["fp32"],
    "modes": ["train", "infer", "converge", "serve"],
    "batch_sizes": [16],
    "infer_engines": ["inprocess", "onnxruntime", "spark"],
    "spark": {"max_failures": 2},
    "tasks": TASKS,
    "exclude": [
        {"task": "textgen_lstm", "engine": "spark"},
        {"task": "mnist_mlp", "framework": "keras-torch", "engine": "spark"},
    ],
}
SIZES = {"mnist": (256, 64), "nietzsche": (256, 64), "imdb": (64, 32)}


def main() -> int:
    default = yaml.safe_load((TREE / "config" / "config.yaml").read_text())
    study = check_config(combine_configs(default, [USER], {"check_devices": False}))
    cells = expand_grid(study)
    manifests: dict[str, Path] = {}
    for cell in cells:
        dataset = cell.run_settings()["dataset"]
        if dataset not in manifests:
            train, test = SIZES.get(dataset, (64, 16))
            folder = OUT / "data" / dataset
            prepare_dataset(
                dataset, "synthetic", folder, train_samples=train, test_samples=test, seed=3
            )
            manifests[dataset] = folder / "manifest.json"
    for cell in cells:
        out = OUT / "cells" / f"{cell.cell_id}.json"
        data = manifests[cell.run_settings()["dataset"]]
        record = run_cell(cell, data=data, out=out, extra={"log_dir": str(OUT / "logs")})
        print(cell.cell_id, record["status"], record.get("message", "")[:100], file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

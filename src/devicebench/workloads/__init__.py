"""The workload registry: one module (or package) per value of the grid's ``task`` axis.

Each module ``devicebench.workloads.<name>`` defines ``WORKLOAD``, an instance of a
``devicebench.workloads.base.Workload`` subclass whose ``spec.name`` is ``<name>``:

- the classic six (mnist_mlp, mnist_cnn, cifar10_cnn, imdb_fasttext, imdb_bilstm,
  textgen_lstm) subclass ``workloads.classic.ClassicWorkload``: a spec, a torch model and Keras
  layers; the shared loops of ``devicebench.frameworks`` time them;
- text_classify, cifar10_finetune (a package with its Keras port) and conll_ner (a package:
  inputs, models, backend, metrics) build their own backends on
  ``frameworks.transformer_backend``;
- serve_image and serve_text subclass ``base.ServeWorkload``: their models live in the scoring
  server (``devicebench.serving``), which reaches them through ``get(task).make_scorer``.

Adding a workload: write ``workloads/<name>.py`` with a subclass and ``WORKLOAD``, add the name
to ``NAMES``, add its config entries (config/schema.yaml types a new axis). The registry imports
a module by name only when asked; workload modules import ``base`` and siblings, never this
module, and stay light at import time (frameworks are imported inside methods), so planning the
grid (``specs()``) loads no framework.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from typing import Any

from devicebench.workloads.base import TaskSpec, Workload

NAMES: tuple[str, ...] = (
    "mnist_mlp",
    "mnist_cnn",
    "cifar10_cnn",
    "imdb_fasttext",
    "imdb_bilstm",
    "textgen_lstm",
    "serve_image",
    "text_classify",
    "cifar10_finetune",
    "conll_ner",
    "serve_text",
    "textgen_llm",
)


def get(name: str) -> Workload:
    """The workload of a task, with an error that lists the tasks that exist."""
    if name not in NAMES:
        raise KeyError(f"unknown task {name!r}; known tasks: {', '.join(sorted(NAMES))}")
    return importlib.import_module(f"devicebench.workloads.{name}").WORKLOAD


@cache
def _specs() -> dict[str, TaskSpec]:
    return {name: get(name).spec for name in NAMES}


def specs() -> Mapping[str, TaskSpec]:
    """Every task's TaskSpec by name, in registry order (imports no framework)."""
    return _specs()


def spec(name: str) -> TaskSpec:
    """One task's TaskSpec (KeyError naming the known tasks for an unknown one)."""
    return get(name).spec


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # NaN in a table row


def model_flops(
    task: str, model: str, settings: Mapping[str, Any] | None = None
) -> dict[str, float | None]:
    """Both FLOP counts for a record's model section; None where the count fails.

    `settings` are the cell's run settings or a table row holding its axes (FLOPs of the
    transformer workloads depend on seq_len and image size).
    """
    cell = {k: v for k, v in (settings or {}).items() if not _missing(v)}
    cell |= {"task": task, "model": model}
    try:
        workload = get(task)
        counts = {mode: workload.flops_per_sample(cell, mode) for mode in ("train", "infer")}
    except (ImportError, KeyError, ValueError):
        return {"flops_per_sample_train": None, "flops_per_sample_infer": None}
    return {
        f"flops_per_sample_{mode}": None if count is None else float(count)
        for mode, count in counts.items()
    }

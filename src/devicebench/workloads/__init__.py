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

Adding a workload: write ``workloads/<name>.py`` with a subclass and ``WORKLOAD`` (the registry
finds it on disk: ``NAMES`` is every module here that assigns ``WORKLOAD``, read without importing
it), add its config entries (config/schema.yaml types a new axis). The registry imports
a module by name only when asked; workload modules import ``base`` and siblings, never this
module, and stay light at import time (frameworks are imported inside methods), so planning the
grid (``specs()``) loads no framework.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from devicebench.workloads.base import TaskSpec, Workload


def _defines_workload(path: Path) -> bool:
    """Whether a module's source assigns ``WORKLOAD`` at its top level (read, not imported)."""
    tree = ast.parse(path.read_text())
    targets = [t for node in tree.body if isinstance(node, ast.Assign) for t in node.targets]
    return any(isinstance(t, ast.Name) and t.id == "WORKLOAD" for t in targets)


def _found() -> tuple[str, ...]:
    """The workloads on disk: each module or package here that defines ``WORKLOAD``, sorted."""
    here = Path(__file__).parent
    names = []
    for info in pkgutil.iter_modules([str(here)]):
        source = here / info.name / "__init__.py" if info.ispkg else here / f"{info.name}.py"
        if source.exists() and _defines_workload(source):
            names.append(info.name)
    return tuple(sorted(names))


NAMES: tuple[str, ...] = _found()


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


def work_axes() -> tuple[str, ...]:
    """Every task's work axes (TaskSpec.work_axes: prompt_len, seq_len, ...), in the order the
    tasks declare them: the axes a verdict holds fixed."""
    return tuple(dict.fromkeys(axis for one in specs().values() for axis in one.work_axes))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # NaN in a table row


def model_flops(
    task: str, model: str, settings: Mapping[str, Any] | None = None
) -> dict[str, float | None]:
    """Both FLOP counts for a record's model section; None where the count fails.

    `settings` are the cell's run settings or a table row holding its axes (FLOPs of the
    transformer workloads depend on seq_len and image size).
    """
    from devicebench.measure.flops_cache import cache_key, cached

    cell = {k: v for k, v in (settings or {}).items() if not _missing(v)}
    cell |= {"task": task, "model": model}
    try:
        workload = get(task)
    except KeyError:
        return {"flops_per_sample_train": None, "flops_per_sample_infer": None}

    def count() -> dict[str, float | None]:
        counts = {mode: workload.flops_per_sample(cell, mode) for mode in ("train", "infer")}
        return {
            f"flops_per_sample_{mode}": None if count is None else float(count)
            for mode, count in counts.items()
        }

    try:  # once per model and shape (measure.flops_cache)
        return cached(cache_key(task, model, tuple(workload.spec.axes), cell), count)
    except (ImportError, KeyError, ValueError):
        return {"flops_per_sample_train": None, "flops_per_sample_infer": None}

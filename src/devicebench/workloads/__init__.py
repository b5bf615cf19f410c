"""The workload registry: one module per workload, each declaring everything its cells need.

Adding a workload means adding one module here, one line to ``MODULES`` and its config entries.
A workload module is imported whenever ``devicebench.tasks`` is, so it must stay light at import
time: torch, transformers, tokenizers and the like are imported inside its functions only.

The contract a workload module fulfils (required names first, then optional hooks; the default
of an optional hook is what the classic workloads do):

``SPEC: devicebench.tasks.TaskSpec``
    The task: name, dataset (a name of ``devicebench.data.DATASETS``: its ``prepare_data`` rule
    and manifest are reused), models, original hyper-parameters, ``kind`` and extra grid axes.
    ``SPEC.axes`` maps an axis to its allowed/default values (the first is the default); a config
    selects values with ``tasks.<task>.<axis>s`` (``seq_lens``, ``compiles``, ``embeddings``,
    ``train_fractions``; config/schema.yaml types them) and each value becomes a cell axis.
    Registered into ``devicebench.tasks.TASKS`` so ``get_task`` finds it.

``make_backend(spec, settings, dataset) -> backend`` (not for serve tasks: their model lives
in the scoring server, devicebench.serving, and ``load_data`` gives the request bodies)
    The object the driver times (see ``devicebench.driver.Backend``), with the interface of
    ``frameworks.torch_backend.TorchBackend``: ``name``, ``fit_loop``, ``train_samples``,
    ``test_samples``, ``sync()``, ``new_model(seed)``, ``parameter_count()``,
    ``train_steps(steps)`` (ends in a device synchronize), ``infer_batches(steps) -> latencies``,
    ``evaluate() -> (predicted, mean_loss)``, ``peak_device_memory_mb()``, ``is_oom(error)``
    and optionally a ``model_info`` dict merged into the record's model section (put
    ``compile_s`` there: compile time is reported apart, never inside throughput). ``settings``
    are the cell's run settings (axes included: ``settings["seq_len"]``, ``settings["compile"]``
    ...). The worker has applied the framework's thread settings before the call.

``validate(task_settings: dict) -> None`` (optional)
    Checks a config's ``tasks.<task>`` mapping before any cell runs (models already checked
    against ``SPEC.models``). Raises ``ValueError("<subkey>: <problem>")``; the config loader
    reports it as ``config key tasks.<task>.<subkey>: <problem>``. Example: a seq_len above the
    model's positions, an image size not divisible by the patch.

``skip_reason(settings: dict) -> str | None`` (optional)
    Why this cell cannot run (e.g. no Keras architecture for the model); the cell runner then
    records it ``skipped`` with that message before starting a worker, as for a missing device.

``prepare_data(data_dir: Path) -> None`` (optional)
    Derived files the workload needs next to the dataset's manifest (a tokenizer trained on the
    dataset's own text), written deterministically and atomically. Called by
    scripts/prepare_data.py for every workload on that dataset; ``load_data`` may call it again
    when the files are missing (same result).

``load_data(settings: dict) -> dataset`` (optional; default ``data.load_dataset(settings["data"],
train_samples=..., test_samples=...)``)
    What ``make_backend`` receives. It must offer ``y_test`` and ``num_classes`` unless the module
    also defines ``quality``.

``quality(dataset, predicted, loss: float) -> dict`` (optional; default
``metrics.classification_scores(dataset.y_test, predicted, dataset.num_classes)`` plus ``loss``)
    The record's quality section; ``accuracy`` is the key the analysis uses for targets.

``flops_per_sample(settings: dict, mode: str) -> float`` (optional; default: none counted)
    FLOPs of one sample, ``mode`` ``train`` (forward + backward) or ``infer`` (forward), counted
    with ``torch.utils.flop_counter`` on the cell's model at the cell's axes (seq_len, image
    size); ``settings`` holds at least ``task`` and ``model`` plus the cell's axes.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

# task name -> module (imported on first use by `workload`, and by `specs` for the registry).
MODULES: dict[str, str] = {
    "text_classify": "devicebench.workloads.text_classify",
    "cifar10_finetune": "devicebench.workloads.cifar10_finetune",
    "conll_ner": "devicebench.workloads.conll_ner",
    "serve_text": "devicebench.workloads.serve_text",
}


def workload(task: str) -> ModuleType | None:
    """The module of a registered workload, or None for a classic task (tasks/, frameworks/)."""
    name = MODULES.get(task)
    return importlib.import_module(name) if name else None


def specs() -> list[Any]:
    """The TaskSpec of every registered workload (for devicebench.tasks.TASKS)."""
    return [importlib.import_module(name).SPEC for name in MODULES.values()]


def hook(task: str, name: str) -> Any:
    """A workload's optional hook (`validate`, `skip_reason`, ...), or None."""
    module = workload(task)
    return getattr(module, name, None) if module else None


# Why keras-hub, which has ViT, DeiT and the BERT family, is not a dependency here.
KERAS_HUB_BLOCKED = (
    "keras-hub 0.32.0 cannot be installed beside the pinned tensorflow-cpu 2.21.0: it requires "
    "tensorflow-text, which requires the full tensorflow package (both install the tensorflow "
    "module)"
)


def keras_skip_reason(task: str, settings: dict[str, Any], missing: str) -> str | None:
    """Why a Keras cell of a model with no Keras port here is recorded skipped; None for torch.

    `missing` says where the architecture is lacking, e.g. "keras.applications has no ViT
    architecture; keras-hub has it, but " + KERAS_HUB_BLOCKED.
    """
    if settings["framework"] == "torch":
        return None
    return f"{task} {settings['model']}: no Keras port with parameter parity: {missing}"


def keras_hub_only(architecture: str) -> str:
    """The reason for an architecture keras-hub has and keras.applications lacks."""
    return (
        f"keras.applications has no {architecture} architecture; keras-hub has it, but "
        + KERAS_HUB_BLOCKED
    )


# Last, so that importing a workload module first (it imports devicebench.tasks for TaskSpec)
# finds this package complete when devicebench.tasks registers the workloads' specs.
import devicebench.tasks  # noqa: E402, F401

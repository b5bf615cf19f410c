"""What a workload is: its TaskSpec and the Workload interface every workload module implements.

Standard library only at import time: the registry imports every workload module to plan the grid,
and planning must not load a framework. A workload module imports this module and its siblings,
never the registry (``devicebench.workloads``), so that no import cycle can form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar


@dataclass(frozen=True)
class TaskSpec:
    """One workload of the study: its data, models, the original's hyper-parameters and axes.

    ``kind`` decides the classic loops' loss: ``image`` and ``next_char`` are softmax
    classification, ``binary_text`` a sigmoid output with binary cross-entropy; ``serve`` marks
    a task whose model lives in the scoring server.
    """

    name: str
    dataset: str
    models: tuple[str, ...]
    num_classes: int
    epochs: int
    batch_sizes: tuple[int, ...]
    optimizer: str
    learning_rate: float
    optimizer_options: dict[str, float] = field(default_factory=dict)
    source: str = ""
    kind: str = "image"  # image | binary_text | next_char | serve | the workload's own
    options: dict[str, int | float | str] = field(default_factory=dict)
    # Extra grid axes the task has, with their allowed values (the first is the default).
    axes: dict[str, tuple[str | int | float, ...]] = field(default_factory=dict)
    modes: tuple[str, ...] = ("train", "infer")  # the modes the task runs in
    # The axes among `axes` that change the work one sample is (its tokens): a verdict divides
    # throughputs of equal work, so it never sets two values of one against each other.
    work_axes: tuple[str, ...] = ()

    def option(self, name: str) -> int | float:
        """A hyperparameter of the original example (vocabulary, sequence length, units ...)."""
        return self.options[name]


LSTM_KERNELS = ("cudnn", "generic")
# The axes every serve task has, after its own (seq_len): engine, clients, replicas.
SERVE_AXES: dict[str, tuple[str | int | float, ...]] = {
    "server": ("uvicorn", "ray-serve"),
    "clients": (20, 30, 50),
    "replicas": (1,),
}


# The longest a serve cell's server waits for a dynamic batch to fill, unless its task's
# `serve.batch_wait_ms` says otherwise; `batch_waits` sweeps other windows (plan.batch_wait).
BATCH_WAIT_MS = 5.0


def axis_key(axis: str) -> str:
    """The config key listing an axis's values: `lstm_kernels`, `servers`, `clients`."""
    return axis if axis.endswith("s") else f"{axis}s"


class Workload:
    """One value of the grid's `task` axis: everything its cells need, found by name.

    The defaults are what a plain classification workload does; subclasses override.
    """

    spec: ClassVar[TaskSpec]
    # `weights: pretrained`: the transformers auto class and whether a tokenizer is loaded too.
    pretrained_class: ClassVar[str | None] = None
    pretrained_tokenizer: ClassVar[bool] = False

    def validate(self, task_settings: dict[str, Any]) -> None:
        """Check the config's ``tasks.<task>`` mapping; raise ``ValueError("<subkey>: ...")``."""

    def skip_reason(self, settings: dict[str, Any]) -> str | None:
        """Why this cell cannot run here (recorded ``skipped``), or None."""
        return None

    def prepare_data(self, data_dir: Path) -> Path | None:
        """Derived files beside the dataset's manifest (a tokenizer), written atomically."""
        return None

    def load_data(self, settings: dict[str, Any]) -> Any:
        """What make_backend receives: by default the dataset registry's arrays."""
        from devicebench.data import load_dataset

        return load_dataset(
            settings["data"],
            train_samples=settings.get("train_samples"),
            test_samples=settings.get("test_samples"),
        )

    def make_backend(self, settings: dict[str, Any], dataset: Any) -> Any:
        """The backend the cell's scenario times (frameworks.protocols: Trainable, Classifier)."""
        raise NotImplementedError(f"{self.spec.name} has no in-process backend")

    def quality(self, dataset: Any, predicted: Any, loss: float) -> dict[str, float]:
        """The record's quality section; ``accuracy`` is the key the analysis uses."""
        from devicebench.measure.metrics import classification_scores

        quality = classification_scores(dataset.y_test, predicted, dataset.num_classes)
        quality["loss"] = loss
        return quality

    def flops_per_sample(self, settings: dict[str, Any], mode: str) -> float | None:
        """FLOPs of one sample (``train``: forward + backward; ``infer``: forward), or None."""
        return None


class ServeWorkload(Workload):
    """A workload whose model lives in the scoring server; load_data gives request bodies."""

    content_type: ClassVar[str]  # what the server accepts
    client_content_type: ClassVar[str]  # what the clients send
    # each model's p99 latency bound for the serving verdict (devicebench.serving.bounds): MLPerf
    # Inference's Server bound where it has one, else a choice the workload documents
    p99_bounds_ms: ClassVar[dict[str, float]] = {}

    def make_scorer(
        self, framework: str, model: str, device: str, precision: str, **options: Any
    ) -> Any:
        """The devicebench.serving.scorer.Scorer the server process runs."""
        raise NotImplementedError

    def serve_skip_reason(self, framework: str, model: str) -> str | None:
        """Why this model cannot be served in this framework, or None."""
        return None

    def server_arguments(
        self, *, image_size: int, seq_len: int, tokenizer: Path | str | None
    ) -> list[str]:
        """The server options saying what it scores (devicebench.serving.app's flags)."""
        return ["--task", self.spec.name]

    def request_fields(self, serve: dict[str, Any], health: dict[str, Any]) -> dict[str, Any]:
        """What one request holds, for the record (image size, or token limit and padding)."""
        return {}


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

"""ClassicWorkload: what the six Keras-example workloads share (inputs, backends, FLOPs).

A classic workload module declares its spec, its torch model and its Keras layers; this base
turns the dataset into the model's inputs once, in NumPy, before any timing (image pixels scaled
to [0, 1] in channels-first layout, token ids cut to the task's sequence length; Keras backends
transpose images to channels-last), and hands itself to the framework loops of
devicebench.frameworks (torch, DDP, Keras), which contain no task names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import numpy as np

from devicebench.workloads.base import Workload

KERAS_FRAMEWORKS = ("keras-tensorflow", "keras-torch")
FLOPS_BATCH = 2


@dataclass
class TaskArrays:
    """Inputs and labels of one task; labels are class ids (0/1 for binary tasks)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int  # classes of the metrics (2 for binary tasks)
    outputs: int  # width of the model's last layer (1 for binary tasks)


class ClassicWorkload(Workload):
    """A Keras example reproduced in torch and Keras; subclasses give the layers."""

    input_shape: ClassVar[tuple[int, ...]] = ()  # an image task's channels-first sample shape
    augment: ClassVar[bool] = False  # on-device random shift + flip while training
    flops_outputs: ClassVar[int] = 10  # the last layer's width in the FLOP count's model

    @property
    def binary(self) -> bool:
        """A sigmoid output with binary cross-entropy (else softmax classification)."""
        return self.spec.kind == "binary_text"

    def vocabulary(self) -> int:
        """Embedding rows of a text task (words plus bigram buckets for fastText)."""
        options = self.spec.options
        return int(options["vocab_size"]) + int(options.get("bigram_buckets", 0))

    def inputs(self, x: np.ndarray) -> np.ndarray:
        """The model's inputs from the dataset's array (images by default)."""
        return (x.astype(np.float32) / 255.0).reshape(len(x), *self.input_shape)

    def arrays(self, dataset: Any) -> TaskArrays:
        """The task's inputs for a loaded dataset."""
        return TaskArrays(
            x_train=self.inputs(dataset.x_train),
            y_train=np.asarray(dataset.y_train, dtype=np.int64),
            x_test=self.inputs(dataset.x_test),
            y_test=np.asarray(dataset.y_test, dtype=np.int64),
            num_classes=2 if self.binary else int(dataset.num_classes),
            outputs=1 if self.binary else int(dataset.num_classes),
        )

    def torch_model(self, model: str, *, outputs: int, lstm_kernel: str) -> Any:
        """The torch module of `model` (uninitialised: build_torch applies Keras' init)."""
        raise NotImplementedError

    def keras_layers(self, keras: Any, model: str, *, outputs: int, lstm_kernel: str) -> list:
        """The Keras layers of `model`, keras.Input first (images channels-last)."""
        raise NotImplementedError

    def _check_model(self, model: str, framework: str) -> None:
        if model not in self.spec.models:
            raise KeyError(f"no {framework} model {model!r} for task {self.spec.name!r}")

    def build_torch(
        self, model: str, seed: int, *, outputs: int = 10, lstm_kernel: str = "cudnn"
    ) -> Any:
        """A freshly initialised torch model; the same seed gives the same weights."""
        import torch

        from devicebench.workloads.classic.layers import keras_init

        torch.manual_seed(seed)
        self._check_model(model, "torch")
        net = self.torch_model(model, outputs=outputs, lstm_kernel=lstm_kernel)
        net.apply(keras_init)  # children first: LoopLSTM's own init runs after its Linears'
        return net

    def build_keras(self, model: str, *, outputs: int = 10, lstm_kernel: str = "cudnn") -> Any:
        """An uncompiled Keras model."""
        import keras

        self._check_model(model, "keras")
        layers = self.keras_layers(keras, model, outputs=outputs, lstm_kernel=lstm_kernel)
        return keras.Sequential(layers, name=self.spec.name)

    def make_backend(self, settings: dict[str, Any], dataset: Any) -> Any:
        framework = settings["framework"]
        if framework == "torch":
            if int(settings.get("gpus", 1)) > 1:  # a rank of a data-parallel cell
                from devicebench.distributed.backend import DDPTorchBackend as TorchBackend
            else:
                from devicebench.frameworks.torch_backend import TorchBackend
            return TorchBackend(self, settings, dataset)
        if framework in KERAS_FRAMEWORKS:
            from devicebench.frameworks.keras_backend import KerasBackend

            backend = KerasBackend(self, settings, dataset)
            expected = framework.removeprefix("keras-")
            if backend.kind != expected:
                raise RuntimeError(f"keras runs on {backend.kind}, not {expected}: KERAS_BACKEND?")
            return backend
        raise ValueError(f"unknown framework {framework!r}")

    def flops_inputs(self, batch: int) -> Any:
        """A batch of inputs for the FLOP count (random images by default)."""
        import torch

        return torch.randn(batch, *self.input_shape)

    def flops_per_sample(self, settings: dict[str, Any], mode: str) -> float:
        return _classic_flops(self, str(settings["model"]), mode)


@cache
def _classic_flops(workload: ClassicWorkload, model: str, mode: str) -> float:
    """FLOPs of one sample of the torch twin (every framework's model has its architecture)."""
    from devicebench.measure.flops import count_flops

    net = workload.build_torch(model, 0, outputs=workload.flops_outputs)
    return count_flops(net, workload.flops_inputs(FLOPS_BATCH), mode)


def token_ids(rows: int, batch: int, length: int) -> Any:
    """A batch of random token ids for the FLOP count of a text model."""
    import torch

    return torch.randint(0, rows, (batch, length))

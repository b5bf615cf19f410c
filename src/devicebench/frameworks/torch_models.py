"""The study's architectures as native PyTorch modules, initialised as Keras initialises them.

Keras' defaults (Glorot-uniform kernels, zero biases) are used so that the torch and Keras runs of
one task start from the same distribution and reach comparable accuracy.
"""

from __future__ import annotations

import torch
from torch import nn


def mnist_mlp() -> nn.Module:
    """784-512-512-10 with ReLU and dropout 0.2 (Keras example mnist_mlp.py)."""
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 512),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(512, 10),
    )


def mnist_cnn() -> nn.Module:
    """conv32-conv64-maxpool-dropout 0.25-dense128-dropout 0.5-10 (Keras example mnist_cnn.py)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.25),
        nn.Flatten(),
        nn.Linear(9216, 128),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(128, 10),
    )


BUILDERS = {("mnist_mlp", "mlp"): mnist_mlp, ("mnist_cnn", "cnn"): mnist_cnn}
INPUT_SHAPES = {"mnist_mlp": (784,), "mnist_cnn": (1, 28, 28)}


def keras_init(module: nn.Module) -> None:
    """Glorot-uniform weights and zero biases, as Keras layers start."""
    if isinstance(module, nn.Linear | nn.Conv2d):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def build_model(task: str, model: str, seed: int) -> nn.Module:
    """A freshly initialised model; the same seed gives the same weights."""
    try:
        builder = BUILDERS[(task, model)]
    except KeyError:
        raise KeyError(f"no torch model {model!r} for task {task!r}") from None
    torch.manual_seed(seed)
    net = builder()
    net.apply(keras_init)
    return net


def make_optimizer(
    name: str, params, lr: float, options: dict[str, float]
) -> torch.optim.Optimizer:
    """The task's optimizer with Keras' hyperparameter conventions."""
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, **options)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, **options)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, **options)
    raise KeyError(f"unknown optimizer {name!r}")

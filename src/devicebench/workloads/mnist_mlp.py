"""`mnist_mlp`: the Keras example mnist_mlp.py, 784-512-512-10 with ReLU and dropout 0.2."""

from __future__ import annotations

from typing import Any

from devicebench.workloads.base import TaskSpec
from devicebench.workloads.classic import ClassicWorkload


class MnistMlp(ClassicWorkload):
    spec = TaskSpec(
        name="mnist_mlp",
        dataset="mnist",
        models=("mlp",),
        num_classes=10,
        epochs=20,
        batch_sizes=(128,),
        optimizer="rmsprop",
        learning_rate=0.001,
        optimizer_options={"alpha": 0.9, "eps": 1e-7},
        source="keras examples mnist_mlp.py: 784-512-512-10, ReLU, dropout 0.2, RMSprop",
    )
    input_shape = (784,)

    def torch_model(self, model: str, *, outputs: int, lstm_kernel: str) -> Any:
        from torch import nn

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

    def keras_layers(self, keras: Any, model: str, *, outputs: int, lstm_kernel: str) -> list:
        layers = keras.layers
        return [
            keras.Input((784,)),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(10, activation="softmax"),
        ]


WORKLOAD = MnistMlp()

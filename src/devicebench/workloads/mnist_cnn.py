"""`mnist_cnn`: the Keras example mnist_cnn.py, conv32-conv64-maxpool-dropout-dense128-10."""

from __future__ import annotations

from typing import Any

from devicebench.workloads.base import TaskSpec
from devicebench.workloads.classic import ClassicWorkload


class MnistCnn(ClassicWorkload):
    spec = TaskSpec(
        name="mnist_cnn",
        dataset="mnist",
        models=("cnn",),
        num_classes=10,
        epochs=12,
        batch_sizes=(128,),
        optimizer="adadelta",
        learning_rate=1.0,
        optimizer_options={"rho": 0.95, "eps": 1e-7},
        source="keras examples mnist_cnn.py: conv32-conv64-maxpool-dropout-dense128-dropout-10",
    )
    input_shape = (1, 28, 28)

    def torch_model(self, model: str, *, outputs: int, lstm_kernel: str) -> Any:
        from torch import nn

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

    def keras_layers(self, keras: Any, model: str, *, outputs: int, lstm_kernel: str) -> list:
        layers = keras.layers
        return [
            keras.Input((28, 28, 1)),
            layers.Conv2D(32, 3, activation="relu"),
            layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Flatten(),
            layers.Dense(128, activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(10, activation="softmax"),
        ]


WORKLOAD = MnistCnn()

"""`cifar10_cnn`: the Keras example cifar10_cnn.py, a VGG-like CNN trained with augmentation.

Augmentation (random shift up to `max_shift` pixels with edge padding, horizontal flip) runs per
batch on the device in torch, and as RandomTranslation + RandomFlip layers in Keras.
"""

from __future__ import annotations

from typing import Any

from devicebench.workloads.base import TaskSpec
from devicebench.workloads.classic import ClassicWorkload


class Cifar10Cnn(ClassicWorkload):
    spec = TaskSpec(
        name="cifar10_cnn",
        dataset="cifar10",
        models=("cnn",),
        num_classes=10,
        epochs=20,
        batch_sizes=(32,),
        optimizer="rmsprop",
        learning_rate=0.0001,
        optimizer_options={"alpha": 0.9, "eps": 1e-7},
        source="keras examples cifar10_cnn.py: conv32x2-pool-conv64x2-pool-dense512-10, "
        "shift 0.1 + horizontal-flip augmentation, RMSprop 1e-4 (its 1e-6 decay is left out)",
        options={"max_shift": 3},
    )
    input_shape = (3, 32, 32)
    augment = True

    def torch_model(self, model: str, *, outputs: int, lstm_kernel: str) -> Any:
        from torch import nn

        return nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Dropout(0.25),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Dropout(0.25),
            nn.Flatten(),
            nn.Linear(2304, 512),
            nn.ReLU(),
            nn.Dropout(0.5),
            nn.Linear(512, 10),
        )

    def keras_layers(self, keras: Any, model: str, *, outputs: int, lstm_kernel: str) -> list:
        layers = keras.layers
        shift = float(self.spec.option("max_shift")) / 32.0
        return [
            keras.Input((32, 32, 3)),
            # real-time augmentation, active in training only (as ImageDataGenerator did)
            layers.RandomTranslation(shift, shift, fill_mode="nearest"),
            layers.RandomFlip("horizontal"),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Conv2D(64, 3, padding="same", activation="relu"),
            layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Dropout(0.25),
            layers.Flatten(),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(10, activation="softmax"),
        ]


WORKLOAD = Cifar10Cnn()

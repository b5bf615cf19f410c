"""The study's architectures as Keras 3 models, the original examples' layers one for one.

Only backend-neutral Keras layers and ops are used, so the same code builds the model on the
TensorFlow and the torch backend (CPU or CUDA). Images are channels-last here.
"""

from __future__ import annotations

from typing import Any

from devicebench.tasks import get_task
from devicebench.tasks.inputs import vocabulary


def _lstm(keras: Any, units: int, kernel: str) -> Any:
    # use_cudnn="auto" takes the fused cuDNN kernel where eligible (a CUDA device); False forces
    # Keras' generic step loop.
    return keras.layers.LSTM(units, use_cudnn="auto" if kernel == "cudnn" else False)


def build_keras_model(task: str, model: str, *, outputs: int = 10, lstm_kernel: str = "cudnn"):
    """An uncompiled Keras model for (task, model)."""
    import keras
    from keras import layers

    spec = get_task(task)
    if (task, model) == ("mnist_mlp", "mlp"):
        stack = [
            keras.Input((784,)),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(10, activation="softmax"),
        ]
    elif (task, model) == ("mnist_cnn", "cnn"):
        stack = [
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
    elif (task, model) == ("cifar10_cnn", "cnn"):
        shift = float(spec.option("max_shift")) / 32.0
        stack = [
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
    elif (task, model) == ("imdb_fasttext", "fasttext"):
        stack = [
            keras.Input((int(spec.option("maxlen")),), dtype="int32"),
            layers.Embedding(vocabulary(spec), int(spec.option("embed"))),
            layers.GlobalAveragePooling1D(),
            layers.Dense(1, activation="sigmoid"),
        ]
    elif (task, model) == ("imdb_bilstm", "bilstm"):
        stack = [
            keras.Input((int(spec.option("maxlen")),), dtype="int32"),
            layers.Embedding(vocabulary(spec), int(spec.option("embed"))),
            layers.Bidirectional(_lstm(keras, int(spec.option("units")), lstm_kernel)),
            layers.Dropout(0.5),
            layers.Dense(1, activation="sigmoid"),
        ]
    elif (task, model) == ("textgen_lstm", "lstm"):
        stack = [
            keras.Input((int(spec.option("maxlen")),), dtype="int32"),
            layers.Lambda(lambda ids: keras.ops.one_hot(ids, outputs), name="one_hot"),
            _lstm(keras, int(spec.option("units")), lstm_kernel),
            layers.Dense(outputs, activation="softmax"),
        ]
    else:
        raise KeyError(f"no keras model {model!r} for task {task!r}")
    return keras.Sequential(stack, name=task)


def make_keras_optimizer(name: str, lr: float, options: dict[str, float]):
    """The task's optimizer; options use torch's names (alpha, eps) and are mapped to Keras'."""
    import keras

    eps = options.get("eps", 1e-7)
    if name == "rmsprop":
        return keras.optimizers.RMSprop(lr, rho=options.get("alpha", 0.9), epsilon=eps)
    if name == "adadelta":
        return keras.optimizers.Adadelta(lr, rho=options.get("rho", 0.95), epsilon=eps)
    if name == "adam":
        return keras.optimizers.Adam(lr, epsilon=eps)
    raise KeyError(f"unknown optimizer {name!r}")

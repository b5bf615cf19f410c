"""Keras ports of cifar10_finetune's convolutional models: keras.applications, random weights.

keras.applications has ConvNeXt-T/S and ResNet-50 (``weights=None``: offline, nothing
downloaded); keras-hub would have more (ViT, DeiT, ConvNeXt V2, BERT) but cannot be installed
beside tensorflow-cpu (it requires tensorflow-text, which requires the full ``tensorflow``
package). The cell is timed as the classic Keras cells are (frameworks/keras_backend.py): the
model's own ``train_step`` on a batch gathered on the device, in ``tf.function`` on TensorFlow
and eagerly on torch. What the torch path of the workload does, this does too: uint8 images stay
on the device and a float32 layer in front of the network scales, normalizes (ImageNet
statistics) and bilinearly resizes them to the model's image size inside the step; AdamW with
torch's defaults; logits and cross-entropy; mixed precision by Keras policies (fp16 through
Keras' loss-scale optimizer). ``compiled`` is Keras' ``jit_compile=True`` as its trainers apply
it: XLA (``tf.function(jit_compile=True)``) on TensorFlow, ``torch.compile`` of the step on
torch; the first compiled call of each graph is timed apart as ``compile_s``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from devicebench.frameworks import KERAS_POLICIES
from devicebench.frameworks.keras_backend import KerasBackend
from devicebench.workloads.base import TaskSpec

# cifar10_finetune model -> keras.applications builder
APPLICATIONS = {
    "convnext-tiny": "ConvNeXtTiny",
    "convnext-small": "ConvNeXtSmall",
    "resnet-50": "ResNet50",
}
POLICIES = KERAS_POLICIES
FIT_LOOP = (
    "keras {version} on {kind}: keras.applications {app} (weights=None), model.train_step per "
    "batch {how}; uint8 CIFAR-10 batches gathered on the device, scale + ImageNet normalization "
    "+ bilinear resize to the model's image size in a float32 layer inside the step, AdamW, "
    "Keras mixed-precision policy (loss-scale optimizer for fp16)"
)


def build_model(
    model: str,
    seed: int,
    side: int,
    *,
    input_side: int = 32,
    classes: int = 10,
    mean: tuple,
    std: tuple,
):
    """The uncompiled Keras model: uint8 NHWC images in, logits out (`side` px inside)."""
    import keras

    from devicebench.frameworks.keras_seed import set_random_seed

    set_random_seed(keras, seed)
    options = {"include_preprocessing": False} if model.startswith("convnext") else {}
    network = getattr(keras.applications, APPLICATIONS[model])(
        weights=None,
        input_shape=(side, side, 3),
        classes=classes,
        classifier_activation=None,
        **options,
    )
    images = keras.Input((input_side, input_side, 3), dtype="uint8", name="images")
    x = _prepare_layer(keras, side, mean, std)(images)
    return keras.Model(images, network(x), name=f"cifar10_finetune_{model}")


def _prepare_layer(keras: Any, side: int, mean, std):
    """The on-device batch preparation as a float32 layer (the model's compute dtype follows)."""
    ops = keras.ops

    class ScaleNormalizeResize(keras.layers.Layer):
        def call(self, images):
            x = ops.cast(images, "float32") / 255.0
            x = (x - ops.convert_to_tensor(mean, "float32")) / ops.convert_to_tensor(std, "float32")
            if ops.shape(x)[1] != side:
                x = ops.image.resize(x, (side, side), interpolation="bilinear", antialias=False)
            return x

        def compute_output_shape(self, input_shape):
            return (input_shape[0], side, side, 3)

    return ScaleNormalizeResize(dtype="float32", name="scale_normalize_resize")


class KerasImageBackend(KerasBackend):
    """One keras.applications model, its AdamW optimizer and device-resident uint8 images."""

    def __init__(
        self, spec: TaskSpec, settings: dict[str, Any], dataset: Any, side: int, mean, std
    ) -> None:
        import keras

        expected = str(settings["framework"]).removeprefix("keras-")
        if keras.backend.backend() != expected:
            raise RuntimeError(
                f"keras runs on {keras.backend.backend()}, not {expected}: KERAS_BACKEND?"
            )
        self.keras, self.kind = keras, keras.backend.backend()
        self.name = f"keras-{self.kind}"
        self.spec, self.settings = spec, settings
        self.side, self.mean, self.std = side, mean, std
        self.batch_size = int(settings["batch_size"])
        self.precision = str(settings["precision"])
        if self.precision not in POLICIES:
            raise ValueError(f"unknown precision {self.precision!r}; known: {', '.join(POLICIES)}")
        self.compiled = str(settings.get("compile", "eager")) == "compiled"
        self.compile_s: dict[str, float] = {}
        self._set_matmul_precision()
        keras.config.set_dtype_policy(POLICIES[self.precision])
        how = {
            ("tensorflow", False): "in tf.function",
            ("tensorflow", True): "in tf.function(jit_compile=True) (XLA)",
            ("torch", False): "eagerly",
            ("torch", True): "under torch.compile (Keras' jit_compile on torch)",
        }[self.kind, self.compiled]
        self.fit_loop = FIT_LOOP.format(
            version=keras.__version__, kind=self.kind, app=APPLICATIONS[settings["model"]], how=how
        )
        # channels-first arrays to Keras' channels-last, once on the host; uint8 on the device
        x_train = np.ascontiguousarray(dataset.x_train.transpose(0, 2, 3, 1))
        x_test = np.ascontiguousarray(dataset.x_test.transpose(0, 2, 3, 1))
        self.input_side = int(x_train.shape[1])
        self.x_train, self.x_test = self._tensor(x_train), self._tensor(x_test)
        self.y_train = self._tensor(dataset.y_train.astype(np.int32))
        self.y_test_np = dataset.y_test.astype(np.int64)
        self.classes = int(dataset.num_classes)
        self.train_samples, self.test_samples = len(dataset.y_train), len(dataset.y_test)
        self.model: Any = None

    def _set_matmul_precision(self) -> None:
        """TF32 math only in tf32 cells (TensorFlow enables it by default on Ampere and later)."""
        if self.kind == "torch":
            from devicebench.frameworks.transformer_backend import set_matmul_precision

            set_matmul_precision(self.precision)
        else:
            import tensorflow as tf

            tf.config.experimental.enable_tensor_float_32_execution(self.precision == "tf32")

    @property
    def model_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "keras_backend": self.kind,
            "compile": "compiled" if self.compiled else "eager",
            "precision_math": self.precision,
            "dtype_policy": POLICIES[self.precision],
            "architecture": f"keras.applications.{APPLICATIONS[self.settings['model']]}",
            "weights": "random",
        }
        if self.compiled:
            info["compile_s"] = self.compile_s
        return info

    def _build(self, seed: int) -> Any:
        return build_model(
            self.settings["model"],
            seed,
            self.side,
            input_side=self.input_side,
            classes=self.classes,
            mean=self.mean,
            std=self.std,
        )

    def new_model(self, seed: int) -> None:
        """Fresh initial weights from `seed` and fresh optimizer state in the same model.

        The model, its optimizer and its traced (or compiled) step are built once per cell, so a
        repetition never retraces or recompiles; a seed's initial weights are built once too.
        """
        keras = self.keras
        if self.model is None:
            model = self._build(seed)
            optimizer = keras.optimizers.AdamW(
                learning_rate=float(self.settings["learning_rate"]),
                weight_decay=float(self.spec.optimizer_options.get("weight_decay", 0.0)),
                epsilon=1e-8,  # torch's AdamW default (Keras' is 1e-7)
            )
            model.compile(
                optimizer=optimizer,
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                jit_compile=self.compiled,
            )
            model.optimizer.build(model.trainable_variables)
            # Build the compiled loss eagerly, as fit does before its first (compiled) step:
            # torch.compile cannot trace that lazy build (a dynamo error in torch 2.13).
            x, y = self.x_train[:2], self.y_train[:2]
            model.compute_loss(x=x, y=y, y_pred=model(x, training=False))
            self.model = model
            self._initial = {seed: model.get_weights()}
            self._optimizer_initial = [
                keras.ops.convert_to_numpy(v) for v in model.optimizer.variables
            ]
            self._step, self._predict = self._functions(model)
            self._first = {"train", "infer"} if self.compiled else set()
        else:
            if seed not in self._initial:
                self._initial[seed] = self._build(seed).get_weights()
            self.model.set_weights(self._initial[seed])
            for variable, value in zip(
                self.model.optimizer.variables, self._optimizer_initial, strict=True
            ):
                variable.assign(value)
            self.model.reset_metrics()
        self.rng = np.random.default_rng(seed)

    def evaluate(self) -> tuple[np.ndarray, float]:
        """Predictions for the whole test set and its mean cross-entropy (untimed)."""
        logits = []
        for start in range(0, self.test_samples, self.batch_size):
            out = self._predict(self.x_test[start : start + self.batch_size])
            logits.append(self.keras.ops.convert_to_numpy(out).astype(np.float64))
        z, y = np.concatenate(logits), self.y_test_np
        z = z - z.max(axis=1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return z.argmax(axis=1), float(-log_p[np.arange(len(y)), y].mean())

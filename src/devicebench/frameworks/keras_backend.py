"""Keras 3 backend (TensorFlow or torch, chosen by KERAS_BACKEND before keras is imported).

Timing follows the Backend protocol, not ``model.fit``: every step calls the model's own
``train_step`` (the step ``fit`` and ``train_on_batch`` run) on a batch gathered on the device
from device-resident tensors, wrapped in ``tf.function`` on TensorFlow (as ``fit`` does, without
XLA) and run eagerly on torch (as Keras' torch trainer does). Unlike ``train_on_batch``, logs are
not copied to the host after each step; the device is synchronised once at the end of a call.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from devicebench.frameworks import KERAS_POLICIES
from devicebench.frameworks.keras_seed import set_random_seed

# The classic Keras loop sets no TF32 math, so tf32 is no precision of its cells.
POLICIES = {name: policy for name, policy in KERAS_POLICIES.items() if name != "tf32"}


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


class KerasBackend:
    """One classic workload's Keras model, optimizer and device-resident data for one cell.

    `workload` is a devicebench.workloads.classic.ClassicWorkload (inputs, `build_keras`).
    """

    compiled = False  # the classic tasks run eagerly; workload subclasses may compile
    _first: set[str] = set()  # graphs ("train", "infer") whose first call is compilation

    def __init__(self, workload: Any, settings: dict[str, Any], dataset: Any) -> None:
        import keras

        spec = workload.spec
        self.keras = keras
        self.kind = keras.backend.backend()
        self.name = f"keras-{self.kind}"
        self.fit_loop = (
            f"keras {keras.__version__} on {self.kind}: model.train_step per batch "
            + ("in tf.function (no XLA)" if self.kind == "tensorflow" else "eagerly (no compile)")
            + ", batches gathered on device from a host-shuffled index, no per-step log copy; "
            "inference with model(x, training=False), synchronised per batch"
            + (
                "; cifar10 augmentation by RandomTranslation+RandomFlip layers in the model"
                if workload.augment
                else ""
            )
        )
        self.workload, self.spec, self.settings = workload, spec, settings
        self.batch_size = int(settings["batch_size"])
        self.lstm_kernel = str(settings.get("lstm_kernel", "cudnn"))
        keras.config.set_dtype_policy(POLICIES[settings["precision"]])
        arrays = workload.arrays(dataset)
        self.binary, self.outputs = workload.binary, arrays.outputs
        self.y_test_np = arrays.y_test
        self.x_train = self._tensor(self._layout(arrays.x_train))
        self.y_train = self._tensor(self._labels(arrays.y_train))
        self.x_test = self._tensor(self._layout(arrays.x_test))
        self.train_samples, self.test_samples = len(arrays.y_train), len(arrays.y_test)
        self.model: Any = None

    def _layout(self, x: np.ndarray) -> np.ndarray:
        if x.ndim == 4:  # images: channels-first arrays to Keras' channels-last
            return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        return x.astype(np.int32) if x.dtype.kind == "i" else x

    def _labels(self, y: np.ndarray) -> np.ndarray:
        return y.astype(np.float32)[:, None] if self.binary else y.astype(np.int32)

    def _tensor(self, array: np.ndarray) -> Any:
        return self.keras.ops.convert_to_tensor(array)  # on the backend's default device

    @property
    def model_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"keras_backend": self.kind}
        if "lstm" in self.settings["model"]:
            effective = "generic"
            if self.lstm_kernel == "cudnn" and self._cuda():
                effective = "cudnn"  # Keras picks cuDNN where eligible on a CUDA device
            elif self.lstm_kernel == "cudnn":
                effective = f"keras_default_{self.settings['device']} (cuDNN does not apply)"
            info |= {"lstm_kernel": self.lstm_kernel, "lstm_kernel_effective": effective}
        return info

    def _cuda(self) -> bool:
        if self.kind == "torch":
            import torch

            return torch.cuda.is_available()
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))

    def sync(self, value: Any = None) -> None:
        """Wait for queued device work (on TF, reading a result to the host does it)."""
        if self.kind == "torch":
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
        elif value is not None:
            np.asarray(value)

    def new_model(self, seed: int) -> None:
        """A fresh model, compiled, with optimizer state built: same seed, same weights."""
        keras = self.keras
        set_random_seed(keras, seed)  # without importing TensorFlow into keras-torch
        model = self.workload.build_keras(
            self.settings["model"],
            outputs=self.outputs,
            lstm_kernel=self.lstm_kernel,
        )
        loss = "binary_crossentropy" if self.binary else "sparse_categorical_crossentropy"
        optimizer = make_keras_optimizer(
            self.spec.optimizer, float(self.settings["learning_rate"]), self.spec.optimizer_options
        )
        model.compile(optimizer=optimizer, loss=loss, jit_compile=False)
        model.optimizer.build(model.trainable_variables)
        self.model = model
        self.rng = np.random.default_rng(seed)
        self._step, self._predict = self._functions(model)

    def _functions(self, model: Any) -> tuple[Any, Any]:
        """The train step and the forward pass, as Keras' own trainers wrap them: tf.function
        (XLA when `compiled`) on TensorFlow; torch.compile when `compiled` on torch."""
        jit = self.compiled
        if self.kind == "tensorflow":
            import tensorflow as tf

            x_train, y_train = self.x_train, self.y_train

            @tf.function(jit_compile=jit, reduce_retracing=True)
            def step(index):
                return model.train_step((tf.gather(x_train, index), tf.gather(y_train, index)))

            @tf.function(jit_compile=jit, reduce_retracing=True)
            def predict(x):
                return model(x, training=False)

            return step, predict
        import torch

        def torch_step(index):
            return model.train_step((self.x_train[index], self.y_train[index]))

        def torch_forward(x):
            return model(x, training=False)

        forward = torch.compile(torch_forward) if jit else torch_forward

        def torch_predict(x):
            with torch.no_grad():
                return forward(x)

        return (torch.compile(torch_step) if jit else torch_step), torch_predict

    def parameter_count(self) -> int:
        return int(sum(np.prod(v.shape) for v in self.model.trainable_weights))

    def _first_compiled(self, kind: str, run: Any) -> None:
        """A graph's first compiled call, timed apart as its compile time (`compile_s`)."""
        if kind in self._first:
            self._first.discard(kind)
            start = time.perf_counter()
            self.sync(run())
            self.compile_s[kind] = self.compile_s.get(kind, 0.0) + time.perf_counter() - start

    def train_steps(self, steps: int) -> None:
        """`steps` train steps over one shuffled pass; synchronises at the end."""
        batch = self.batch_size
        order = self._tensor(self.rng.permutation(self.train_samples)[: steps * batch])
        first = 0
        if steps and "train" in self._first:
            self._first_compiled("train", lambda: self._step(order[:batch])["loss"])
            first = 1
        logs = None
        for step in range(first, steps):
            logs = self._step(order[step * batch : (step + 1) * batch])
        self.sync(None if logs is None else logs["loss"])

    def infer_batches(self, steps: int) -> list[float]:
        """Forward `steps` test batches; each batch's latency, synchronised per batch."""
        self._first_compiled("infer", lambda: self._predict(self.x_test[: self.batch_size]))
        batch, latencies = self.batch_size, []
        for step in range(steps):
            start = time.perf_counter()
            out = self._predict(self.x_test[step * batch : (step + 1) * batch])
            self.sync(out)
            latencies.append(time.perf_counter() - start)
        return latencies

    def evaluate(self) -> tuple[np.ndarray, float]:
        """Predictions for the whole test set and its mean loss (untimed)."""
        probs = []
        for start in range(0, self.test_samples, self.batch_size):
            out = self._predict(self.x_test[start : start + self.batch_size])
            probs.append(self.keras.ops.convert_to_numpy(out).astype(np.float64))
        p, y = np.concatenate(probs), self.y_test_np
        eps = 1e-7
        if self.binary:
            p = np.clip(p[:, 0], eps, 1 - eps)
            loss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
            return (p > 0.5).astype(np.int64), float(loss)
        loss = -np.mean(np.log(np.clip(p[np.arange(len(y)), y], eps, None)))
        return p.argmax(axis=1), float(loss)

    def peak_device_memory_mb(self) -> float | None:
        if not self._cuda():
            return None
        if self.kind == "torch":
            import torch

            return torch.cuda.max_memory_allocated() / 2**20
        import tensorflow as tf

        return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20

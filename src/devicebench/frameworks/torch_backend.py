"""PyTorch backend: keeps the data on the device and runs steps with no per-step host sync.

The driver times whole epochs and passes around these calls; each call ends with a device
synchronize so the host clock never reads over queued work. Binary tasks train one logit with
BCE-with-logits; CIFAR-10 batches are augmented on the device inside the timed loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from devicebench.engines.base import EngineView
from devicebench.frameworks.torch_device import TorchDevice, autocast_dtype, timed_batches


def make_optimizer(
    name: str, params, lr: float, options: dict[str, float]
) -> torch.optim.Optimizer:
    """The task's optimizer with Keras' hyperparameter conventions."""
    params = [p for p in params if p.requires_grad]
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, **options)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, **options)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, **options)
    raise KeyError(f"unknown optimizer {name!r}")


class TorchBackend(TorchDevice):
    """One classic workload's model, optimizer and device-resident data for one cell.

    `workload` is a devicebench.workloads.classic.ClassicWorkload: it gives the inputs
    (`arrays`), the model (`build_torch`) and whether batches are augmented (`augment`).
    """

    name = "torch"
    fit_loop = (
        "hand-written loop: shuffled index gather on device, autocast, no per-step sync; "
        "cifar10 augmentation (random shift up to 3 px with edge padding, horizontal flip) "
        "per batch on the device"
    )

    def __init__(self, workload: Any, settings: dict[str, Any], dataset: Any) -> None:
        spec = workload.spec
        self.workload, self.spec = workload, spec
        self.settings = settings
        self.device = torch.device(settings["device"])
        self.batch_size = int(settings["batch_size"])
        arrays = workload.arrays(dataset)
        self.binary = workload.binary
        self.outputs = arrays.outputs
        label_dtype = torch.float32 if self.binary else torch.int64
        self.x_train = torch.as_tensor(arrays.x_train, device=self.device)
        self.y_train = torch.as_tensor(arrays.y_train, dtype=label_dtype, device=self.device)
        self.x_test = torch.as_tensor(arrays.x_test, device=self.device)
        self.y_test = torch.as_tensor(arrays.y_test, dtype=label_dtype, device=self.device)
        self.generator = torch.Generator(device=self.device)
        self.loss_fn = F.binary_cross_entropy_with_logits if self.binary else F.cross_entropy
        self.lstm_kernel = str(settings.get("lstm_kernel", "cudnn"))
        self.augment = workload.augment
        self.max_shift = int(spec.options.get("max_shift", 0))
        precision = settings["precision"]
        self.autocast_dtype = autocast_dtype(precision)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=precision == "fp16")
        self.model: torch.nn.Module | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        # compile=compiled (classic tasks' GPU cells, issue 36): torch.compile once per cell, CUDA
        # graphs on a GPU (mode reduce-overhead); later models load their weights into it
        self.compiled = settings.get("compile") == "compiled"
        self.compile_mode = "reduce-overhead" if self.device.type == "cuda" else "default"
        self._module: torch.nn.Module | None = None

    @property
    def model_info(self) -> dict[str, Any]:
        """What the record says about this model beyond its parameter count."""
        info: dict[str, Any] = {"augmentation": "on-device shift+flip" if self.augment else None}
        if self.compiled:
            info["compile"] = f"torch.compile(mode={self.compile_mode!r}), compiled once per cell"
        if "lstm" in self.settings["model"]:
            if self.lstm_kernel == "generic":
                effective = "generic"
            elif self.device.type == "cuda" and torch.backends.cudnn.enabled:
                effective = "cudnn"
            else:
                effective = f"aten_fused_{self.device.type}"  # cuDNN does not apply here
            info |= {"lstm_kernel": self.lstm_kernel, "lstm_kernel_effective": effective}
        return info

    def _augmented(self, x: torch.Tensor) -> torch.Tensor:
        """Random shift (edge pixels repeat, as Keras' fill_mode 'nearest') and flip, per sample."""
        n, side = x.shape[0], x.shape[-1]
        shift = self.max_shift
        dy, dx = torch.randint(-shift, shift + 1, (2, n, 1), device=x.device)
        base = torch.arange(side, device=x.device)
        flip = torch.rand(n, 1, device=x.device) < 0.5
        cols = torch.where(flip, side - 1 - base, base)
        rows = (base + dy).clamp_(0, side - 1)
        cols = (cols + dx).clamp_(0, side - 1)
        batch = torch.arange(n, device=x.device)[:, None, None]
        return x.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)

    @property
    def train_samples(self) -> int:
        return len(self.y_train)

    @property
    def test_samples(self) -> int:
        return len(self.y_test)

    def new_model(self, seed: int) -> None:
        """A fresh model and optimizer: every repetition starts from the same weights."""
        fresh = self.workload.build_torch(
            self.settings["model"],
            seed,
            outputs=self.outputs,
            lstm_kernel=self.lstm_kernel,
        ).to(self.device)
        if not self.compiled:
            self.model = self._module = fresh
        elif self._module is None:  # compiled once; the first (warm-up) calls compile it
            self._module = fresh
            self.model = torch.compile(fresh, mode=self.compile_mode)
        else:  # the same compiled module, the fresh weights: a repetition never recompiles
            self._module.load_state_dict(fresh.state_dict())
        self.optimizer = make_optimizer(
            self.spec.optimizer,
            self._module.parameters(),
            float(self.settings["learning_rate"]),
            self.spec.optimizer_options,
        )
        self.generator.manual_seed(seed)

    def parameter_count(self) -> int:
        assert self.model is not None
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def train_steps(self, steps: int) -> None:
        """`steps` optimizer steps over one shuffled pass; synchronizes at the end.

        The loop is as lean as a hand-written one: autocast and loss scaling enter only for the
        precisions that need them, so fp32 cells pay for neither; augmentation (CIFAR-10) runs
        on the device, per batch, inside the timed loop.
        """
        model, optimizer, batch = self.model, self.optimizer, self.batch_size
        x, y, loss_fn = self.x_train, self.y_train, self.loss_fn
        augment = self._augmented if self.augment else None
        model.train()
        order = torch.randperm(self.train_samples, device=self.device, generator=self.generator)
        if self.autocast_dtype is None:
            for step in range(steps):
                index = order[step * batch : (step + 1) * batch]
                xb = x[index] if augment is None else augment(x[index])
                loss = loss_fn(model(xb), y[index])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        else:
            scaler = self.scaler
            for step in range(steps):
                index = order[step * batch : (step + 1) * batch]
                xb = x[index] if augment is None else augment(x[index])
                with self._autocast():
                    loss = loss_fn(model(xb).float(), y[index])
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
        self.sync()

    @torch.inference_mode()
    def infer_batches(self, steps: int) -> list[float]:
        """Forward `steps` test batches; returns each batch's latency in seconds."""
        model, batch = self.model, self.batch_size
        model.eval()

        def forward(step: int) -> None:
            with self._autocast():
                model(self.x_test[step * batch : (step + 1) * batch])

        return timed_batches(self.device, range(steps), forward, self.sync)

    def engine_view(self) -> EngineView:
        """The trained model and the data, for an inference engine (devicebench.engines)."""

        def inputs(split: str, start: int, stop: int) -> dict[str, torch.Tensor]:
            return {"x": (self.x_test if split == "test" else self.x_train)[start:stop]}

        return EngineView(self.model, inputs, self.y_test, binary=self.binary)

    @torch.inference_mode()
    def evaluate(self) -> tuple[np.ndarray, float]:
        """Predictions for the whole test set and its mean loss (untimed)."""
        model = self.model
        model.eval()
        predictions, total_loss = [], torch.zeros((), device=self.device)
        for start in range(0, self.test_samples, self.batch_size):
            x = self.x_test[start : start + self.batch_size]
            y = self.y_test[start : start + self.batch_size]
            with self._autocast():
                logits = model(x).float()
            total_loss += self.loss_fn(logits, y) * len(y)
            predictions.append((logits > 0).long() if self.binary else logits.argmax(dim=1))
        predicted = torch.cat(predictions).cpu().numpy()
        return predicted, float(total_loss.item() / self.test_samples)

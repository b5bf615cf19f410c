"""PyTorch backend: keeps the data on the device and runs steps with no per-step host sync.

The driver times whole epochs and passes around these calls; each call ends with a device
synchronize so the host clock never reads over queued work.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from devicebench.frameworks.torch_models import INPUT_SHAPES, build_model, make_optimizer
from devicebench.tasks import TaskSpec

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class TorchBackend:
    """One task's model, optimizer and device-resident data for one cell."""

    name = "torch"
    fit_loop = "hand-written loop: shuffled index gather on device, autocast, no per-step sync"

    def __init__(self, spec: TaskSpec, settings: dict[str, Any], dataset: Any) -> None:
        self.spec = spec
        self.settings = settings
        self.device = torch.device(settings["device"])
        self.batch_size = int(settings["batch_size"])
        shape = INPUT_SHAPES[spec.name]
        self.x_train = self._to_device(dataset.x_train, shape)
        self.y_train = torch.as_tensor(dataset.y_train, dtype=torch.int64, device=self.device)
        self.x_test = self._to_device(dataset.x_test, shape)
        self.y_test = torch.as_tensor(dataset.y_test, dtype=torch.int64, device=self.device)
        self.generator = torch.Generator(device=self.device)
        precision = settings["precision"]
        self.autocast_dtype = DTYPES.get(precision)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=precision == "fp16")
        self.model: nn.Module | None = None
        self.optimizer: torch.optim.Optimizer | None = None

    def _to_device(self, images: np.ndarray, shape: tuple[int, ...]) -> torch.Tensor:
        tensor = torch.as_tensor(images, device=self.device).to(torch.float32).div_(255.0)
        return tensor.reshape(len(images), *shape).contiguous()

    @property
    def train_samples(self) -> int:
        return len(self.y_train)

    @property
    def test_samples(self) -> int:
        return len(self.y_test)

    def sync(self) -> None:
        """Wait for queued device work, so a host clock read after it is honest."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        elif self.device.type == "mps":
            torch.mps.synchronize()

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def new_model(self, seed: int) -> None:
        """A fresh model and optimizer: every repetition starts from the same weights."""
        self.model = build_model(self.spec.name, self.settings["model"], seed).to(self.device)
        self.optimizer = make_optimizer(
            self.spec.optimizer,
            self.model.parameters(),
            float(self.settings["learning_rate"]),
            self.spec.optimizer_options,
        )
        self.generator.manual_seed(seed)

    def parameter_count(self) -> int:
        assert self.model is not None
        return sum(p.numel() for p in self.model.parameters())

    def train_steps(self, steps: int) -> None:
        """`steps` optimizer steps over one shuffled pass; synchronizes at the end.

        The loop is as lean as a hand-written one: autocast and loss scaling enter only for the
        precisions that need them, so fp32 cells pay for neither.
        """
        model, optimizer, batch = self.model, self.optimizer, self.batch_size
        x, y, loss_fn = self.x_train, self.y_train, F.cross_entropy
        model.train()
        order = torch.randperm(self.train_samples, device=self.device, generator=self.generator)
        if self.autocast_dtype is None:
            for step in range(steps):
                index = order[step * batch : (step + 1) * batch]
                loss = loss_fn(model(x[index]), y[index])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        else:
            scaler = self.scaler
            for step in range(steps):
                index = order[step * batch : (step + 1) * batch]
                with self._autocast():
                    loss = loss_fn(model(x[index]), y[index])
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
        cuda = self.device.type == "cuda"
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)] if cuda else []
        latencies = []
        if cuda:
            marks[0].record()
        for step in range(steps):
            start = time.perf_counter()
            with self._autocast():
                model(self.x_test[step * batch : (step + 1) * batch])
            if cuda:
                marks[step + 1].record()
            else:
                self.sync()
                latencies.append(time.perf_counter() - start)
        self.sync()
        if cuda:
            latencies = [a.elapsed_time(b) / 1000.0 for a, b in zip(marks, marks[1:], strict=False)]
        return latencies

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
            total_loss += F.cross_entropy(logits, y) * len(y)
            predictions.append(logits.argmax(dim=1))
        predicted = torch.cat(predictions).cpu().numpy()
        return predicted, float(total_loss.item() / self.test_samples)

    def peak_device_memory_mb(self) -> float | None:
        if self.device.type == "cuda":
            return torch.cuda.max_memory_allocated(self.device) / 2**20
        return None

    @staticmethod
    def is_oom(error: BaseException) -> bool:
        return isinstance(error, torch.OutOfMemoryError | MemoryError)

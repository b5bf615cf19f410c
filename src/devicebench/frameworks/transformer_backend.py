"""The torch backend of the transformer workloads: precision, torch.compile, on-device data.

Shared by text_classify and cifar10_finetune (each passes its model builder and its batch
preparation). Like frameworks/torch_backend.py it keeps the data on the device, gathers shuffled
batches there and synchronizes only at the end of a call. What it adds:

- precision: fp32 (full-precision matmuls), tf32 (TF32 matmuls and convolutions), bf16 and fp16
  (autocast; fp16 trains through a gradient scaler);
- compile: ``compiled`` wraps the model in ``torch.compile`` once per cell; ``new_model`` loads
  fresh initial weights into that same module, so a repetition never recompiles. The first call
  of each compiled graph (compilation included) is timed on its own and reported as
  ``compile_s`` in the record's model section, apart from throughput, as warm-up is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from devicebench.engines.base import EngineView
from devicebench.frameworks.torch_device import TorchDevice, autocast_dtype, timed_batches
from devicebench.measure.precision import apply_precision_math
from devicebench.workloads.base import TaskSpec


def set_matmul_precision(precision: str) -> None:
    """TF32 tensor-core math only for the tf32 cells; plain FP32 for fp32 (and under autocast)."""
    apply_precision_math(precision)


class TransformerBackend(TorchDevice):
    """One model, its AdamW optimizer and device-resident data for one cell.

    ``build(seed)`` returns a fresh CPU model whose forward takes the tensors ``prepare`` returns
    and yields logits; ``data`` maps split ("train"/"test") to a dict of equally long tensors
    including ``labels``.
    """

    name = "torch"

    def __init__(
        self,
        spec: TaskSpec,
        settings: dict[str, Any],
        data: dict[str, dict[str, np.ndarray]],
        build: Callable[[int], torch.nn.Module],
        prepare: Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]],
        fit_loop: str,
        channels_last: bool = False,
        weights: dict[str, Any] | None = None,
    ) -> None:
        self.spec, self.settings = spec, settings
        self.weights = weights if weights is not None else {"weights": "random"}
        self.device = torch.device(settings["device"])
        self.batch_size = int(settings["batch_size"])
        self.build, self.prepare, self.fit_loop = build, prepare, fit_loop
        self.channels_last = channels_last
        self.train = {k: torch.as_tensor(v, device=self.device) for k, v in data["train"].items()}
        self.test = {k: torch.as_tensor(v, device=self.device) for k, v in data["test"].items()}
        self.precision = str(settings["precision"])
        set_matmul_precision(self.precision)
        self.autocast_dtype = autocast_dtype(self.precision)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.precision == "fp16")
        self.compiled = str(settings.get("compile", "eager")) == "compiled"
        self.generator = torch.Generator(device=self.device)
        self.module: torch.nn.Module | None = None  # the eager module (weights live here)
        self.model: Callable | None = None  # what steps call: the module or its compiled form
        self.optimizer: torch.optim.Optimizer | None = None
        self.compile_s: dict[str, float] = {}
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)

    @property
    def model_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "compile": "compiled" if self.compiled else "eager",
            "precision_math": self.precision,
            "architecture": type(getattr(self.module, "model", self.module)).__name__,
            **self.weights,
        }
        if self.compiled:
            info["compile_s"] = self.compile_s
        return info

    @property
    def train_samples(self) -> int:
        return len(self.train["labels"])

    @property
    def test_samples(self) -> int:
        return len(self.test["labels"])

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def new_model(self, seed: int) -> None:
        """Fresh initial weights from `seed` and a new optimizer; the compiled graph is kept."""
        fresh = self.build(seed)
        if self.module is None:
            self.module = fresh.to(self.device)
            if self.channels_last:
                self.module = self.module.to(memory_format=torch.channels_last)
            self.model = torch.compile(self.module) if self.compiled else self.module
        else:
            self.module.load_state_dict(fresh.state_dict())
        self.optimizer = torch.optim.AdamW(
            self.module.parameters(),
            lr=float(self.settings["learning_rate"]),
            weight_decay=float(self.spec.optimizer_options.get("weight_decay", 0.0)),
        )
        self.generator.manual_seed(seed)

    def parameter_count(self) -> int:
        assert self.module is not None
        return sum(p.numel() for p in self.module.parameters() if p.requires_grad)

    def _first_compiled(self, kind: str, run: Callable[[], Any]) -> None:
        """Run a graph's first compiled call, timed apart as its compile time."""
        start = time.perf_counter()
        run()
        self.sync()
        self.compile_s[kind] = time.perf_counter() - start

    def _batch(self, split: dict[str, torch.Tensor], index: Any) -> dict[str, torch.Tensor]:
        batch = self.prepare({k: v[index] for k, v in split.items()})
        if self.channels_last and "pixel_values" in batch:
            batch["pixel_values"] = batch["pixel_values"].contiguous(
                memory_format=torch.channels_last
            )
        return batch

    def _train_step(self, index: torch.Tensor) -> None:
        batch = self._batch(self.train, index)
        labels = batch.pop("labels")
        with self._autocast():
            logits = self.model(**batch)
        loss = F.cross_entropy(logits.float(), labels)
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler.is_enabled():
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()

    def train_steps(self, steps: int) -> None:
        """`steps` optimizer steps over one shuffled pass; synchronizes at the end."""
        self.module.train()
        batch = self.batch_size
        order = torch.randperm(self.train_samples, device=self.device, generator=self.generator)
        first = 0
        if self.compiled and "train" not in self.compile_s and steps:
            self._first_compiled("train", lambda: self._train_step(order[:batch]))
            first = 1
        for step in range(first, steps):
            self._train_step(order[step * batch : (step + 1) * batch])
        self.sync()

    def _forward(self, split: dict[str, torch.Tensor], start: int, model: Callable) -> torch.Tensor:
        batch = self._batch(split, slice(start, start + self.batch_size))
        batch.pop("labels")
        with self._autocast():
            return model(**batch)

    @torch.inference_mode()
    def infer_batches(self, steps: int) -> list[float]:
        """Forward `steps` test batches; returns each batch's latency in seconds."""
        self.module.eval()
        batch = self.batch_size
        if self.compiled and "infer" not in self.compile_s:
            self._first_compiled("infer", lambda: self._forward(self.test, 0, self.model))
        return timed_batches(
            self.device,
            range(steps),
            lambda step: self._forward(self.test, step * batch, self.model),
            self.sync,
        )

    def engine_view(self) -> EngineView:
        """The trained eager module and the data, for an inference engine (devicebench.engines):
        the module takes the batch's tensors positionally, in the order `prepare` gives them."""
        splits = {"train": self.train, "test": self.test}

        def inputs(split: str, start: int, stop: int) -> dict[str, torch.Tensor]:
            batch = self._batch(splits[split], slice(start, stop))
            batch.pop("labels")
            return batch

        keys = tuple(inputs("test", 0, 1))
        return EngineView(Positional(self.module, keys), inputs, self.test["labels"])

    @torch.inference_mode()
    def evaluate(self) -> tuple[np.ndarray, float]:
        """Predictions for the whole test set and its mean loss (untimed, eager module)."""
        self.module.eval()
        predictions, total = [], torch.zeros((), device=self.device)
        for start in range(0, self.test_samples, self.batch_size):
            logits = self._forward(self.test, start, self.module).float()
            labels = self.test["labels"][start : start + self.batch_size]
            total += F.cross_entropy(logits, labels, reduction="sum")
            predictions.append(logits.argmax(dim=1))
        predicted = torch.cat(predictions).cpu().numpy()
        return predicted, float(total.item() / self.test_samples)


def weights_builder(
    settings: dict[str, Any],
    auto_class: str,
    num_labels: int,
    random: Callable[[int], torch.nn.Module],
) -> tuple[Callable[[int], torch.nn.Module], dict[str, Any]]:
    """The cell's model builder and the record's words on its weights.

    Random weights: `random` as given. ``weights: pretrained``: the checkpoint of
    ``settings["pretrained"]`` loaded afresh for every repetition (its `num_labels` head built
    from the repetition's seed); the dict fills in on the first load.
    """
    if settings.get("weights", "random") != "pretrained":
        return random, {"weights": "random"}
    from devicebench.frameworks.pretrained import load_model

    info: dict[str, Any] = {"weights": settings["pretrained"]}

    def build(seed: int) -> torch.nn.Module:
        net, loaded = load_model(
            auto_class, str(settings["model"]), str(settings["pretrained"]), num_labels, seed
        )
        info.update(loaded)
        return Logits(net)

    return build, info


class Logits(torch.nn.Module):
    """A transformers classifier whose forward returns the logits tensor (not a ModelOutput)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**inputs).logits


def architecture(auto_class: str, model: str, source: str, num_labels: int) -> Logits:
    """The checkpoint's architecture with random weights, forward -> logits (to count FLOPs)."""
    import transformers

    from devicebench.frameworks.pretrained import load_config

    config = load_config(model, source, num_labels)
    return Logits(getattr(transformers, auto_class).from_config(config))


class Positional(torch.nn.Module):
    """A module called with keyword tensors, callable with them positionally (for export)."""

    def __init__(self, model: torch.nn.Module, keys: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.keys = model, keys

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.keys, inputs, strict=True)))

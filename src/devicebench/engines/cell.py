"""An infer cell on an engine: the cell's torch backend trains (untimed), the engine scores.

``wrap_backend`` puts an ``EngineBackend`` around the workload's backend for the onnxruntime and
openvino values of the `engine` axis; the driver calls ``prepare_inference`` after training and
before warm-up, so export, quantization and compilation stay outside the timed window (their
seconds go to the record's engine section, as compile time does). ``finish`` adds the agreement
with torch fp32 of every bf16, int8 or engine cell, and what ran, to the record.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from devicebench import engines
from devicebench.engines.agreement import (
    agreement,
    batch_loss,
    reference_predictions,
    top1,
    verdict,
)
from devicebench.engines.base import Batch, EngineView, LoadOptions
from devicebench.engines.cpu_features import cpu_features, format_note
from devicebench.run import window as w
from devicebench.scenarios import modes

CALIBRATION_BATCHES = 8  # int8: training batches the quantizer calibrates on (at most)
ATTENTION_WORDS = ("Attention", "LSTM", "GRU", "RNN")


def view_of(backend: Any, engine: str) -> EngineView:
    """The backend's model and data for an engine, or a clear error where it offers none."""
    make = getattr(backend, "engine_view", None)
    if make is None:
        raise ValueError(
            f"engine {engine}: this workload's backend ({type(backend).__name__}) does not hand "
            "its torch model over (no engine_view)"
        )
    return make()


def is_convolutional(model: Any) -> bool:
    """A model of convolutions (static int8) rather than attention or recurrence (dynamic)."""
    names = [type(m).__name__ for m in model.modules()]
    convolutions = any(name.startswith("Conv") for name in names)
    return convolutions and not any(w in n for n in names for w in ATTENTION_WORDS)


def _numpy(inputs: dict[str, Any]) -> Batch:
    return {k: np.ascontiguousarray(v.detach().cpu().numpy()) for k, v in inputs.items()}


def engine_inputs(
    view: EngineView, batch: int, precision: str, train_samples: int
) -> tuple[list[Batch], list[Batch] | None]:
    """The test split in batches, and for int8 the calibration batches (training inputs)."""
    test = len(view.labels)
    batches = [_numpy(view.inputs("test", s, s + batch)) for s in range(0, test, batch)]
    if precision != "int8":
        return batches, None
    count = min(CALIBRATION_BATCHES, train_samples // batch)
    calibration = [_numpy(view.inputs("train", i * batch, (i + 1) * batch)) for i in range(count)]
    return batches, calibration


class EngineBackend:
    """A torch backend whose trained model is scored on another engine (see module doc)."""

    def __init__(self, inner: Any, settings: dict[str, Any]) -> None:
        self.inner, self.settings = inner, settings
        self.axis = str(settings["engine"])
        self.engine = engines.get(self.axis)
        self.name = f"{inner.name} model on {self.engine.name}"
        self.fit_loop = f"{inner.fit_loop}; scored by {self.engine.name}"
        self.batch_size = int(settings["batch_size"])
        self.loaded: Any = None
        self.info: dict[str, Any] = {}
        self.last: tuple[np.ndarray, float] | None = None

    def __getattr__(self, name: str) -> Any:  # train_steps, new_model, ... as the inner's
        return getattr(self.inner, name)

    @property
    def model_info(self) -> dict[str, Any]:
        return dict(getattr(self.inner, "model_info", {}))

    def prepare_inference(self) -> None:
        """Export, quantize and compile the trained model: once, before the timed window."""
        start = time.perf_counter()
        view = view_of(self.inner, self.axis)
        precision = str(self.settings["precision"])
        self.view = view
        self.batches, calibration = engine_inputs(
            view, self.batch_size, precision, int(self.inner.train_samples)
        )
        options = LoadOptions(
            precision=precision,
            threads=int(self.settings["threads_resolved"]),
            device=str(self.settings["device"]),
            engine=owner.of(self.settings) if (owner := engines.options_class(self.axis)) else None,
            calibration=calibration,
            convolutional=is_convolutional(view.model),
        )
        self.loaded = self.engine.load(view.model.eval(), self.batches[0], options)
        self.info = {**self.loaded.info, "prepare_s": time.perf_counter() - start}
        self.info["prepared_at"] = time.time()

    def infer_batches(self, steps: int) -> list[float]:
        """Score the first `steps` full test batches; each one's latency in seconds."""
        if self.loaded is None:
            self.prepare_inference()
        _, latencies = self.loaded.score_all(self.batches[:steps])
        return latencies

    def evaluate(self) -> tuple[np.ndarray, float]:
        """The engine's predictions for the whole test set and their mean loss (untimed)."""
        if self.loaded is None:
            self.prepare_inference()
        outputs = [self.loaded.run(batch) for batch in self.batches]
        labels = self.view.labels
        total = sum(
            float(
                batch_loss(
                    out, labels[i * self.batch_size : (i + 1) * self.batch_size], self.view.binary
                ).cpu()
            )
            for i, out in enumerate(outputs)
        )
        predicted = np.concatenate([top1(out, self.view.binary) for out in outputs])
        self.last = (predicted, total / len(labels))
        return self.last


def wrap_backend(backend: Any, settings: dict[str, Any]) -> Any:
    """The backend a batch scoring cell (infer: scenarios' `scores`, not `serves`) times: the
    engine's wrapper for model engines, else as is."""
    batch_scoring = settings["mode"] in modes(scores=True, serves=False)
    if settings.get("engine") in engines.MODEL_ENGINES and batch_scoring:
        return EngineBackend(backend, settings)
    return backend


def torch_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings the cell's torch backend is built with: int8 is post-training quantization
    of a model torch trained (untimed) in fp32."""
    if str(settings["precision"]) == "int8":
        return settings | {"precision": "fp32"}
    return settings


def needs_reference(settings: dict[str, Any]) -> bool:
    """bf16, int8 and engine cells are checked against torch fp32."""
    reduced = str(settings["precision"]) in engines.REDUCED_FORMATS
    return reduced or settings.get("engine") in engines.MODEL_ENGINES


def finish(result: dict[str, Any], backend: Any, settings: dict[str, Any], score: Any) -> None:
    """Add the engine section and the agreement with torch fp32 to a cell's result.

    ``score(predicted, loss)`` is the cell's own quality function (the same the driver used).
    """
    precision = str(settings["precision"])
    features = cpu_features() if settings["device"] == "cpu" else {}
    section: dict[str, Any] = {"name": engines.engine_name(engines.cell_engine(settings))}
    if isinstance(backend, EngineBackend):
        section |= backend.info
        section["trained_in"] = torch_settings(settings)["precision"]
    else:
        autocast = precision in ("bf16", "fp16")
        section["format_ran"] = f"{precision} autocast" if autocast else precision
    if features:
        section["cpu_features"] = features
        if note := format_note(precision, features):
            section["format_note"] = note
    result["engine"] = section
    if w.speed_only(settings):  # no fp32 reference pass: its quality section says why
        return
    view = getattr(backend, "view", None)
    if view is None:
        try:
            view = view_of(getattr(backend, "inner", backend), section["name"])
        except ValueError as error:
            result["quality"]["agreement_fp32"] = None
            result["quality"]["agreement_note"] = f"no fp32 reference: {error}"
            return
    predicted, _ = backend.last if getattr(backend, "last", None) else backend.evaluate()
    reference, loss = reference_predictions(view, int(settings["batch_size"]))
    reference_accuracy = score(reference, loss).get("accuracy")
    share = agreement(predicted, reference)
    result["quality"] |= verdict(share, reference_accuracy, reference)

"""The interface every engine implements, and what a loaded model hands back.

``Engine.load`` takes a torch model (forward takes its inputs positionally, in the order of the
example's keys, and returns logits) and makes it ready to score on the engine: exported,
quantized, compiled. It is called once per cell, outside the timed window; what it did and how
long it took goes into ``Loaded.info``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

Batch = dict[str, np.ndarray]
# The run settings' key of a cell's engine options ({field: value}, as EngineOptions.to_dict).
OPTIONS_KEY = "engine_options"


@dataclass
class LoadOptions:
    """How a cell asks an engine to load its model."""

    precision: str = "fp32"  # fp32, bf16 or int8
    threads: int = 1
    device: str = "cpu"
    engine: EngineOptions | None = None  # the engine's own options (None: its defaults)
    calibration: list[Batch] | None = None  # int8: batches of training inputs
    convolutional: bool = False  # int8: static quantization (convolutions) or dynamic
    compile: bool = False  # torch: torch.compile the model (first call outside timing)


@dataclass
class Loaded:
    """A model ready on an engine: score one batch, or several with requests in flight."""

    run: Callable[[Batch], np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)
    run_many: Callable[[list[Batch]], tuple[list[np.ndarray], list[float]]] | None = None

    def score_all(self, batches: list[Batch]) -> tuple[list[np.ndarray], list[float]]:
        """Logits of every batch and each batch's latency (s), in flight together if it can."""
        if self.run_many is not None:
            return self.run_many(batches)
        import time

        outputs, latencies = [], []
        for batch in batches:
            start = time.perf_counter()
            outputs.append(self.run(batch))
            latencies.append(time.perf_counter() - start)
        return outputs, latencies


class Engine(ABC):
    """One inference engine: its name, what it supports, and how it loads a model."""

    name: ClassVar[str]
    package: ClassVar[str]  # what its library is imported as (say "not installed" before work)
    devices: ClassVar[tuple[str, ...]] = ("cpu",)
    formats: ClassVar[tuple[str, ...]] = ("fp32", "bf16", "int8")

    def skip_reason(self, device: str, precision: str) -> str | None:
        """Why this engine cannot run `precision` on `device` here, or None."""
        if device not in self.devices:
            return f"engine {self.name} runs on {', '.join(self.devices)} here, not {device}"
        if precision not in self.formats:
            return f"engine {self.name} has no {precision} path (it runs {', '.join(self.formats)})"
        return None

    @abstractmethod
    def load(self, model: Any, example: Batch, options: LoadOptions) -> Loaded:
        """`model` (eval mode, fp32 weights) made ready to score batches like `example`."""


@dataclass
class EngineView:
    """What a torch backend hands an engine: its model and its data, task names unknown.

    ``model``'s forward takes the inputs positionally, in the order of ``inputs``' keys, and
    returns logits (one per sample for a binary task); ``inputs(split, start, stop)`` are the
    tensors of samples start..stop of "train" or "test"; ``labels`` those of the test split.
    """

    model: Any
    inputs: Callable[[str, int, int], dict[str, Any]]
    labels: Any
    binary: bool = False


@dataclass(frozen=True)
class EngineOptions:
    """The options one engine owns, as a cell states them (a frozen dataclass per engine).

    ``CONFIG_KEY`` is the study config's mapping of them (``openvino: {hint: ...}``). A cell's
    run settings carry them under one key, ``OPTIONS_KEY``, by field name, and the engine reads
    them back with ``of(settings)``: one name per option from the config to the engine."""

    CONFIG_KEY: ClassVar[str]
    ENGINE: ClassVar[str]

    @classmethod
    def from_mapping(cls, given: dict[str, Any]) -> EngineOptions:
        """The options from a mapping of field names; ValueError naming a key it does not own."""
        owned = [f.name for f in fields(cls)]
        unknown = sorted(set(given) - set(owned))
        if unknown:
            raise ValueError(
                f"engine {cls.ENGINE} has no option {', '.join(map(repr, unknown))}; "
                f"its options: {', '.join(owned)}"
            )
        bad = [k for k, v in given.items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            raise ValueError(f"{bad[0]}: must be a finite number (got {given[bad[0]]})")
        return cls(**given)

    def to_dict(self) -> dict[str, Any]:
        """The options that are set, by field name."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> EngineOptions:
        """The options a cell's run settings carry (``CellSpec.run_settings()``), else the
        defaults (every field None: the engine's own)."""
        given = settings.get(OPTIONS_KEY) or {}
        return given if isinstance(given, cls) else cls.from_mapping(dict(given))

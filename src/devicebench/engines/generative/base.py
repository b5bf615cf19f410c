"""The interface of a generative engine: load a language model and hand back a Generator.

Beside ``engines.base.Engine`` (which exports a torch model that returns logits), a generative
engine (torch ``generate``, OpenVINO GenAI, llama.cpp, ...) loads a model from a local folder or
file and returns a ``frameworks.generator.Generator``; the generate scenario times it with one
clock (``frameworks.generator.time_generation``). Each engine owns its options: a frozen
dataclass subclassing ``GenerativeOptions`` (``Options``), built from the cell's engine options
by ``options_from``, which names any key the engine does not own.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from devicebench.frameworks.generator import Generator


@dataclass(frozen=True)
class GenerativeOptions:
    """What every generative engine is told; an engine's own options subclass this."""

    precision: str = "fp32"
    threads: int = 1
    device: str = "cpu"


class GenerativeEngine(ABC):
    """One generative engine: its name, where it runs, its options, and how it loads a model."""

    name: ClassVar[str]
    package: ClassVar[str]  # what its library is imported as (say "not installed" before work)
    distribution: ClassVar[str] = ""  # what pip calls it, where it may be missing
    install: ClassVar[str] = ""  # the line that installs it (empty: always installed)
    devices: ClassVar[tuple[str, ...]] = ("cpu",)
    formats: ClassVar[tuple[str, ...]] = ("fp32",)
    Options: ClassVar[type[GenerativeOptions]] = GenerativeOptions
    max_batch: ClassVar[int | None] = None  # the most sequences it generates at once
    # its generators decode a step per `next` (`steps`): a server can step batches in turn
    steps_in_turn: ClassVar[bool] = False

    def skip_reason(self, device: str, precision: str) -> str | None:
        """Why this engine cannot run `precision` on `device` here, or None."""
        if device not in self.devices:
            return f"engine {self.name} runs on {', '.join(self.devices)} here, not {device}"
        if precision not in self.formats:
            return f"engine {self.name} has no {precision} path (it runs {', '.join(self.formats)})"
        if self.install and importlib.util.find_spec(self.package) is None:
            return f"engine {self.name}: {self.distribution} is not installed; {self.install}"
        return None

    def step_in_turn_reason(self, max_batches: int) -> str | None:
        """Why a server cannot step `max_batches` of this engine's batches in turn, or None."""
        if max_batches == 1 or self.steps_in_turn:
            return None
        return (
            f"max_batches {max_batches}: engine {self.name} decodes a batch whole, not a step at "
            "a time (torch_eager and torch_static step in turn)"
        )

    def model_skip_reason(self, model: str) -> str | None:
        """Why this engine cannot load `model`, or None (every model, unless it says)."""
        return None

    def cell_skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        """Why this engine cannot run a cell: device, format, model or batch; or None."""
        reason = self.skip_reason(str(settings["device"]), str(settings["precision"]))
        batch = int(settings["batch_size"])
        if reason is None and self.max_batch is not None and batch > self.max_batch:
            reason = f"engine {self.name} generates at most {self.max_batch} at once, not {batch}"
        return reason or self.model_skip_reason(str(settings["model"]))

    def options_from(self, given: Mapping[str, Any], **common: Any) -> GenerativeOptions:
        """The engine's options from a cell's `given` ones plus the common ones; ValueError naming
        a key the engine does not own."""
        owned = {f.name for f in dataclasses.fields(self.Options)}
        unknown = sorted(set(given) - owned)
        if unknown:
            raise ValueError(
                f"engine {self.name} has no option {', '.join(map(repr, unknown))}; "
                f"its options: {', '.join(sorted(owned))}"
            )
        return self.Options(**common, **given)

    @abstractmethod
    def load(self, model: str | Path, options: GenerativeOptions) -> Generator:
        """The model at `model` (a local folder or file) ready to generate; no download."""
